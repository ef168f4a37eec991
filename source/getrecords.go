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
// know, a ChildShards list at a shard's end, an escaped string, a malformed
// body) goes to the SDK's decoder unchanged, so the output is always the
// SDK's or the same values; errors and every other operation are the SDK's.
//
// With the CBOR wire format (-kinesis-protocol cbor, getrecords_cbor.go)
// GetRecords requests are sent as CBOR and their responses decoded by
// decodeGetRecordsCBOR (there is no SDK decoder to fall back to: anything
// malformed is an error); CBOR error bodies are transcoded to JSON for the
// SDK's error decoder, so errors get exactly the JSON path's types.
//
// It also escapes KPL aggregates for the KCL (deagg.go), in place: the
// fast path decodes each record's data one byte after a free byte, so a
// record that starts with escapeByte gets its escape without a copy.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	smithy "github.com/aws/smithy-go"
	smithytime "github.com/aws/smithy-go/time"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// KinesisProtocol is the wire format of the KCL's GetRecords calls.
type KinesisProtocol string

// Wire formats of GetRecords.
const (
	// ProtocolJSON: application/x-amz-json-1.1, record data in base64.
	ProtocolJSON KinesisProtocol = "json"
	// ProtocolCBOR: application/x-amz-cbor-1.1, record data as raw bytes
	// (on Kinesis; kinesalite still sends base64 text).
	ProtocolCBOR KinesisProtocol = "cbor"
)

// DefaultKinesisProtocol is the wire format a worker uses unless told.
const DefaultKinesisProtocol = ProtocolCBOR

// Validate says what to fix.
func (p KinesisProtocol) Validate() error {
	switch p {
	case ProtocolJSON, ProtocolCBOR:
		return nil
	}
	return fmt.Errorf("kinesis protocol %q: use cbor or json", string(p))
}

// readPath returns the Kinesis client option of the KCL's client:
// GetRecords responses are decoded by recordsProtocol (over the given
// wire format), and every record is escaped before the caller (the KCL)
// sees it.
func readPath(p KinesisProtocol) func(*kinesis.Options) {
	return func(o *kinesis.Options) {
		o.Protocol = &recordsProtocol{ClientProtocol: o.Protocol, cbor: p == ProtocolCBOR}
	}
}

// escapeAggregates is readPath over JSON.
func escapeAggregates(o *kinesis.Options) { readPath(ProtocolJSON)(o) }

// recordsProtocol is the client's protocol with its own decoder of
// successful GetRecords responses, and GetRecords over CBOR if cbor.
type recordsProtocol struct {
	smithyhttp.ClientProtocol
	cbor bool
	// slow counts successful GetRecords responses the fast path left to
	// the SDK's decoder (tests read it).
	slow atomic.Int64
}

// bodies holds the buffers responses are read into.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// SerializeRequest implements smithyhttp.ClientProtocol: over CBOR, the
// SDK's GetRecords request body is transcoded to CBOR.
func (p *recordsProtocol) SerializeRequest(ctx context.Context, schema *smithy.OperationSchema, in smithy.Serializable, req *smithyhttp.Request) error {
	if err := p.ClientProtocol.SerializeRequest(ctx, schema, in, req); err != nil {
		return err
	}
	if _, ok := in.(*kinesis.GetRecordsInput); !ok || !p.cbor {
		return nil
	}
	var js []byte
	if s := req.GetStream(); s != nil {
		var err error
		if js, err = io.ReadAll(s); err != nil {
			return fmt.Errorf("getrecords: cbor request: %w", err)
		}
	}
	body, err := jsonToCBOR(js)
	if err != nil {
		return fmt.Errorf("getrecords: cbor request: %w", err)
	}
	req.Header.Set("Content-Type", cborContentType)
	sreq, err := req.SetStream(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("getrecords: cbor request: %w", err)
	}
	*req = *sreq
	return nil
}

// isCBOR says whether a response body is CBOR: by its Content-Type, else
// by its first byte (a JSON body starts with '{' or white space).
func isCBOR(resp *smithyhttp.Response, body []byte) bool {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err == nil {
			if strings.HasPrefix(mt, "application/x-amz-cbor-") || mt == "application/cbor" {
				return true
			}
			if strings.Contains(mt, "json") {
				return false
			}
		}
	}
	return len(body) > 0 && body[0]>>5 == cborMap
}

// DeserializeResponse implements smithyhttp.ClientProtocol.
func (p *recordsProtocol) DeserializeResponse(ctx context.Context, schema *smithy.OperationSchema, reg *smithy.TypeRegistry, resp *smithyhttp.Response, out smithy.Deserializable) error {
	res, ok := out.(*kinesis.GetRecordsOutput)
	if !ok {
		return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
	}
	if !p.cbor && (resp.StatusCode < 200 || resp.StatusCode >= 300) {
		return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
	}
	buf := bodies.Get().(*bytes.Buffer)
	buf.Reset()
	keep := false // records alias buf's bytes: not pooled again
	defer func() {
		if !keep && buf.Cap() <= 64<<20 {
			bodies.Put(buf)
		}
	}()
	if n := resp.ContentLength; n > 0 && n <= 64<<20 {
		buf.Grow(int(n))
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return &smithy.DeserializationError{Err: err}
	}
	body := buf.Bytes()
	if p.cbor && isCBOR(resp, body) {
		if resp.StatusCode < 200 || resp.StatusCode >= 300 {
			// The SDK's error decoder, on the same members as JSON.
			if js, err := cborToJSON(body); err == nil {
				body = js
			}
			return p.sdkDecode(ctx, schema, reg, resp, body, out)
		}
		var err error
		if keep, err = decodeGetRecordsCBOR(body, res); err != nil {
			*res = kinesis.GetRecordsOutput{}
			return &smithy.DeserializationError{Err: err, Snapshot: snapshot(body)}
		}
		return nil
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return p.sdkDecode(ctx, schema, reg, resp, body, out)
	}
	if err := decodeGetRecords(body, res); err != nil {
		// Not the shape the fast path knows: the SDK decodes it, from the
		// same bytes.
		p.slow.Add(1)
		*res = kinesis.GetRecordsOutput{}
		if err := p.sdkDecode(ctx, schema, reg, resp, body, out); err != nil {
			return err
		}
		for i := range res.Records {
			res.Records[i].Data = escape(res.Records[i].Data)
		}
	}
	return nil
}

// sdkDecode runs the SDK's decoder on body in place of the response's.
func (p *recordsProtocol) sdkDecode(ctx context.Context, schema *smithy.OperationSchema, reg *smithy.TypeRegistry, resp *smithyhttp.Response, body []byte, out smithy.Deserializable) error {
	orig := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer // the caller closes the connection's body
	}{bytes.NewReader(body), orig}
	defer func() { resp.Body = orig }()
	return p.ClientProtocol.DeserializeResponse(ctx, schema, reg, resp, out)
}

// snapshot is the start of a body, for a DeserializationError.
func snapshot(body []byte) []byte {
	return bytes.Clone(body[:min(len(body), 1024)])
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
		case "ChildShards":
			// kinesis-mock (and so LocalStack's Kinesis over JSON) sends
			// "ChildShards": null in every answer: nothing to decode. A
			// shard's last read (a list) goes to the SDK.
			if !d.null() {
				return errFallback
			}
		default: // anything new
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

// Data encodings of a wireRecord.
const (
	dataNone   uint8 = iota // absent or null
	dataBody                // a definite byte string: a slice of the body, head in front
	dataBase64              // base64 text: JSON, and kinesalite's CBOR
	dataOwned               // a chunked byte string, already joined
)

// wireRecord is one record's fields as slices of the body, as either
// wire format's reader found them; buildRecords turns them into records.
type wireRecord struct {
	data, seq, key, enc []byte
	arrival             time.Time
	dataOff             int // dataBody: offset of data in the body
	dataKind            uint8
	hasSeq, hasKey      bool
	hasArrival          bool
}

// records decodes the Records array: a first pass collects the fields as
// slices of the body, a second decodes them into shared buffers.
func (d *jsonScanner) records(out *kinesis.GetRecordsOutput) error {
	if !d.consume('[') { // null included: the SDK decides
		return errFallback
	}
	var raws []wireRecord
	if !d.consume(']') {
		for {
			r, err := d.record()
			if err != nil {
				return err
			}
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
	if _, err := buildRecords(nil, raws, out); err != nil {
		return errFallback // data that is not base64: the SDK decides
	}
	return nil
}

// buildRecords turns the records read into out.Records: one string for
// all sequence numbers and partition keys, one buffer for the data that
// is not a slice of body.
func buildRecords(body []byte, raws []wireRecord, out *kinesis.GetRecordsOutput) (aliases bool, err error) {
	dataLen, strLen := 0, 0
	for i := range raws {
		r := &raws[i]
		switch r.dataKind {
		case dataBase64:
			dataLen += base64.StdEncoding.DecodedLen(len(r.data)) + 1
		case dataOwned:
			dataLen += len(r.data) + 1
		}
		strLen += len(r.seq) + len(r.key)
	}
	recs := make([]types.Record, len(raws))
	var data []byte
	if dataLen > 0 {
		data = make([]byte, dataLen)
	}
	strs := make([]byte, 0, strLen)
	for i := range raws {
		strs = append(strs, raws[i].seq...)
		strs = append(strs, raws[i].key...)
	}
	all := string(strs)
	ptrs := make([]string, 2*len(raws))
	times := make([]time.Time, len(raws))
	off, soff := 0, 0
	for i := range raws {
		r, rec := &raws[i], &recs[i]
		switch r.dataKind {
		case dataBody:
			if len(r.data) == 0 {
				rec.Data = []byte{}
				break
			}
			// The string's head is in front of its bytes: its last byte
			// becomes the escape if the data needs one.
			start := r.dataOff
			if r.data[0] == escapeByte {
				body[start-1] = escapeByte
				rec.Data = body[start-1 : start+len(r.data) : start+len(r.data)]
			} else {
				rec.Data = r.data[:len(r.data):len(r.data)]
			}
			aliases = true
		case dataBase64, dataOwned:
			// One free byte in front: the escape, if the data needs it.
			n := len(r.data)
			if r.dataKind == dataBase64 {
				if n, err = base64.StdEncoding.Decode(data[off+1:], r.data); err != nil {
					return false, fmt.Errorf("getrecords: record %d: Data is not base64: %w", i, err)
				}
			} else {
				copy(data[off+1:], r.data)
			}
			if n > 0 && data[off+1] == escapeByte {
				data[off] = escapeByte
				rec.Data = data[off : off+1+n : off+1+n]
			} else {
				rec.Data = data[off+1 : off+1+n : off+1+n]
			}
			off += 1 + n
		}
		if r.hasSeq {
			ptrs[2*i] = all[soff : soff+len(r.seq)]
			rec.SequenceNumber = &ptrs[2*i]
		}
		soff += len(r.seq)
		if r.hasKey {
			ptrs[2*i+1] = all[soff : soff+len(r.key)]
			rec.PartitionKey = &ptrs[2*i+1]
		}
		soff += len(r.key)
		if r.hasArrival {
			times[i] = r.arrival
			rec.ApproximateArrivalTimestamp = &times[i]
		}
		if r.enc != nil {
			switch string(r.enc) {
			case string(types.EncryptionTypeKms):
				rec.EncryptionType = types.EncryptionTypeKms
			case string(types.EncryptionTypeNone):
				rec.EncryptionType = types.EncryptionTypeNone
			default:
				rec.EncryptionType = types.EncryptionType(r.enc)
			}
		}
	}
	out.Records = recs
	return aliases, nil
}

func (d *jsonScanner) record() (wireRecord, error) {
	var r wireRecord
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
			r.dataKind = dataBase64
		case "SequenceNumber":
			if r.seq, ok = d.str(); !ok {
				return r, errFallback
			}
			r.hasSeq = true
		case "PartitionKey":
			if r.key, ok = d.str(); !ok {
				return r, errFallback
			}
			r.hasKey = true
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
