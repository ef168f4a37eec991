package lineage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/lineageflow/lineageflow/internal/enc"
)

// randProp returns a property of one of a few keys (each key always of
// one kind), with values and stamps from small ranges so that ties and
// equal values are frequent.
func randProp(r *rand.Rand) Prop {
	k := r.IntN(8)
	key := "k" + strconv.Itoa(k)
	if k%2 == 0 {
		return Prop{Key: key, Num: int64(r.IntN(5)) - 2, IsNum: true, Stamp: int64(r.IntN(5)) - 2}
	}
	return Prop{Key: key, Str: string(rune('a' + r.IntN(3))), Stamp: int64(r.IntN(5)) - 2}
}

// TestPropListAgainstWith: folding random property sets in place gives,
// after every step, the encoding that Props.With gives, and AppendEncoded
// appends what enc.AppendString of that encoding appends.
func TestPropListAgainstWith(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 2000; round++ {
		var want Props
		var got PropList
		if r.IntN(4) == 0 {
			want = MakeProps(randProp(r), randProp(r))
			got = PropListOf(want)
		}
		for step := 0; step < 1+r.IntN(8); step++ {
			ps := make([]Prop, r.IntN(5))
			for i := range ps {
				ps[i] = randProp(r)
			}
			next := want.With(ps...)
			changed := got.Add(ps...)
			if changed != (next != want) {
				t.Fatalf("round %d step %d: changed %v, With went from %q to %q", round, step, changed, want, next)
			}
			want = next
			if got.Props() != want {
				t.Fatalf("round %d step %d: PropList %q, With %q", round, step, got.Props(), want)
			}
			if got.Len() != want.Len() {
				t.Fatalf("Len %d, want %d", got.Len(), want.Len())
			}
			if a, b := got.AppendEncoded([]byte{7}), enc.AppendString([]byte{7}, string(want)); string(a) != string(b) {
				t.Fatalf("AppendEncoded %x, want %x", a, b)
			}
			for _, x := range want.List() {
				if y, ok := got.Get(x.Key); !ok || y != x {
					t.Fatalf("Get(%q) = %v %v, want %v", x.Key, y, ok, x)
				}
			}
			if _, ok := got.Get("zz"); ok {
				t.Fatal("Get of an absent key found it")
			}
			if r.IntN(3) == 0 {
				got.Compact()
				if got.Props() != want || got.Len() != want.Len() {
					t.Fatalf("after Compact: %q, want %q", got.Props(), want)
				}
				if a, b := got.AppendEncoded(nil), enc.AppendString(nil, string(want)); string(a) != string(b) {
					t.Fatalf("AppendEncoded after Compact %x, want %x", a, b)
				}
				for _, x := range want.List() {
					if y, ok := got.Get(x.Key); !ok || y != x {
						t.Fatalf("Get(%q) after Compact = %v %v, want %v", x.Key, y, ok, x)
					}
				}
			}
		}
	}
}

// A Run vertex's dataset list is a JSON array of the RunListCap smallest
// ids, any id text read back as it was.
func TestRunDatasetList(t *testing.T) {
	ids := []string{"dataset:1:b/\"q\"", "dataset:1:a/x\\y", "dataset:2:é😀/\x01\n", "dataset:1:c/<&>"}
	got := ParseRunDatasetList(RunDatasetList(append([]string{}, ids...)))
	want := append([]string{}, ids...)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("round trip %q, want %q", got, want)
	}
	var many []string
	for i := range RunListCap + 10 {
		many = append(many, fmt.Sprintf("dataset:1:n/%03d", RunListCap+10-i))
	}
	if got := ParseRunDatasetList(RunDatasetList(many)); len(got) != RunListCap || got[0] != "dataset:1:n/001" {
		t.Fatalf("capped list %d ids from %q", len(got), got)
	}
	if RunDatasetList(nil) != "[]" || ParseRunDatasetList("nope") != nil {
		t.Fatal("empty list or bad text")
	}
	ps := AppendRunDatasetProps(nil, []string{"b", "a"}, nil)
	if len(ps) != 2 || ps[1].Key != PropInputs || ps[1].Stamp != 2 || ps[0].Key != PropInputCount || ps[0].Num != 2 {
		t.Fatalf("props %+v", ps)
	}
}
