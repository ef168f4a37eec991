package explorer

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"
	lfgraph "github.com/lineageflow/lineageflow/graph"
)

// TestReadsBoundedWhileDialHangs: the graph accepts TCP and never answers
// (a black-holed Neptune). Ten concurrent reads with a 400 ms bound all
// return within about that bound: waiting for another read's dial counts
// against each read's own bound (they used to queue on the mutex, one full
// dial timeout each).
func TestReadsBoundedWhileDialHangs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var cmu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cmu.Lock()
			conns = append(conns, c)
			cmu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
	})
	d, err := lfgraph.NewDialer(lfgraph.Config{Endpoint: "ws://" + ln.Addr().String() + "/gremlin"})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 400 * time.Millisecond
	gr := &graph{dialer: d, conns: 1, timeout: bound}
	defer gr.close()
	var wg sync.WaitGroup
	took := make(chan time.Duration, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, err := gr.read(context.Background(), func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal { return g.V().Limit(1) })
			if err == nil {
				t.Error("a read of a black hole succeeded")
			}
			took <- time.Since(start)
		}()
	}
	wg.Wait()
	close(took)
	for d := range took {
		if d > 3*bound {
			t.Errorf("a read took %v, want about %v", d, bound)
		}
	}
}
