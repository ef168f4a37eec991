package lineage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lineageflow/lineageflow/internal/enc"
)

// Prop is one mergeable vertex property. Of two values of one key the
// greater (Stamp, Num, Str) wins: one total order, so the merge is
// commutative, associative and idempotent whatever the order and number of
// deliveries. The rules of the model are all expressed through Stamp:
//
//   - last writer wins: Stamp = the producer eventTime (Unix ms) of the
//     value; ties by the greater value;
//   - maximum: Stamp = Num;
//   - minimum: Stamp = -Num;
//   - a constant (a pure function of the vertex id): Stamp = 0.
//
// A key always holds the same kind of value: a number (IsNum, Num) or a
// string (Str). In the graph the value is stored under Key and Stamp under
// Key + [StampSuffix], so that later deliveries can be compared with it.
type Prop struct {
	Key   string
	Str   string
	Num   int64
	IsNum bool
	Stamp int64
}

// StampSuffix is appended to a property key to name the graph property
// holding its stamp (merge bookkeeping, not data for readers).
const StampSuffix = "_ts"

// Value returns the graph value of p: an int64 or a string.
func (p Prop) Value() any {
	if p.IsNum {
		return p.Num
	}
	return p.Str
}

// less reports whether p loses against o (same key).
func (p Prop) less(o Prop) bool {
	if p.Stamp != o.Stamp {
		return p.Stamp < o.Stamp
	}
	if p.Num != o.Num {
		return p.Num < o.Num
	}
	return p.Str < o.Str
}

// StrLWW is a string property whose last writer (by eventTime t) wins.
func StrLWW(key, v string, t int64) Prop { return Prop{Key: key, Str: v, Stamp: t} }

// NumLWW is a numeric property whose last writer (by eventTime t) wins.
func NumLWW(key string, v, t int64) Prop { return Prop{Key: key, Num: v, IsNum: true, Stamp: t} }

// NumMax is a numeric property that keeps its maximum.
func NumMax(key string, v int64) Prop { return Prop{Key: key, Num: v, IsNum: true, Stamp: v} }

// NumMin is a numeric property that keeps its minimum.
func NumMin(key string, v int64) Prop { return Prop{Key: key, Num: v, IsNum: true, Stamp: -v} }

// StrConst is a string property that never changes for its vertex.
func StrConst(key, v string) Prop { return Prop{Key: key, Str: v} }

// Props is a set of vertex properties, at most one per key, in a canonical
// encoding (sorted by key): a string, so that a [Vertex] stays comparable
// with == and two equal sets are equal strings. The zero value is the
// empty set.
type Props string

// MakeProps returns the set of ps, merging values of one key.
func MakeProps(ps ...Prop) Props {
	if len(ps) == 0 {
		return ""
	}
	if len(ps) == 1 || sortedKeys(ps) {
		return encodeProps(ps)
	}
	l := slices.Clone(ps)
	// Stable: among values of one key the first wins unless a later one
	// beats it, as a merge does.
	slices.SortStableFunc(l, func(a, b Prop) int { return strings.Compare(a.Key, b.Key) })
	out := l[:0]
	for _, x := range l {
		if n := len(out); n > 0 && out[n-1].Key == x.Key {
			if out[n-1].less(x) {
				out[n-1] = x
			}
			continue
		}
		out = append(out, x)
	}
	return encodeProps(out)
}

// sortedKeys reports whether the keys of ps are strictly increasing (a
// set already: MakeProps encodes it as it is).
func sortedKeys(ps []Prop) bool {
	for i := 1; i < len(ps); i++ {
		if ps[i-1].Key >= ps[i].Key {
			return false
		}
	}
	return true
}

// List returns the properties, sorted by key. It panics on a corrupt
// encoding (Props are only built by this package or decoded with
// [DecodeProps]).
func (p Props) List() []Prop {
	l, err := decodeProps(p)
	if err != nil {
		panic(err)
	}
	return l
}

// Len returns the number of properties.
func (p Props) Len() int { return len(p.List()) }

// Get returns the property key.
func (p Props) Get(key string) (Prop, bool) {
	for _, x := range p.List() {
		if x.Key == key {
			return x, true
		}
	}
	return Prop{}, false
}

// Merge returns the union of p and o, each key holding the winner of its
// values.
func (p Props) Merge(o Props) Props {
	switch {
	case o == "" || o == p:
		return p
	case p == "":
		return o
	}
	a, b := p.List(), o.List()
	out, changed := mergeSorted(a, b)
	if !changed {
		return p // o adds nothing: no new encoding
	}
	return encodeProps(out)
}

// With returns p with ps merged in.
func (p Props) With(ps ...Prop) Props { return p.Merge(MakeProps(ps...)) }

// String renders the properties for messages: key=value, sorted.
func (p Props) String() string {
	var b strings.Builder
	for i, x := range p.List() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x.Key)
		b.WriteByte('=')
		if x.IsNum {
			b.WriteString(strconv.FormatInt(x.Num, 10))
		} else {
			b.WriteString(quoteValue(x.Str))
		}
	}
	return b.String()
}

// mergeSorted merges two lists sorted by unique keys: a key holds the
// winner of its values, a's on a tie. changed: the result is not a.
func mergeSorted(a, b []Prop) ([]Prop, bool) {
	out := make([]Prop, 0, len(a)+len(b))
	changed := false
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].Key < b[j].Key:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].Key < a[i].Key:
			out = append(out, b[j])
			j++
			changed = true
		default: // same key
			if a[i].less(b[j]) {
				out = append(out, b[j])
				changed = true
			} else {
				out = append(out, a[i])
			}
			i++
			j++
		}
	}
	return out, changed
}

// errCorruptProps is returned by [DecodeProps] for bytes that are not a
// Props encoding.
var errCorruptProps = errors.New("lineage: corrupt vertex properties")

func encodeProps(l []Prop) Props {
	size := binary.MaxVarintLen64
	for _, x := range l {
		size += len(x.Key) + len(x.Str) + 3*binary.MaxVarintLen64 + 1
	}
	b := make([]byte, 0, size)
	b = enc.AppendUvarint(b, uint64(len(l)))
	for i := range l {
		b = appendProp(b, &l[i])
	}
	return Props(b)
}

// appendProp appends one property in the Props encoding: key, stamp, a
// kind byte (1 number, 0 string) and the value.
func appendProp(dst []byte, x *Prop) []byte {
	dst = enc.AppendString(dst, x.Key)
	dst = enc.AppendVarint(dst, x.Stamp)
	if x.IsNum {
		return enc.AppendVarint(append(dst, 1), x.Num)
	}
	return enc.AppendString(append(dst, 0), x.Str)
}

func decodeProps(p Props) ([]Prop, error) { return decodePropsCap(p, 0) }

// decodePropsCap is decodeProps into a list with room for extra more
// properties.
func decodePropsCap(p Props, extra int) ([]Prop, error) {
	if p == "" {
		if extra > 0 {
			return make([]Prop, 0, extra), nil
		}
		return nil, nil
	}
	// Read in place: keys and string values are substrings of p (no copy).
	r := propsReader{s: string(p), ok: true}
	n := r.uvarint()
	if !r.ok || n > uint64(len(p)) {
		return nil, errCorruptProps
	}
	out := make([]Prop, 0, int(n)+extra)
	for i := uint64(0); i < n && r.ok; i++ {
		x := Prop{Key: r.str(), Stamp: r.varint()}
		switch r.byte() {
		case 0:
			x.Str = r.str()
		case 1:
			x.IsNum, x.Num = true, r.varint()
		default:
			return nil, errCorruptProps
		}
		if !r.ok {
			break
		}
		if len(out) > 0 && out[len(out)-1].Key >= x.Key {
			return nil, errCorruptProps
		}
		out = append(out, x)
	}
	if !r.ok || r.i != len(r.s) {
		return nil, errCorruptProps
	}
	return out, nil
}

// propsReader reads the encoding of internal/enc (uvarint, zig-zag varint,
// length-prefixed string) from a string, in place.
type propsReader struct {
	s  string
	i  int
	ok bool
}

func (r *propsReader) uvarint() uint64 {
	if !r.ok {
		return 0
	}
	var x uint64
	var shift uint
	for k := 0; r.i+k < len(r.s) && k < binary.MaxVarintLen64; k++ {
		c := r.s[r.i+k]
		if c < 0x80 {
			if k == binary.MaxVarintLen64-1 && c > 1 {
				break // overflow
			}
			r.i += k + 1
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	r.ok = false
	return 0
}

func (r *propsReader) varint() int64 {
	ux := r.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (r *propsReader) byte() byte {
	if !r.ok || r.i >= len(r.s) {
		r.ok = false
		return 0xff
	}
	r.i++
	return r.s[r.i-1]
}

func (r *propsReader) str() string {
	n := r.uvarint()
	if !r.ok || n > uint64(len(r.s)-r.i) {
		r.ok = false
		return ""
	}
	v := r.s[r.i : r.i+int(n)]
	r.i += int(n)
	return v
}

// DecodeProps checks that s is a Props encoding (as read back from
// storage) and returns it.
func DecodeProps(s string) (Props, error) {
	if err := checkProps(s); err != nil {
		return "", err
	}
	return Props(s), nil
}

// checkProps is decodeProps without building the list (what DecodeProps
// needs: it runs for every vertex and edge an outbox entry holds).
func checkProps(s string) error {
	if s == "" {
		return nil
	}
	r := propsReader{s: s, ok: true}
	n := r.uvarint()
	if !r.ok || n > uint64(len(s)) {
		return errCorruptProps
	}
	prev := ""
	for i := uint64(0); i < n && r.ok; i++ {
		key := r.str()
		r.varint()
		switch r.byte() {
		case 0:
			r.str()
		case 1:
			r.varint()
		default:
			return errCorruptProps
		}
		if !r.ok {
			break
		}
		if i > 0 && prev >= key {
			return errCorruptProps
		}
		prev = key
	}
	if !r.ok || r.i != len(r.s) {
		return errCorruptProps
	}
	return nil
}

// propJSON is the JSON form of one property: key, value (s or n) and
// stamp.
type propJSON struct {
	K string  `json:"k"`
	S *string `json:"s,omitempty"`
	N *int64  `json:"n,omitempty"`
	T int64   `json:"t"`
}

// MarshalJSON writes the properties as a JSON array of {k, s|n, t}.
func (p Props) MarshalJSON() ([]byte, error) {
	l := p.List()
	out := make([]propJSON, len(l))
	for i, x := range l {
		out[i] = propJSON{K: x.Key, T: x.Stamp}
		if x.IsNum {
			out[i].N = &l[i].Num
		} else {
			out[i].S = &l[i].Str
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (p *Props) UnmarshalJSON(data []byte) error {
	var in []propJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("lineage: vertex properties: %w", err)
	}
	l := make([]Prop, len(in))
	for i, x := range in {
		l[i] = Prop{Key: x.K, Stamp: x.T}
		switch {
		case x.N != nil:
			l[i].IsNum, l[i].Num = true, *x.N
		case x.S != nil:
			l[i].Str = *x.S
		}
	}
	*p = MakeProps(l...)
	return nil
}
