package kpl

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/awslabs/kinesis-aggregation/go/v2/deaggregator"
	"google.golang.org/protobuf/encoding/protowire"
)

func randomRecords(rng *rand.Rand, n, keys, maxData int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		data := make([]byte, rng.IntN(maxData+1))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		recs[i] = Record{PartitionKey: fmt.Sprintf("run:ns/job-%d", rng.IntN(keys)), Data: data}
		if rng.IntN(5) == 0 {
			recs[i].ExplicitHashKey = fmt.Sprint(rng.Uint64())
		}
	}
	return recs
}

func equalRecords(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].PartitionKey != want[i].PartitionKey || got[i].ExplicitHashKey != want[i].ExplicitHashKey ||
			!bytes.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("record %d: got {%q %q %d bytes}, want {%q %q %d bytes}", i,
				got[i].PartitionKey, got[i].ExplicitHashKey, len(got[i].Data),
				want[i].PartitionKey, want[i].ExplicitHashKey, len(want[i].Data))
		}
	}
}

// aggregateAll packs recs with a, returning the aggregates and, for each,
// the user records it holds.
func aggregateAll(t testing.TB, a *Aggregator, recs []Record) ([]Aggregate, [][]Record) {
	var aggs []Aggregate
	var groups [][]Record
	var cur []Record
	flush := func() {
		if agg, ok := a.Flush(); ok {
			aggs = append(aggs, agg)
			groups = append(groups, cur)
			cur = nil
		}
	}
	for _, r := range recs {
		if !a.Fits(r) {
			t.Fatalf("record of %d bytes does not fit in %d", len(r.Data), a.MaxSize())
		}
		if !a.Add(r) {
			flush()
			if !a.Add(r) {
				t.Fatal("empty aggregator refused a record that Fits")
			}
		}
		cur = append(cur, r)
	}
	flush()
	return aggs, groups
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name            string
		n, keys, data   int
		maxSize, expect int // expect: minimum number of aggregates
	}{
		{"one record", 1, 1, 100, 0, 1},
		{"empty data", 5, 2, 0, 0, 1},
		{"many small one key", 1000, 1, 50, 0, 1},
		{"many keys", 2000, 300, 400, 0, 2},
		{"large records", 100, 10, 4000, 0, 2},
		{"tiny limit", 50, 5, 10, 100, 10},
		{"max size", 3, 2, 400_000, MaxRecordSize, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := randomRecords(rng, tt.n, tt.keys, tt.data)
			a := NewAggregator(tt.maxSize)
			aggs, groups := aggregateAll(t, a, recs)
			if len(aggs) < tt.expect {
				t.Fatalf("%d aggregates, want at least %d", len(aggs), tt.expect)
			}
			var all []Record
			for i, agg := range aggs {
				if len(agg.Data) > a.MaxSize() {
					t.Fatalf("aggregate %d is %d bytes, limit %d", i, len(agg.Data), a.MaxSize())
				}
				if len(agg.Data)+len(agg.PartitionKey) > MaxRecordSize {
					t.Fatalf("aggregate %d over the Kinesis record limit", i)
				}
				if agg.PartitionKey != groups[i][0].PartitionKey || agg.ExplicitHashKey != groups[i][0].ExplicitHashKey {
					t.Fatalf("aggregate %d: outer key %q/%q, want the first record's", i, agg.PartitionKey, agg.ExplicitHashKey)
				}
				keys := map[string]bool{}
				for _, r := range groups[i] {
					keys[r.PartitionKey] = true
				}
				if len(agg.PartitionKeys) != len(keys) || agg.PartitionKeys[0] != agg.PartitionKey {
					t.Fatalf("aggregate %d: PartitionKeys %q, want the %d distinct keys", i, agg.PartitionKeys, len(keys))
				}
				for _, k := range agg.PartitionKeys {
					if !keys[k] {
						t.Fatalf("aggregate %d: PartitionKeys has %q", i, k)
					}
				}
				if agg.Records != len(groups[i]) {
					t.Fatalf("aggregate %d: Records=%d, want %d", i, agg.Records, len(groups[i]))
				}
				if !IsAggregated(agg.Data) {
					t.Fatalf("aggregate %d not recognised", i)
				}
				got, err := Deaggregate(agg.Data)
				if err != nil {
					t.Fatalf("aggregate %d: %v", i, err)
				}
				equalRecords(t, got, groups[i])
				all = append(all, got...)
			}
			equalRecords(t, all, recs)
		})
	}
}

// TestSizeExact checks that Size and SizeWith predict the flushed size.
func TestSizeExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	a := NewAggregator(MaxRecordSize)
	for _, r := range randomRecords(rng, 500, 40, 300) {
		want := a.SizeWith(r)
		if !a.Add(r) {
			t.Fatal("refused")
		}
		if a.Size() != want {
			t.Fatalf("Size %d after Add, SizeWith said %d", a.Size(), want)
		}
	}
	size := a.Size()
	agg, _ := a.Flush()
	if len(agg.Data) != size {
		t.Fatalf("flushed %d bytes, Size said %d", len(agg.Data), size)
	}
	if a.Len() != 0 || a.Size() != 0 || a.PartitionKey() != "" {
		t.Fatal("Flush did not empty the aggregator")
	}
	if _, ok := a.Flush(); ok {
		t.Fatal("Flush of an empty aggregator returned an aggregate")
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	a := NewAggregator(1000)
	big := Record{PartitionKey: "k", Data: make([]byte, 1000)}
	if a.Fits(big) || a.Add(big) {
		t.Fatal("a record larger than the limit was accepted")
	}
	if NewAggregator(10*MaxRecordSize).MaxSize() > MaxRecordSize-4*MaxPartitionKeyLen {
		t.Fatal("MaxSize not capped below the Kinesis record limit")
	}
	if NewAggregator(0).MaxSize() != DefaultMaxSize {
		t.Fatal("default size")
	}
	// Fill exactly: the limit is never exceeded, and the next record is refused.
	a = NewAggregator(DefaultMaxSize)
	r := Record{PartitionKey: "run:ns/job", Data: make([]byte, 1000)}
	n := 0
	for a.Add(r) {
		n++
	}
	if a.Size() > DefaultMaxSize || a.Size()+1000 < DefaultMaxSize-1100 {
		t.Fatalf("stopped at %d bytes of %d", a.Size(), DefaultMaxSize)
	}
	if n != a.Len() || !a.Contains("run:ns/job") || a.Contains("other") {
		t.Fatal("Len/Contains")
	}
}

func TestRefused(t *testing.T) {
	t.Parallel()
	good := Marshal([]Record{{PartitionKey: "a", Data: []byte("hello")}, {PartitionKey: "b", Data: []byte("world")}})
	resum := func(b []byte) []byte {
		b = bytes.Clone(b)
		sum := md5.Sum(b[4 : len(b)-16])
		copy(b[len(b)-16:], sum[:])
		return b
	}
	withBody := func(body []byte) []byte {
		b := append(Magic[:], body...)
		sum := md5.Sum(body)
		return append(b, sum[:]...)
	}
	flipped := bytes.Clone(good)
	flipped[10] ^= 1
	rec := func(fields ...[]byte) []byte {
		var body []byte
		for _, f := range fields {
			body = append(body, f...)
		}
		b := protowire.AppendTag(nil, 3, protowire.BytesType)
		return protowire.AppendBytes(b, body)
	}
	pkTable := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "k")
	idx := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	data := protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), []byte("x"))
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrNotAggregated},
		{"plain JSON", []byte(`{"eventType":"START","run":{"runId":"x"}}`), ErrNotAggregated},
		{"magic only", Magic[:], ErrNotAggregated},
		{"magic and digest, no body", append(Magic[:], make([]byte, 16)...), ErrNotAggregated},
		{"bit flip", flipped, ErrChecksum},
		{"truncated", good[:len(good)-1], ErrChecksum},
		{"truncated protobuf, valid md5", resum(append(good[:len(good)-20], good[len(good)-16:]...)), ErrCorrupt},
		{"garbage body", withBody([]byte{0xff, 0xff, 0xff}), ErrCorrupt},
		{"index out of table", withBody(append(pkTable, rec(idx(1, 1), data)...)), ErrCorrupt},
		{"no partition key index", withBody(append(pkTable, rec(data)...)), ErrCorrupt},
		{"no data", withBody(append(pkTable, rec(idx(1, 0))...)), ErrCorrupt},
		{"explicit hash key index out of table", withBody(append(pkTable, rec(idx(1, 0), idx(2, 0), data)...)), ErrCorrupt},
		{"wrong wire type", withBody(append(pkTable, rec(protowire.AppendFixed32(protowire.AppendTag(nil, 1, protowire.Fixed32Type), 0), data)...)), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Deaggregate(tt.data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %d records, err %v; want %v", len(got), err, tt.want)
			}
			if IsAggregated(tt.data) != errors.Is(tt.want, ErrCorrupt) {
				t.Fatalf("IsAggregated = %v", IsAggregated(tt.data))
			}
		})
	}
	// An empty aggregate (no records) is valid and holds nothing.
	if got, err := Deaggregate(withBody(pkTable)); err != nil || len(got) != 0 {
		t.Fatalf("empty aggregate: %d records, %v", len(got), err)
	}
}

// kclDeaggregate runs the de-aggregator the KCL (vmware-go-kcl-v2 v1.0.0,
// clientlibrary/worker/common-shard-consumer.go) runs on every GetRecords
// batch. It panics on some corrupt input; that is reported as an error.
func kclDeaggregate(data []byte, pk string) (out []Record, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("KCL de-aggregator panicked: %v", p)
		}
	}()
	seq := "49590338271490256608559692538361571095921575989136588898"
	recs, err := deaggregator.DeaggregateRecords([]types.Record{{
		Data: data, PartitionKey: aws.String(pk), SequenceNumber: aws.String(seq),
		ApproximateArrivalTimestamp: aws.Time(time.Unix(1700000000, 0)),
	}})
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if aws.ToString(r.SequenceNumber) != seq {
			return nil, fmt.Errorf("sequence number %q", aws.ToString(r.SequenceNumber))
		}
		out = append(out, Record{PartitionKey: aws.ToString(r.PartitionKey), Data: r.Data})
	}
	return out, nil
}

// TestKCLDeaggregates shows that the KCL's own de-aggregator decodes our
// aggregated records into the same user records, with their own partition
// keys, and passes plain records through.
func TestKCLDeaggregates(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	recs := randomRecords(rng, 3000, 200, 3000)
	for i := range recs {
		recs[i].ExplicitHashKey = "" // the KCL drops it; compare what it keeps
	}
	recs[7].Data = nil // empty user data survives
	aggs, groups := aggregateAll(t, NewAggregator(0), recs)
	if len(aggs) < 10 {
		t.Fatalf("only %d aggregates", len(aggs))
	}
	for i, agg := range aggs {
		got, err := kclDeaggregate(agg.Data, agg.PartitionKey)
		if err != nil {
			t.Fatalf("aggregate %d: %v", i, err)
		}
		want := make([]Record, len(groups[i]))
		for j, r := range groups[i] {
			want[j] = Record{PartitionKey: r.PartitionKey, Data: r.Data}
		}
		equalRecords(t, got, want)
	}
	// A plain record, and one with a bad checksum, reach the processor as they are.
	for _, plain := range [][]byte{[]byte(`{"run":{}}`), append(bytes.Clone(aggs[0].Data[:40]), aggs[0].Data[41:]...)} {
		got, err := kclDeaggregate(plain, "k")
		if err != nil || len(got) != 1 || !bytes.Equal(got[0].Data, plain) {
			t.Fatalf("plain record: %v %v", got, err)
		}
	}
}

func FuzzDeaggregate(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	f.Add(Marshal(randomRecords(rng, 3, 2, 20)))
	f.Add(Marshal([]Record{{PartitionKey: "a", ExplicitHashKey: "123", Data: []byte("x")}}))
	f.Add([]byte(`{"eventType":"COMPLETE"}`))
	f.Add(append(Magic[:], make([]byte, 17)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Fuzzing rarely gets an MD5 right: check the raw body too, with a
		// valid checksum put around it.
		body := data
		if len(body) > 0 && body[0] == 0 { // keep the input as it is
			body = nil
		}
		inputs := [][]byte{data}
		if body != nil {
			framed := append(Magic[:], body...)
			sum := md5.Sum(body)
			inputs = append(inputs, append(framed, sum[:]...))
		}
		for _, in := range inputs {
			recs, err := Deaggregate(in)
			if err != nil {
				if !errors.Is(err, ErrNotAggregated) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("unclassified error %v", err)
				}
				if IsAggregated(in) == !errors.Is(err, ErrCorrupt) {
					t.Fatalf("IsAggregated disagrees with %v", err)
				}
				continue
			}
			// Re-aggregating gives records that decode the same.
			if len(recs) > 0 {
				again, err := Deaggregate(Marshal(recs))
				if err != nil {
					t.Fatalf("re-aggregated: %v", err)
				}
				equalRecords(t, again, recs)
			}
			// The KCL decodes what we decode into the same records.
			kcl, err := kclDeaggregate(in, "outer")
			if err != nil {
				t.Fatalf("we decode %d records, the KCL fails: %v", len(recs), err)
			}
			if len(recs) == 0 {
				// The KCL emits nothing for an empty aggregate.
				if len(kcl) != 0 {
					t.Fatalf("KCL: %d records from an empty aggregate", len(kcl))
				}
				continue
			}
			want := make([]Record, len(recs))
			for i, r := range recs {
				want[i] = Record{PartitionKey: r.PartitionKey, Data: r.Data}
			}
			equalRecords(t, kcl, want)
		}
	})
}

func BenchmarkAggregator(b *testing.B) {
	for _, size := range []int{200, 1000, 4000} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(9, 10))
			recs := randomRecords(rng, 1024, 100, 0)
			for i := range recs {
				recs[i].Data = make([]byte, size)
				recs[i].ExplicitHashKey = ""
			}
			a := NewAggregator(0)
			var bytesIn int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := recs[i%len(recs)]
				if !a.Add(r) {
					a.Flush()
					a.Add(r)
				}
				bytesIn += int64(len(r.Data))
			}
			a.Flush()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(bytesIn)/b.Elapsed().Seconds()/1e6, "MB/s")
		})
	}
}

func BenchmarkDeaggregate(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	a := NewAggregator(0)
	aggs, _ := aggregateAll(b, a, randomRecords(rng, 2000, 100, 1000))
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recs, err := Deaggregate(aggs[i%len(aggs)].Data)
		if err != nil {
			b.Fatal(err)
		}
		n += len(recs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}
