package source

import (
	"bytes"
	"crypto/md5"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/awslabs/kinesis-aggregation/go/v2/deaggregator"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/lineage"
	"google.golang.org/protobuf/encoding/protowire"
)

// sealAggregate frames a protobuf message as a KPL aggregate: magic,
// message, MD5 of the message (valid whatever the message is).
func sealAggregate(msg []byte) []byte {
	sum := md5.Sum(msg)
	out := append([]byte{}, kpl.Magic[:]...)
	out = append(out, msg...)
	return append(out, sum[:]...)
}

// badIndexAggregate is an aggregate with one partition key and a record
// pointing at key 7: the awslabs de-aggregator panics on it.
func badIndexAggregate(data []byte) []byte {
	var rec []byte
	rec = protowire.AppendTag(rec, 1, protowire.VarintType)
	rec = protowire.AppendVarint(rec, 7)
	rec = protowire.AppendTag(rec, 3, protowire.BytesType)
	rec = protowire.AppendBytes(rec, data)
	var msg []byte
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendString(msg, "k")
	msg = protowire.AppendTag(msg, 3, protowire.BytesType)
	msg = protowire.AppendBytes(msg, rec)
	return sealAggregate(msg)
}

// badProtobufAggregate is a valid-MD5 aggregate whose message does not
// decode: the awslabs de-aggregator returns nil for the whole batch.
func badProtobufAggregate() []byte {
	return sealAggregate([]byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01})
}

func kinesisRecord(seq string, data []byte) types.Record {
	return types.Record{SequenceNumber: aws.String(seq), PartitionKey: aws.String("k"), Data: data,
		ApproximateArrivalTimestamp: aws.Time(time.Unix(1700000000, 0))}
}

// TestUserRecords: escaped by the KCL's client, every record goes through
// the KCL's own de-aggregator unchanged (no panic, no error, nothing
// dropped), and appendUserRecords gives the good user records around the
// corrupt aggregates, each corrupt one as one refused record.
func TestUserRecords(t *testing.T) {
	good := func(s string) []byte { return []byte(`{"n":"` + s + `"}`) }
	agg := kpl.Marshal([]kpl.Record{{PartitionKey: "a", Data: good("a0")}, {PartitionKey: "b", Data: good("a1")}})
	badMD5 := append([]byte{}, agg...)
	badMD5[len(badMD5)-1] ^= 1
	lookalike := []byte{escapeByte, 'x'}
	raw := []types.Record{
		kinesisRecord("1", good("p1")),
		kinesisRecord("2", badIndexAggregate(good("lost"))),
		kinesisRecord("3", agg),
		kinesisRecord("4", badProtobufAggregate()),
		kinesisRecord("5", badMD5),
		kinesisRecord("6", lookalike),
		kinesisRecord("7", good("p7")),
	}
	// What the KCL does between GetRecords (escaped by our client) and
	// ProcessRecords.
	escaped := make([]types.Record, len(raw))
	for i, r := range raw {
		r.Data = escape(r.Data)
		escaped[i] = r
	}
	passed, err := deaggregator.DeaggregateRecords(escaped)
	if err != nil {
		t.Fatalf("KCL de-aggregator on escaped records: %v", err)
	}
	if len(passed) != len(raw) {
		t.Fatalf("KCL de-aggregator gave %d records for %d: it de-aggregated an escaped record", len(passed), len(raw))
	}
	for i := range passed {
		if !bytes.Equal(unescape(passed[i].Data), raw[i].Data) {
			t.Fatalf("record %d: unescape(escape(data)) != data", i)
		}
	}

	got := appendUserRecords(nil, passed)
	type want struct {
		seq    string
		sub    uint32
		data   []byte
		reason lineage.Reason
	}
	wants := []want{
		{"1", 0, good("p1"), ""},
		{"2", 0, raw[1].Data, lineage.ReasonKPLCorrupt},
		{"3", 0, good("a0"), ""},
		{"3", 1, good("a1"), ""},
		{"4", 0, raw[3].Data, lineage.ReasonKPLCorrupt},
		{"5", 0, badMD5, ""},
		{"6", 0, lookalike, ""},
		{"7", 0, good("p7"), ""},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d user records, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		if g.Seq != w.seq || g.Sub != w.sub || !bytes.Equal(g.Data, w.data) {
			t.Errorf("record %d: seq %s sub %d data %q, want seq %s sub %d data %q", i, g.Seq, g.Sub, g.Data, w.seq, w.sub, w.data)
		}
		var de *lineage.DecodeError
		switch {
		case w.reason == "" && g.Refused != nil:
			t.Errorf("record %d refused: %v", i, g.Refused)
		case w.reason != "" && (!errors.As(g.Refused, &de) || de.Reason != w.reason || de.Msg == ""):
			t.Errorf("record %d: refused %v, want reason %s with a message", i, g.Refused, w.reason)
		}
		if g.Arrival.IsZero() {
			t.Errorf("record %d: no arrival time", i)
		}
	}
}

// TestKCLDeaggregatorIsUnsafe documents why deagg.go exists: on the raw
// records the awslabs de-aggregator the KCL calls panics on a bad index
// and drops the whole batch on a bad protobuf. If this test fails, the
// dependency changed: re-read deagg.go.
func TestKCLDeaggregatorIsUnsafe(t *testing.T) {
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the KCL de-aggregator no longer panics on a bad partition-key index")
			}
		}()
		_, _ = deaggregator.DeaggregateRecords([]types.Record{kinesisRecord("1", badIndexAggregate([]byte("x")))})
	}()
	out, err := deaggregator.DeaggregateRecords([]types.Record{kinesisRecord("1", []byte(`{}`)), kinesisRecord("2", badProtobufAggregate())})
	if err == nil || out != nil {
		t.Errorf("the KCL de-aggregator on a bad protobuf: %d records, err %v; want nil and an error", len(out), err)
	}
}
