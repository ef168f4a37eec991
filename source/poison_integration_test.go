package source_test

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
	"google.golang.org/protobuf/encoding/protowire"
)

// completeEvent is a COMPLETE RunEvent of its own run: in -> job -> out.
func completeEvent(ns string, i int) []byte {
	var id [16]byte
	_, _ = rand.Read(id[:])
	h := hex.EncodeToString(id[:])
	runID := h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
	return []byte(fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":"2026-01-01T00:00:%02d.000Z","run":{"runId":%q},`+
		`"job":{"namespace":%q,"name":"job%d"},"inputs":[{"namespace":%q,"name":"in%d"}],"outputs":[{"namespace":%q,"name":"out%d"}],`+
		`"producer":"poison-test","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`,
		i%60, runID, ns, i, ns, i, ns, i))
}

// sealed frames msg as a KPL aggregate with a valid MD5.
func sealed(msg []byte) []byte {
	sum := md5.Sum(msg)
	out := append(append([]byte{}, kpl.Magic[:]...), msg...)
	return append(out, sum[:]...)
}

// badIndex: one partition key, a user record pointing at key 7 (the
// KCL's own de-aggregator panics on it).
func badIndex(data []byte) []byte {
	var rec, msg []byte
	rec = protowire.AppendTag(rec, 1, protowire.VarintType)
	rec = protowire.AppendVarint(rec, 7)
	rec = protowire.AppendTag(rec, 3, protowire.BytesType)
	rec = protowire.AppendBytes(rec, data)
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendString(msg, "k")
	msg = protowire.AppendTag(msg, 3, protowire.BytesType)
	msg = protowire.AppendBytes(msg, rec)
	return sealed(msg)
}

// badProtobuf: a valid MD5 over a message that does not decode (the KCL's
// de-aggregator drops the whole batch on it).
func badProtobuf() []byte { return sealed([]byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}) }

// TestPoisonAggregates is issue 11's Done-when on the real stand-ins
// (kinesalite, dynalite, Gremlin Server): good records (plain and in a
// KPL aggregate), a bad-index aggregate, good records, a bad-protobuf
// aggregate and good records on one shard, all in one GetRecords batch.
// The worker keeps running, every good record's edges are in the graph
// (exactly: nothing else in the test's namespace), both bad aggregates are
// dead letters with reason kpl_corrupt and their sequence numbers, and the
// KCL checkpoint reaches the last record only with all of that done.
func TestPoisonAggregates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "poison")
	gremlin := testenv.Gremlin(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	ns := "poison-" + hex.EncodeToString(rnd[:])

	var good [][]byte
	ev := func() []byte {
		e := completeEvent(ns, len(good))
		good = append(good, e)
		return e
	}
	type put struct {
		data []byte
		bad  bool
	}
	var puts []put
	for i := 0; i < 3; i++ {
		puts = append(puts, put{data: ev()})
	}
	puts = append(puts, put{data: badIndex(completeEvent(ns+"-lost", 0)), bad: true})
	puts = append(puts, put{data: kpl.Marshal([]kpl.Record{{PartitionKey: "a", Data: ev()}, {PartitionKey: "b", Data: ev()}, {PartitionKey: "c", Data: ev()}})})
	puts = append(puts, put{data: ev()})
	puts = append(puts, put{data: badProtobuf(), bad: true})
	puts = append(puts, put{data: ev()})
	puts = append(puts, put{data: kpl.Marshal([]kpl.Record{{PartitionKey: "d", Data: ev()}, {PartitionKey: "e", Data: ev()}})})
	want := refmodel.Build(good, refmodel.Options{})
	if len(want.Edges) != 3*len(good) {
		t.Fatalf("reference: %d edges for %d events, want 3 each", len(want.Edges), len(good))
	}

	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var badSeqs []string
	var lastSeq string
	for _, p := range puts {
		lastSeq = putOne(ctx, t, h, "poison", p.data)
		if p.bad {
			badSeqs = append(badSeqs, lastSeq)
		}
	}
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + gremlin})
	if err != nil {
		t.Fatal(err)
	}
	// The wire format the run chose (LINEAGEFLOW_KINESIS_PROTOCOL, forwarded
	// by the harness) is the one the worker reads with.
	if p := os.Getenv("LINEAGEFLOW_KINESIS_PROTOCOL"); p != "" {
		if err := h.WaitFor(ctx, 30*time.Second, "the worker's GetRecords wire format in its log", func() (bool, error) {
			return strings.Contains(w.Log(), "kinesis_protocol="+p), nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	// Every good edge in the graph, nothing else of the namespace.
	expected := verify.Expected{Vertices: want.Vertices, Edges: want.Edges}
	var rep *verify.Report
	err = h.WaitFor(ctx, 90*time.Second, "the good records' edges in Gremlin", func() (bool, error) {
		if done, err := w.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", err)
		}
		snap, err := graph.Dump(gremlin, 30*time.Second)
		if err != nil {
			return false, nil
		}
		rep = verify.Compare(expected, onlyNamespace(snap, ns))
		return rep.OK(), nil
	})
	if err != nil {
		if rep != nil {
			t.Log(rep.String())
		}
		t.Fatal(err)
	}
	err = h.WaitFor(ctx, 60*time.Second, "the KCL checkpoint to reach the last record", func() (bool, error) {
		if done, err := w.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", err)
		}
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, err
		}
		return len(ls) == 1 && isSeq(ls[0].Checkpoint) && checkpoint.CompareSeq(ls[0].Checkpoint, lastSeq) >= 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st["invalid"] != 2 {
		t.Errorf("stats: invalid %d, want 2 (%v)", st["invalid"], st)
	}
	if err := w.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if log := w.Log(); strings.Contains(log, "panic") {
		t.Errorf("the worker log mentions a panic")
	}

	db, err := processor.OpenDB(filepath.Clean(w.DataDir), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var dls []checkpoint.DeadLetter
	if err := checkpoint.ListDeadLetters(db, func(d checkpoint.DeadLetter) error { dls = append(dls, d); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(dls) != 2 {
		t.Fatalf("%d dead letters, want 2: %+v", len(dls), dls)
	}
	for i, d := range dls {
		if d.Reason != string(lineage.ReasonKPLCorrupt) || d.Seq != badSeqs[i] || !strings.Contains(d.Message, "corrupt") {
			t.Errorf("dead letter %d: reason %s seq %s message %q; want kpl_corrupt, seq %s, a message saying corrupt", i, d.Reason, d.Seq, d.Message, badSeqs[i])
		}
	}
	t.Logf("%d good events, %d edges in Gremlin; dead letters: %s %q, %s %q", len(good), len(want.Edges), dls[0].Seq, dls[0].Message, dls[1].Seq, dls[1].Message)
}

// onlyNamespace keeps the vertices whose namespace starts with ns and the
// edges that touch one of them: the Gremlin stand-in is shared with other
// tests.
func onlyNamespace(s *graph.Snapshot, ns string) *graph.Snapshot {
	out := &graph.Snapshot{}
	keep := map[string]bool{}
	for _, v := range s.Vertices {
		// A Run vertex has no namespace of its own: its job's names it.
		ok := false
		for _, key := range []string{"namespace", lineage.PropJobNamespace} {
			if vs := v.Props[key]; len(vs) > 0 && strings.HasPrefix(fmt.Sprint(vs[0]), ns) {
				ok = true
			}
		}
		if ok {
			keep[v.ID] = true
			out.Vertices = append(out.Vertices, v)
		}
	}
	for _, e := range s.Edges {
		if keep[e.OutV] || keep[e.InV] {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}

// sizedEvent is a COMPLETE RunEvent of exactly size bytes, most of it a
// schema facet on its output and a columnLineage facet (the shape of a
// Spark event over a wide table).
func sizedEvent(t *testing.T, ns string, i, size int) []byte {
	t.Helper()
	var fields, cols strings.Builder
	for n := 0; fields.Len()+cols.Len() < size-2048; n++ {
		if n > 0 {
			fields.WriteByte(',')
			cols.WriteByte(',')
		}
		fmt.Fprintf(&fields, `{"name":"col_%06d","type":"decimal(38,9)","description":"measure %d"}`, n, n)
		fmt.Fprintf(&cols, `"col_%06d":{"inputFields":[{"namespace":%q,"name":"in%d","field":"src_%06d"}]}`, n, ns, i, n)
	}
	head := completeEvent(ns, i)
	// Put the facets on the output and pad the producer to the exact size.
	out := fmt.Sprintf(`"outputs":[{"namespace":%q,"name":"out%d","facets":{"schema":{"_producer":"p","_schemaURL":"s","fields":[%s]},"columnLineage":{"_producer":"p","_schemaURL":"s","fields":{%s}}}}]`,
		ns, i, fields.String(), cols.String())
	ev := strings.Replace(string(head), fmt.Sprintf(`"outputs":[{"namespace":%q,"name":"out%d"}]`, ns, i), out, 1)
	pad := size - len(ev)
	if pad < 0 {
		t.Fatalf("event of %d bytes over %d", len(ev), size)
	}
	ev = strings.Replace(ev, `"producer":"poison-test"`, `"producer":"poison-test`+strings.Repeat("x", pad)+`"`, 1)
	if len(ev) != size {
		t.Fatalf("event of %d bytes, want %d", len(ev), size)
	}
	return []byte(ev)
}

// TestLargeEvents: a 1 MiB event (the Kinesis limit, and the decoder's
// default) and a 700 KB Spark-like one give their edges end to end
// (kinesalite, dynalite, Gremlin Server); no dead letter.
func TestLargeEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "large")
	gremlin := testenv.Gremlin(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	ns := "large-" + hex.EncodeToString(rnd[:])
	const key = "k" // Kinesis counts the partition key in the 1 MiB
	events := [][]byte{sizedEvent(t, ns, 0, 1<<20-len(key)), sizedEvent(t, ns, 1, 700_000), completeEvent(ns, 2)}
	// Column lineage off: this test is about record size. The wide
	// events' columnLineage facets would add ~30,000 field records, which
	// the Gremlin stand-in takes minutes to write (a write-cost question,
	// not a size one; bench/RESULTS.md).
	want := refmodel.Build(events, refmodel.Options{NoColumns: true})
	if want.Invalid != 0 || len(want.Edges) != 9 {
		t.Fatalf("reference: %d invalid, %d edges; want 0 and 9", want.Invalid, len(want.Edges))
	}
	if err := h.CreateStream(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var lastSeq string
	for _, e := range events {
		lastSeq = putOne(ctx, t, h, key, e)
	}
	w, err := h.StartWorker(ctx, harness.WorkerSpec{ID: "w1", Sink: "gremlin:" + gremlin, Args: []string{"-column-lineage=false"}})
	if err != nil {
		t.Fatal(err)
	}
	expected := verify.Expected{Vertices: want.Vertices, Edges: want.Edges}
	var rep *verify.Report
	err = h.WaitFor(ctx, 90*time.Second, "the large events' edges in Gremlin", func() (bool, error) {
		if done, err := w.Exited(); done {
			return false, fmt.Errorf("worker exited: %w", err)
		}
		snap, err := graph.Dump(gremlin, 30*time.Second)
		if err != nil {
			return false, nil
		}
		rep = verify.Compare(expected, onlyNamespace(snap, ns))
		return rep.OK(), nil
	})
	if err != nil {
		if rep != nil {
			t.Log(rep.String())
		}
		t.Fatal(err)
	}
	err = h.WaitFor(ctx, 60*time.Second, "the KCL checkpoint to reach the last record", func() (bool, error) {
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, err
		}
		return len(ls) == 1 && isSeq(ls[0].Checkpoint) && checkpoint.CompareSeq(ls[0].Checkpoint, lastSeq) >= 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st["invalid"] != 0 {
		t.Errorf("stats: invalid %d, want 0 (%v)", st["invalid"], st)
	}
	t.Logf("events of %d, %d and %d bytes: %d edges in Gremlin", len(events[0]), len(events[1]), len(events[2]), len(want.Edges))
}
