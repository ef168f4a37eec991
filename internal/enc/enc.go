// Package enc is the one varint and length-prefixed string codec of the
// state the flow keeps in Pebble and hands between shards: checkpoint
// positions and dead letters, window entries, outbox entries, run state
// and handoffs all append with it and read with [Reader].
//
// It owns no format: each caller writes its own version byte and fields.
package enc

import "encoding/binary"

// AppendVarint appends the signed varint of v.
func AppendVarint(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

// AppendUvarint appends the unsigned varint of v.
func AppendUvarint(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }

// AppendString appends s with a uvarint length prefix.
func AppendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendBool appends 1 for true, 0 for false.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// Reader decodes what the Append functions wrote. The first failure
// sticks: every later read returns a zero value and [Reader.Err] returns
// the error the reader was made with. The zero Reader is not usable; use
// [NewReader].
type Reader struct {
	b       []byte
	failed  bool
	corrupt error
}

// NewReader returns a reader over b whose Err is corrupt once a read
// fails (each package passes its own ErrCorrupt sentinel).
func NewReader(b []byte, corrupt error) Reader { return Reader{b: b, corrupt: corrupt} }

func (r *Reader) fail() { r.failed, r.b = true, nil }

// OK reports whether every read so far succeeded.
func (r *Reader) OK() bool { return !r.failed }

// Err returns the reader's corrupt error if a read failed, else nil.
func (r *Reader) Err() error {
	if r.failed {
		return r.corrupt
	}
	return nil
}

// Len returns the number of bytes left.
func (r *Reader) Len() int { return len(r.b) }

// Rest returns the bytes left.
func (r *Reader) Rest() []byte { return r.b }

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.failed || len(r.b) < 1 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.failed {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	if r.failed {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// String reads a length-prefixed string (copied).
func (r *Reader) String() string {
	n := r.Uvarint()
	if r.failed || n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
