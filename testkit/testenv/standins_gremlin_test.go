package testenv_test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// gremlinCallTimeout bounds every call to the server: gremlin-go has no
// context and no client-side timeout, so a call could block forever.
const gremlinCallTimeout = 30 * time.Second

// tryList runs a traversal with ToList (Next hides server errors in
// gremlin-go v3.7.4) under a deadline.
func tryList(tr *gremlingo.GraphTraversal) ([]*gremlingo.Result, error) {
	type res struct {
		r   []*gremlingo.Result
		err error
	}
	ch := make(chan res, 1)
	go func() {
		r, err := tr.ToList()
		ch <- res{r, err}
	}()
	select {
	case got := <-ch:
		return got.r, got.err
	case <-time.After(gremlinCallTimeout):
		return nil, fmt.Errorf("no answer from Gremlin Server within %v", gremlinCallTimeout)
	}
}

func toList(t *testing.T, what string, tr *gremlingo.GraphTraversal) []*gremlingo.Result {
	t.Helper()
	r, err := tryList(tr)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return r
}

func connectGremlin(t *testing.T) *gremlingo.GraphTraversalSource {
	t.Helper()
	endpoint := testenv.Gremlin(t)
	conn, err := gremlingo.NewDriverRemoteConnection(endpoint, func(s *gremlingo.DriverRemoteConnectionSettings) {
		s.TraversalSource = "g"
		s.LogVerbosity = gremlingo.Warning
		s.ConnectionTimeout = 10 * time.Second
	})
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(conn.Close)
	return gremlingo.Traversal_().WithRemote(conn)
}

// TestStandinGremlinMergeIdempotent checks that the Gremlin Server stand-in
// behaves like Neptune for the writes the sink does: user-supplied string ids
// with awkward characters, mergeV/mergeE upserts that are idempotent,
// properties replaced with single cardinality, and set cardinality by
// default.
func TestStandinGremlinMergeIdempotent(t *testing.T) {
	g := connectGremlin(t)

	// A unique prefix per run: the instance is shared with other tests, so
	// this test only ever drops its own vertices (never g.V().drop()).
	prefix := fmt.Sprintf("testenv-%d-%d|", os.Getpid(), time.Now().UnixNano())
	ownV := func() *gremlingo.GraphTraversal {
		return g.V().HasId(gremlingo.TextP.StartingWith(prefix))
	}
	toList(t, "clean up before", ownV().Drop())
	t.Cleanup(func() { toList(t, "clean up after", ownV().Drop()) })

	dsID := prefix + "dataset:11:s3://bucket/a|b"
	jobID := prefix + "job:7:airflow/dag.task with space"
	edgeID := prefix + "OUTPUTS|" + jobID + "|" + dsID

	upsert := func(run int) {
		t.Helper()
		lastSeen := fmt.Sprintf("2024-01-0%dT00:00:00Z", run)
		for _, v := range []struct{ id, label string }{{dsID, "Dataset"}, {jobID, "Job"}} {
			toList(t, fmt.Sprintf("mergeV %q run %d", v.id, run),
				g.MergeV(map[interface{}]interface{}{gremlingo.T.Id: v.id, gremlingo.T.Label: v.label}).
					Option(gremlingo.Merge.OnCreate, map[interface{}]interface{}{gremlingo.T.Label: v.label, "createdRun": int64(run)}).
					Property(gremlingo.Cardinality.Single, "lastSeen", lastSeen).
					Property(gremlingo.Cardinality.Single, "run", int64(run)))
		}
		toList(t, fmt.Sprintf("mergeE run %d", run),
			g.MergeE(map[interface{}]interface{}{
				gremlingo.T.Id:          edgeID,
				gremlingo.T.Label:       "OUTPUTS",
				gremlingo.Direction.Out: jobID,
				gremlingo.Direction.In:  dsID,
			}).Property("lastSeen", lastSeen).Property("lastRunId", fmt.Sprintf("run-%d", run)))
	}
	upsert(1)
	upsert(2)

	// Exactly one vertex per id, with a string id.
	for _, id := range []string{dsID, jobID} {
		rs := toList(t, "read vertex", g.V(id))
		if len(rs) != 1 {
			t.Fatalf("g.V(%q): %d vertices, want 1", id, len(rs))
		}
		v, err := rs[0].GetVertex()
		if err != nil {
			t.Fatalf("g.V(%q): %v", id, err)
		}
		if got, ok := v.Id.(string); !ok || got != id {
			t.Fatalf("g.V(%q).id = %#v (%T), want the string id", id, v.Id, v.Id)
		}
		// Single cardinality: the second run replaced the values.
		for key, want := range map[string]interface{}{"lastSeen": "2024-01-02T00:00:00Z", "run": int64(2), "createdRun": int64(1)} {
			vals := toList(t, "read "+key, g.V(id).Values(key))
			if len(vals) != 1 {
				t.Fatalf("g.V(%q).values(%q): %d values %v, want exactly 1", id, key, len(vals), vals)
			}
			if got := vals[0].GetInterface(); got != want {
				t.Fatalf("g.V(%q).values(%q) = %#v, want %#v", id, key, got, want)
			}
		}
	}
	if n := len(toList(t, "own vertices", ownV())); n != 2 {
		t.Fatalf("%d vertices with the test prefix, want 2", n)
	}

	// Exactly one edge, with its string id, between the right vertices.
	rs := toList(t, "read edges", g.V(jobID).OutE("OUTPUTS"))
	if len(rs) != 1 {
		t.Fatalf("g.V(job).outE(OUTPUTS): %d edges, want 1", len(rs))
	}
	e, err := rs[0].GetEdge()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := e.Id.(string); !ok || got != edgeID {
		t.Fatalf("edge id = %#v (%T), want %q", e.Id, e.Id, edgeID)
	}
	if e.OutV.Id != jobID || e.InV.Id != dsID {
		t.Fatalf("edge %v -> %v, want %q -> %q", e.OutV.Id, e.InV.Id, jobID, dsID)
	}
	if got := toList(t, "read edge by id", g.E(edgeID).Values("lastRunId")); len(got) != 1 || got[0].GetString() != "run-2" {
		t.Fatalf("g.E(id).values(lastRunId) = %v, want [run-2]", got)
	}

	// The stand-in's default vertex property cardinality is set, like
	// Neptune: a property written without a cardinality accumulates values.
	toList(t, "set-cardinality writes", g.V(dsID).Property("tag", "a").Property("tag", "b").Property("tag", "a"))
	var tags []string
	for _, r := range toList(t, "read tags", g.V(dsID).Values("tag")) {
		tags = append(tags, r.GetString())
	}
	sort.Strings(tags)
	if fmt.Sprint(tags) != "[a b]" {
		t.Fatalf("tags = %v, want [a b] (defaultVertexPropertyCardinality=set)", tags)
	}
}

// TestStandinGremlinRejectsDuplicateEdgeID checks that the stand-in enforces
// unique edge ids (as Neptune does): addE with an existing id fails and the
// error reaches the client through ToList.
func TestStandinGremlinRejectsDuplicateEdgeID(t *testing.T) {
	g := connectGremlin(t)
	prefix := fmt.Sprintf("testenv-dup-%d-%d|", os.Getpid(), time.Now().UnixNano())
	own := func() *gremlingo.GraphTraversal { return g.V().HasId(gremlingo.TextP.StartingWith(prefix)) }
	toList(t, "clean up before", own().Drop())
	t.Cleanup(func() { toList(t, "clean up after", own().Drop()) })

	a, b, eid := prefix+"a", prefix+"b", prefix+"e"
	toList(t, "add vertices", g.AddV("X").Property(gremlingo.T.Id, a).AddV("X").Property(gremlingo.T.Id, b))
	add := func() error {
		_, err := tryList(g.AddE("L").From(gremlingo.T__.V(a)).To(gremlingo.T__.V(b)).Property(gremlingo.T.Id, eid))
		return err
	}
	if err := add(); err != nil {
		t.Fatalf("first addE: %v", err)
	}
	err := add()
	if err == nil {
		t.Fatal("second addE with the same edge id succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second addE: %v, want an \"already exists\" error", err)
	}
}

// TestStandinGremlinConcurrentWritesOnOneVertex checks that the stand-in,
// like Neptune, stays consistent when several connections add edges to the
// same vertex at once. The sink's writers are partitioned by vertex hash,
// but an edge touches two vertices, so two writers do meet on an edge's
// other end; test packages running in parallel meet on shared datasets too.
// TinkerGraph's per-vertex edge sets are plain hash sets: run on more than
// one Gremlin Server thread they lose edges and later fail every traversal
// that walks that vertex (ArrayIndexOutOfBoundsException in
// HashMap.keysToArray on drop).
func TestStandinGremlinConcurrentWritesOnOneVertex(t *testing.T) {
	const writers, perWriter = 8, 150
	endpoint := testenv.Gremlin(t)
	prefix := fmt.Sprintf("testenv-hub-%d-%d|", os.Getpid(), time.Now().UnixNano())
	g := connectGremlin(t)
	own := func() *gremlingo.GraphTraversal { return g.V().HasId(gremlingo.TextP.StartingWith(prefix)) }
	toList(t, "clean up before", own().Drop())
	hub := prefix + "hub"
	toList(t, "add hub", g.AddV("Dataset").Property(gremlingo.T.Id, hub))

	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			conn, err := gremlingo.NewDriverRemoteConnection(endpoint, func(s *gremlingo.DriverRemoteConnectionSettings) {
				s.TraversalSource = "g"
				s.LogVerbosity = gremlingo.Warning
				s.ConnectionTimeout = 10 * time.Second
			})
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			gw := gremlingo.Traversal_().WithRemote(conn)
			for i := 0; i < perWriter; i++ {
				id := fmt.Sprintf("%sw%d-%d", prefix, w, i)
				_, err := tryList(gw.AddV("Job").Property(gremlingo.T.Id, id).
					AddE("WROTE").To(gremlingo.T__.V(hub)).Property(gremlingo.T.Id, id+"->hub"))
				if err != nil {
					errs <- fmt.Errorf("writer %d, edge %d: %w", w, i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	want := int64(writers * perWriter)
	for _, step := range []struct {
		what string
		tr   *gremlingo.GraphTraversal
	}{
		{"edges into the hub", g.V(hub).InE("WROTE").Count()},
		{"writers seen from the hub", g.V(hub).In("WROTE").Count()},
	} {
		r := toList(t, step.what, step.tr)
		if len(r) != 1 {
			t.Fatalf("%s: %d results, want 1", step.what, len(r))
		}
		got, err := r[0].GetInt64()
		if err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if got != want {
			t.Errorf("%s: %d, want %d (the stand-in lost concurrent writes)", step.what, got, want)
		}
	}
	toList(t, "drop everything written", own().Drop())
	if r := toList(t, "count after drop", own().Count()); len(r) != 1 {
		t.Fatalf("count after drop: %d results", len(r))
	} else if n, _ := r[0].GetInt64(); n != 0 {
		t.Fatalf("%d vertices left after drop, want 0", n)
	}
}
