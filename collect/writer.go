package collect

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/internal/replay"
)

// Kinesis is the part of the Kinesis API collect uses; *kinesis.Client
// implements it.
type Kinesis = replay.Client

// PutRecords limits of one request.
const (
	maxBatchRecords = 500
	maxBatchBytes   = 5 << 20
)

// ErrUnavailable is the result of an event Kinesis did not take within the
// retries (throttled or failing): the request is answered 503 with
// Retry-After, and the client sends it again.
var ErrUnavailable = errors.New("collect: Kinesis did not take the record within the retries")

// item is one event on its way to the stream.
type item struct {
	rec  kpl.Record
	tick *ticket
	idx  int
}

// ticket is one request's wait for its events: errs[i] is the outcome of
// its i-th submitted event.
type ticket struct {
	wg   sync.WaitGroup
	errs []error
}

// writer batches the events of concurrent requests for Linger, groups
// them by shard, KPL-aggregates each group and writes them with
// PutRecords; an event's ticket is released only once the Kinesis record
// holding it is stored (or failed past the retries).
type writer struct {
	cfg    Config
	client Kinesis
	m      *metrics

	mu     sync.Mutex
	shards *replay.ShardMap // nil: unknown, group by key

	in    chan item
	sem   chan struct{}
	wg    sync.WaitGroup
	done  chan struct{}
	stopc chan struct{}
}

func newWriter(cfg Config, client Kinesis, m *metrics, shards *replay.ShardMap) *writer {
	w := &writer{cfg: cfg, client: client, m: m, shards: shards,
		in: make(chan item, 4096), sem: make(chan struct{}, cfg.Concurrency),
		done: make(chan struct{}), stopc: make(chan struct{})}
	go w.loop()
	return w
}

// submit hands the records to the writer; t.wg is released per record.
func (w *writer) submit(recs []kpl.Record, t *ticket, idx []int) {
	for i, r := range recs {
		t.wg.Add(1)
		w.in <- item{rec: r, tick: t, idx: idx[i]}
	}
}

// close stops the writer once every submitted item has been written or
// failed. Callers must not submit after close.
func (w *writer) close() {
	close(w.stopc)
	<-w.done
}

func (w *writer) loop() {
	defer close(w.done)
	var batch []item
	size := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		b := batch
		batch, size = nil, 0
		w.sem <- struct{}{}
		w.wg.Add(1)
		go func() {
			defer func() { <-w.sem; w.wg.Done() }()
			w.write(b)
		}()
	}
	stopping := false
	for {
		if stopping && len(w.in) == 0 {
			flush()
			w.wg.Wait()
			return
		}
		select {
		case it := <-w.in:
			if len(batch) == 0 {
				timer.Reset(w.cfg.Linger)
			}
			n := len(it.rec.Data) + len(it.rec.PartitionKey)
			if len(batch) == maxBatchRecords || size+n > maxBatchBytes*4/5 {
				timer.Stop()
				flush()
				timer.Reset(w.cfg.Linger)
			}
			batch = append(batch, it)
			size += n
		case <-timer.C:
			flush()
		case <-w.stopc:
			w.stopc = nil // a nil channel: not selected again
			stopping = true
		}
	}
}

// entry is one Kinesis record of a request and the items it holds.
type entry struct {
	pk    string
	data  []byte
	items []item
}

// write turns a batch into Kinesis records (one KPL aggregate per shard
// group while it fits, a plain record for a lone event) and puts them,
// retrying failed records with backoff until MaxAttempts.
func (w *writer) write(batch []item) {
	entries := w.pack(batch)
	t0 := time.Now()
	backoff := w.cfg.RetryBackoff
	for attempt := 1; len(entries) > 0; attempt++ {
		recs := make([]types.PutRecordsRequestEntry, len(entries))
		for i, e := range entries {
			recs[i] = types.PutRecordsRequestEntry{Data: e.data, PartitionKey: aws.String(e.pk)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.PutTimeout)
		out, err := w.client.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(w.cfg.Stream), Records: recs})
		cancel()
		w.m.putRequests.Inc()
		var failed []*entry
		switch {
		case err != nil:
			w.m.putErrors.Inc()
			failed = entries
		case len(out.Records) != len(entries):
			w.m.putErrors.Inc()
			failed = entries
			err = fmt.Errorf("PutRecords answered %d records for %d", len(out.Records), len(entries))
		default:
			for i, res := range out.Records {
				e := entries[i]
				if res.ErrorCode != nil {
					if aws.ToString(res.ErrorCode) == "ProvisionedThroughputExceededException" {
						w.m.throttles.Inc()
					}
					failed = append(failed, e)
					continue
				}
				w.m.kinesisRecords.Inc()
				w.m.kinesisBytes.Add(float64(len(e.data) + len(e.pk)))
				w.finish(e, nil)
			}
		}
		if len(failed) == 0 {
			return
		}
		if attempt >= w.cfg.MaxAttempts || time.Since(t0)+backoff > w.cfg.AckTimeout {
			w.cfg.Logger.Warn("Kinesis did not take records within the retries", "records", len(failed), "attempts", attempt, "err", err)
			for _, e := range failed {
				w.finish(e, ErrUnavailable)
			}
			return
		}
		w.m.retries.Add(float64(len(failed)))
		time.Sleep(backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))) // retry backoff, not synchronisation
		backoff = min(2*backoff, w.cfg.MaxRetryBackoff)
		entries = failed
	}
}

func (w *writer) finish(e *entry, err error) {
	for _, it := range e.items {
		it.tick.errs[it.idx] = err
		it.tick.wg.Done()
	}
}

// pack groups the batch by shard (by partition key when the shard map is
// unknown) and aggregates each group in arrival order, so the events of
// one key stay in order inside one Kinesis record or in consecutive
// records of one shard.
func (w *writer) pack(batch []item) []*entry {
	w.mu.Lock()
	shards := w.shards
	w.mu.Unlock()
	type group struct {
		agg   *kpl.Aggregator
		items []item
	}
	var order []*group
	groups := map[any]*group{}
	var entries []*entry
	emit := func(g *group) {
		if len(g.items) == 0 {
			return
		}
		if len(g.items) == 1 || !w.cfg.Aggregate {
			for _, it := range g.items {
				entries = append(entries, &entry{pk: it.rec.PartitionKey, data: it.rec.Data, items: []item{it}})
			}
		} else {
			agg, _ := g.agg.Flush()
			entries = append(entries, &entry{pk: agg.PartitionKey, data: agg.Data, items: g.items})
			w.m.aggregates.Inc()
		}
		g.items = nil
		g.agg = kpl.NewAggregator(w.cfg.AggregateMaxSize)
	}
	for _, it := range batch {
		var k any = it.rec.PartitionKey
		if shards != nil {
			k = shards.Shard(it.rec.PartitionKey)
		}
		g := groups[k]
		if g == nil {
			g = &group{agg: kpl.NewAggregator(w.cfg.AggregateMaxSize)}
			groups[k] = g
			order = append(order, g)
		}
		if !g.agg.Fits(it.rec) {
			// Too large for any aggregate: sent plain, after what the group holds.
			emit(g)
			entries = append(entries, &entry{pk: it.rec.PartitionKey, data: it.rec.Data, items: []item{it}})
			continue
		}
		if !g.agg.Add(it.rec) {
			emit(g)
			g.agg.Add(it.rec)
		}
		g.items = append(g.items, it)
	}
	for _, g := range order {
		emit(g)
	}
	return entries
}

// refreshShards reloads the shard map (after a resharding) every period
// until ctx ends.
func (w *writer) refreshShards(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m, err := replay.LoadShardMap(ctx, w.client, w.cfg.Stream)
		if err != nil {
			w.cfg.Logger.Warn("shard map refresh failed; keeping the last one", "err", err)
			continue
		}
		w.mu.Lock()
		w.shards = m
		w.mu.Unlock()
	}
}

type describeInput = kinesis.DescribeStreamSummaryInput
