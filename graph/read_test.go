package graph

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/testkit/testenv"
)

func TestAsInt64(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v    any
		want int64
		ok   bool
	}{
		{int64(7), 7, true}, {int32(-3), -3, true}, {5, 5, true}, {float64(1e12), 1e12, true},
		{1.5, 0, false}, {"7", 0, false}, {nil, 0, false},
	} {
		if got, ok := AsInt64(tt.v); ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("AsInt64(%#v) = %d, %v; want %d, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

// Dump reads back what was written, every value of every property, and
// sorted by id (against the Gremlin Server stand-in).
func TestDump(t *testing.T) {
	ep := testenv.Gremlin(t)
	g, closeFn, err := Connect(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	ns := fmt.Sprintf("graph-dump-%d/", time.Now().UnixNano())
	a, b := ns+"a", ns+"b"
	if _, err := g.AddV("Dataset").Property(gremlingo.T.Id, b).Property("namespace", ns).Property("n", int32(2)).
		AddV("Dataset").Property(gremlingo.T.Id, a).Property("namespace", ns).
		AddE("DERIVES").To(gremlingo.T__.V(b)).Property(gremlingo.T.Id, ns+"e").Property("lastSeen", int64(9)).
		ToList(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = g.V(a, b).Drop().ToList() })
	d, err := NewDialer(Config{Endpoint: ep})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := d.Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var vs []Vertex
	for _, v := range s.Vertices {
		if strings.HasPrefix(v.ID, ns) {
			vs = append(vs, v)
		}
	}
	if len(vs) != 2 || vs[0].ID != a || vs[1].ID != b || vs[1].Label != "Dataset" {
		t.Fatalf("vertices %+v", vs)
	}
	if n, ok := AsInt64(vs[1].Props["n"][0]); !ok || n != 2 || len(vs[1].Props["namespace"]) != 1 {
		t.Fatalf("vertex props %+v", vs[1].Props)
	}
	var es []Edge
	for _, e := range s.Edges {
		if strings.HasPrefix(e.ID, ns) {
			es = append(es, e)
		}
	}
	if len(es) != 1 || es[0].OutV != a || es[0].InV != b || es[0].Label != "DERIVES" {
		t.Fatalf("edges %+v", es)
	}
	if n, ok := AsInt64(es[0].Props["lastSeen"]); !ok || n != 9 {
		t.Fatalf("edge props %+v", es[0].Props)
	}
}

// A graph that does not answer: Dump says so within its timeout, as a
// timeout or connection error, never hangs.
func TestDumpUnreachable(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := Dump("ws://127.0.0.1:1/gremlin", 3*time.Second)
	if err == nil {
		t.Fatal("Dump of a closed port succeeded")
	}
	if c := Classify(err); c != CodeConnection && c != CodeTimeout {
		t.Fatalf("Dump error %v classified %s", err, c)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Dump took %v", d)
	}
}
