package explorer

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	lfgraph "github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
)

// searchIDs is the node ids /api/lf/v1/search answers for q.
func searchIDs(t *testing.T, base, q string) []string {
	t.Helper()
	var r struct {
		Results []SearchResult `json:"results"`
	}
	get(t, base, "/api/lf/v1/search?q="+url.QueryEscape(q), &r)
	var ids []string
	for _, x := range r.Results {
		ids = append(ids, x.ID)
	}
	return ids
}

// waitSearch polls the search until q finds want (true) or the deadline.
func waitSearch(t *testing.T, base, q, want string, d time.Duration) bool {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, id := range searchIDs(t, base, q) {
			if id == want {
				return true
			}
		}
	}
	return false
}

// TestIndexIncremental: on the Gremlin stand-in, a dataset, a job and an
// alias written after the index's full load become searchable through the
// incremental read (its firstSeen is recent) without another full load; a
// late edge (firstSeen before the lateness window) waits for the full load.
func TestIndexIncremental(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	s, hs := newTestServer(t, ep, Config{IndexRefresh: 100 * time.Millisecond, IndexLateness: time.Minute, IndexFullRefresh: time.Hour})
	// The reads of what is new, whatever they cost here compared with a
	// full load (on this small graph either may be the cheaper).
	s.index.forceDelta.Store(true)
	if !waitSearch(t, hs.URL, "clean", dsNode(fxClean), 30*time.Second) {
		t.Fatal("the fixture is not searchable after the first load")
	}
	if n := s.index.fullLoads.Load(); n != 1 {
		t.Fatalf("%d full loads after start, want 1", n)
	}
	// Nothing written: a refresh is a count that finds nothing changed.
	for end := time.Now().Add(10 * time.Second); s.index.deltaSkips.Load() < 2 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
	}
	if k, d := s.index.deltaSkips.Load(), s.index.deltaLoads.Load(); k < 2 || d != 0 {
		t.Errorf("with nothing written: %d refreshes skipped after a count, %d reads of what is new; want only skips", k, d)
	}

	tag := fmt.Sprintf("%d", time.Now().UnixNano())
	fresh := lineage.Dataset{Namespace: "s3://lake", Name: "fresh/part_" + tag}
	job := lineage.Job{Namespace: fxNS, Name: "load_" + tag}
	glue := lineage.Dataset{Namespace: "arn:aws:glue:eu-west-1:1:table", Name: "db.fresh_" + tag}
	now := time.Now().UnixMilli()
	b := lineage.Batch{Key: "fresh",
		Vertices: []lineage.Vertex{lineage.DatasetVertex(fresh), lineage.JobVertex(job), lineage.AliasVertex(lineage.Alias{Of: fresh, Alias: glue, Type: "TABLE"})},
		Edges: []lineage.Edge{
			lineage.NewEdge(lineage.EdgeOutputs, lineage.JobID(job), lineage.DatasetID(fresh), now, now, "run-fresh"),
			lineage.NewEdge(lineage.EdgeAliasOf, lineage.AliasID(glue), lineage.DatasetID(fresh), now, now, "run-fresh"),
		}}
	writeBatch(t, ep, b)

	if !waitSearch(t, hs.URL, "part_"+tag, dsNode(fresh), 10*time.Second) {
		t.Fatalf("the new dataset is not searchable after 10 s (full loads %d, incremental reads %d)", s.index.fullLoads.Load(), s.index.deltaLoads.Load())
	}
	if !waitSearch(t, hs.URL, "load_"+tag, jobNode(job), 5*time.Second) {
		t.Error("the new job is not searchable")
	}
	if !waitSearch(t, hs.URL, "db.fresh_"+tag, dsNode(fresh), 5*time.Second) {
		t.Error("the new dataset is not searchable by its new alias")
	}
	if n, d := s.index.fullLoads.Load(), s.index.deltaLoads.Load(); n != 1 || d < 1 {
		t.Errorf("full loads %d, incremental reads %d: want the new vertices found without a full load", n, d)
	}

	// A late edge: first seen two minutes ago, beyond the lateness of one
	// minute. The incremental reads do not see it; a full load does.
	late := lineage.Dataset{Namespace: "s3://lake", Name: "late/part_" + tag}
	old := now - 2*time.Minute.Milliseconds()
	writeBatch(t, ep, lineage.Batch{Key: "late", Vertices: []lineage.Vertex{lineage.DatasetVertex(late)},
		Edges: []lineage.Edge{lineage.NewEdge(lineage.EdgeInputTo, lineage.DatasetID(late), lineage.JobID(job), old, old, "run-late")}})
	d0 := s.index.deltaLoads.Load()
	for end := time.Now().Add(10 * time.Second); s.index.deltaLoads.Load() < d0+3 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
	}
	if ids := searchIDs(t, hs.URL, "late/part_"+tag); len(ids) != 0 {
		t.Errorf("a late edge's dataset was found by the incremental read: %v (its firstSeen is before the lateness window)", ids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.RefreshIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if !waitSearch(t, hs.URL, "late/part_"+tag, dsNode(late), 5*time.Second) {
		t.Error("the late edge's dataset is not searchable after a full load")
	}
}

// writeBatch writes one batch with the project's sink.
func writeBatch(t testing.TB, endpoint string, b lineage.Batch) {
	t.Helper()
	n, err := sink.New(sink.Config{Endpoint: endpoint, Writers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// TestIndexConfig: a full reload more frequent than the incremental one is
// a configuration error naming the flag to fix.
func TestIndexConfig(t *testing.T) {
	d, err := lfgraph.NewDialer(lfgraph.Config{Endpoint: "ws://127.0.0.1:1/gremlin"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Dialer: d, IndexRefresh: time.Hour, IndexFullRefresh: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "-explorer-index-full-refresh") {
		t.Errorf("IndexFullRefresh below IndexRefresh: err %v, want one naming -explorer-index-full-refresh", err)
	}
	if _, err := New(Config{Dialer: d}); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
