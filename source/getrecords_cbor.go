package source

// GetRecords over CBOR (application/x-amz-cbor-1.1, the wire format the
// AWS SDK for Java uses for Kinesis by default): the request is the SDK's
// JSON request transcoded to CBOR, the response is decoded here in one
// pass into the structures the JSON path produces.
//
// What the two servers send (read in their sources, checked on the wire):
//   - Kinesis: record Data is a byte string; timestamps are CBOR tag 1 with
//     an integer of epoch MILLISECONDS (the AWS SDKs for Java write and read
//     CBOR payload timestamps as UNIX_TIMESTAMP_MILLIS: SdkCborGenerator
//     writes tag 1 + Date.getTime(); AwsCborProtocolFactory's default
//     payload format is epoch millis).
//   - kinesalite 3.3.3 (npm cbor 5): it stores records as JSON, so the Data
//     of a record put over JSON comes back as a TEXT string holding base64
//     (decoded here, as Jackson's getBinaryValue does for the Java SDK);
//     ApproximateArrivalTimestamp is untagged epoch SECONDS, a float
//     (now/1000) or an integer when the millisecond part is 0; a missing
//     NextShardIterator (shard end) is `undefined` (0xf7).
//
// So a timestamp is read as a number, tagged 1 or not, integer or float:
// a magnitude of 1e11 or more is milliseconds (1e11 s is the year 5138,
// 1e11 ms is 1973), less is seconds, truncated to the millisecond as the
// SDK's JSON decoder does.
//
// Data of definite-length byte strings is not copied: each record's Data
// is a slice of the body (which then is not returned to the pool), and the
// KPL escape (deagg.go) overwrites the last byte of the string's head in
// front of it. Base64 text (kinesalite) and chunked byte strings are
// decoded into one shared buffer, as on the JSON path.

import (
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// cborContentType is the content type of AWS's CBOR wire format.
const cborContentType = "application/x-amz-cbor-1.1"

// decodeGetRecordsCBOR decodes a CBOR GetRecords response body into out,
// records escaped (escape). It reports whether a record's Data is a slice
// of body (then body must not be reused while the records live). Any
// malformed body, a missing Records member included, is an error: never
// an empty batch.
func decodeGetRecordsCBOR(body []byte, out *kinesis.GetRecordsOutput) (aliases bool, err error) {
	r := cborReader{b: body}
	n, err := r.container(cborMap)
	if err != nil {
		return false, fmt.Errorf("getrecords: response: %w", err)
	}
	var raws []wireRecord
	sawRecords := false
	for k := 0; r.next(k, n); k++ {
		key, err := r.text()
		if err != nil {
			return false, fmt.Errorf("getrecords: response member name: %w", err)
		}
		switch string(key) {
		case "Records":
			if raws, err = r.cborRecords(); err != nil {
				return false, err
			}
			sawRecords = true
		case "NextShardIterator":
			if r.nullNext() {
				out.NextShardIterator = nil
				break
			}
			s, err := r.text()
			if err != nil {
				return false, fmt.Errorf("getrecords: NextShardIterator: %w", err)
			}
			v := string(s)
			out.NextShardIterator = &v
		case "MillisBehindLatest":
			if r.nullNext() {
				out.MillisBehindLatest = nil
				break
			}
			i, f, isInt, _, err := r.number()
			if err != nil {
				return false, fmt.Errorf("getrecords: MillisBehindLatest: %w", err)
			}
			if !isInt {
				if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
					return false, fmt.Errorf("getrecords: MillisBehindLatest %v is not an integer", f)
				}
				i = int64(f)
			}
			out.MillisBehindLatest = &i
		case "ChildShards":
			if out.ChildShards, err = r.childShards(); err != nil {
				return false, err
			}
		default: // a member added later: the SDK ignores it too
			if err := r.skip(0); err != nil {
				return false, fmt.Errorf("getrecords: member %q: %w", key, err)
			}
		}
	}
	if r.more() {
		return false, fmt.Errorf("getrecords: response: %w", r.fail("bytes after the response"))
	}
	if !sawRecords {
		return false, fmt.Errorf("getrecords: response has no Records member (%d bytes)", len(body))
	}
	return buildRecords(body, raws, out)
}

// cborRecords reads the Records array.
func (r *cborReader) cborRecords() ([]wireRecord, error) {
	n, err := r.container(cborArray)
	if err != nil {
		return nil, fmt.Errorf("getrecords: Records: %w", err)
	}
	raws := make([]wireRecord, 0, max(n, 0))
	for k := 0; r.next(k, n); k++ {
		rec, err := r.cborRecord()
		if err != nil {
			return nil, fmt.Errorf("getrecords: record %d: %w", k, err)
		}
		raws = append(raws, rec)
	}
	return raws, nil
}

func (r *cborReader) cborRecord() (wireRecord, error) {
	var rec wireRecord
	n, err := r.container(cborMap)
	if err != nil {
		return rec, err
	}
	for k := 0; r.next(k, n); k++ {
		key, err := r.text()
		if err != nil {
			return rec, err
		}
		if r.nullNext() {
			continue // absent, as null is on the JSON path
		}
		switch string(key) {
		case "Data":
			ib, _ := r.peek()
			switch ib >> 5 {
			case cborText:
				rec.data, _, err = r.str(cborText)
				rec.dataKind = dataBase64
			default:
				var chunked bool
				rec.data, chunked, err = r.str(cborBytes)
				rec.dataKind = dataBody
				rec.dataOff = r.i - len(rec.data)
				if chunked {
					rec.dataKind = dataOwned
				}
			}
		case "SequenceNumber":
			rec.seq, err = r.text()
			rec.hasSeq = true
		case "PartitionKey":
			rec.key, err = r.text()
			rec.hasKey = true
		case "EncryptionType":
			rec.enc, err = r.text()
		case "ApproximateArrivalTimestamp":
			rec.arrival, err = r.timestamp()
			rec.hasArrival = true
		default:
			err = r.skip(0)
		}
		if err != nil {
			return rec, fmt.Errorf("%s: %w", key, err)
		}
	}
	return rec, nil
}

// timestamp reads a timestamp (see the file comment).
func (r *cborReader) timestamp() (time.Time, error) {
	i, f, isInt, tag, err := r.number()
	if err != nil {
		return time.Time{}, err
	}
	if tag != -1 && tag != 1 {
		return time.Time{}, fmt.Errorf("timestamp with tag %d (want 1 or none)", tag)
	}
	if isInt {
		if i >= 1e11 || i <= -1e11 {
			return time.UnixMilli(i).UTC(), nil
		}
		return time.Unix(i, 0).UTC(), nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1e15 {
		return time.Time{}, fmt.Errorf("timestamp %v out of range", f)
	}
	if math.Abs(f) >= 1e11 {
		return time.UnixMilli(int64(f)).UTC(), nil
	}
	// As smithytime.ParseEpochSeconds: f*1000 rounded to a float64, then
	// truncated to an integer of milliseconds.
	return time.Unix(0, int64(f*1000)*1e6).UTC(), nil
}

// childShards reads ChildShards (a shard's last read on Kinesis).
func (r *cborReader) childShards() ([]types.ChildShard, error) {
	if r.nullNext() {
		return nil, nil
	}
	n, err := r.container(cborArray)
	if err != nil {
		return nil, fmt.Errorf("getrecords: ChildShards: %w", err)
	}
	out := []types.ChildShard{}
	for k := 0; r.next(k, n); k++ {
		var c types.ChildShard
		m, err := r.container(cborMap)
		if err != nil {
			return nil, fmt.Errorf("getrecords: ChildShards: %w", err)
		}
		for j := 0; r.next(j, m); j++ {
			key, err := r.text()
			if err != nil {
				return nil, fmt.Errorf("getrecords: ChildShards: %w", err)
			}
			if r.nullNext() {
				continue
			}
			switch string(key) {
			case "ShardId":
				c.ShardId, err = r.textPtr()
			case "ParentShards":
				var p int
				if p, err = r.container(cborArray); err == nil {
					c.ParentShards = []string{}
					for q := 0; err == nil && r.next(q, p); q++ {
						var s []byte
						if s, err = r.text(); err == nil {
							c.ParentShards = append(c.ParentShards, string(s))
						}
					}
				}
			case "HashKeyRange":
				c.HashKeyRange, err = r.hashKeyRange()
			default:
				err = r.skip(0)
			}
			if err != nil {
				return nil, fmt.Errorf("getrecords: ChildShards %s: %w", key, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func (r *cborReader) hashKeyRange() (*types.HashKeyRange, error) {
	n, err := r.container(cborMap)
	if err != nil {
		return nil, err
	}
	h := &types.HashKeyRange{}
	for k := 0; r.next(k, n); k++ {
		key, err := r.text()
		if err != nil {
			return nil, err
		}
		if r.nullNext() {
			continue
		}
		switch string(key) {
		case "StartingHashKey":
			h.StartingHashKey, err = r.textPtr()
		case "EndingHashKey":
			h.EndingHashKey, err = r.textPtr()
		default:
			err = r.skip(0)
		}
		if err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (r *cborReader) textPtr() (*string, error) {
	s, err := r.text()
	if err != nil {
		return nil, err
	}
	v := string(s)
	return &v, nil
}
