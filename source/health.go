package source

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// streamProbeEvery is how often the worker checks that it can read its
// stream; streamLogEvery how often it says so in the log while it cannot.
const (
	streamProbeEvery = 10 * time.Second
	streamLogEvery   = time.Minute
)

// streamHealth is the last stream probe's outcome (Worker.Unready).
type streamHealth struct {
	mu      sync.Mutex
	err     error
	since   time.Time
	lastLog time.Time
}

// probeStream asks Kinesis for the stream's summary: nil when it exists
// and answers. The error names the stream and the class of the failure,
// never the endpoint or the SDK's text (it goes to /readyz).
func (w *Worker) probeStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := w.kin.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(w.cfg.Stream)})
	if err == nil {
		return nil
	}
	var nf *kintypes.ResourceNotFoundException
	if errors.As(err, &nf) {
		return fmt.Errorf("stream %q does not exist (in this region and account): check -stream and -region", w.cfg.Stream)
	}
	class := "no answer"
	var api smithy.APIError
	if errors.As(err, &api) {
		class = api.ErrorCode()
	}
	return fmt.Errorf("stream %q cannot be read (%s; details in the worker log)", w.cfg.Stream, class)
}

// checkStream probes the stream once, records the outcome and logs a
// failure when it starts and then every streamLogEvery.
func (w *Worker) checkStream(ctx context.Context) {
	err := w.probeStream(ctx)
	if ctx.Err() != nil {
		return
	}
	h := &w.streamHealth
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	switch {
	case err == nil:
		if h.err != nil {
			w.log.Info("stream readable again", "stream", w.cfg.Stream, "after", now.Sub(h.since).Round(time.Second))
		}
		h.err = nil
		return
	case h.err == nil:
		h.since = now
	}
	h.err = err
	if h.lastLog.IsZero() || now.Sub(h.lastLog) >= streamLogEvery {
		h.lastLog = now
		w.log.Error("the worker cannot read its stream: not ready, nothing is processed until it can", "err", err,
			"since", h.since.UTC().Format(time.RFC3339))
	}
}

// watchStream runs checkStream every period until ctx ends.
func (w *Worker) watchStream(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.checkStream(ctx)
		}
	}
}

// streamErr is the last stream probe's failure (nil: readable).
func (w *Worker) streamErr() error {
	w.streamHealth.mu.Lock()
	defer w.streamHealth.mu.Unlock()
	return w.streamHealth.err
}

// Unready returns nil when nothing keeps the worker from processing,
// else why (the /readyz reason): a child shard waiting for a handoff it
// cannot read, a stream that does not exist or cannot be read, a run
// store that does not answer.
func (w *Worker) Unready() error {
	if err := w.HandoffBlocked(); err != nil {
		return err
	}
	if err := w.streamErr(); err != nil {
		return err
	}
	return w.PipelineStats().RunStoreUnavailable()
}

// ErrDuplicateWorkerID: another live process runs with this -worker-id.
var ErrDuplicateWorkerID = errors.New("source: another live worker has this -worker-id")

// liveLeases returns the lease timeout of every lease assigned to this
// worker's id whose timeout is after now.
func (w *Worker) liveLeases(ctx context.Context, now time.Time) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	live := map[string]string{}
	p := dynamodb.NewScanPaginator(w.ddb, &dynamodb.ScanInput{TableName: aws.String(w.cfg.AppName), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range out.Items {
			owner, _ := it["AssignedTo"].(*ddbtypes.AttributeValueMemberS)
			shard, _ := it["ShardID"].(*ddbtypes.AttributeValueMemberS)
			to, _ := it["LeaseTimeout"].(*ddbtypes.AttributeValueMemberS)
			if owner == nil || shard == nil || to == nil || owner.Value != w.cfg.WorkerID {
				continue
			}
			if t, err := time.Parse(time.RFC3339Nano, to.Value); err == nil && t.After(now) {
				live[shard.Value] = to.Value
			}
		}
	}
	return live, nil
}

// checkDuplicateID runs before the KCL starts, when this process holds
// no lease: a lease assigned to its -worker-id that is still live may be
// its previous run's (a restart within the failover time) or another
// process's with the same id (then both would process every shard, each
// write doubled). It waits until those leases' timeouts pass (at most
// the failover time, only in that case) and reads them again: one renewed
// meanwhile is held by a twin, and the worker refuses to start. A lease
// table it cannot read is not a reason to refuse (the KCL reports it).
func (w *Worker) checkDuplicateID(ctx context.Context) error {
	live, err := w.liveLeases(ctx, time.Now())
	if err != nil || len(live) == 0 {
		return nil
	}
	if w.opts.afterLeaseScan != nil {
		w.opts.afterLeaseScan()
	}
	var latest time.Time
	for _, to := range live {
		if t, _ := time.Parse(time.RFC3339Nano, to); t.After(latest) {
			latest = t
		}
	}
	wait := min(time.Until(latest), w.cfg.FailoverTime) + 200*time.Millisecond
	w.log.Warn("leases assigned to this -worker-id are still live: waiting for them to expire, to tell a restart from a second worker with the same id",
		"leases", len(live), "wait", wait.Round(time.Millisecond))
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return nil
	}
	again, err := w.liveLeases(ctx, time.Now().Add(-time.Hour))
	if err != nil {
		return nil
	}
	for shard, to := range live {
		if now, ok := again[shard]; ok && now != to {
			return fmt.Errorf("%w: %q renews the lease of shard %s while this process holds none: give each worker its own -worker-id (or stop the other one)",
				ErrDuplicateWorkerID, w.cfg.WorkerID, shard)
		}
	}
	return nil
}
