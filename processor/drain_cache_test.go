package processor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/lineage"
)

// checkingSink compares every batch it is sent with the outbox entry
// Pebble holds for it (still there: the drain deletes an entry after its
// send), and can be held (sends block until released).
type checkingSink struct {
	db    *pebble.DB
	shard string
	hold  chan struct{}

	mu      sync.Mutex
	batches int
	diffs   []string
}

func (c *checkingSink) WriteBatch(ctx context.Context, b lineage.Batch) error {
	if c.hold != nil {
		select {
		case <-c.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	parts := strings.Split(b.Key, "/")
	seq, err := strconv.ParseUint(parts[len(parts)-1], 10, 64)
	if err != nil {
		return err
	}
	v, closer, err := c.db.Get(checkpoint.OutboxKey(c.shard, seq))
	if err != nil {
		return fmt.Errorf("outbox entry %d: %w", seq, err)
	}
	e, err := DecodeOutbox(v)
	closer.Close()
	if err != nil {
		return err
	}
	e.Batch.Key = fmt.Sprintf("%s/%d/%d", c.shard, e.Bucket, seq)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches++
	if !reflect.DeepEqual(e.Batch, b) {
		c.diffs = append(c.diffs, fmt.Sprintf("entry %d: sent %+v, Pebble holds %+v", seq, b, e.Batch))
	}
	return nil
}

// TestDrainCacheSendsWhatPebbleHolds: the batches the drain sends from
// its in-memory cache are exactly the outbox entries Pebble holds, and
// the cache is used (entries wait in it while the sink is held).
func TestDrainCacheSendsWhatPebbleHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	st := makeStream(t, gen.Config{Seed: 21, Events: 3000}, r)
	db, err := OpenDB(t.TempDir(), checkpoint.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const shard = "shardId-000000000021"
	w := &checkingSink{db: db, shard: shard, hold: make(chan struct{})}
	clk := &fakeClock{now: st.recs[0].Arrival}
	cfg := testConfig(t, clk, &Stats{})
	cfg.BarrierInterval = time.Second
	s, err := NewShard(shard, db, w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx, ""); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held := true
	for _, b := range batches(st.recs, r, 500) {
		clk.Set(b[len(b)-1].Arrival)
		if err := s.Process(ctx, b, false); err != nil {
			t.Fatal(err)
		}
		if held && s.drain.pending() > 0 {
			s.drain.mu.Lock()
			cached := len(s.drain.mu.cache)
			s.drain.mu.Unlock()
			if cached == 0 {
				t.Fatal("outbox entries pending, none in the drain's cache")
			}
			close(w.hold)
			held = false
		}
	}
	if held {
		t.Fatal("no outbox entry was written")
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.batches == 0 {
		t.Fatal("no batch sent")
	}
	for _, d := range w.diffs[:min(len(w.diffs), 3)] {
		t.Error(d)
	}
}
