package processor

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/lineageflow/lineageflow/internal/enc"
	"github.com/lineageflow/lineageflow/lineage"
)

// Fuzz targets of the outbox entry codec (s/<shard>/o/<seq>, read by the
// drain after a restart): decoding arbitrary bytes never panics, an entry
// that decodes has readable properties and re-encodes to itself, and an
// entry built from arbitrary fields decodes to itself. testdata/fuzz/
// <FuzzName>/ holds committed seeds (v1, v2 and v3 values).

func outboxSeedEntries() []OutboxEntry {
	ds := lineage.DatasetVertex(lineage.Dataset{Namespace: "s3://b", Name: "/p"})
	ds.Props = lineage.MakeProps(lineage.StrLWW("schema", "v1", 10), lineage.NumMax("updatedAt", 50))
	job := lineage.JobVertex(lineage.Job{Namespace: "n", Name: "j"})
	run := lineage.RunVertex("r1", lineage.StrConst(lineage.PropRunID, "r1"))
	col := lineage.NewEdge(lineage.EdgeColumnDerives, "a", "b", 1, 2, "r1")
	col.Props = lineage.MakeProps(lineage.StrLWW(lineage.PropTransformationType, "DIRECT/IDENTITY", 7))
	return []OutboxEntry{
		{},
		{Pin: "49590338271490256608559692538361570959215759890000000001", Bucket: 1767225600000, Batch: lineage.Batch{
			Vertices: []lineage.Vertex{ds, job, run},
			Edges:    []lineage.Edge{lineage.NewEdge(lineage.EdgeInputTo, ds.ID, job.ID, -5, 1<<62, "r1"), col},
		}},
		{Bucket: -1 << 63, Batch: lineage.Batch{Vertices: []lineage.Vertex{{ID: "\x00", Label: "\xff"}}}},
	}
}

func outboxSeeds(f *testing.F) {
	for _, e := range outboxSeedEntries() {
		f.Add(AppendOutbox(nil, &e))
	}
	// A v1 value: no vertex properties, no edge properties.
	v1 := []byte{outboxV1}
	v1 = enc.AppendString(v1, "7")
	v1 = enc.AppendVarint(v1, 10000)
	v1 = enc.AppendUvarint(v1, 1)
	for _, s := range []string{"dataset:n:a", lineage.LabelDataset, "n", "a"} {
		v1 = enc.AppendString(v1, s)
	}
	v1 = enc.AppendUvarint(v1, 1)
	for _, s := range []string{"e", lineage.EdgeDerives, "dataset:n:a", "dataset:n:b"} {
		v1 = enc.AppendString(v1, s)
	}
	v1 = enc.AppendVarint(v1, 1)
	v1 = enc.AppendVarint(v1, 2)
	v1 = enc.AppendString(v1, "r")
	f.Add(v1)
	f.Add([]byte{})
	f.Add([]byte{outboxV3, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}) // a vertex count far beyond the value
}

func FuzzDecodeOutbox(f *testing.F) {
	outboxSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeOutbox(data)
		if err != nil {
			return
		}
		// The drain hands the entry to the sink, which reads every
		// property list (List panics on a corrupt encoding).
		for _, v := range e.Batch.Vertices {
			_ = v.Props.List()
		}
		for _, x := range e.Batch.Edges {
			_ = x.Props.List()
		}
		b := AppendOutbox(nil, &e)
		again, err := DecodeOutbox(b)
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("input %x decoded to %+v; its encoding decodes to %+v, %v", data, e, again, err)
		}
	})
}

func FuzzOutboxRoundTrip(f *testing.F) {
	f.Add("5", int64(10000), uint8(2), "dataset:n:a", lineage.LabelDataset, "n", "a", int64(1), int64(2), "r", "schema", "v1", int64(0), false, int64(10))
	f.Add("", int64(-1), uint8(0), "", "", "", "", int64(0), int64(0), "", "", "", int64(0), false, int64(0))
	f.Add("\xff", int64(1<<63-1), uint8(9), "\x00", "\x80", "ns/", "na\u00efve", int64(-1<<63), int64(1<<63-1), "\x00", "k", "", int64(-7), true, int64(-1<<63))
	f.Fuzz(func(t *testing.T, pin string, bucket int64, n uint8, id, label, ns, name string, first, last int64, runID, key, str string, num int64, isNum bool, stamp int64) {
		e := OutboxEntry{Pin: pin, Bucket: bucket}
		// Both slices non-nil: the decoder makes empty slices, not nil.
		e.Batch.Vertices = []lineage.Vertex{}
		e.Batch.Edges = []lineage.Edge{}
		for i := range int(n % 16) {
			suffix := strconv.Itoa(i)
			var props lineage.Props
			if i%3 != 2 {
				p := lineage.Prop{Key: key + suffix[:i%2], Str: str, Num: num, IsNum: isNum, Stamp: stamp + int64(i)}
				if isNum {
					p.Str = ""
				} else {
					p.Num = 0
				}
				props = lineage.MakeProps(p, lineage.NumMax(key+"~max", num))
			}
			e.Batch.Vertices = append(e.Batch.Vertices, lineage.Vertex{ID: id + suffix, Label: label, Namespace: ns, Name: name, Props: props})
			e.Batch.Edges = append(e.Batch.Edges, lineage.Edge{ID: id + "e" + suffix, Label: label, OutV: id + suffix, InV: name + suffix,
				FirstSeen: first - int64(i), LastSeen: last, LastRunID: runID, Props: props})
		}
		b := AppendOutbox(nil, &e)
		got, err := DecodeOutbox(b)
		if err != nil || !reflect.DeepEqual(got, e) {
			t.Fatalf("entry %+v -> %x -> %+v, %v", e, b, got, err)
		}
		// Every truncation is refused (a sample of them on long values:
		// checking each one makes the target quadratic).
		step := max(1, len(b)/64)
		for i := len(b) - 1; i >= 0; i -= step {
			if _, err := DecodeOutbox(b[:i]); err == nil {
				t.Fatalf("entry %+v truncated to %d of %d bytes decoded", e, i, len(b))
			}
		}
	})
}
