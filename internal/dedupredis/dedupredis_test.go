package dedupredis

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/redis/go-redis/v9"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testPrefix is a key space of its own for each test, so runs do not see
// each other's keys in the shared stand-in.
func testPrefix(t testing.TB) string {
	return fmt.Sprintf("lineageflow-test:%s:%d:%d:", t.Name(), os.Getpid(), time.Now().UnixNano())
}

func newStore(t testing.TB, url, prefix string) *Store {
	t.Helper()
	s, err := New(Config{URL: url, Prefix: prefix, Timeout: time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{}, {URL: "http://x:1"}, {URL: "redis://127.0.0.1:1/0", TTL: time.Millisecond}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted a bad config", c)
		}
	}
	if _, err := New(Config{URL: "redis://127.0.0.1:1/3"}); err != nil {
		t.Errorf("New with a good URL: %v", err)
	}
}

// TestClaimOnRedis: SET NX GET semantics on the real server: the first
// owner stays, later claims read it back, the key has the TTL.
func TestClaimOnRedis(t *testing.T) {
	url := testenv.Redis(t)
	prefix := testPrefix(t)
	s := newStore(t, url, prefix)
	ctx := ctxT(t)
	k1, k2 := sha256.Sum256([]byte("one")), sha256.Sum256([]byte("two"))
	cs := []processor.SharedClaim{{Key: k1, Owner: "a/1/0"}, {Key: k2, Owner: "a/2/0"}, {Key: k1, Owner: "a/3/0"}}
	if err := s.Claim(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if cs[0].Prior != "" || cs[1].Prior != "" || cs[2].Prior != "a/1/0" {
		t.Fatalf("priors %q %q %q, want \"\" \"\" a/1/0", cs[0].Prior, cs[1].Prior, cs[2].Prior)
	}
	again := []processor.SharedClaim{{Key: k2, Owner: "b/9/0"}}
	if err := s.Claim(ctx, again); err != nil {
		t.Fatal(err)
	}
	if again[0].Prior != "a/2/0" {
		t.Fatalf("prior %q, want a/2/0", again[0].Prior)
	}
	ttl, err := s.c.TTL(ctx, prefix+fmt.Sprintf("%x", k1)).Result()
	if err != nil || ttl <= 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("TTL of a claimed key = %v, %v; want about 24h", ttl, err)
	}
	if err := s.Status(); err != nil {
		t.Fatalf("Status after successful claims: %v", err)
	}
}

// shard starts a processor shard (an in-memory Pebble) using shared.
func shard(t *testing.T, id string, shared processor.SharedDedup, st *processor.Stats) *processor.Shard {
	t.Helper()
	db, err := processor.OpenDB("db", checkpoint.Options{FS: vfs.NewMem(), Logger: quiet, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	// A claim deadline far above the 50 ms default: these tests check what
	// is counted, and one claim slowed past the deadline (the race
	// detector on a loaded machine) would fall back and back off for the
	// rest of the test. The hanging-Redis test is bounded by its store's
	// own 20 ms client timeout.
	cfg := processor.PipelineConfig{Stats: st, Logger: quiet, BarrierInterval: time.Hour, Dedup: processor.DedupConfig{SharedTimeout: 5 * time.Second}}
	if shared != nil {
		cfg.Dedup.Shared = shared
	}
	s, err := processor.NewShard(id, db, sink.NewMemory(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctxT(t), ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Abandon(); db.Close() })
	return s
}

func seq(n int) string { return fmt.Sprintf("49590338271490256608559692538361570959215759890%09d", n) }

// records turns generated records into a shard's records.
func records(t testing.TB, cfg gen.Config, from int) []processor.Record {
	var out []processor.Record
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err := gen.Stream(cfg, func(g gen.Record) error {
		n := from + len(out)
		out = append(out, processor.Record{Seq: seq(n), Arrival: at.Add(time.Duration(n) * time.Millisecond), Data: g.Data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTwoWorkersShareRedis: two workers (each its own Pebble and dedup
// set, its own Redis client) share the Redis stand-in. Worker B receives
// producer retries of records worker A processed: B counts each as a
// duplicate (duplicates_detected) though its local tier never saw them;
// without the shared tier B counts none (the shortfall the issue names).
func TestTwoWorkersShareRedis(t *testing.T) {
	url := testenv.Redis(t)
	prefix := testPrefix(t)
	ctx := ctxT(t)
	a := records(t, gen.Config{Seed: 41, Events: 300, DuplicateShare: -1, MalformedShare: -1}, 1)
	own := records(t, gen.Config{Seed: 42, Events: 300, DuplicateShare: -1, MalformedShare: -1}, 1)
	var b []processor.Record
	retries := 0
	for i := range own {
		b = append(b, own[i])
		if i%4 == 0 && i < len(a) {
			b = append(b, processor.Record{Arrival: own[i].Arrival, Data: a[i].Data})
			retries++
		}
	}
	for i := range b {
		b[i].Seq = seq(i + 1)
	}

	run := func(shared bool) (stA, stB *processor.Stats) {
		stA, stB = &processor.Stats{}, &processor.Stats{}
		var da, db processor.SharedDedup
		if shared {
			da, db = newStore(t, url, prefix), newStore(t, url, prefix) // two workers: two clients
		}
		wa := shard(t, "shardId-000000000000", da, stA)
		wb := shard(t, "shardId-000000000001", db, stB)
		for i := 0; i < len(a); i += 100 {
			if err := wa.Process(ctx, a[i:min(i+100, len(a))], false); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < len(b); i += 100 {
			if err := wb.Process(ctx, b[i:min(i+100, len(b))], false); err != nil {
				t.Fatal(err)
			}
		}
		return stA, stB
	}
	_, stB := run(true)
	if got := stB.Duplicates.Load(); got != int64(retries) || retries == 0 {
		t.Fatalf("with Redis: worker B counted %d duplicates, want the %d records worker A had seen", got, retries)
	}
	if got := stB.SharedDedupDuplicates.Load(); got != int64(retries) {
		t.Fatalf("with Redis: %d duplicates found by the shared tier only, want %d", got, retries)
	}
	if stB.SharedDedupFallbacks.Load() != 0 || stB.SharedDedupDegraded() {
		t.Fatalf("fallbacks %d degraded %v against a running Redis", stB.SharedDedupFallbacks.Load(), stB.SharedDedupDegraded())
	}
	_, local := run(false)
	if local.Duplicates.Load() != 0 {
		t.Fatalf("local tier alone counted %d duplicates across workers: it cannot know them", local.Duplicates.Load())
	}
	t.Logf("duplicates injected across workers %d: shared tier %d, local tier alone %d (shortfall %d)",
		retries, stB.Duplicates.Load(), local.Duplicates.Load(), int64(retries)-local.Duplicates.Load())
}

// TestReplayCountsDuplicatesOnceOnRedis: on the real server, a stream
// with producer retries is processed up to two thirds by worker A, whose
// shard then moves (no checkpoint) to worker B, which replays it all from
// the same positions, while A re-sends its last batch (an owner finishing
// the batch it had when it lost the lease). Each duplicate counts once
// over A and B, as the generator injected them; the counted markers and
// the key have the TTL.
func TestReplayCountsDuplicatesOnceOnRedis(t *testing.T) {
	url := testenv.Redis(t)
	prefix := testPrefix(t)
	ctx := ctxT(t)
	gc := gen.Config{Seed: 43, Events: 600, DuplicateShare: 0.2, MalformedShare: -1}
	recs := records(t, gc, 1)
	injected := 0
	if err := gen.Stream(gc, func(g gen.Record) error {
		if g.Duplicate {
			injected++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if injected == 0 {
		t.Fatal("no duplicates generated")
	}
	stA, stB := &processor.Stats{}, &processor.Stats{}
	a := shard(t, "shardId-000000000000", newStore(t, url, prefix), stA)
	b := shard(t, "shardId-000000000000", newStore(t, url, prefix), stB)
	cut := 2 * len(recs) / 3
	for i := 0; i < cut; i += 100 {
		if err := a.Process(ctx, recs[i:min(i+100, cut)], false); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < len(recs); i += 70 {
		if err := b.Process(ctx, recs[i:min(i+70, len(recs))], false); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Process(ctx, recs[cut-100:cut], false); err != nil { // A's last batch again
		t.Fatal(err)
	}
	if stA.Duplicates.Load() == 0 || stB.Duplicates.Load() == 0 {
		t.Fatalf("duplicates A %d B %d: both must have met some for the test to mean anything",
			stA.Duplicates.Load(), stB.Duplicates.Load())
	}
	if got := stA.Duplicates.Load() + stB.Duplicates.Load(); got != int64(injected) {
		t.Fatalf("duplicates summed over A and B = %d (%d + %d), want the %d injected",
			got, stA.Duplicates.Load(), stB.Duplicates.Load(), injected)
	}
	if stA.SharedDedupFallbacks.Load()+stB.SharedDedupFallbacks.Load() != 0 {
		t.Fatal("fallbacks against a running Redis")
	}
	// The counted markers: one per duplicate's position (the positions
	// whose bytes an earlier position carried).
	var markers []string
	first := map[string]bool{}
	for _, r := range recs {
		if first[string(r.Data)] {
			markers = append(markers, prefix+"dup:shardId-000000000000/"+r.Seq+"/0")
		}
		first[string(r.Data)] = true
	}
	c := newStore(t, url, prefix).c
	if n, err := c.Exists(ctx, markers...).Result(); err != nil || n != int64(injected) || len(markers) != injected {
		t.Fatalf("%d of the %d duplicates' positions marked counted in Redis (%v), want all (%d injected)", n, len(markers), err, injected)
	}
	ttl, err := c.TTL(ctx, markers[0]).Result()
	if err != nil || ttl <= 23*time.Hour || ttl > 24*time.Hour {
		t.Fatalf("TTL of a counted marker = %v, %v; want about 24h", ttl, err)
	}
}

// TestClaimCountsOncePerPosition: the second claim of a key from another
// position gets Count once; the same position claiming again (a replay)
// does not, nor does the first owner.
func TestClaimCountsOncePerPosition(t *testing.T) {
	url := testenv.Redis(t)
	s := newStore(t, url, testPrefix(t))
	ctx := ctxT(t)
	k := sha256.Sum256([]byte("x"))
	cs := []processor.SharedClaim{{Key: k, Owner: "s/1/0"}, {Key: k, Owner: "s/2/0"}}
	if err := s.Claim(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if cs[1].Prior != "s/1/0" || !cs[1].Count || cs[0].Count {
		t.Fatalf("claims %+v, want the second a counted duplicate of the first", cs)
	}
	again := []processor.SharedClaim{{Key: k, Owner: "s/2/0"}, {Key: k, Owner: "s/1/0"}}
	if err := s.Claim(ctx, again); err != nil {
		t.Fatal(err)
	}
	if again[0].Prior != "s/1/0" || again[0].Count || again[1].Count {
		t.Fatalf("replayed claims %+v, want the duplicate not counted again", again)
	}
}

// silentServer accepts connections and never answers: a Redis that hangs.
func silentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "redis://" + l.Addr().String() + "/0"
}

// TestHangingRedisDoesNotBlock: a Redis that accepts and never answers.
// Process still completes every record (the claim ends at its timeout, the
// local tier decides), counts the fallback, says degraded, and the store
// backs off: the next batches do not wait for Redis at all.
func TestHangingRedisDoesNotBlock(t *testing.T) {
	url := silentServer(t)
	st, err := New(Config{URL: url, Prefix: "x:", Timeout: 20 * time.Millisecond, Backoff: time.Hour, BackoffMax: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stats := &processor.Stats{}
	s := shard(t, "shardId-000000000000", st, stats)
	recs := records(t, gen.Config{Seed: 43, Events: 200}, 1)
	ctx := ctxT(t)
	for i := 0; i < len(recs); i += 50 {
		if err := s.Process(ctx, recs[i:min(i+50, len(recs))], false); err != nil {
			t.Fatal(err)
		}
	}
	if got := stats.Records.Load(); got != int64(len(recs)) {
		t.Fatalf("processed %d records of %d", got, len(recs))
	}
	if got := stats.SharedDedupFallbacks.Load(); got != int64(len(recs)) {
		t.Fatalf("fallbacks %d, want every record (%d)", got, len(recs))
	}
	if !stats.SharedDedupDegraded() || st.Status() == nil {
		t.Fatal("not reported degraded while Redis hangs")
	}
	// Backing off: Claim answers ErrUnavailable without a round trip.
	err = st.Claim(ctx, []processor.SharedClaim{{Key: sha256.Sum256([]byte("x")), Owner: "o"}})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("claim while backing off: %v, want ErrUnavailable", err)
	}
	// Local tier still counts duplicates inside the shard.
	if stats.Duplicates.Load() == 0 {
		t.Fatal("no duplicates counted by the local tier (the generator injects some)")
	}
}

// tcpProxy forwards to target until down() drops every connection and
// refuses new ones; up() forwards again.
type tcpProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	refuse bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *tcpProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{l: l, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			refuse := p.refuse
			p.mu.Unlock()
			if refuse {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(u, c); u.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(func() { p.down(); l.Close(); p.wg.Wait() })
	return p
}

func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *tcpProxy) up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = false
}

// TestRedisDownThenBack: the real Redis behind a proxy that goes down and
// comes back: the claim fails (the processor falls back), the store
// reports it, and after the backoff a claim reaches Redis again.
func TestRedisDownThenBack(t *testing.T) {
	live := testenv.Redis(t)
	opt, err := redis.ParseURL(live)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, opt.Addr)
	s, err := New(Config{URL: "redis://" + p.l.Addr().String() + "/0", Prefix: testPrefix(t), Timeout: 500 * time.Millisecond,
		Backoff: 20 * time.Millisecond, BackoffMax: 20 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := ctxT(t)
	claim := func(owner string) ([]processor.SharedClaim, error) {
		cs := []processor.SharedClaim{{Key: sha256.Sum256([]byte("k")), Owner: owner}}
		return cs, s.Claim(ctx, cs)
	}
	if _, err := claim("first"); err != nil {
		t.Fatalf("claim through the proxy: %v", err)
	}
	p.down()
	if _, err := claim("second"); err == nil {
		t.Fatal("claim succeeded with Redis unreachable")
	}
	if s.Status() == nil {
		t.Fatal("Status nil after a failed claim")
	}
	p.up()
	deadline := time.Now().Add(10 * time.Second)
	for {
		cs, err := claim("third")
		if err == nil {
			if cs[0].Prior != "first" {
				t.Fatalf("after recovery prior = %q, want first (the key survived in Redis)", cs[0].Prior)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no successful claim 10s after Redis came back: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	if err := s.Status(); err != nil {
		t.Fatalf("Status after recovery: %v", err)
	}
}
