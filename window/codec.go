package window

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
)

// ErrCorrupt is returned for a window value that does not decode.
var ErrCorrupt = errors.New("window: corrupt value")

// AppendEntry appends the encoding of e to dst:
// kind byte, then length-prefixed label, out, in, then for edges
// varint first, varint last, length-prefixed run id; for vertices
// length-prefixed namespace and name; then, when the entry has
// properties, their length-prefixed [lineage.Props] encoding (absent in
// values written before vertex, then edge, properties existed).
func AppendEntry(dst []byte, e *Entry) []byte {
	dst = append(dst, byte(e.Kind))
	dst = enc.AppendString(dst, e.Label)
	dst = enc.AppendString(dst, e.Out)
	dst = enc.AppendString(dst, e.In)
	if e.Kind == KindEdge {
		dst = enc.AppendVarint(dst, e.First)
		dst = enc.AppendVarint(dst, e.Last)
		dst = enc.AppendString(dst, e.RunID)
	} else {
		dst = enc.AppendString(dst, e.Namespace)
		dst = enc.AppendString(dst, e.Name)
	}
	if e.VProps != "" {
		dst = enc.AppendString(dst, string(e.VProps))
	}
	return dst
}

// DecodeEntry decodes b (as written by [AppendEntry]) into e and returns
// the remaining bytes. Strings are copied.
func DecodeEntry(b []byte, e *Entry) ([]byte, error) {
	r := enc.NewReader(b, ErrCorrupt)
	*e = Entry{Kind: Kind(r.Byte())}
	e.Label, e.Out, e.In = r.String(), r.String(), r.String()
	switch {
	case !r.OK():
	case e.Kind == KindEdge:
		e.First, e.Last, e.RunID = r.Varint(), r.Varint(), r.String()
	case e.Kind == KindVertex:
		e.Namespace, e.Name = r.String(), r.String()
	default:
		return nil, fmt.Errorf("%w: kind %d", ErrCorrupt, e.Kind)
	}
	if r.OK() && r.Len() > 0 {
		p, err := lineage.DecodeProps(r.String())
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		e.VProps = p
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return r.Rest(), nil
}

// MergerName is stored by Pebble in the DB; a DB written with another
// merger refuses to open.
const MergerName = "lineageflow.window.v1"

// Merger is the Pebble merge operator of window values: barrier writes are
// blind merges of deltas ([pebble.Batch.Merge]), folded with
// [lineage.Edge.Merge] rules when read or compacted. It is commutative and
// idempotent, so the order of operands never matters.
var Merger = &pebble.Merger{
	Name: MergerName,
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		m := &valueMerger{}
		if _, err := DecodeEntry(value, &m.e); err != nil {
			return nil, err
		}
		return m, nil
	},
}

type valueMerger struct{ e Entry }

func (m *valueMerger) fold(value []byte) error {
	var o Entry
	if _, err := DecodeEntry(value, &o); err != nil {
		return err
	}
	m.e.Merge(o)
	return nil
}

func (m *valueMerger) MergeNewer(value []byte) error { return m.fold(value) }
func (m *valueMerger) MergeOlder(value []byte) error { return m.fold(value) }
func (m *valueMerger) Finish(bool) ([]byte, io.Closer, error) {
	return AppendEntry(nil, &m.e), nil, nil
}
