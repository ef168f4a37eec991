package processor

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
)

// isolated is one item (a vertex or an edge) of an outbox entry that the
// graph or the client refused on its own.
type isolated struct {
	batch  lineage.Batch // the item alone
	reason string
}

// isolate handles outbox entry seq once the sink has refused it
// permanently ParkAfter times in a row: one bad item (a vertex whose name
// overflows the client's write buffer, a property the graph refuses) must
// not cost the entry's other records, which come from every producer of
// the shard's window. The entry is split in halves, recursively, and each
// part written (vertices before the edges that need them, as in the
// entry); a single item refused permanently is set apart, and so is an
// edge whose endpoint vertex was. The items set apart are parked one by
// one (parked/<shard>/<seq>/<i>, with the reason: `lineageflow
// deadletters -parked` lists them, -replay-parked writes them again after
// a fix), counted (Stats.ItemsParked), and the entry is deleted, all in
// one synced batch. A transient error stops the split: the entry stays
// and is sent again whole (writes are idempotent).
func (d *drainer) isolate(key []byte, seq uint64, attempts int) error {
	s := d.s
	v, closer, err := s.db.Get(key)
	if err != nil {
		return fmt.Errorf("read outbox entry: %w", err)
	}
	e, err := DecodeOutbox(v)
	closer.Close()
	if err != nil {
		return fmt.Errorf("decode outbox entry: %w", err)
	}
	sp := splitter{d: d, key: fmt.Sprintf("%s/%d/%d", s.id, e.Bucket, seq), bad: map[string]bool{}}
	if err := sp.write(e.Batch); err != nil {
		return err
	}
	at := s.cfg.Clock().UTC()
	batch := s.db.NewBatch()
	defer func() { _ = batch.Close() }()
	for i, it := range sp.found {
		p := checkpoint.Parked{Shard: s.id, OutboxSeq: seq, Bucket: e.Bucket, At: at, Attempts: attempts, Reason: it.reason,
			Vertices: len(it.batch.Vertices), Edges: len(it.batch.Edges), Item: itemID(it.batch),
			Entry: AppendOutbox(nil, &OutboxEntry{Bucket: e.Bucket, Batch: it.batch})}
		_ = batch.Set(checkpoint.ParkedItemKey(s.id, seq, i), checkpoint.MarshalParked(&p), nil)
	}
	_ = batch.Delete(key, nil)
	if err := batch.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("park items: %w", err)
	}
	s.st.ItemsParked.Add(int64(len(sp.found)))
	for _, it := range sp.found {
		s.log.Error("sink refused one item permanently: parked, the rest of its batch written (list: lineageflow deadletters -parked)",
			"outbox_seq", seq, "item", short(itemID(it.batch)), "err", it.reason)
	}
	if len(sp.found) == 0 {
		s.log.Warn("outbox entry refused as a whole, written in parts: nothing refused on its own", "outbox_seq", seq)
	}
	return nil
}

// splitter writes a batch in ever smaller parts until the items the
// sink refuses are found.
type splitter struct {
	d     *drainer
	key   string
	n     int             // parts written (their batch keys)
	bad   map[string]bool // ids of the vertices set apart
	found []isolated
}

func (sp *splitter) write(b lineage.Batch) error {
	// An edge needs its endpoints: one whose endpoint is set apart is too.
	kept := b.Edges[:0:0]
	for _, x := range b.Edges {
		if sp.bad[x.OutV] || sp.bad[x.InV] {
			sp.found = append(sp.found, isolated{batch: lineage.Batch{Edges: []lineage.Edge{x}}, reason: "an endpoint vertex of the edge was parked"})
			continue
		}
		kept = append(kept, x)
	}
	b.Edges = kept
	n := len(b.Vertices) + len(b.Edges)
	if n == 0 {
		return nil
	}
	sp.n++
	b.Key = fmt.Sprintf("%s/part%d", sp.key, sp.n)
	err := sp.d.w.WriteBatch(sp.d.ctx, b)
	if err == nil {
		return nil
	}
	if !isPermanent(err) {
		return err
	}
	if n == 1 {
		for _, v := range b.Vertices {
			sp.bad[v.ID] = true
		}
		sp.found = append(sp.found, isolated{batch: b, reason: err.Error()})
		return nil
	}
	first, second := halves(b)
	if err := sp.write(first); err != nil {
		return err
	}
	return sp.write(second)
}

// halves cuts b's items (vertices, then edges) in two, in order.
func halves(b lineage.Batch) (first, second lineage.Batch) {
	h := (len(b.Vertices) + len(b.Edges)) / 2
	if h <= len(b.Vertices) {
		first.Vertices = b.Vertices[:h]
		second.Vertices, second.Edges = b.Vertices[h:], b.Edges
		return first, second
	}
	k := h - len(b.Vertices)
	first.Vertices, first.Edges = b.Vertices, b.Edges[:k]
	second.Edges = b.Edges[k:]
	return first, second
}

// itemID names the one item of b.
func itemID(b lineage.Batch) string {
	if len(b.Vertices) > 0 {
		return b.Vertices[0].ID
	}
	if len(b.Edges) > 0 {
		return b.Edges[0].ID
	}
	return ""
}

// short cuts an id for a log line.
func short(s string) string {
	if len(s) > 120 {
		return s[:120] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}
