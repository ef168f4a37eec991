package replay

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// Record is one user record: what a producer hands to the Kinesis transport.
type Record struct {
	PartitionKey string
	Data         []byte
}

// Source yields records in order. Records calls emit for each record, in
// the order they must reach Kinesis per partition key, and returns the
// first error emit returns (emit's errors must be returned as they are),
// or its own. emit may keep r.Data: do not reuse it.
//
// An adapter for a push-style generator is one line:
//
//	replay.SourceFunc(func(ctx context.Context, emit func(replay.Record) error) error {
//		return gen.Stream(cfg, func(r gen.Record) error { return emit(replay.Record{PartitionKey: r.PartitionKey, Data: r.Data}) })
//	})
type Source interface {
	Records(ctx context.Context, emit func(Record) error) error
}

// Sized is optionally implemented by a [Source] that knows how many
// records it holds, for progress lines. Len returns -1 when unknown.
type Sized interface {
	Len() int64
}

// SourceFunc is a [Source] made of a function.
type SourceFunc func(ctx context.Context, emit func(Record) error) error

// Records calls f.
func (f SourceFunc) Records(ctx context.Context, emit func(Record) error) error { return f(ctx, emit) }

// FromSlice returns a [Source] of recs, in order.
func FromSlice(recs []Record) Source { return sliceSource(recs) }

type sliceSource []Record

func (s sliceSource) Len() int64 { return int64(len(s)) }

func (s sliceSource) Records(ctx context.Context, emit func(Record) error) error {
	for _, r := range s {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

// FromNDJSON returns a [Source] of the lines of the files at paths ("-" is
// standard input), in order: each non-blank line is one record's data
// (without its line ending), keyed by [PartitionKey].
func FromNDJSON(paths ...string) Source { return ndjsonSource(paths) }

type ndjsonSource []string

// Len counts the non-blank lines (one extra pass over the files); -1 when
// reading standard input or on an error.
func (s ndjsonSource) Len() int64 {
	var n int64
	for _, p := range s {
		if p == "-" {
			return -1
		}
		err := eachLine(context.Background(), p, func([]byte, int) error { n++; return nil })
		if err != nil {
			return -1
		}
	}
	return n
}

func (s ndjsonSource) Records(ctx context.Context, emit func(Record) error) error {
	for _, p := range s {
		err := eachLine(ctx, p, func(line []byte, _ int) error {
			data := bytes.Clone(line)
			return emit(Record{PartitionKey: PartitionKey(data), Data: data})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eachLine calls fn with each non-blank line of the file at path (the
// slice is reused) and its line number.
func eachLine(ctx context.Context, path string, fn func(line []byte, lineNo int) error) error {
	var r io.Reader = os.Stdin
	name := "standard input"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		defer f.Close()
		r, name = f, path
	}
	br := bufio.NewReaderSize(r, 1<<20)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it.
			long := bytes.Clone(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("replay: %s:%d: %w", name, lineNo, err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) > 0 {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if ferr := fn(line, lineNo); ferr != nil {
				return ferr
			}
		}
		if err != nil { // io.EOF
			return nil
		}
	}
}

// keyFields is the part of an OpenLineage event that decides its
// partition key.
type keyFields struct {
	Run *struct {
		Facets *struct {
			Parent *struct {
				Job  *name `json:"job"`
				Root *struct {
					Job *name `json:"job"`
				} `json:"root"`
			} `json:"parent"`
		} `json:"facets"`
	} `json:"run"`
	Job     *name `json:"job"`
	Dataset *name `json:"dataset"`
}

type name struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// PartitionKey returns the partition key the OpenLineage Kinesis transport
// (client/java/transports-kinesis KinesisTransport) gives an event:
//
//   - RunEvent (has "run"): "run:<ns>/<name>" of run.facets.parent.root.job
//     if present, else of run.facets.parent.job if present, else of job;
//   - DatasetEvent (has "dataset"): "dataset:<ns>/<name>";
//   - JobEvent (has "job" but no "run"): "job:<ns>/<name>".
//
// Anything else (not JSON, not an object, none of these fields, wrong
// types) gets "malformed:<first 16 hex digits of its SHA-256>", so that
// malformed records still reach Kinesis, spread over the shards, and from
// there the dead-letter path. A key longer than Kinesis allows (256
// characters) is cut and suffixed with a hash of the whole key (the
// transport's KPL would refuse the record).
func PartitionKey(data []byte) string {
	var f keyFields
	if err := json.Unmarshal(data, &f); err != nil {
		return hashKey(data)
	}
	var key string
	switch {
	case f.Run != nil:
		j := f.Job
		if p := parent(f); p != nil {
			j = p
		}
		if j == nil {
			return hashKey(data)
		}
		key = "run:" + j.Namespace + "/" + j.Name
	case f.Dataset != nil:
		key = "dataset:" + f.Dataset.Namespace + "/" + f.Dataset.Name
	case f.Job != nil:
		key = "job:" + f.Job.Namespace + "/" + f.Job.Name
	default:
		return hashKey(data)
	}
	return limitKey(key)
}

func parent(f keyFields) *name {
	if f.Run.Facets == nil || f.Run.Facets.Parent == nil {
		return nil
	}
	p := f.Run.Facets.Parent
	if p.Root != nil && p.Root.Job != nil {
		return p.Root.Job
	}
	return p.Job
}

func hashKey(data []byte) string {
	sum := sha256.Sum256(data)
	return "malformed:" + hex.EncodeToString(sum[:8])
}

// limitKey keeps key within 256 characters, replacing the tail of a longer
// one by "#" and 16 hex digits of its SHA-256 (so distinct keys stay
// distinct).
func limitKey(key string) string {
	const max, tail = 256, 17
	if utf8.RuneCountInString(key) <= max {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	n, i := 0, 0
	for i = range key {
		if n == max-tail {
			break
		}
		n++
	}
	return key[:i] + "#" + hex.EncodeToString(sum[:8])
}
