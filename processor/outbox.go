package processor

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
)

// OutboxEntry is one outbox value (s/<shard>/o/<seq>): a chunk of a sealed
// window, and the pin of the window it came from (so the pin survives a
// restart). checkpoint keeps it as opaque bytes.
type OutboxEntry struct {
	Pin    string
	Bucket int64
	Batch  lineage.Batch
}

// Outbox value versions: 1 without vertex properties, 2 with them (a
// length-prefixed lineage.Props encoding after each vertex's name), 3
// with edge properties too (after each edge's lastRunId).
const (
	outboxV1 = 1
	outboxV2 = 2
	outboxV3 = 3
)

// AppendOutbox encodes e (Batch.Key is not stored: it is derived from the key).
func AppendOutbox(dst []byte, e *OutboxEntry) []byte {
	dst = append(dst, outboxV3)
	dst = enc.AppendString(dst, e.Pin)
	dst = enc.AppendVarint(dst, e.Bucket)
	dst = enc.AppendUvarint(dst, uint64(len(e.Batch.Vertices)))
	for _, v := range e.Batch.Vertices {
		dst = enc.AppendString(dst, v.ID)
		dst = enc.AppendString(dst, v.Label)
		dst = enc.AppendString(dst, v.Namespace)
		dst = enc.AppendString(dst, v.Name)
		dst = enc.AppendString(dst, string(v.Props))
	}
	dst = enc.AppendUvarint(dst, uint64(len(e.Batch.Edges)))
	for _, x := range e.Batch.Edges {
		dst = enc.AppendString(dst, x.ID)
		dst = enc.AppendString(dst, x.Label)
		dst = enc.AppendString(dst, x.OutV)
		dst = enc.AppendString(dst, x.InV)
		dst = enc.AppendVarint(dst, x.FirstSeen)
		dst = enc.AppendVarint(dst, x.LastSeen)
		dst = enc.AppendString(dst, x.LastRunID)
		dst = enc.AppendString(dst, string(x.Props))
	}
	return dst
}

// DecodeOutbox decodes an outbox value.
func DecodeOutbox(b []byte) (OutboxEntry, error) {
	var e OutboxEntry
	r := enc.NewReader(b, checkpoint.ErrCorrupt)
	ver := r.Byte()
	if ver != outboxV1 && ver != outboxV2 && ver != outboxV3 {
		return e, fmt.Errorf("%w: outbox version", checkpoint.ErrCorrupt)
	}
	e.Pin = r.String()
	e.Bucket = r.Varint()
	n := r.Uvarint()
	if n > uint64(len(b)) {
		return e, checkpoint.ErrCorrupt
	}
	e.Batch.Vertices = make([]lineage.Vertex, 0, n)
	for i := uint64(0); i < n && r.OK(); i++ {
		v := lineage.Vertex{ID: r.String(), Label: r.String(), Namespace: r.String(), Name: r.String()}
		if ver >= outboxV2 {
			p, err := lineage.DecodeProps(r.String())
			if err != nil {
				return e, fmt.Errorf("%w: %w", checkpoint.ErrCorrupt, err)
			}
			v.Props = p
		}
		e.Batch.Vertices = append(e.Batch.Vertices, v)
	}
	n = r.Uvarint()
	if n > uint64(len(b)) {
		return e, checkpoint.ErrCorrupt
	}
	e.Batch.Edges = make([]lineage.Edge, 0, n)
	for i := uint64(0); i < n && r.OK(); i++ {
		x := lineage.Edge{ID: r.String(), Label: r.String(), OutV: r.String(), InV: r.String(),
			FirstSeen: r.Varint(), LastSeen: r.Varint(), LastRunID: r.String()}
		if ver >= outboxV3 {
			p, err := lineage.DecodeProps(r.String())
			if err != nil {
				return e, fmt.Errorf("%w: %w", checkpoint.ErrCorrupt, err)
			}
			x.Props = p
		}
		e.Batch.Edges = append(e.Batch.Edges, x)
	}
	return e, r.Err()
}

// writeOutbox adds to batch the outbox entries of sealed window sw, one
// per chunk, appends their sequences to out and their content to entries
// (nil past what the drain keeps in memory) and returns their number.
func (s *Shard) writeOutbox(batch *pebble.Batch, sw *sealedWindow, out *[]uint64, entries *[]*cachedEntry) int {
	n := 0
	records := 0
	for _, e := range *entries {
		if e != nil {
			records += len(e.batch.Vertices) + len(e.batch.Edges)
		}
	}
	chunk(sw.edges, sw.vertices, s.cfg.Drain.ChunkRecords, func(b lineage.Batch) {
		seq := s.nextOutbox
		s.nextOutbox++
		entry := OutboxEntry{Pin: sw.pin, Bucket: sw.bucket, Batch: b}
		s.valBuf = AppendOutbox(s.valBuf[:0], &entry)
		_ = batch.Set(checkpoint.OutboxKey(s.id, seq), s.valBuf, nil)
		*out = append(*out, seq)
		var c *cachedEntry
		if r := len(b.Vertices) + len(b.Edges); records+r <= drainCacheRecords {
			// A copy: chunk reuses b's slices.
			records += r
			c = &cachedEntry{bucket: sw.bucket, batch: lineage.Batch{
				Vertices: append(make([]lineage.Vertex, 0, len(b.Vertices)), b.Vertices...),
				Edges:    append(make([]lineage.Edge, 0, len(b.Edges)), b.Edges...)}}
		}
		*entries = append(*entries, c)
		s.st.EdgesEmitted.Add(int64(len(b.Edges)))
		s.st.VerticesEmitted.Add(int64(len(b.Vertices)))
		s.st.countRunRecords(&b)
		n++
	})
	return n
}

// chunk cuts a sealed window into batches of at most max records, each
// edge in the same batch as its two endpoint vertices (mergeE needs them),
// vertices first. Vertices no edge touches (DatasetEvents) come last. Each
// batch goes to out as soon as it is full (out must not keep it: its
// slices are reused), so a big window never has all its batches in memory.
func chunk(edges []lineage.Edge, vertices map[string]lineage.Vertex, max int, out func(lineage.Batch)) {
	// By id, through an index (an Edge is ten words to swap).
	order := make([]int32, len(edges))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(edges[a].ID, edges[b].ID) })
	var cur lineage.Batch
	in := map[string]bool{}
	used := map[string]bool{}
	flush := func() {
		if len(cur.Vertices)+len(cur.Edges) > 0 {
			out(cur)
		}
		cur.Vertices, cur.Edges = cur.Vertices[:0], cur.Edges[:0]
		clear(in)
	}
	for _, i := range order {
		e := &edges[i]
		need := 1
		if !in[e.OutV] {
			need++
		}
		if !in[e.InV] && e.InV != e.OutV {
			need++
		}
		if len(cur.Vertices)+len(cur.Edges)+need > max {
			flush()
		}
		for _, id := range []string{e.OutV, e.InV} {
			if !in[id] {
				if v, ok := vertices[id]; ok {
					cur.Vertices = append(cur.Vertices, v)
				}
				in[id] = true
				used[id] = true
			}
		}
		cur.Edges = append(cur.Edges, *e)
	}
	var rest []string
	for id := range vertices {
		if !used[id] {
			rest = append(rest, id)
		}
	}
	sort.Strings(rest)
	for _, id := range rest {
		if len(cur.Vertices)+len(cur.Edges)+1 > max {
			flush()
		}
		cur.Vertices = append(cur.Vertices, vertices[id])
	}
	flush()
}

// countRunRecords counts the run records (Run vertices: a run has no
// edge) of an outbox batch: run history, counted apart from the lineage's
// write reduction.
func (st *Stats) countRunRecords(b *lineage.Batch) {
	var n int64
	for i := range b.Vertices {
		if b.Vertices[i].Label == lineage.LabelRun {
			n++
		}
	}
	st.RunRecordsEmitted.Add(n)
}
