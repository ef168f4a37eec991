package harness

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kinesistypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// SplitShard splits the stream's first open shard at the midpoint of its
// hash key range (so partition keys whose MD5 is in the upper half go to
// the second child) and waits until the stream is ACTIVE again. It
// returns the id of the shard split.
func (h *Harness) SplitShard(ctx context.Context) (string, error) {
	out, err := h.kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(h.Stream)})
	if err != nil {
		return "", err
	}
	for _, sh := range out.Shards {
		if sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil {
			continue // closed already
		}
		lo, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.StartingHashKey), 10)
		hi, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.EndingHashKey), 10)
		mid := new(big.Int).Rsh(new(big.Int).Add(new(big.Int).Add(lo, hi), big.NewInt(1)), 1)
		id := aws.ToString(sh.ShardId)
		h.Logf("split %s at %s", id, mid)
		if _, err := h.kin.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(h.Stream),
			ShardToSplit: sh.ShardId, NewStartingHashKey: aws.String(mid.String())}); err != nil {
			return "", fmt.Errorf("harness: split %s: %w", id, err)
		}
		return id, h.WaitFor(ctx, time.Minute, "stream ACTIVE after the split", func() (bool, error) {
			d, err := h.kin.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(h.Stream)})
			if err != nil {
				return false, nil //nolint:nilerr // retried until the deadline
			}
			return d.StreamDescriptionSummary.StreamStatus == kinesistypes.StreamStatusActive, nil
		})
	}
	return "", errors.New("harness: no open shard to split")
}
