package explorer

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestMarquezRouteTable: every route of the Marquez route table answers
// as the table says on a running server: answered routes never 501 or
// 405; 501 with a JSON body naming the route and its reason; writes 405
// with Allow (the read methods of the path, nothing else) and a JSON body.
// The README's table lists the same routes with the same status.
func TestMarquezRouteTable(t *testing.T) {
	ep := gremlinEndpoint(t)
	loadFixture(t, ep)
	_, hs := newTestServer(t, ep, Config{})
	fill := strings.NewReplacer("{namespace}", fxNS, "{dataset}", fxClean.Name, "{job}", fxETL.Name,
		"{id}", fxRunFail, "{version}", "v1", "{tag}", "pii", "{field}", "id", "{source}", "src")
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range mqRouteTable {
		path := fill.Replace(rt.Path)
		if rt.Path == "/lineage" || rt.Path == "/column-lineage" {
			path += "?nodeId=dataset:" + fxNS + ":" + fxClean.Name
		}
		if rt.Path == "/search" {
			path += "?q=clean"
		}
		req, err := http.NewRequest(rt.Method, hs.URL+"/api/v1"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		name := rt.Method + " " + rt.Path
		var eb notImplBody
		switch rt.Status {
		case mqAnswered:
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %d %s, want 200", name, resp.StatusCode, body)
			}
		case mqNotImpl:
			if resp.StatusCode != http.StatusNotImplemented || json.Unmarshal(body, &eb) != nil || eb.Route != rt.Method+" /api/v1"+rt.Path || eb.Reason == "" {
				t.Errorf("%s: %d %s, want 501 naming the route", name, resp.StatusCode, body)
			}
		case mqReadOnly:
			if resp.StatusCode != http.StatusMethodNotAllowed || json.Unmarshal(body, &eb) != nil || eb.Reason == "" {
				t.Errorf("%s: %d %s, want 405", name, resp.StatusCode, body)
			}
			if a := resp.Header.Get("Allow"); strings.Contains(a, rt.Method) || (a != "" && a != "GET") {
				t.Errorf("%s: Allow %q", name, a)
			}
		}
		row := "| `" + rt.Method + "` | `/api/v1" + rt.Path + "` | " + string(rt.Status) + " |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no row %s", row)
		}
	}
}
