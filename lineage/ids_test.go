package lineage

import "testing"

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
