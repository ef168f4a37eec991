package lineage

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"strings"
	"testing"
)

func TestDatasetIDInjective(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b Dataset
	}{
		{"slash moves between namespace and name", Dataset{"s3://bucket", "a/b"}, Dataset{"s3://bucket/a", "b"}},
		{"colon in namespace", Dataset{"a:1", "x"}, Dataset{"a", "1:x"}},
		{"digits look like a length", Dataset{"1", ":a/b"}, Dataset{"1:a", "b"}},
		{"empty namespace", Dataset{"", "a/b"}, Dataset{"a", "b"}},
		{"unicode", Dataset{"ß", "x"}, Dataset{"ss", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if DatasetID(tt.a) == DatasetID(tt.b) {
				t.Fatalf("%+v and %+v share id %q", tt.a, tt.b, DatasetID(tt.a))
			}
		})
	}
	if DatasetID(Dataset{"n", "x"}) == JobID(Job{"n", "x"}) {
		t.Fatal("a dataset and a job share an id")
	}
}

func FuzzDatasetIDInjective(f *testing.F) {
	f.Add("s3://bucket", "a/b", "s3://bucket/a", "b")
	f.Add("1", ":a/b", "1:a", "b")
	f.Fuzz(func(t *testing.T, ns1, n1, ns2, n2 string) {
		if ns1 == ns2 && n1 == n2 {
			return
		}
		if DatasetID(Dataset{ns1, n1}) == DatasetID(Dataset{ns2, n2}) {
			t.Fatalf("(%q,%q) and (%q,%q) share an id", ns1, n1, ns2, n2)
		}
	})
}

func TestEdgeIDAndWindowKey(t *testing.T) {
	t.Parallel()
	a, b := DatasetID(Dataset{"ns", "a"}), DatasetID(Dataset{"ns", "b"})
	if EdgeID(EdgeDerives, a, b) == EdgeID(EdgeDerives, b, a) {
		t.Fatal("edge id ignores direction")
	}
	if first, again := EdgeID(EdgeDerives, a, b), EdgeID(EdgeDerives, a, b); first != again {
		t.Fatal("edge id not deterministic")
	}
	if EdgeID("ab", "c", "d") == EdgeID("a", "bc", "d") {
		t.Fatal("edge id not length-prefixed")
	}
	if WindowKey(EdgeDerives, a, b, 0) == WindowKey(EdgeDerives, a, b, 10000) {
		t.Fatal("window key ignores bucket")
	}
}

func TestEdgeMergeCommutative(t *testing.T) {
	t.Parallel()
	x := NewEdge(EdgeDerives, "a", "b", 5, 9, "r1")
	y := NewEdge(EdgeDerives, "a", "b", 3, 9, "r2")
	z := NewEdge(EdgeDerives, "a", "b", 7, 12, "r0")
	orders := [][]Edge{{x, y, z}, {z, y, x}, {y, x, z, x, y}}
	var want Edge
	for i, o := range orders {
		got := o[0]
		for _, e := range o[1:] {
			got.Merge(e)
		}
		if i == 0 {
			want = got
		} else if got != want {
			t.Fatalf("order %d: %+v != %+v", i, got, want)
		}
	}
	if want.FirstSeen != 3 || want.LastSeen != 12 || want.LastRunID != "r0" {
		t.Fatalf("merge = %+v", want)
	}
	a, b := x, y
	a.Merge(y)
	b.Merge(x)
	if a != b || a.LastRunID != "r2" {
		t.Fatalf("tie on lastSeen not broken by run id: %+v %+v", a, b)
	}
}

// refEdgeID and refWindowKey are the definitions of EdgeID and WindowKey
// written the plain way (a streaming hash.Hash); the allocation-free
// versions must give exactly the same bytes.
func refEdgeID(label, outV, inV string) string {
	h := sha256.New()
	refWriteLP(h, label)
	refWriteLP(h, outV)
	refWriteLP(h, inV)
	return label + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

func refWindowKey(label, outV, inV string, bucket int64) [sha256.Size]byte {
	h := sha256.New()
	refWriteLP(h, label)
	refWriteLP(h, outV)
	refWriteLP(h, inV)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(bucket))
	h.Write(b[:])
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func refWriteLP(h hash.Hash, s string) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	h.Write([]byte(s))
}

func TestIDsMatchReference(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 700) // longer than the stack buffer
	longLabel := strings.Repeat("L", 80)
	cases := []struct{ label, out, in string }{
		{EdgeDerives, "dataset:2:ns/a", "dataset:2:ns/b"},
		{EdgeInputTo, "", ""},
		{EdgeOutputs, "job:1:n/ß", long},
		{LabelDataset, long + long, "x"},
		{longLabel, "a", "b"}, // id longer than the id buffer
	}
	for _, c := range cases {
		if got, want := EdgeID(c.label, c.out, c.in), refEdgeID(c.label, c.out, c.in); got != want {
			t.Errorf("EdgeID(%.20q) = %s, want %s", c.label, got, want)
		}
		for _, bucket := range []int64{0, -10000, 1767225600000} {
			if WindowKey(c.label, c.out, c.in, bucket) != refWindowKey(c.label, c.out, c.in, bucket) {
				t.Errorf("WindowKey(%.20q, %d) differs from the reference", c.label, bucket)
			}
			if VertexWindowKey(c.label, c.out, bucket) != refWindowKey("V:"+c.label, c.out, "", bucket) {
				t.Errorf("VertexWindowKey(%.20q, %d) differs from the reference", c.label, bucket)
			}
		}
	}
}

func TestIDsAllocations(t *testing.T) {
	a, b := DatasetID(Dataset{"ns", "a"}), DatasetID(Dataset{"ns", "b"})
	if n := testing.AllocsPerRun(100, func() { _ = WindowKey(EdgeDerives, a, b, 10000) }); n != 0 {
		t.Errorf("WindowKey allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = VertexWindowKey(LabelDataset, a, 10000) }); n != 0 {
		t.Errorf("VertexWindowKey allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = EdgeID(EdgeDerives, a, b) }); n != 1 {
		t.Errorf("EdgeID allocates %v times, want 1 (the string)", n)
	}
}
