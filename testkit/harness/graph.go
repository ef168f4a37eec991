package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/verify/refmodel"
)

// SinkStats counts what the file sinks acknowledged.
type SinkStats struct {
	Batches      int // acknowledged batches (complete lines)
	EdgeWrites   int // edges over all batches (an edge may be written many times)
	VertexWrites int
	TornLines    int // an unterminated last line (a process killed mid-write: never acknowledged)
}

// ReadSinks reads the NDJSON files written by `-sink file:<path>` and
// merges every acknowledged batch into one graph: vertices by id, edges by
// id folded with lineage.Edge.Merge (the graph's own merge rules). A
// missing file counts as empty. Only a last line without its newline is
// tolerated (a process killed while writing it, so the batch was never
// acknowledged); any other bad line is an error.
func ReadSinks(paths ...string) (*refmodel.Graph, SinkStats, error) {
	g := &refmodel.Graph{Vertices: map[string]lineage.Vertex{}, Edges: map[string]lineage.Edge{}}
	var st SinkStats
	for _, path := range paths {
		if err := readSink(path, g, &st); err != nil {
			return nil, st, err
		}
	}
	return g, st, nil
}

func readSink(path string, g *refmodel.Graph, st *SinkStats) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			if len(bytes.TrimSpace(line)) > 0 {
				st.TornLines++
			}
			return nil
		}
		if err != nil {
			return err
		}
		var b sink.Batch
		if err := json.Unmarshal(line, &b); err != nil {
			return fmt.Errorf("harness: %s line %d: %w", path, n, err)
		}
		st.Batches++
		st.VertexWrites += len(b.Vertices)
		st.EdgeWrites += len(b.Edges)
		for _, v := range b.Vertices {
			if old, ok := g.Vertices[v.ID]; ok && (old.Label != v.Label || old.Namespace != v.Namespace || old.Name != v.Name) {
				return fmt.Errorf("harness: %s line %d: vertex %s written as %+v and %+v", path, n, v.ID, old, v)
			}
			lineage.MergeVertexInto(g.Vertices, v)
		}
		for _, e := range b.Edges {
			if old, ok := g.Edges[e.ID]; ok && (old.Label != e.Label || old.OutV != e.OutV || old.InV != e.InV) {
				return fmt.Errorf("harness: %s line %d: edge %s written with endpoints %+v and %+v", path, n, e.ID, old, e)
			}
			lineage.MergeInto(g.Edges, e)
		}
	}
}

// Generated turns generator output into what to replay and what the
// reference model reads (the same records, in stream order).
func Generated(recs []gen.Record) (toReplay []replay.Record, data [][]byte) {
	toReplay = make([]replay.Record, len(recs))
	data = make([][]byte, len(recs))
	for i, r := range recs {
		toReplay[i] = replay.Record{PartitionKey: r.PartitionKey, Data: r.Data}
		data[i] = r.Data
	}
	return toReplay, data
}

// Missing counts the expected edges and vertices absent from got, and
// the edges of got that are not expected (ghosts). Cheaper than
// refmodel.Compare for polling.
func Missing(want, got *refmodel.Graph) (missing, extra int) {
	for id := range want.Edges {
		if _, ok := got.Edges[id]; !ok {
			missing++
		}
	}
	for id := range want.Vertices {
		if _, ok := got.Vertices[id]; !ok {
			missing++
		}
	}
	for id := range got.Edges {
		if _, ok := want.Edges[id]; !ok {
			extra++
		}
	}
	return missing, extra
}
