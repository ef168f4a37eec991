package explorer

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	lfgraph "github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
)

var (
	realOrders  = lineage.Dataset{Namespace: "s3://datalake-raw", Name: "sales/orders"}
	decoyOrders = lineage.Dataset{Namespace: "s3", Name: "//datalake-raw:sales/orders"}
	realJob     = lineage.Job{Namespace: "etl", Name: "orders_job"}
	evilJob     = lineage.Job{Namespace: "etl", Name: "evil_job"}
	glueTable   = lineage.Dataset{Namespace: "arn:aws:glue:us-east-1:123456789012", Name: "table/curated/orders"}
	glueOther   = lineage.Dataset{Namespace: "s3://datalake-curated", Name: "orders"}
)

// loadDecoy writes the real s3://datalake-raw sales/orders and a decoy s3
// //datalake-raw:sales/orders (the same Marquez node id), each output of
// its own job, and one Glue alias claimed by two datasets.
func loadDecoy(t *testing.T, endpoint string) {
	t.Helper()
	if err := lfgraph.Drop(endpoint); err != nil {
		t.Fatal(err)
	}
	n, err := sink.New(sink.Config{Endpoint: endpoint, Writers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	var b lineage.Batch
	b.Key = "decoy"
	for _, d := range []lineage.Dataset{realOrders, decoyOrders, glueOther} {
		b.Vertices = append(b.Vertices, lineage.DatasetVertex(d))
	}
	b.Vertices = append(b.Vertices, lineage.JobVertex(realJob), lineage.JobVertex(evilJob),
		lineage.AliasVertex(lineage.Alias{Of: realOrders, Alias: glueTable}))
	D, J := lineage.DatasetID, lineage.JobID
	e := func(label, o, i string) {
		b.Edges = append(b.Edges, lineage.NewEdge(label, o, i, 1000, 2000, "run-"+label))
	}
	e(lineage.EdgeOutputs, J(realJob), D(realOrders))
	e(lineage.EdgeOutputs, J(evilJob), D(decoyOrders))
	e(lineage.EdgeAliasOf, lineage.AliasID(glueTable), D(realOrders))
	e(lineage.EdgeAliasOf, lineage.AliasID(glueTable), D(glueOther))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// TestAmbiguousNodeID: with the decoy on the Gremlin stand-in, the shared
// Marquez id and the alias claimed by two datasets are answered 409 with
// both candidates on every route that takes a nodeId, never one of them.
func TestAmbiguousNodeID(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadDecoy(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	routes := []string{
		"/api/lf/v1/node", "/api/lf/v1/lineage", "/api/lf/v1/watch", "/api/lf/v1/impact",
		"/api/lf/v1/neighbors", "/api/v1/lineage", "/api/v1/column-lineage",
	}
	cases := []struct {
		id   string
		want []lineage.Dataset
	}{
		{dsNode(realOrders), []lineage.Dataset{decoyOrders, realOrders}},
		{dsNode(glueTable), []lineage.Dataset{realOrders, glueOther}},
	}
	for _, c := range cases {
		for _, route := range routes {
			var body ambiguousBody
			code, raw := get(t, hs.URL, route+"?nodeId="+q(c.id), &body)
			if code != http.StatusConflict || body.Error != "ambiguous_node_id" || len(body.Candidates) != 2 {
				t.Errorf("%s %s: %d %s, want 409 with 2 candidates", route, c.id, code, short(string(raw)))
				continue
			}
			got := map[string]bool{}
			for _, cd := range body.Candidates {
				got[cd.VertexID] = true
			}
			for _, w := range c.want {
				if !got[lineage.DatasetID(w)] {
					t.Errorf("%s %s: candidates %s lack %s", route, c.id, short(string(raw)), lineage.DatasetID(w))
				}
			}
		}
	}
	// An id with one reading still resolves.
	var d json.RawMessage
	if code, raw := get(t, hs.URL, "/api/lf/v1/node?nodeId="+q(dsNode(glueOther)), &d); code != http.StatusOK {
		t.Fatalf("unambiguous id: %d %s", code, short(string(raw)))
	}
}

// TestExactNodeIDs: search hits carry an unambiguous ref (vertex:<id>);
// the real dataset's and the decoy's differ, and each resolves to its own
// dataset on every route; a search by the alias claimed by two datasets
// lists both.
func TestExactNodeIDs(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadDecoy(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	var res struct{ Results []SearchResult }
	if code, raw := get(t, hs.URL, "/api/lf/v1/search?q="+q("sales/orders"), &res); code != http.StatusOK {
		t.Fatalf("search: %d %s", code, short(string(raw)))
	}
	refs := map[string]string{} // namespace -> ref
	for _, r := range res.Results {
		refs[r.Namespace] = r.Ref
	}
	if len(refs) != 2 || refs[realOrders.Namespace] == "" || refs[decoyOrders.Namespace] == "" || refs[realOrders.Namespace] == refs[decoyOrders.Namespace] {
		t.Fatalf("search hits %+v: want the real dataset and the decoy with distinct refs", res.Results)
	}
	routes := []string{
		"/api/lf/v1/lineage", "/api/lf/v1/impact", "/api/lf/v1/neighbors", "/api/v1/lineage", "/api/v1/column-lineage",
	}
	for _, d := range []lineage.Dataset{realOrders, decoyOrders} {
		ref := refs[d.Namespace]
		var n NodeDetails
		if code, raw := get(t, hs.URL, "/api/lf/v1/node?nodeId="+q(ref), &n); code != http.StatusOK || n.Namespace != d.Namespace || n.Name != d.Name {
			t.Errorf("node %s: %d %s, want %s", ref, code, short(string(raw)), d.Namespace)
		}
		for _, route := range routes {
			if code, raw := get(t, hs.URL, route+"?nodeId="+q(ref), nil); code != http.StatusOK {
				t.Errorf("%s %s: %d %s", route, ref, code, short(string(raw)))
			}
		}
	}
	res.Results = nil
	get(t, hs.URL, "/api/lf/v1/search?q="+q(glueTable.Name), &res)
	claim := map[string]bool{}
	for _, r := range res.Results {
		claim[r.Namespace+" "+r.Name] = true
	}
	if !claim[realOrders.Namespace+" "+realOrders.Name] || !claim[glueOther.Namespace+" "+glueOther.Name] {
		t.Errorf("search by the alias %s: %+v, want both claimants", glueTable.Name, res.Results)
	}
	var bad struct{ Message string }
	if code, _ := get(t, hs.URL, "/api/lf/v1/node?nodeId="+q("vertex:dataset:99:x/y"), &bad); code != http.StatusBadRequest {
		t.Errorf("malformed vertex id: %d, want 400", code)
	}
}

// TestAliasConflictInDetails: the real dataset's details list the alias
// two datasets claim, marked as a conflict with both claimants.
func TestAliasConflictInDetails(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadDecoy(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	for _, d := range []lineage.Dataset{realOrders, glueOther} {
		ref := Ref{Kind: KindDataset, Namespace: d.Namespace, Name: d.Name}
		var n NodeDetails
		if code, raw := get(t, hs.URL, "/api/lf/v1/node?nodeId="+q(ref.ExactNodeID()), &n); code != http.StatusOK {
			t.Fatalf("node %s: %d %s", ref.ExactNodeID(), code, short(string(raw)))
		}
		if len(n.Aliases) != 1 || n.Aliases[0].Name != glueTable.Name || !n.Aliases[0].Conflict || len(n.Aliases[0].ClaimedBy) != 2 {
			t.Errorf("%s aliases %+v, want %s marked as a conflict with 2 claimants", d.Name, n.Aliases, glueTable.Name)
		}
	}
}
