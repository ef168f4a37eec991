package source

// A cheaper GetRecords response decoder for the KCL's Kinesis client.
//
// The SDK decodes a GetRecords response through its generic schema-driven
// JSON deserializer: a token per value, an unquoted copy and a base64
// decode per record, a string and a pointer per field. On a catch-up read
// that was about a third of the worker's CPU. recordsProtocol wraps the
// client's protocol and decodes a successful GetRecords response itself,
// in one pass over the body: the base64 data of every record into one
// buffer, the sequence numbers and partition keys into one string, the
// records into one slice. Anything it does not expect (a field it does not
// know, ChildShards at a shard's end, an escaped string, a malformed
// body) goes to the SDK's decoder unchanged, so the output is always the
// SDK's or the same values; errors and every other operation are the SDK's.
//
// It also escapes KPL aggregates for the KCL (deagg.go), in place: the
// fast path decodes each record's data one byte after a free byte, so a
// record that starts with escapeByte gets its escape without a copy.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	smithy "github.com/aws/smithy-go"
	smithytime "github.com/aws/smithy-go/time"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// escapeAggregates is a Kinesis client option: GetRecords responses are
// decoded by recordsProtocol, and every record is escaped before the
// caller (the KCL) sees it.
func escapeAggregates(o *kinesis.Options) {
	o.Protocol = &recordsProtocol{ClientProtocol: o.Protocol}
}

// recordsProtocol is the client's protocol with its own decoder of
// successful GetRecords responses.
type recordsProtocol struct {
	smithyhttp.ClientProtocol
}

// slowResponses counts successful GetRecords responses the fast path left
// to the SDK's decoder (tests read it).
var slowResponses atomic.Int64

// bodies holds the buffers responses are read into.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// DeserializeResponse implements smithyhttp.ClientProtocol.
func (p *recordsProtocol) DeserializeResponse(ctx context.Context, schema *smithy.OperationSchema, reg *smithy.TypeRegistry, resp *smithyhttp.Response, out smithy.Deserializable) error {
	res, ok := out.(*kinesis.GetRecordsOutput)
	if !ok || resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
	}
	buf := bodies.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 64<<20 {
			bodies.Put(buf)
		}
	}()
	if n := resp.ContentLength; n > 0 && n <= 64<<20 {
		buf.Grow(int(n))
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return &smithy.DeserializationError{Err: err}
	}
	if err := decodeGetRecords(buf.Bytes(), res); err != nil {
		// Not the shape the fast path knows: the SDK decodes it, from the
		// same bytes.
		slowResponses.Add(1)
		*res = kinesis.GetRecordsOutput{}
		resp.Body = struct {
			io.Reader
			io.Closer // the caller closes the connection's body
		}{bytes.NewReader(buf.Bytes()), resp.Body}
		if err := p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out); err != nil {
			return err
		}
		for i := range res.Records {
			res.Records[i].Data = escape(res.Records[i].Data)
		}
	}
	return nil
}

// errFallback: the body is not what decodeGetRecords handles.
var errFallback = errors.New("getrecords: not on the fast path")

// decodeGetRecords decodes a GetRecords response body into out, records
// escaped (escape), or returns errFallback (out then holds garbage).
func decodeGetRecords(body []byte, out *kinesis.GetRecordsOutput) error {
	d := jsonScanner{b: body}
	if !d.consume('{') {
		return errFallback
	}
	if d.consume('}') {
		return nil
	}
	for {
		key, ok := d.str()
		if !ok || !d.consume(':') {
			return errFallback
		}
		switch string(key) {
		case "Records":
			if err := d.records(out); err != nil {
				return err
			}
		case "NextShardIterator":
			if d.null() {
				out.NextShardIterator = nil
				break
			}
			s, ok := d.str()
			if !ok {
				return errFallback
			}
			v := string(s)
			out.NextShardIterator = &v
		case "MillisBehindLatest":
			if d.null() {
				out.MillisBehindLatest = nil
				break
			}
			n, ok := d.number()
			if !ok {
				return errFallback
			}
			v, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				return errFallback
			}
			out.MillisBehindLatest = &v
		default: // ChildShards (a shard's last read) and anything new
			return errFallback
		}
		if d.consume(',') {
			continue
		}
		if d.consume('}') && d.end() {
			return nil
		}
		return errFallback
	}
}

// rawRecord is one record's fields as slices of the body.
type rawRecord struct {
	data, seq, key, enc []byte
	arrival             time.Time
	hasArrival          bool
}

// records decodes the Records array: a first pass collects the fields as
// slices of the body, a second decodes them into shared buffers.
func (d *jsonScanner) records(out *kinesis.GetRecordsOutput) error {
	if !d.consume('[') { // null included: the SDK decides
		return errFallback
	}
	var raws []rawRecord
	dataLen, strLen := 0, 0
	if !d.consume(']') {
		for {
			r, err := d.record()
			if err != nil {
				return err
			}
			dataLen += base64.StdEncoding.DecodedLen(len(r.data)) + 1
			strLen += len(r.seq) + len(r.key)
			raws = append(raws, r)
			if d.consume(',') {
				continue
			}
			if d.consume(']') {
				break
			}
			return errFallback
		}
	}
	recs := make([]types.Record, len(raws))
	data := make([]byte, dataLen)
	strs := make([]byte, 0, strLen)
	for _, r := range raws {
		strs = append(strs, r.seq...)
		strs = append(strs, r.key...)
	}
	all := string(strs)
	ptrs := make([]string, 2*len(raws))
	times := make([]time.Time, len(raws))
	off, soff := 0, 0
	for i, r := range raws {
		rec := &recs[i]
		if r.data != nil {
			// One free byte in front: the escape, if the data needs it.
			n, err := base64.StdEncoding.Decode(data[off+1:], r.data)
			if err != nil {
				return errFallback
			}
			if n > 0 && data[off+1] == escapeByte {
				data[off] = escapeByte
				rec.Data = data[off : off+1+n : off+1+n]
			} else {
				rec.Data = data[off+1 : off+1+n : off+1+n]
			}
			off += 1 + n
		}
		if r.seq != nil {
			ptrs[2*i] = all[soff : soff+len(r.seq)]
			rec.SequenceNumber = &ptrs[2*i]
		}
		soff += len(r.seq)
		if r.key != nil {
			ptrs[2*i+1] = all[soff : soff+len(r.key)]
			rec.PartitionKey = &ptrs[2*i+1]
		}
		soff += len(r.key)
		if r.hasArrival {
			times[i] = r.arrival
			rec.ApproximateArrivalTimestamp = &times[i]
		}
		if r.enc != nil {
			rec.EncryptionType = types.EncryptionType(r.enc)
		}
	}
	out.Records = recs
	return nil
}

func (d *jsonScanner) record() (rawRecord, error) {
	var r rawRecord
	if !d.consume('{') {
		return r, errFallback
	}
	if d.consume('}') {
		return r, nil
	}
	for {
		key, ok := d.str()
		if !ok || !d.consume(':') {
			return r, errFallback
		}
		switch string(key) {
		case "Data":
			if r.data, ok = d.blob(); !ok {
				return r, errFallback
			}
		case "SequenceNumber":
			if r.seq, ok = d.str(); !ok {
				return r, errFallback
			}
		case "PartitionKey":
			if r.key, ok = d.str(); !ok {
				return r, errFallback
			}
		case "EncryptionType":
			if r.enc, ok = d.str(); !ok {
				return r, errFallback
			}
		case "ApproximateArrivalTimestamp":
			n, ok := d.number()
			if !ok {
				return r, errFallback
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil {
				return r, errFallback
			}
			r.arrival, r.hasArrival = smithytime.ParseEpochSeconds(f), true
		default:
			return r, errFallback
		}
		if d.consume(',') {
			continue
		}
		if d.consume('}') {
			return r, nil
		}
		return r, errFallback
	}
}

// jsonScanner reads the few JSON forms of a GetRecords response: objects,
// arrays, strings without escapes, numbers, null.
type jsonScanner struct {
	b []byte
	i int
}

func (d *jsonScanner) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// consume skips c (after white space) if it is next.
func (d *jsonScanner) consume(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *jsonScanner) end() bool {
	d.ws()
	return d.i == len(d.b)
}

func (d *jsonScanner) null() bool {
	d.ws()
	if bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.i += 4
		return true
	}
	return false
}

// str returns the contents of a string without escapes or control
// characters (ok false otherwise: the caller falls back).
func (d *jsonScanner) str() ([]byte, bool) { return d.strOf(false) }

// blob is str for base64 data: only escapes and line breaks are looked
// for, with IndexByte (other control characters fail the base64 decode).
func (d *jsonScanner) blob() ([]byte, bool) { return d.strOf(true) }

func (d *jsonScanner) strOf(isBlob bool) ([]byte, bool) {
	if !d.consume('"') {
		return nil, false
	}
	start := d.i
	j := bytes.IndexByte(d.b[start:], '"')
	if j < 0 {
		return nil, false
	}
	s := d.b[start : start+j]
	if isBlob {
		if bytes.IndexByte(s, '\\') >= 0 || bytes.IndexByte(s, '\n') >= 0 || bytes.IndexByte(s, '\r') >= 0 {
			return nil, false
		}
	} else {
		for _, c := range s {
			if c == '\\' || c < 0x20 {
				return nil, false
			}
		}
	}
	d.i = start + j + 1
	return s, true
}

// number returns the bytes of a JSON number.
func (d *jsonScanner) number() ([]byte, bool) {
	d.ws()
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			d.i++
			continue
		}
		break
	}
	return d.b[start:d.i], d.i > start
}
