package processor

// Budgets: what bounds a shard's memory, time and disk whatever a record
// holds (DESIGN.md, "Budgets and limits"). Each is a PipelineConfig field
// and a flag; when one bites it is counted here (exported as
// lineage_budget_total{budget}) and never drops anything silently.

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/lineage"
)

// Budget defaults.
const (
	DefaultMaxEventDatasets         = 10_000
	DefaultMaxRunDatasets           = 500_000
	DefaultMaxEmissionEdges         = 2_000_000
	DefaultMaxDeadLettersPerBarrier = 1024
	DefaultMaxRuns                  = 250_000
	DefaultDeadLetterRetention      = 7 * 24 * time.Hour
	DefaultDeadLetterMaxBytes       = 256 << 20
	DefaultDedupMaxBytes            = 64 << 20
)

// BudgetStats count what the budgets did. Safe for concurrent use.
type BudgetStats struct {
	// EventsOverDatasets: events with more than MaxEventDatasets inputs +
	// outputs, refused (dead letter too_many_datasets).
	EventsOverDatasets atomic.Int64
	// RunDatasetsDropped: datasets not added to a run already holding
	// MaxRunDatasets (the run's edges leave them out).
	RunDatasetsDropped atomic.Int64
	// RunFieldsDropped: column lineage pairs not added to a run already
	// holding MaxRunDatasets of them.
	RunFieldsDropped atomic.Int64
	// FacetPropsCapped: facet property values over
	// lineage.MaxFacetPropBytes left out of their vertex.
	FacetPropsCapped atomic.Int64
	// EdgesDropped: DERIVES edges and column lineage pairs left out of emissions over
	// MaxEmissionEdges; EmissionsTruncated: such emissions.
	EdgesDropped       atomic.Int64
	EmissionsTruncated atomic.Int64
	// TableSpills: window tables written to Pebble inside one record's
	// emission (MaxOpenKeys reached mid-record).
	TableSpills atomic.Int64
	// DeadLetterBarriers: barriers forced by MaxDeadLettersPerBarrier.
	DeadLetterBarriers atomic.Int64
	// DeadLettersAged, DeadLettersOverBytes: dead letters deleted by the
	// retention (older than DeadLetterRetention; beyond DeadLetterMaxBytes
	// per shard, oldest first).
	DeadLettersAged      atomic.Int64
	DeadLettersOverBytes atomic.Int64
	// RunsEvicted: open runs forgotten (no edges) because the shard held
	// MaxRuns runs.
	RunsEvicted atomic.Int64
	// RunStoreCut: column pairs and datasets left out of a run's run-store
	// item to keep it under DynamoDB's 400 KB item limit (the worker's own
	// copy keeps them).
	RunStoreCut atomic.Int64
	// DedupSpills: times a shard's dedup old tier reached DedupMaxBytes
	// and was spilled (looked up in Pebble, no key forgotten);
	// DedupSpilledLookups: Pebble Gets that cost (a recent-tier miss
	// while spilled).
	DedupSpills         atomic.Int64
	DedupSpilledLookups atomic.Int64
}

// Map returns the counters by budget name (the label of
// lineage_budget_total).
func (b *BudgetStats) Map() map[string]int64 {
	return map[string]int64{
		"event_datasets":          b.EventsOverDatasets.Load(),
		"run_datasets":            b.RunDatasetsDropped.Load(),
		"run_fields":              b.RunFieldsDropped.Load(),
		"facet_props":             b.FacetPropsCapped.Load(),
		"emission_edges":          b.EdgesDropped.Load(),
		"emissions_truncated":     b.EmissionsTruncated.Load(),
		"table_spills":            b.TableSpills.Load(),
		"dead_letter_barriers":    b.DeadLetterBarriers.Load(),
		"dead_letters_aged":       b.DeadLettersAged.Load(),
		"dead_letters_over_bytes": b.DeadLettersOverBytes.Load(),
		"runs_evicted":            b.RunsEvicted.Load(),
		"run_store_item":          b.RunStoreCut.Load(),
		"dedup_memory":            b.DedupSpills.Load(),
		"dedup_spilled_lookups":   b.DedupSpilledLookups.Load(),
	}
}

// spillTable writes the window table's deltas to Pebble in the middle of a
// record's emission (the table reached MaxOpenKeys): blind merges and
// bucket pins only, no position, run, dedup or dead-letter state. Safe at
// any point: the position does not move, so after a crash the record is
// replayed and its contributions merged again (merges are idempotent), and
// sealing folds what Pebble holds with the table. Not synced: a later
// synced barrier makes it durable, and losing it only loses what the
// replay redoes. A Pebble error fails the shard (recovered by Process).
func (s *Shard) spillTable() {
	batch := s.db.NewBatch()
	defer func() { _ = batch.Close() }()
	s.windows.writeDeltas(batch, nil)
	if err := batch.Commit(pebble.NoSync); err != nil {
		panic(&checkpoint.FatalError{Msg: "window table spill: " + err.Error()})
	}
	s.windows.afterCommit(nil)
	s.st.Budget.TableSpills.Add(1)
}

// overEventBudget refuses the current event when it names more datasets
// than MaxEventDatasets: one dead letter, counted.
func (s *Shard) overEventBudget(r *Record) bool {
	n := len(s.ev.Inputs) + len(s.ev.Outputs)
	if n <= s.cfg.Budgets.MaxEventDatasets {
		return false
	}
	s.st.Budget.EventsOverDatasets.Add(1)
	s.deadLetter(r, &lineage.DecodeError{Reason: lineage.ReasonTooManyDatasets,
		Msg: fmt.Sprintf("%d inputs + outputs, over the budget of %d (-max-event-datasets)", n, s.cfg.Budgets.MaxEventDatasets)})
	return true
}

// dlqState is the retention of a shard's dead letters: the bytes its
// dlq/<shard>/ keys hold (counted at start, kept up to date), deleted
// oldest first (keys are in sequence order, which is arrival order) when
// older than DeadLetterRetention or beyond DeadLetterMaxBytes.
type dlqState struct {
	bytes   int64
	counted bool
	lastGC  int64 // maxArrival of the last age check
}

// countDeadLetters sums the shard's stored dead letters (once, at start).
func (s *Shard) countDeadLetters() error {
	prefix := checkpoint.DLQShardPrefix(s.id)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: checkpoint.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	var n int64
	for it.First(); it.Valid(); it.Next() {
		n += int64(len(it.Key()) + len(it.Value()))
	}
	if err := it.Close(); err != nil {
		return err
	}
	s.dlq.bytes, s.dlq.counted = n, true
	return nil
}

// expireDeadLetters adds to batch the deletion of the shard's oldest dead
// letters while they are older than the retention (by arrival time, as
// every TTL of the pipeline) or the shard holds more than the byte budget
// (counting the dead letters of this barrier, added to batch already).
func (s *Shard) expireDeadLetters(batch *pebble.Batch) error {
	for _, d := range s.dead {
		s.dlq.bytes += int64(len(d.key) + len(d.val))
	}
	over := s.cfg.Budgets.DeadLetterMaxBytes > 0 && s.dlq.bytes > s.cfg.Budgets.DeadLetterMaxBytes
	ageDue := s.cfg.Budgets.DeadLetterRetention > 0 && s.maxArrival-s.dlq.lastGC >= time.Minute.Milliseconds()
	if !over && !ageDue {
		return nil
	}
	if ageDue {
		s.dlq.lastGC = s.maxArrival
	}
	horizon := time.UnixMilli(s.maxArrival - s.cfg.Budgets.DeadLetterRetention.Milliseconds())
	prefix := checkpoint.DLQShardPrefix(s.id)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: checkpoint.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer func() { _ = it.Close() }()
	for it.First(); it.Valid(); it.Next() {
		size := int64(len(it.Key()) + len(it.Value()))
		if s.cfg.Budgets.DeadLetterMaxBytes > 0 && s.dlq.bytes > s.cfg.Budgets.DeadLetterMaxBytes {
			s.st.Budget.DeadLettersOverBytes.Add(1)
		} else {
			var d struct {
				Arrival time.Time `json:"arrival"`
			}
			if s.cfg.Budgets.DeadLetterRetention <= 0 || json.Unmarshal(it.Value(), &d) != nil || !d.Arrival.Before(horizon) {
				break
			}
			s.st.Budget.DeadLettersAged.Add(1)
		}
		_ = batch.Delete(it.Key(), nil)
		s.dlq.bytes -= size
	}
	return it.Error()
}
