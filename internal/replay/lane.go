package replay

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"

	"github.com/lineageflow/lineageflow/internal/kpl"
)

const (
	// A lane stops taking input past this many entries or bytes waiting.
	maxPending      = 20 * MaxBatchRecords
	maxPendingBytes = 4 * MaxBatchBytes

	throttled = "ProvisionedThroughputExceededException"
)

// entry is one Kinesis record waiting in a lane: a plain user record or a
// KPL aggregate.
type entry struct {
	pk         string
	data       []byte
	keys       []string // user partition keys inside
	users      int
	aggregated bool
	attempts   int // failed sends
	done       bool
}

func (e *entry) size() int { return len(e.data) + len(e.pk) }

// lane owns the partition keys that hash to it and sends their records, one
// PutRecords request at a time. Its state is touched by its goroutine only.
type lane struct {
	r  *runner
	id int
	in chan item

	pending      []*entry // in send order; failed entries stay in place
	pendingBytes int
	aggs         map[groupKey]*kpl.Aggregator
	open         []groupKey // groups with a non-empty aggregator
	closed       bool       // in is closed and drained
	failures     int        // consecutive failed requests
	rng          *rand.Rand

	blocked map[string]struct{}
	batch   []*entry
}

func newLane(r *runner, id int) *lane {
	return &lane{
		r:       r,
		id:      id,
		in:      make(chan item, 1024),
		aggs:    map[groupKey]*kpl.Aggregator{},
		rng:     rand.New(rand.NewPCG(r.cfg.Seed, uint64(id))),
		blocked: map[string]struct{}{},
	}
}

// run sends everything that comes in until in is closed and all of it is
// written, or a record cannot be written.
func (l *lane) run(ctx context.Context) error {
	for {
		if err := l.fill(ctx); err != nil {
			return err
		}
		if l.closed && len(l.pending) == 0 && len(l.open) == 0 {
			return nil
		}
		if len(l.pending) < MaxBatchRecords {
			l.flushAggs()
		}
		if len(l.pending) > 0 {
			if err := l.send(ctx); err != nil {
				return err
			}
		}
	}
}

// fill takes input: it blocks while there is nothing to send, then takes
// what is there, lingering up to Config.Linger for a full request.
func (l *lane) fill(ctx context.Context) error {
	if l.closed {
		return nil
	}
	if len(l.pending) == 0 && len(l.open) == 0 {
		select {
		case it, ok := <-l.in:
			if !ok {
				l.closed = true
				return nil
			}
			l.add(it)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for len(l.pending) < maxPending && l.pendingBytes < maxPendingBytes {
		select {
		case it, ok := <-l.in:
			if !ok {
				l.closed = true
				return nil
			}
			l.add(it)
			continue
		default:
		}
		if len(l.pending)+len(l.open) >= MaxBatchRecords || l.r.cfg.Linger < 0 {
			return nil
		}
		if timer == nil {
			timer = time.NewTimer(l.r.cfg.Linger)
		}
		select {
		case it, ok := <-l.in:
			if !ok {
				l.closed = true
				return nil
			}
			l.add(it)
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// add queues a user record: into its group's aggregate, or as a plain
// record after flushing an aggregate that holds earlier records of its key.
func (l *lane) add(it item) {
	rec := it.rec
	if !it.agg {
		if a := l.aggs[it.group]; a != nil && a.Contains(rec.PartitionKey) {
			l.flushAgg(it.group)
		}
		l.push(&entry{pk: rec.PartitionKey, data: rec.Data, keys: []string{rec.PartitionKey}, users: 1})
		return
	}
	a := l.aggs[it.group]
	if a == nil {
		a = kpl.NewAggregator(l.r.cfg.AggregateMaxSize)
		l.aggs[it.group] = a
	}
	kr := kpl.Record{PartitionKey: rec.PartitionKey, Data: rec.Data}
	if !a.Add(kr) {
		l.flushAgg(it.group)
		a.Add(kr) // fits an empty aggregate: checked by the reader
	}
	if a.Len() == 1 {
		l.open = append(l.open, it.group)
	}
}

func (l *lane) push(e *entry) {
	l.pending = append(l.pending, e)
	l.pendingBytes += e.size()
}

func (l *lane) flushAgg(g groupKey) {
	agg, ok := l.aggs[g].Flush()
	if !ok {
		return
	}
	l.push(&entry{pk: agg.PartitionKey, data: agg.Data, keys: agg.PartitionKeys, users: agg.Records, aggregated: true})
	for i, o := range l.open {
		if o == g {
			l.open = append(l.open[:i], l.open[i+1:]...)
			break
		}
	}
}

func (l *lane) flushAggs() {
	for len(l.open) > 0 {
		l.flushAgg(l.open[0])
	}
}

// buildBatch picks the next request from pending, in order, within the
// PutRecords limits. Unless LooseOrder, it takes at most one entry per user
// partition key: the first pending one (a later one waits, and so does
// every entry sharing a key with an entry that waits).
func (l *lane) buildBatch() []*entry {
	l.batch = l.batch[:0]
	clear(l.blocked)
	size := 0
	for _, e := range l.pending {
		if len(l.batch) == MaxBatchRecords {
			break
		}
		if !l.r.cfg.LooseOrder {
			conflict := false
			for _, k := range e.keys {
				if _, ok := l.blocked[k]; ok {
					conflict = true
				}
				l.blocked[k] = struct{}{}
			}
			if conflict {
				continue
			}
		}
		if size+e.size() > MaxBatchBytes {
			break
		}
		l.batch = append(l.batch, e)
		size += e.size()
	}
	return l.batch
}

// send writes one request and handles its outcome: written entries leave
// pending, failed ones stay in place for the next request, after a
// backoff.
func (l *lane) send(ctx context.Context) error {
	batch := l.buildBatch()
	recs := make([]types.PutRecordsRequestEntry, len(batch))
	for i, e := range batch {
		recs[i] = types.PutRecordsRequestEntry{Data: e.data, PartitionKey: aws.String(e.pk)}
	}
	c := &l.r.c
	out, err := l.r.client.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(l.r.cfg.Stream), Records: recs})
	c.requests.Add(1)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if fatal(err) {
			return fmt.Errorf("replay: PutRecords to %q: %w", l.r.cfg.Stream, err)
		}
		for _, e := range batch {
			e.attempts++
			if e.attempts >= l.r.cfg.MaxAttempts {
				return fmt.Errorf("replay: PutRecords to %q failed %d times for a record of key %q: %w", l.r.cfg.Stream, e.attempts, e.pk, err)
			}
		}
		c.retries.Add(int64(len(batch)))
		return l.backoff(ctx)
	}
	if len(out.Records) != len(batch) {
		return fmt.Errorf("replay: PutRecords answered %d records for %d", len(out.Records), len(batch))
	}
	failed := 0
	for i, res := range out.Records {
		e := batch[i]
		if res.ErrorCode != nil {
			failed++
			e.attempts++
			if *res.ErrorCode == throttled {
				c.throttles.Add(1)
			}
			if e.attempts >= l.r.cfg.MaxAttempts {
				return fmt.Errorf("replay: a record of key %q failed %d times, last with %s: %s", e.pk, e.attempts, *res.ErrorCode, aws.ToString(res.ErrorMessage))
			}
			continue
		}
		e.done = true
		c.users.Add(int64(e.users))
		c.records.Add(1)
		c.bytes.Add(int64(e.size()))
		if e.aggregated {
			c.aggs.Add(1)
			c.aggUsers.Add(int64(e.users))
		}
	}
	j := 0
	for _, e := range l.pending {
		if !e.done {
			l.pending[j] = e
			j++
		} else {
			l.pendingBytes -= e.size()
		}
	}
	clear(l.pending[j:])
	l.pending = l.pending[:j]
	if failed == 0 {
		l.failures = 0
		return nil
	}
	c.retries.Add(int64(failed))
	if failed < len(batch) {
		l.failures = 0 // progress: back off from the start
	}
	return l.backoff(ctx)
}

// backoff waits before the next request after a failure: RetryBackoff
// doubled per consecutive request that wrote nothing, up to
// MaxRetryBackoff, half of it jittered.
func (l *lane) backoff(ctx context.Context) error {
	l.failures++
	d := l.r.cfg.RetryBackoff
	for i := 1; i < l.failures && d < l.r.cfg.MaxRetryBackoff; i++ {
		d *= 2
	}
	d = min(d, l.r.cfg.MaxRetryBackoff)
	d = d/2 + time.Duration(l.rng.Int64N(int64(d/2)+1))
	if err := sleep(ctx, d); err != nil {
		return context.Cause(ctx)
	}
	return nil
}

// fatal reports whether a PutRecords error will not go away by retrying.
func fatal(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "ValidationException", "ResourceNotFoundException", "InvalidArgumentException",
		"AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException",
		"IncompleteSignature", "MissingAuthenticationToken",
		"KMSAccessDeniedException", "KMSDisabledException", "KMSInvalidStateException",
		"KMSNotFoundException", "KMSOptInRequired":
		return true
	}
	return false
}
