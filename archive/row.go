// Package archive keeps every unique valid event, and every dead letter, as
// Parquet objects on S3, laid out for Athena (Hive-style partitions by
// event date). This file is the table: the columns each object holds and
// the object keys. Writers and readers (the sink, rebuild, the tests that
// query with DuckDB) all use these types, so the layout has one definition.
package archive

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Row is one archived event: the raw record as the producer sent it, and
// the columns a query filters on, extracted once at write time.
type Row struct {
	// EventTime is the event's eventTime (UTC), the partition's source.
	EventTime time.Time `parquet:"event_time,timestamp(millisecond)"`
	// EventType is START, COMPLETE, FAIL... ("" for a DatasetEvent/JobEvent).
	EventType string `parquet:"event_type,dict"`
	// Kind is RunEvent, DatasetEvent or JobEvent.
	Kind         string `parquet:"kind,dict"`
	RunID        string `parquet:"run_id"`
	JobNamespace string `parquet:"job_namespace,dict"`
	JobName      string `parquet:"job_name,dict"`
	ParentRunID  string `parquet:"parent_run_id,optional"`
	ParentJob    string `parquet:"parent_job,optional"` // namespace + "/" + name
	Producer     string `parquet:"producer,dict"`
	SchemaURL    string `parquet:"schema_url,dict"`
	// Inputs and Outputs are "namespace/name" of each dataset.
	Inputs  []string `parquet:"inputs,list"`
	Outputs []string `parquet:"outputs,list"`
	// Shard and Sequence name the Kinesis record (SubSequence: the index
	// inside a KPL aggregate, 0 otherwise).
	Shard       string    `parquet:"shard,dict"`
	Sequence    string    `parquet:"sequence"`
	SubSequence int64     `parquet:"sub_sequence"`
	ArrivalTime time.Time `parquet:"arrival_time,timestamp(millisecond)"`
	// IdempotencyKey is the hex SHA-256 of the payload: the dedup key.
	IdempotencyKey string `parquet:"idempotency_key"`
	// Event is the raw record (JSON, or CBOR for the compact format).
	Event []byte `parquet:"event"`
}

// DeadLetterRow is one archived dead letter with its reason.
type DeadLetterRow struct {
	Reason      string    `parquet:"reason,dict"`
	Detail      string    `parquet:"detail"`
	Shard       string    `parquet:"shard,dict"`
	Sequence    string    `parquet:"sequence"`
	SubSequence int64     `parquet:"sub_sequence"`
	ArrivalTime time.Time `parquet:"arrival_time,timestamp(millisecond)"`
	Record      []byte    `parquet:"record"`
}

// Table names: the top-level prefixes under the archive's S3 prefix.
const (
	EventsTable      = "events"
	DeadLettersTable = "dead_letters"
)

// ObjectKey is the key of the object of table that holds the rows of day
// (UTC) cut from shard starting at sequence first: Hive-style partitions
// (event_date=YYYY-MM-DD), the shard, and the first record's sequence
// number padded to a fixed width so keys sort as the stream does. The same
// cut always gives the same key, so writing it again after a crash
// replaces the object and never adds one.
func ObjectKey(prefix, table string, day time.Time, shard, first string) string {
	return fmt.Sprintf("%s%s/event_date=%s/%s-%s.parquet", prefix, table,
		day.UTC().Format(DateLayout), shard, PadSequence(first))
}

// PadSequence left-pads a Kinesis sequence number (decimal, up to 128
// bits: at most 39 digits) with zeros to 40 digits, so that keys and
// markers sort numerically.
func PadSequence(seq string) string {
	const width = 40
	if len(seq) >= width {
		return seq
	}
	b := make([]byte, width)
	n := width - len(seq)
	for i := 0; i < n; i++ {
		b[i] = '0'
	}
	copy(b[n:], seq)
	return string(b)
}

// WriteEvents writes rows as one zstd-compressed Parquet file to w.
func WriteEvents(w io.Writer, rows []Row) error { return write(w, rows) }

// WriteDeadLetters writes rows as one zstd-compressed Parquet file to w.
func WriteDeadLetters(w io.Writer, rows []DeadLetterRow) error { return write(w, rows) }

func write[T any](w io.Writer, rows []T) error {
	pw := parquet.NewGenericWriter[T](w, parquet.Compression(&zstd.Codec{}))
	if _, err := pw.Write(rows); err != nil {
		return fmt.Errorf("archive: parquet write: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("archive: parquet close: %w", err)
	}
	return nil
}

// ReadEvents reads every row of one Parquet file written by WriteEvents.
func ReadEvents(r io.ReaderAt, size int64) ([]Row, error) { return read[Row](r, size) }

// ReadDeadLetters reads every row of one Parquet file of dead letters.
func ReadDeadLetters(r io.ReaderAt, size int64) ([]DeadLetterRow, error) {
	return read[DeadLetterRow](r, size)
}

func read[T any](r io.ReaderAt, size int64) ([]T, error) {
	f, err := parquet.OpenFile(r, size)
	if err != nil {
		return nil, fmt.Errorf("archive: parquet open: %w", err)
	}
	pr := parquet.NewGenericReader[T](f)
	defer func() { _ = pr.Close() }()
	rows := make([]T, f.NumRows())
	n, err := pr.Read(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("archive: parquet read: %w", err)
	}
	return rows[:n], nil
}
