package replay

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// shardMap maps a partition key to the open shard Kinesis puts it on: the
// shard whose hash key range holds MD5(key) read as a 128-bit big-endian
// integer.
type shardMap struct {
	ids    []string
	starts [][16]byte // sorted; ranges are contiguous over the open shards
	ends   [][16]byte
}

func (m *shardMap) len() int { return len(m.ids) }

// shard returns the index of the shard of key.
func (m *shardMap) shard(key string) int {
	h := md5.Sum([]byte(key))
	i := sort.Search(len(m.starts), func(i int) bool { return bytes.Compare(m.starts[i][:], h[:]) > 0 }) - 1
	if i < 0 || bytes.Compare(h[:], m.ends[i][:]) > 0 {
		// A gap (only while a resharding is half seen): any shard will do
		// for grouping.
		return 0
	}
	return i
}

func hashKey128(s string) ([16]byte, error) {
	var out [16]byte
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Sign() < 0 || n.BitLen() > 128 {
		return out, fmt.Errorf("bad hash key %q", s)
	}
	n.FillBytes(out[:])
	return out, nil
}

// loadShards lists the stream's open shards.
func loadShards(ctx context.Context, c Client, stream string) (*shardMap, error) {
	type rng struct {
		id         string
		start, end [16]byte
	}
	var shards []rng
	in := &kinesis.ListShardsInput{StreamName: aws.String(stream)}
	for {
		out, err := c.ListShards(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list shards: %w", err)
		}
		for _, s := range out.Shards {
			if s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil {
				continue // closed
			}
			if s.HashKeyRange == nil {
				return nil, fmt.Errorf("shard %s has no hash key range", aws.ToString(s.ShardId))
			}
			start, err := hashKey128(aws.ToString(s.HashKeyRange.StartingHashKey))
			if err != nil {
				return nil, err
			}
			end, err := hashKey128(aws.ToString(s.HashKeyRange.EndingHashKey))
			if err != nil {
				return nil, err
			}
			shards = append(shards, rng{aws.ToString(s.ShardId), start, end})
		}
		if out.NextToken == nil {
			break
		}
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
	if len(shards) == 0 {
		return nil, errors.New("no open shards")
	}
	sort.Slice(shards, func(i, j int) bool { return bytes.Compare(shards[i].start[:], shards[j].start[:]) < 0 })
	m := &shardMap{}
	for _, s := range shards {
		m.ids = append(m.ids, s.id)
		m.starts = append(m.starts, s.start)
		m.ends = append(m.ends, s.end)
	}
	return m, nil
}

// ensureStream makes sure the stream exists and takes writes, creating it
// with cfg.Shards shards when missing and cfg.Shards > 0.
func ensureStream(ctx context.Context, c Client, cfg Config) error {
	name := aws.String(cfg.Stream)
	status, err := streamStatus(ctx, c, cfg.Stream)
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		if cfg.Shards == 0 {
			return fmt.Errorf("replay: stream %q does not exist: create it, or set Shards to have replay create it", cfg.Stream)
		}
		_, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: name, ShardCount: aws.Int32(int32(cfg.Shards))})
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) { // in use: created meanwhile
			return fmt.Errorf("replay: create stream %q with %d shards: %w", cfg.Stream, cfg.Shards, err)
		}
	case err != nil:
		return fmt.Errorf("replay: describe stream %q: %w", cfg.Stream, err)
	}
	deadline := time.Now().Add(cfg.CreateTimeout)
	for {
		switch status {
		case types.StreamStatusActive, types.StreamStatusUpdating:
			return nil
		case types.StreamStatusDeleting:
			return fmt.Errorf("replay: stream %q is being deleted", cfg.Stream)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replay: stream %q still %q after %s: raise CreateTimeout or check the stream", cfg.Stream, status, cfg.CreateTimeout)
		}
		if err := sleep(ctx, cfg.PollInterval); err != nil {
			return err
		}
		status, err = streamStatus(ctx, c, cfg.Stream)
		if err != nil && !errors.As(err, &nf) { // not found: not visible yet
			return fmt.Errorf("replay: describe stream %q: %w", cfg.Stream, err)
		}
	}
}

func streamStatus(ctx context.Context, c Client, stream string) (types.StreamStatus, error) {
	out, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
	if err != nil {
		return "", err
	}
	if out.StreamDescriptionSummary == nil {
		return "", errors.New("empty DescribeStreamSummary response")
	}
	return out.StreamDescriptionSummary.StreamStatus, nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ShardMap maps partition keys to the stream's open shards as Kinesis does
// (MD5 of the key in the shards' hash key ranges), for producers that group
// records by shard before KPL-aggregating them (lineageflow collect).
type ShardMap struct{ m *shardMap }

// LoadShardMap lists the stream's open shards.
func LoadShardMap(ctx context.Context, c Client, stream string) (*ShardMap, error) {
	m, err := loadShards(ctx, c, stream)
	if err != nil {
		return nil, err
	}
	return &ShardMap{m}, nil
}

// Shard returns the index of key's shard (0 for a key in a gap, seen only
// while a resharding is half listed).
func (s *ShardMap) Shard(key string) int { return s.m.shard(key) }

// Len returns the number of open shards.
func (s *ShardMap) Len() int { return s.m.len() }
