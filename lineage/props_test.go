package lineage

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/lineageflow/lineageflow/internal/enc"
)

// refMerge is the map-based merge the sorted merge replaced (reference).
func refMerge(a, b []Prop) []Prop {
	m := make(map[string]Prop, len(a)+len(b))
	for _, l := range [][]Prop{a, b} {
		for _, x := range l {
			if cur, ok := m[x.Key]; !ok || cur.less(x) {
				m[x.Key] = x
			}
		}
	}
	out := make([]Prop, 0, len(m))
	for _, x := range m {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// refDecode is the enc.Reader decoder the in-place one replaced.
func refDecodeProps(p Props) ([]Prop, error) {
	if p == "" {
		return nil, nil
	}
	r := enc.NewReader([]byte(p), errCorruptProps)
	n := r.Uvarint()
	if n > uint64(len(p)) {
		return nil, errCorruptProps
	}
	out := make([]Prop, 0, n)
	for i := uint64(0); i < n && r.OK(); i++ {
		x := Prop{Key: r.String(), Stamp: r.Varint()}
		switch r.Byte() {
		case 0:
			x.Str = r.String()
		case 1:
			x.IsNum, x.Num = true, r.Varint()
		default:
			return nil, errCorruptProps
		}
		if len(out) > 0 && out[len(out)-1].Key >= x.Key {
			return nil, errCorruptProps
		}
		out = append(out, x)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, errCorruptProps
	}
	return out, nil
}

func randProps(r *rand.Rand) []Prop {
	ps := make([]Prop, r.IntN(7))
	for i := range ps {
		k := r.IntN(6)
		key := fmt.Sprintf("k%d", k)
		switch r.IntN(3) {
		case 0:
			ps[i] = StrLWW(key, fmt.Sprint(r.IntN(3)), int64(r.IntN(4)))
		case 1:
			ps[i] = NumLWW(key, int64(r.IntN(3)-1), int64(r.IntN(4)))
		default:
			ps[i] = NumMax(key, int64(r.IntN(5)))
		}
	}
	return ps
}

// TestPropsMergeMatchesReference: MakeProps, Merge and the decoder give
// what the map-based merge and the enc.Reader decoder gave, on random
// property sets and on corrupt encodings.
func TestPropsMergeMatchesReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	for range 50000 {
		a, b := randProps(r), randProps(r)
		pa := MakeProps(a...)
		if want := encodeProps(refMerge(nil, a)); len(a) > 0 && pa != want || len(a) == 0 && pa != "" {
			t.Fatalf("MakeProps(%v) = %v, want %v", a, pa, want)
		}
		pb := MakeProps(b...)
		got := pa.Merge(pb)
		want := encodeProps(refMerge(pa.List(), pb.List()))
		if pa == "" || pb == "" || pa == pb { // the short cuts: one side as is
			want = pa + pb
			if pa == pb {
				want = pa
			}
		}
		if got != want {
			t.Fatalf("%v.Merge(%v) = %v, want %v", pa, pb, got, want)
		}
		if w := pa.With(b...); w != got {
			t.Fatalf("With %v != Merge %v", w, got)
		}
		// Corrupt encodings: the same verdict and the same list.
		enc := []byte(got)
		if len(enc) > 0 {
			switch i := r.IntN(len(enc)); r.IntN(3) {
			case 0:
				enc[i] = byte(r.IntN(256))
			case 1:
				enc = enc[:i]
			default:
				enc = append(enc, byte(r.IntN(256)))
			}
		}
		gl, gerr := decodeProps(Props(enc))
		wl, werr := refDecodeProps(Props(enc))
		if (gerr == nil) != (werr == nil) || fmt.Sprint(gl) != fmt.Sprint(wl) {
			t.Fatalf("decode %q: got %v, %v; want %v, %v", enc, gl, gerr, wl, werr)
		}
		if cerr := checkProps(string(enc)); (cerr == nil) != (werr == nil) {
			t.Fatalf("checkProps %q: %v, decode: %v", enc, cerr, werr)
		}
	}
}
