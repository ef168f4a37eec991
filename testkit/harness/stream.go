package harness

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/lineageflow/lineageflow/internal/replay"
)

// CreateStream creates the stream with n shards and waits until it is ACTIVE.
func (h *Harness) CreateStream(ctx context.Context, shards int) error {
	// replay.Run creates a missing stream; an empty source does just that.
	_, err := replay.Run(ctx, h.kin, replay.Config{Stream: h.Stream, Shards: shards}, replay.FromSlice(nil))
	if err != nil {
		return fmt.Errorf("harness: create stream %s: %w", h.Stream, err)
	}
	h.Logf("stream %s: %d shards", h.Stream, shards)
	return nil
}

// ReplayConfig returns the replay configuration used by [Harness.Replay]
// for h's stream (existing stream; partition keys kept in order).
func (h *Harness) ReplayConfig() replay.Config {
	return replay.Config{Stream: h.Stream, Concurrency: 4}
}

// Replay puts recs on the stream, in order per partition key, at rate
// records/s (0: as fast as the stream takes them).
func (h *Harness) Replay(ctx context.Context, recs []replay.Record, rate float64) (replay.Summary, error) {
	cfg := h.ReplayConfig()
	cfg.Rate = rate
	sum, err := replay.Run(ctx, h.kin, cfg, replay.FromSlice(recs))
	h.Logf("replay: %s", sum)
	return sum, err
}

// ReplayJob is a replay running in the background.
type ReplayJob struct {
	done chan struct{}
	sum  replay.Summary
	err  error
}

// Done is closed when the replay ends.
func (j *ReplayJob) Done() <-chan struct{} { return j.done }

// Wait waits for the replay's end and returns its result.
func (j *ReplayJob) Wait() (replay.Summary, error) { <-j.done; return j.sum, j.err }

// ReplayAsync runs [Harness.Replay] in a goroutine.
func (h *Harness) ReplayAsync(ctx context.Context, recs []replay.Record, rate float64) *ReplayJob {
	j := &ReplayJob{done: make(chan struct{})}
	go func() {
		defer close(j.done)
		j.sum, j.err = h.Replay(ctx, recs, rate)
	}()
	return j
}

// ShardIDs lists the stream's shards.
func (h *Harness) ShardIDs(ctx context.Context) ([]string, error) {
	out, err := h.kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(h.Stream)})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range out.Shards {
		ids = append(ids, aws.ToString(s.ShardId))
	}
	return ids, nil
}
