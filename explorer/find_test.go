package explorer

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
)

func namesOf(t *testing.T, refs ...Ref) *names {
	t.Helper()
	var es []indexEntry
	for _, r := range refs {
		e, ok := vertexEntry(r.VertexID())
		if !ok {
			t.Fatalf("no entry for %v", r)
		}
		es = append(es, e)
	}
	return newNames(es)
}

// TestFind covers what engineers paste into the search box: a full URI
// with or without scheme, a namespace with or without scheme, a Glue
// db.table, and a part of a name; each hit says what it matched.
func TestFind(t *testing.T) {
	s3 := Ref{Kind: KindDataset, Namespace: "s3://my-bucket-test", Name: "sample_data/input_data.parquet"}
	hdfs := Ref{Kind: KindDataset, Namespace: "hdfs://namenode:8020", Name: "/user/hive/warehouse/t1"}
	glue := Ref{Kind: KindDataset, Namespace: "arn:aws:glue:us-east-1:123456789012", Name: "table/my_glue_database/my_glue_table"}
	job := Ref{Kind: KindJob, Namespace: "emr-prod", Name: "nightly.load_input_data"}
	gc := Ref{Kind: KindDataset, Namespace: "glue://catalog", Name: "sales"}
	other := Ref{Kind: KindDataset, Namespace: "s3://other", Name: "sample_data/input_data.parquet.bak"}
	n := namesOf(t, s3, hdfs, glue, job, gc, other)
	for _, c := range []struct {
		q       string
		want    Ref
		matched string
	}{
		{"s3://my-bucket-test/sample_data/input_data.parquet", s3, MatchURI},
		{"my-bucket-test/sample_data/input_data.parquet", s3, MatchURI},
		{"S3://MY-BUCKET-TEST/sample_data/input_data.parquet", s3, MatchURI},
		{"hdfs://namenode:8020/user/hive/warehouse/t1", hdfs, MatchURI},
		{"my_glue_database.my_glue_table", glue, MatchGlue},
		{"emr-prod", job, MatchNamespace},
		{"glue://catalog", gc, MatchNamespace},
		{"catalog", gc, MatchNamespace},
		{"input_data.parquet", s3, MatchName},
	} {
		hits := find(n, c.q, 20)
		if len(hits) == 0 {
			t.Errorf("find(%q): no hit, want %v", c.q, c.want)
			continue
		}
		if hits[0].ref != c.want || hits[0].matched != c.matched {
			t.Errorf("find(%q)[0] = %v (%s), want %v (%s)", c.q, hits[0].ref, hits[0].matched, c.want, c.matched)
		}
		seen := map[Ref]bool{}
		for _, h := range hits {
			if seen[h.ref] {
				t.Errorf("find(%q): %v twice", c.q, h.ref)
			}
			seen[h.ref] = true
		}
	}
	if hits := find(n, "s3://nope/sample_data/input_data.parquet", 20); len(hits) != 0 {
		t.Errorf("unknown URI matched %v", hits)
	}
	if hits := find(n, "e", 2); len(hits) != 2 {
		t.Errorf("limit 2: %d hits", len(hits))
	}
}

// TestSearchRouteURI searches the fixture's odd dataset by its full URI
// over HTTP.
func TestSearchRouteURI(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	s, hs := newTestServer(t, ep, Config{})
	if err := s.RefreshIndex(t.Context()); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		fullURI(fxOdd.Namespace, fxOdd.Name): MatchURI,
		"ns1":                                MatchNamespace,
		"clean_v":                            MatchAlias,
	} {
		resp, err := http.Get(hs.URL + "/api/lf/v1/search?q=" + url.QueryEscape(q))
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Results []SearchResult }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(body.Results) == 0 {
			t.Fatalf("search %q: %d %v %+v", q, resp.StatusCode, err, body)
		}
		if got := body.Results[0].Matched; got != want {
			t.Errorf("search %q: first result %+v matched %q, want %q", q, body.Results[0], got, want)
		}
	}
}
