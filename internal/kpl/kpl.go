// Package kpl reads and writes the Kinesis Producer Library's aggregated
// record format, so that replay can send records the way the OpenLineage
// Kinesis transport (which uses the KPL) does, and tests can check what the
// KCL will see.
//
// An aggregated record is one Kinesis record whose data is
//
//	magic (F3 89 9A C2) | protobuf AggregatedRecord | MD5(protobuf bytes)
//
// with (proto2)
//
//	message AggregatedRecord {
//	  repeated string partition_key_table     = 1;
//	  repeated string explicit_hash_key_table = 2;
//	  repeated Record records                 = 3;
//	}
//	message Record {
//	  required uint64 partition_key_index     = 1;
//	  optional uint64 explicit_hash_key_index = 2;
//	  required bytes  data                    = 3;
//	  repeated Tag    tags                    = 4;
//	}
//
// (https://github.com/awslabs/amazon-kinesis-producer/blob/master/aggregation-format.md).
// Kinesis routes the aggregated record by its own (outer) partition key: every
// user record inside lands on the outer key's shard whatever its own key is.
// A consumer that de-aggregates (the KCL does) sees each user record with its
// own partition key and the outer record's sequence number.
//
// The package does no I/O and holds no global state. An [Aggregator] is not
// safe for concurrent use; [Deaggregate] and [IsAggregated] are.
package kpl

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Magic starts the data of every aggregated record.
var Magic = [4]byte{0xF3, 0x89, 0x9A, 0xC2}

const (
	// DefaultMaxSize is the default size limit of an aggregated record's
	// data, the KPL's default AggregationMaxSize.
	DefaultMaxSize = 51200
	// MaxRecordSize is the Kinesis limit of one record: data plus partition
	// key, 1 MiB.
	MaxRecordSize = 1 << 20
	// MaxPartitionKeyLen is the Kinesis limit of a partition key, in
	// Unicode characters.
	MaxPartitionKeyLen = 256

	digestSize = md5.Size
	overhead   = len(Magic) + digestSize
)

// Errors of [Deaggregate]. A record that is not aggregated
// ([ErrNotAggregated], [ErrChecksum]) is a plain user record to the KCL; a
// [ErrCorrupt] one makes the KCL's de-aggregator fail.
var (
	ErrNotAggregated = errors.New("kpl: not an aggregated record (no magic or too short)")
	ErrChecksum      = errors.New("kpl: MD5 of the aggregated record does not match")
	ErrCorrupt       = errors.New("kpl: corrupt aggregated record")
)

// Record is a user record: what a producer handed to the KPL.
type Record struct {
	PartitionKey string
	// ExplicitHashKey, if set, is the decimal 128-bit hash key that routes
	// the record instead of the MD5 of its partition key.
	ExplicitHashKey string
	Data            []byte
}

// Aggregate is one aggregated Kinesis record, ready for PutRecords.
type Aggregate struct {
	// PartitionKey is the outer key: the first user record's key. Kinesis
	// puts the whole aggregate on this key's shard.
	PartitionKey    string
	ExplicitHashKey string // the first user record's, if it had one
	Data            []byte
	Records         int // user records inside
	UserBytes       int // sum of the user records' data and key lengths
	// PartitionKeys are the distinct partition keys of the user records,
	// in order of first appearance (PartitionKeys[0] == PartitionKey).
	PartitionKeys []string
}

// Aggregator packs user records into one aggregated record up to a size
// limit. The zero value is not usable: call [NewAggregator].
type Aggregator struct {
	maxSize int

	pkIndex  map[string]uint64
	pkTable  []string
	ehkIndex map[string]uint64
	ehkTable []string
	tables   int    // encoded size of both key tables
	records  []byte // encoded Record fields (tag 3), in order
	n        int
	user     int
	firstEHK string
}

// NewAggregator returns an empty Aggregator whose aggregated records'
// data stays within maxSize bytes (0 means [DefaultMaxSize]). maxSize is
// capped so that data plus outer partition key fits in [MaxRecordSize].
func NewAggregator(maxSize int) *Aggregator {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	// Leave room for the outer partition key (256 characters, up to 4 bytes each).
	if limit := MaxRecordSize - 4*MaxPartitionKeyLen; maxSize > limit {
		maxSize = limit
	}
	return &Aggregator{
		maxSize:  maxSize,
		pkIndex:  map[string]uint64{},
		ehkIndex: map[string]uint64{},
	}
}

// MaxSize returns the size limit of the aggregated data.
func (a *Aggregator) MaxSize() int { return a.maxSize }

// Len returns the number of user records held.
func (a *Aggregator) Len() int { return a.n }

// Size returns the size of the aggregated data [Aggregator.Flush] would
// return now.
func (a *Aggregator) Size() int {
	if a.n == 0 {
		return 0
	}
	return overhead + a.tables + len(a.records)
}

// Contains reports whether a user record with this partition key is held.
func (a *Aggregator) Contains(partitionKey string) bool {
	_, ok := a.pkIndex[partitionKey]
	return ok
}

// PartitionKey returns the outer partition key of the aggregate being built
// (the first user record's), "" when empty.
func (a *Aggregator) PartitionKey() string {
	if a.n == 0 {
		return ""
	}
	return a.pkTable[0]
}

// SizeWith returns the size of the aggregated data if r were added.
func (a *Aggregator) SizeWith(r Record) int {
	size := overhead + a.tables + len(a.records)
	pki, newPK := a.pkIndex[r.PartitionKey]
	if !newPK {
		pki = uint64(len(a.pkTable))
		size += tableEntrySize(r.PartitionKey)
	}
	var ehki uint64
	if r.ExplicitHashKey != "" {
		var ok bool
		if ehki, ok = a.ehkIndex[r.ExplicitHashKey]; !ok {
			ehki = uint64(len(a.ehkTable))
			size += tableEntrySize(r.ExplicitHashKey)
		}
	}
	body := recordBodySize(pki, r.ExplicitHashKey != "", ehki, len(r.Data))
	return size + protowire.SizeTag(3) + protowire.SizeBytes(body)
}

// Fits reports whether r alone fits in an aggregated record of this
// Aggregator's size limit.
func (a *Aggregator) Fits(r Record) bool {
	body := recordBodySize(0, r.ExplicitHashKey != "", 0, len(r.Data))
	size := overhead + tableEntrySize(r.PartitionKey) + protowire.SizeTag(3) + protowire.SizeBytes(body)
	if r.ExplicitHashKey != "" {
		size += tableEntrySize(r.ExplicitHashKey)
	}
	return size <= a.maxSize
}

// Add appends r if the aggregated data stays within the size limit and
// reports whether it did. When it returns false, [Aggregator.Flush] and
// add again; if r does not [Aggregator.Fits] at all, send it unaggregated.
// The Aggregator keeps r.Data until the next Flush (it is copied then).
func (a *Aggregator) Add(r Record) bool {
	if a.SizeWith(r) > a.maxSize {
		return false
	}
	pki, ok := a.pkIndex[r.PartitionKey]
	if !ok {
		pki = uint64(len(a.pkTable))
		a.pkIndex[r.PartitionKey] = pki
		a.pkTable = append(a.pkTable, r.PartitionKey)
		a.tables += tableEntrySize(r.PartitionKey)
	}
	var ehki uint64
	if r.ExplicitHashKey != "" {
		if ehki, ok = a.ehkIndex[r.ExplicitHashKey]; !ok {
			ehki = uint64(len(a.ehkTable))
			a.ehkIndex[r.ExplicitHashKey] = ehki
			a.ehkTable = append(a.ehkTable, r.ExplicitHashKey)
			a.tables += tableEntrySize(r.ExplicitHashKey)
		}
	}
	body := recordBodySize(pki, r.ExplicitHashKey != "", ehki, len(r.Data))
	b := protowire.AppendTag(a.records, 3, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(body))
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, pki)
	if r.ExplicitHashKey != "" {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, ehki)
	}
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendBytes(b, r.Data)
	a.records = b
	if a.n == 0 {
		a.firstEHK = r.ExplicitHashKey
	}
	a.n++
	a.user += len(r.Data) + len(r.PartitionKey)
	return true
}

// Flush returns the aggregated record of the user records added since the
// last Flush and empties the Aggregator. ok is false when it was empty.
func (a *Aggregator) Flush() (agg Aggregate, ok bool) {
	if a.n == 0 {
		return Aggregate{}, false
	}
	size := a.Size()
	data := make([]byte, 0, size)
	data = append(data, Magic[:]...)
	for _, k := range a.pkTable {
		data = protowire.AppendTag(data, 1, protowire.BytesType)
		data = protowire.AppendString(data, k)
	}
	for _, k := range a.ehkTable {
		data = protowire.AppendTag(data, 2, protowire.BytesType)
		data = protowire.AppendString(data, k)
	}
	data = append(data, a.records...)
	sum := md5.Sum(data[len(Magic):])
	data = append(data, sum[:]...)
	agg = Aggregate{
		PartitionKey:    a.pkTable[0],
		ExplicitHashKey: a.firstEHK,
		Data:            data,
		Records:         a.n,
		UserBytes:       a.user,
		PartitionKeys:   append([]string(nil), a.pkTable...),
	}
	a.reset()
	return agg, true
}

func (a *Aggregator) reset() {
	clear(a.pkIndex)
	clear(a.ehkIndex)
	a.pkTable = a.pkTable[:0]
	a.ehkTable = a.ehkTable[:0]
	a.tables = 0
	a.records = a.records[:0]
	a.n = 0
	a.user = 0
	a.firstEHK = ""
}

func tableEntrySize(s string) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(len(s))
}

func recordBodySize(pki uint64, hasEHK bool, ehki uint64, dataLen int) int {
	n := protowire.SizeTag(1) + protowire.SizeVarint(pki)
	if hasEHK {
		n += protowire.SizeTag(2) + protowire.SizeVarint(ehki)
	}
	return n + protowire.SizeTag(3) + protowire.SizeBytes(dataLen)
}

// Marshal aggregates recs into one aggregated record's data, whatever its
// size (the caller checks it against the Kinesis limit). It returns nil for
// no records.
func Marshal(recs []Record) []byte {
	a := NewAggregator(MaxRecordSize)
	a.maxSize = int(^uint(0) >> 1)
	for _, r := range recs {
		a.Add(r)
	}
	agg, _ := a.Flush()
	return agg.Data
}

// IsAggregated reports whether data is an aggregated record the way the KCL
// decides it: magic, more than 16 bytes after it, and a matching MD5.
func IsAggregated(data []byte) bool {
	_, err := split(data)
	return err == nil
}

func split(data []byte) ([]byte, error) {
	if len(data) <= overhead || !bytes.Equal(data[:len(Magic)], Magic[:]) {
		return nil, ErrNotAggregated
	}
	msg := data[len(Magic) : len(data)-digestSize]
	sum := md5.Sum(msg)
	if !bytes.Equal(sum[:], data[len(data)-digestSize:]) {
		return nil, ErrChecksum
	}
	return msg, nil
}

// Deaggregate returns the user records of an aggregated record, in order.
// It fails with [ErrNotAggregated] or [ErrChecksum] for data the KCL passes
// through as a plain user record, and with an error wrapping [ErrCorrupt]
// when the protobuf does not decode, a required field is missing or an
// index is out of its table. The records' Data alias data.
func Deaggregate(data []byte) ([]Record, error) {
	msg, err := split(data)
	if err != nil {
		return nil, err
	}
	var pks, ehks []string
	var bodies [][]byte
	for b := msg; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber {
			return nil, corrupt("tag", errFieldNumber(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, corrupt("partition_key_table", protowire.ParseError(n))
			}
			pks = append(pks, string(v))
			b = b[n:]
		case num == 2 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, corrupt("explicit_hash_key_table", protowire.ParseError(n))
			}
			ehks = append(ehks, string(v))
			b = b[n:]
		case num == 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, corrupt("records", protowire.ParseError(n))
			}
			bodies = append(bodies, v)
			b = b[n:]
		case num == 1 || num == 2 || num == 3:
			return nil, corrupt(fmt.Sprintf("field %d", num), errors.New("wrong wire type"))
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, corrupt(fmt.Sprintf("field %d", num), protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	out := make([]Record, 0, len(bodies))
	for i, body := range bodies {
		r, err := decodeRecord(body, uint64(len(pks)), uint64(len(ehks)))
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		rec := Record{PartitionKey: pks[r.pk], Data: r.data}
		if r.hasEHK {
			rec.ExplicitHashKey = ehks[r.ehk]
		}
		out = append(out, rec)
	}
	return out, nil
}

type rawRecord struct {
	pk, ehk       uint64
	hasPK, hasEHK bool
	data          []byte
	hasData       bool
}

func decodeRecord(b []byte, npk, nehk uint64) (rawRecord, error) {
	var r rawRecord
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber {
			return r, corrupt("record tag", errFieldNumber(n))
		}
		b = b[n:]
		switch {
		case (num == 1 || num == 2) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return r, corrupt("record index", protowire.ParseError(n))
			}
			b = b[n:]
			if num == 1 {
				r.pk, r.hasPK = v, true
			} else {
				r.ehk, r.hasEHK = v, true
			}
		case num == 3 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return r, corrupt("record data", protowire.ParseError(n))
			}
			b = b[n:]
			r.data, r.hasData = v, true
		case num == 4 && typ == protowire.BytesType:
			// Tags: not kept, but must be well-formed.
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return r, corrupt("record tags", protowire.ParseError(n))
			}
			if err := checkTag(v); err != nil {
				return r, err
			}
			b = b[n:]
		case num >= 1 && num <= 4:
			return r, corrupt(fmt.Sprintf("record field %d", num), errors.New("wrong wire type"))
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return r, corrupt(fmt.Sprintf("record field %d", num), protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	switch {
	case !r.hasPK:
		return r, corrupt("record", errors.New("partition_key_index missing"))
	case !r.hasData:
		return r, corrupt("record", errors.New("data missing"))
	case r.pk >= npk:
		return r, corrupt("record", fmt.Errorf("partition_key_index %d out of a table of %d", r.pk, npk))
	case r.hasEHK && r.ehk >= nehk:
		return r, corrupt("record", fmt.Errorf("explicit_hash_key_index %d out of a table of %d", r.ehk, nehk))
	}
	if r.data == nil {
		r.data = []byte{}
	}
	return r, nil
}

// checkTag checks a Tag message {required string key = 1; optional string
// value = 2}.
func checkTag(b []byte) error {
	hasKey := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber {
			return corrupt("tag", errFieldNumber(n))
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ != protowire.BytesType {
			return corrupt(fmt.Sprintf("tag field %d", num), errors.New("wrong wire type"))
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return corrupt("tag field", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 {
			hasKey = true
		}
	}
	if !hasKey {
		return corrupt("tag", errors.New("key missing"))
	}
	return nil
}

func errFieldNumber(n int) error {
	if n < 0 {
		return protowire.ParseError(n)
	}
	return errors.New("invalid field number")
}

func corrupt(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrCorrupt, what, err)
}
