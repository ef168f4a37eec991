package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/sink"
)

// ErrCorrupt is returned for state that does not decode.
var ErrCorrupt = errors.New("checkpoint: corrupt value")

// Position is what s/<shard>/pos holds, written in every barrier.
type Position struct {
	Last       Pos    // last processed user record (skip records <= Last on resume)
	Durable    string // last record all of whose sub-records are in this barrier
	Watermark  int64  // window watermark (Unix ms), valid when WatermarkSet
	WMSet      bool
	MaxArrival int64  // maximum arrival time seen (Unix ms): the clock of TTLs
	NextOutbox uint64 // sequence of the next outbox entry
}

// AppendPosition encodes p.
func AppendPosition(dst []byte, p *Position) []byte {
	dst = append(dst, 1) // version
	dst = appendString(dst, p.Last.Seq)
	dst = binary.AppendUvarint(dst, uint64(p.Last.Sub))
	dst = appendString(dst, p.Durable)
	dst = binary.AppendVarint(dst, p.Watermark)
	if p.WMSet {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = binary.AppendVarint(dst, p.MaxArrival)
	return binary.AppendUvarint(dst, p.NextOutbox)
}

// DecodePosition decodes a position.
func DecodePosition(b []byte) (Position, error) {
	var p Position
	r := reader{b: b}
	if r.byte() != 1 {
		return p, fmt.Errorf("%w: position version", ErrCorrupt)
	}
	p.Last.Seq = r.string()
	p.Last.Sub = uint32(r.uvarint())
	p.Durable = r.string()
	p.Watermark = r.varint()
	p.WMSet = r.byte() == 1
	p.MaxArrival = r.varint()
	p.NextOutbox = r.uvarint()
	return p, r.err()
}

// OutboxEntry is one outbox value: a chunk of a sealed window, and the pin
// of the window it came from (so the pin survives a restart).
type OutboxEntry struct {
	Pin    string
	Bucket int64
	Batch  sink.Batch
}

// AppendOutbox encodes e (Batch.Key is not stored: it is derived from the key).
func AppendOutbox(dst []byte, e *OutboxEntry) []byte {
	dst = append(dst, 1)
	dst = appendString(dst, e.Pin)
	dst = binary.AppendVarint(dst, e.Bucket)
	dst = binary.AppendUvarint(dst, uint64(len(e.Batch.Vertices)))
	for _, v := range e.Batch.Vertices {
		dst = appendString(dst, v.ID)
		dst = appendString(dst, v.Label)
		dst = appendString(dst, v.Namespace)
		dst = appendString(dst, v.Name)
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.Batch.Edges)))
	for _, x := range e.Batch.Edges {
		dst = appendString(dst, x.ID)
		dst = appendString(dst, x.Label)
		dst = appendString(dst, x.OutV)
		dst = appendString(dst, x.InV)
		dst = binary.AppendVarint(dst, x.FirstSeen)
		dst = binary.AppendVarint(dst, x.LastSeen)
		dst = appendString(dst, x.LastRunID)
	}
	return dst
}

// DecodeOutbox decodes an outbox value.
func DecodeOutbox(b []byte) (OutboxEntry, error) {
	var e OutboxEntry
	r := reader{b: b}
	if r.byte() != 1 {
		return e, fmt.Errorf("%w: outbox version", ErrCorrupt)
	}
	e.Pin = r.string()
	e.Bucket = r.varint()
	n := r.uvarint()
	if n > uint64(len(b)) {
		return e, ErrCorrupt
	}
	e.Batch.Vertices = make([]lineage.Vertex, 0, n)
	for i := uint64(0); i < n && r.ok; i++ {
		e.Batch.Vertices = append(e.Batch.Vertices, lineage.Vertex{ID: r.string(), Label: r.string(), Namespace: r.string(), Name: r.string()})
	}
	n = r.uvarint()
	if n > uint64(len(b)) {
		return e, ErrCorrupt
	}
	e.Batch.Edges = make([]lineage.Edge, 0, n)
	for i := uint64(0); i < n && r.ok; i++ {
		e.Batch.Edges = append(e.Batch.Edges, lineage.Edge{ID: r.string(), Label: r.string(), OutV: r.string(), InV: r.string(),
			FirstSeen: r.varint(), LastSeen: r.varint(), LastRunID: r.string()})
	}
	return e, r.err()
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendString appends a length-prefixed string (for other state codecs).
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// Reader decodes what the Append* helpers wrote; the first failure sticks.
type Reader = reader

// NewReader returns a reader over b.
func NewReader(b []byte) *Reader { return &reader{b: b} }

type reader struct {
	b  []byte
	ok bool
	// set means initialised
	set bool
}

func (r *reader) init() {
	if !r.set {
		r.set, r.ok = true, true
	}
}

func (r *reader) fail() { r.ok = false; r.b = nil }

// Byte reads one byte.
func (r *reader) Byte() byte { return r.byte() }

// String reads a length-prefixed string.
func (r *reader) String() string { return r.string() }

// Varint reads a signed varint.
func (r *reader) Varint() int64 { return r.varint() }

// Uvarint reads an unsigned varint.
func (r *reader) Uvarint() uint64 { return r.uvarint() }

// Err returns ErrCorrupt if anything failed to decode.
func (r *reader) Err() error { return r.err() }

// Len returns the bytes left.
func (r *reader) Len() int { return len(r.b) }

func (r *reader) byte() byte {
	r.init()
	if !r.ok || len(r.b) < 1 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	r.init()
	v, n := binary.Uvarint(r.b)
	if !r.ok || n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	r.init()
	v, n := binary.Varint(r.b)
	if !r.ok || n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string {
	n := r.uvarint()
	if !r.ok || n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) err() error {
	r.init()
	if !r.ok {
		return ErrCorrupt
	}
	return nil
}
