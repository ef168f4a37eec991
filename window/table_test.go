package window

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/lineageflow/lineageflow/lineage"
)

// tableContent is a table's entries by key.
func tableContent(t *Table) map[Key]Props {
	out := map[Key]Props{}
	t.Range(func(k Key, p Props) { out[k] = p })
	return out
}

// TestAddVertexPropsMatchesAddVertex: a random mix of AddVertexProps and
// AddVertex calls on a few vertices gives the entries that AddVertex with
// v.Props = MakeProps(ps...) alone gives, read between calls too.
func TestAddVertexPropsMatchesAddVertex(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	prop := func() lineage.Prop {
		k := r.IntN(6)
		if k%2 == 0 {
			return lineage.NumLWW("n"+strconv.Itoa(k), int64(r.IntN(4)), int64(r.IntN(4)))
		}
		return lineage.StrLWW("s"+strconv.Itoa(k), strconv.Itoa(r.IntN(3)), int64(r.IntN(4)))
	}
	for round := 0; round < 300; round++ {
		got, want := NewTable(), NewTable()
		for step := 0; step < 40; step++ {
			v := lineage.Vertex{ID: "v" + strconv.Itoa(r.IntN(3)), Label: lineage.LabelDataset, Namespace: "ns", Name: "n"}
			bucket := int64(r.IntN(2))
			ps := make([]lineage.Prop, r.IntN(4))
			for i := range ps {
				ps[i] = prop()
			}
			w := v
			w.Props = lineage.MakeProps(ps...)
			want.AddVertex(bucket, w)
			if r.IntN(3) == 0 {
				got.AddVertex(bucket, w)
			} else {
				got.AddVertexProps(bucket, v, ps)
			}
			got.AddEdge(bucket, lineage.EdgeDerives, v.ID, "x", int64(step), int64(step), "r")
			want.AddEdge(bucket, lineage.EdgeDerives, v.ID, "x", int64(step), int64(step), "r")
			if r.IntN(10) == 0 || step == 39 {
				g, wt := tableContent(got), tableContent(want)
				if len(g) != len(wt) || got.Len() != want.Len() {
					t.Fatalf("round %d: %d entries, want %d", round, len(g), len(wt))
				}
				for k, p := range wt {
					if g[k] != p {
						t.Fatalf("round %d step %d: %+v: %+v (%s), want %+v (%s)", round, step, k, g[k], g[k].VProps, p, p.VProps)
					}
				}
			}
			if r.IntN(20) == 0 {
				got.Reset()
				want.Reset()
			}
		}
	}
}
