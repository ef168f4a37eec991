package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options of [Open].
type Options struct {
	// FS is the file system (default: the OS). Tests pass an in-memory or
	// error-injecting one.
	FS vfs.FS
	// Logger receives Pebble's messages (default slog.Default()).
	Logger *slog.Logger
	// MemTableSize (default 64 MiB).
	MemTableSize uint64
	// Merger is the Pebble merge operator of the values written with
	// Merge (required: the processor passes window.Merger). Pebble
	// stores its name and refuses to open a DB written with another.
	Merger *pebble.Merger
}

// ErrNoMerger is returned by [Open] when [Options.Merger] is nil.
var ErrNoMerger = errors.New("checkpoint: Options.Merger is required")

// Open opens (creating if needed) the worker's Pebble DB in dir with the
// merge operator o.Merger.
func Open(dir string, o Options) (*pebble.DB, error) {
	if o.Merger == nil {
		return nil, ErrNoMerger
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 64 << 20
	}
	opts := &pebble.Options{
		FS:           o.FS,
		Merger:       o.Merger,
		MemTableSize: o.MemTableSize,
		Logger:       pebbleLogger{o.Logger},
	}
	db, err := pebble.Open(dir, opts)
	// Another process: the LOCK file's fcntl lock gives EAGAIN ("resource
	// temporarily unavailable"); this process: Pebble says so.
	if err != nil && (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) || strings.Contains(err.Error(), "lock held by current process")) {
		return nil, fmt.Errorf("%w: %s (its LOCK file is locked): stop that process or give this one another -data-dir", ErrHeld, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open pebble %s: %w", dir, err)
	}
	return db, nil
}

// ErrHeld: the data directory is open in another process (a second
// worker, or deadletters beside a running worker).
var ErrHeld = errors.New("checkpoint: data directory held by another worker")

// pebbleLogger routes Pebble's logs to slog. Fatalf panics instead of
// exiting the process so a failing disk surfaces as an error of the shard
// that hit it (and in tests, as a recoverable crash).
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...interface{}) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Errorf(format string, args ...interface{}) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLogger) Fatalf(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble")
	panic(&FatalError{Msg: msg})
}

// FatalError is the panic value of a fatal Pebble error (a failed WAL write
// leaves the DB unusable). The processor recovers it on its own goroutines
// and fails the shard; the process must reopen the DB to go on.
type FatalError struct{ Msg string }

func (e *FatalError) Error() string { return "pebble: fatal: " + e.Msg }

// DeadLetter is one refused record, as stored under dlq/.
type DeadLetter struct {
	Shard   string    `json:"shard"`
	Seq     string    `json:"seq"`
	Sub     uint32    `json:"sub"`
	Arrival time.Time `json:"arrival"`
	Reason  string    `json:"reason"`
	Field   string    `json:"field,omitempty"`
	Message string    `json:"message"`
	Size    int       `json:"size"` // length of the original record
	Raw     []byte    `json:"raw"`  // the record, truncated to the cap
}

// MarshalDeadLetter encodes d.
func MarshalDeadLetter(d *DeadLetter) []byte {
	b, _ := json.Marshal(d)
	return b
}

// ListDeadLetters calls fn for every dead letter in db, in key order.
func ListDeadLetters(db *pebble.DB, fn func(DeadLetter) error) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: DLQPrefix, UpperBound: PrefixEnd(DLQPrefix)})
	if err != nil {
		return err
	}
	defer func() { _ = it.Close() }()
	for it.First(); it.Valid(); it.Next() {
		var d DeadLetter
		if err := json.Unmarshal(it.Value(), &d); err != nil {
			return fmt.Errorf("checkpoint: dead letter %q: %w", it.Key(), err)
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	return it.Error()
}

// Parked is a sink batch the graph refused permanently, kept under
// parked/ instead of blocking its shard.
type Parked struct {
	Shard     string    `json:"shard"`
	OutboxSeq uint64    `json:"outbox_seq"`
	Bucket    int64     `json:"bucket"`
	At        time.Time `json:"at"`
	Attempts  int       `json:"attempts"`
	Reason    string    `json:"reason"`
	Vertices  int       `json:"vertices"`
	Edges     int       `json:"edges"`
	Entry     []byte    `json:"entry"` // the outbox value (processor.DecodeOutbox)
	// Item is the id of the one vertex or edge set apart from its entry
	// (processor/isolate.go); "" for a whole parked entry.
	Item string `json:"item,omitempty"`
	// Key is where ListParked found it (not stored).
	Key []byte `json:"-"`
}

// DeleteParked deletes the parked batch or item under key (synced).
func DeleteParked(db *pebble.DB, key []byte) error {
	return db.Delete(key, pebble.Sync)
}

// MarshalParked encodes p.
func MarshalParked(p *Parked) []byte {
	b, _ := json.Marshal(p)
	return b
}

// ListParked calls fn for every parked batch in db, in key order.
func ListParked(db *pebble.DB, fn func(Parked) error) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: ParkedPrefix, UpperBound: PrefixEnd(ParkedPrefix)})
	if err != nil {
		return err
	}
	defer func() { _ = it.Close() }()
	for it.First(); it.Valid(); it.Next() {
		var p Parked
		if err := json.Unmarshal(it.Value(), &p); err != nil {
			return fmt.Errorf("checkpoint: parked batch %q: %w", it.Key(), err)
		}
		p.Key = append([]byte(nil), it.Key()...)
		if err := fn(p); err != nil {
			return err
		}
	}
	return it.Error()
}
