package window

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/lineageflow/lineageflow/lineage"
)

// The functions below compute exactly [lineage.WindowKey] and
// [lineage.EdgeID] (window_test.go checks it) without the per-call
// allocations of a hash.Hash and its []byte(string) conversions: the
// length-prefixed fields go into a stack buffer hashed with one
// sha256.Sum256. They run once per table entry at every barrier.

// appendLP appends the varint length of s and s.
func appendLP(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// windowKey2 is lineage.WindowKey(prefix+label, out, in, bucket).
func windowKey2(prefix, label, out, in string, bucket int64) [32]byte {
	var stack [512]byte
	b := stack[:0]
	b = binary.AppendUvarint(b, uint64(len(prefix)+len(label)))
	b = append(b, prefix...)
	b = append(b, label...)
	b = appendLP(b, out)
	b = appendLP(b, in)
	b = binary.BigEndian.AppendUint64(b, uint64(bucket))
	return sha256.Sum256(b)
}

// edgeID is lineage.EdgeID(label, out, in).
func edgeID(label, out, in string) string {
	var stack [512]byte
	b := stack[:0]
	b = appendLP(b, label)
	b = appendLP(b, out)
	b = appendLP(b, in)
	sum := sha256.Sum256(b)
	var idBuf [96]byte // one allocation (the string) for labels up to 63 bytes
	id := idBuf[:0]
	if n := len(label) + 1 + 32; n > len(idBuf) {
		id = make([]byte, 0, n)
	}
	id = append(id, label...)
	id = append(id, ':')
	id = hex.AppendEncode(id, sum[:16])
	return string(id)
}

var _ = lineage.EdgeID // the reference of edgeID
