package processor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/leakcheck"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// fakeClock is an injected processing-time clock; tests move it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

// stream is a synthetic shard: gen records with sequence numbers, sub
// indexes (some records KPL-aggregated) and arrival times.
type stream struct {
	recs []Record
	data [][]byte // payloads in stream order, for the reference model
}

// seqBase makes 56-digit sequence numbers like Kinesis's; the counter
// crosses a power of ten in long streams only in the low digits.
const seqBase = "4959033827149025660855969253836157095921575989"

func seqOf(n int) string { return fmt.Sprintf("%s%010d", seqBase, n) }

func makeStream(t testing.TB, cfg gen.Config, r *rand.Rand) stream {
	var st stream
	arrival := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) // after every eventTime of the test data (lineage.Guard)
	n := 0
	sub := uint32(0)
	err := gen.Stream(cfg, func(g gen.Record) error {
		st.data = append(st.data, g.Data)
		// One in five records shares the previous sequence number (as a
		// KPL-aggregated user record would), unless it is the first.
		if n > 0 && r.IntN(5) == 0 {
			sub++
		} else {
			n++
			sub = 0
			arrival = arrival.Add(time.Duration(r.IntN(40)) * time.Millisecond)
		}
		st.recs = append(st.recs, Record{Seq: seqOf(n), Sub: sub, Arrival: arrival, Data: g.Data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// batches cuts recs into random batches that never split a sequence
// number's sub-records (as KCL never does).
func batches(recs []Record, r *rand.Rand, max int) [][]Record {
	var out [][]Record
	for i := 0; i < len(recs); {
		j := i + 1 + r.IntN(max)
		if j > len(recs) {
			j = len(recs)
		}
		for j < len(recs) && recs[j].Seq == recs[j-1].Seq {
			j++
		}
		out = append(out, recs[i:j])
		i = j
	}
	return out
}

func graphOf(m *sink.Memory) *refmodel.Graph {
	g := &refmodel.Graph{Vertices: map[string]lineage.Vertex{}, Edges: map[string]lineage.Edge{}}
	for _, v := range m.Vertices() {
		g.Vertices[v.ID] = v
	}
	for _, e := range m.Edges() {
		g.Edges[e.ID] = e
	}
	return g
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// openMem opens a DB on fs and checks that the test leaves no goroutine
// running (the outbox drains of its shards, Pebble's own).
func openMem(t testing.TB, fs vfs.FS) *pebble.DB {
	t.Helper()
	leakcheck.Check(t)
	db, err := OpenDB("db", checkpoint.Options{FS: fs, Logger: testLogger(t), MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func testConfig(t testing.TB, clk *fakeClock, st *Stats) PipelineConfig {
	return PipelineConfig{
		Clock: clk.Now, Stats: st, Logger: testLogger(t),
		BarrierInterval: time.Hour, // barriers only where the test puts them, at seals and when full
		Drain:           DrainConfig{Backoff: time.Millisecond, BackoffMax: 5 * time.Millisecond},
	}
}

// kclStore plays the KCL checkpoint table: the last checkpoint a shard
// asked for.
type kclStore struct{ seq string }

func (k *kclStore) take(s *Shard) {
	if seq, ok := s.Checkpoint(); ok {
		if checkpoint.CompareSeq(seq, k.seq) < 0 {
			panic("checkpoint went back")
		}
		k.seq = seq
	}
}

// feedFrom returns the records strictly after the KCL checkpoint.
func feedFrom(recs []Record, kcl string) []Record {
	if kcl == "" {
		return recs
	}
	for i, r := range recs {
		if checkpoint.CompareSeq(r.Seq, kcl) > 0 {
			return recs[i:]
		}
	}
	return nil
}

func wantGraph(st stream) *refmodel.Graph {
	return refmodel.Build(st.data, refmodel.Options{Policy: "strict"})
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func itoa(n int) string { return fmt.Sprint(n) }

func refmodelCompare(want, got *refmodel.Graph) string {
	d := refmodel.Compare(want, got)
	if d.Empty() {
		return ""
	}
	return d.String()
}
