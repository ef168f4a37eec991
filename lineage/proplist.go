package lineage

import (
	"encoding/binary"
	"encoding/json"
	"slices"

	"github.com/lineageflow/lineageflow/internal/enc"
)

// PropList is the mutable form of [Props]: a set of properties sorted by
// key, one per key, merged in place. It is for a set that many events
// fold into and that is encoded far less often than it changes (a run's
// Run vertex properties): [Props.With] decodes, merges and re-encodes the
// whole set at every call, Add does none of that. Its [PropList.Props] is
// exactly the Props that the same merges through [Props.With] give.
//
// Between merges it can be compacted back to its encoding
// ([PropList.Compact]): a list takes about three times the memory of the
// encoding, so a set that is kept long but merged rarely stays encoded.
//
// The zero value is the empty set. A PropList must not be copied while
// it is still added to (copies share their storage).
type PropList struct {
	l      []Prop // the set, when listed
	enc    Props  // the set, when not listed
	listed bool
}

// PropListOf returns the set p (decoded at the first Add).
func PropListOf(p Props) PropList { return PropList{enc: p} }

// Len returns the number of properties.
func (p *PropList) Len() int {
	if !p.listed {
		return p.enc.Len()
	}
	return len(p.l)
}

// Add merges ps in, each key keeping the winner of its values (on a tie
// the value held, then the first of ps, as [MakeProps] and [Props.Merge]
// do), and reports whether the set changed.
func (p *PropList) Add(ps ...Prop) bool {
	if !p.listed {
		l, err := decodePropsCap(p.enc, len(ps)+4)
		if err != nil {
			panic(err) // Props are only built by this package or checked by DecodeProps
		}
		p.l, p.enc, p.listed = l, "", true // room for ps and a few more keys: one allocation
	}
	changed := false
	for _, x := range ps {
		// Most keys are there already: look for the key by equality
		// first (a length check, then usually the same constant's
		// pointer), and for its place by order only when it is new.
		if i := p.index(x.Key); i >= 0 {
			if p.l[i].less(x) {
				p.l[i] = x
				changed = true
			}
			continue
		}
		i := p.search(x.Key)
		p.l = append(p.l, Prop{})
		copy(p.l[i+1:], p.l[i:])
		p.l[i] = x
		changed = true
	}
	return changed
}

// Compact keeps the set as its encoding only, until the next Add.
func (p *PropList) Compact() {
	if p.listed {
		p.enc = p.Props()
		p.l, p.listed = nil, false
	}
}

// index returns the index of key, or -1.
func (p *PropList) index(key string) int {
	for i := range p.l {
		if len(p.l[i].Key) == len(key) && p.l[i].Key == key {
			return i
		}
	}
	return -1
}

// search returns the index of key, or where it would be inserted.
func (p *PropList) search(key string) int {
	// Linear: the sets merged in place are small (a dozen keys).
	for i := range p.l {
		if p.l[i].Key >= key {
			return i
		}
	}
	return len(p.l)
}

// Get returns the property key.
func (p *PropList) Get(key string) (Prop, bool) {
	if !p.listed {
		return p.enc.Get(key)
	}
	if i := p.index(key); i >= 0 {
		return p.l[i], true
	}
	return Prop{}, false
}

// Props returns the set's canonical encoding.
func (p *PropList) Props() Props {
	if !p.listed {
		return p.enc
	}
	if len(p.l) == 0 {
		return ""
	}
	return encodeProps(p.l)
}

// AppendEncoded appends the set's encoding as a length-prefixed string
// (what enc.AppendString(dst, string(p.Props())) appends), without
// building the Props string.
func (p *PropList) AppendEncoded(dst []byte) []byte {
	if !p.listed {
		return enc.AppendString(dst, string(p.enc))
	}
	if len(p.l) == 0 {
		return enc.AppendUvarint(dst, 0)
	}
	n := uvarintLen(uint64(len(p.l)))
	for i := range p.l {
		x := &p.l[i]
		n += uvarintLen(uint64(len(x.Key))) + len(x.Key) + varintLen(x.Stamp) + 1
		if x.IsNum {
			n += varintLen(x.Num)
		} else {
			n += uvarintLen(uint64(len(x.Str))) + len(x.Str)
		}
	}
	dst = enc.AppendUvarint(dst, uint64(n))
	dst = enc.AppendUvarint(dst, uint64(len(p.l)))
	for i := range p.l {
		dst = appendProp(dst, &p.l[i])
	}
	return dst
}

func uvarintLen(x uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], x)
}

// varintLen is the length of enc.AppendVarint's zig-zag encoding of x.
func varintLen(x int64) int {
	ux := uint64(x) << 1
	if x < 0 {
		ux = ^ux
	}
	return uvarintLen(ux)
}

// RunListCap is the most dataset ids a Run vertex's inputs (or outputs)
// list holds; its inputCount (outputCount) counts them all.
const RunListCap = 32

// AppendRunDatasetProps appends to ps the Run vertex properties of the
// datasets a run read (ins) and wrote (outs), ids without repeats, all
// the run's so far: inputs and outputs, the RunListCap smallest ids in
// order encoded as a JSON array (a string, last writer wins with the
// list's full length as stamp: a run's set only grows, so the longest
// wins whatever the order of the writes), and inputCount and outputCount
// (maximum). An empty set gives no property.
func AppendRunDatasetProps(ps []Prop, ins, outs []string) []Prop {
	for _, l := range [2]struct {
		ids         []string
		list, count string
	}{{ins, PropInputs, PropInputCount}, {outs, PropOutputs, PropOutputCount}} {
		if len(l.ids) == 0 {
			continue
		}
		r := RunDatasetProps(l.ids, l.list, l.count)
		ps = append(ps, r[:]...)
	}
	return ps
}

// RunDatasetProps returns the count (key count) and list (key list)
// properties of the dataset ids ids, in key order (see
// AppendRunDatasetProps).
func RunDatasetProps(ids []string, list, count string) [2]Prop {
	n := int64(len(ids))
	return [2]Prop{NumMax(count, n), StrLWW(list, RunDatasetList(ids), n)}
}

// RunDatasetList encodes ids (no repeats; sorted in place) as a Run
// vertex list property: the RunListCap smallest, a JSON array.
func RunDatasetList(ids []string) string {
	slices.Sort(ids)
	n := 2
	for _, id := range ids[:min(len(ids), RunListCap)] {
		n += len(id) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, id := range ids[:min(len(ids), RunListCap)] {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, id)
	}
	return string(append(b, ']'))
}

// appendJSONString appends s to b as a JSON string (s is UTF-8: the
// decoder's; only '"', '\\' and control characters are escaped).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// ParseRunDatasetList decodes a Run vertex list property; nil if it is
// not one.
func ParseRunDatasetList(s string) []string {
	var ids []string
	if json.Unmarshal([]byte(s), &ids) != nil {
		return nil
	}
	return ids
}
