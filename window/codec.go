package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// ErrCorrupt is returned for a window value that does not decode.
var ErrCorrupt = errors.New("window: corrupt value")

// AppendEntry appends the encoding of e to dst:
// kind byte, then length-prefixed label, out, in, then for edges
// varint first, varint last, length-prefixed run id; for vertices
// length-prefixed namespace and name.
func AppendEntry(dst []byte, e *Entry) []byte {
	dst = append(dst, byte(e.Kind))
	dst = appendString(dst, e.Label)
	dst = appendString(dst, e.Out)
	dst = appendString(dst, e.In)
	if e.Kind == KindEdge {
		dst = binary.AppendVarint(dst, e.First)
		dst = binary.AppendVarint(dst, e.Last)
		return appendString(dst, e.RunID)
	}
	dst = appendString(dst, e.Namespace)
	return appendString(dst, e.Name)
}

// DecodeEntry decodes b (as written by [AppendEntry]) into e and returns
// the remaining bytes. Strings are copied.
func DecodeEntry(b []byte, e *Entry) ([]byte, error) {
	if len(b) < 1 {
		return nil, ErrCorrupt
	}
	*e = Entry{Kind: Kind(b[0])}
	b = b[1:]
	var ok bool
	if e.Label, b, ok = readString(b); !ok {
		return nil, ErrCorrupt
	}
	if e.Out, b, ok = readString(b); !ok {
		return nil, ErrCorrupt
	}
	if e.In, b, ok = readString(b); !ok {
		return nil, ErrCorrupt
	}
	switch e.Kind {
	case KindEdge:
		var n int
		if e.First, n = binary.Varint(b); n <= 0 {
			return nil, ErrCorrupt
		}
		b = b[n:]
		if e.Last, n = binary.Varint(b); n <= 0 {
			return nil, ErrCorrupt
		}
		b = b[n:]
		if e.RunID, b, ok = readString(b); !ok {
			return nil, ErrCorrupt
		}
	case KindVertex:
		if e.Namespace, b, ok = readString(b); !ok {
			return nil, ErrCorrupt
		}
		if e.Name, b, ok = readString(b); !ok {
			return nil, ErrCorrupt
		}
	default:
		return nil, fmt.Errorf("%w: kind %d", ErrCorrupt, b[0])
	}
	return b, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func readString(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
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
