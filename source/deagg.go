package source

// KPL de-aggregation on the read path, done here instead of in the KCL.
//
// vmware-go-kcl-v2 v1.0.0 de-aggregates every GetRecords batch with the
// awslabs deaggregator before ProcessRecords, and that code is not safe on
// hostile input: a partition-key index out of its table panics in a KCL
// goroutine (the whole worker exits, and again on every restart), and a
// protobuf that does not decode inside a valid-MD5 aggregate makes it
// return nil: the KCL hands over an empty batch and the checkpoint moves
// past the good records of that batch. The KCL has no switch to turn it
// off, so the Kinesis client we give it escapes every record that could
// look like an aggregate (escapeAggregates, getrecords.go): the KCL's de-aggregator then
// passes every record through unchanged, and ProcessRecords unescapes and
// de-aggregates with internal/kpl, which never panics and turns a corrupt
// aggregate into one dead letter (reason kpl_corrupt) between the good
// records around it.

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/lineage"
	"github.com/lineageflow/lineageflow/processor"
)

// escapeByte is the first byte of the KPL magic. A record whose data starts
// with it gets one more in front: the KCL never sees the magic at byte 0
// (so never de-aggregates), and unescape drops exactly one.
const escapeByte = 0xF3

// escape returns data with escapeByte in front if data starts with it.
func escape(data []byte) []byte {
	if len(data) == 0 || data[0] != escapeByte {
		return data
	}
	out := make([]byte, len(data)+1)
	out[0] = escapeByte
	copy(out[1:], data)
	return out
}

// unescape undoes escape.
func unescape(data []byte) []byte {
	if len(data) > 0 && data[0] == escapeByte {
		return data[1:]
	}
	return data
}

// appendUserRecords appends to dst the user records of the Kinesis records
// recs (escaped by escapeAggregates): a KPL aggregate gives its user records
// (Sub 0, 1, ...), any other record itself (Sub 0), and a corrupt aggregate
// one record refused with reason kpl_corrupt. It never fails and never
// drops a record.
func appendUserRecords(dst []processor.Record, recs []types.Record) []processor.Record {
	for i := range recs {
		r := &recs[i]
		seq := aws.ToString(r.SequenceNumber)
		var arrival time.Time
		if r.ApproximateArrivalTimestamp != nil {
			arrival = *r.ApproximateArrivalTimestamp
		}
		data := unescape(r.Data)
		users, err := kpl.Deaggregate(data)
		switch {
		case err == nil:
			for j, u := range users {
				dst = append(dst, processor.Record{Seq: seq, Sub: uint32(j), Arrival: arrival, Data: u.Data})
			}
		case errors.Is(err, kpl.ErrCorrupt):
			dst = append(dst, processor.Record{Seq: seq, Arrival: arrival, Data: data,
				Refused: &lineage.DecodeError{Reason: lineage.ReasonKPLCorrupt, Msg: err.Error()}})
		default: // not an aggregate (no magic, or an MD5 mismatch): a plain user record
			dst = append(dst, processor.Record{Seq: seq, Arrival: arrival, Data: data})
		}
	}
	return dst
}
