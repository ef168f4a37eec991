package sink

import "sync/atomic"

// Stats is a snapshot of the sink's counters.
type Stats struct {
	Batches  uint64 // WriteBatch calls
	Requests uint64 // acknowledged requests (traversals)
	Records  uint64 // vertices and edges in acknowledged requests
	// RunRecords is the part of Records that is run history (Run
	// vertices): lineage's own writes are Records - RunRecords.
	RunRecords uint64
	Failures   uint64          // requests given up after their retries
	CacheHits  uint64          // vertices not sent because the cache knew them
	Coalesced  uint64          // records not sent because a merged request carried them already
	Retries    map[Code]uint64 // retries by error class
}

// RecordsPerRequest is Records/Requests.
func (s Stats) RecordsPerRequest() float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(s.Records) / float64(s.Requests)
}

// stats are the live counters behind [Stats]: atomics, so writers and
// WriteBatch calls count without a lock.
type stats struct {
	batches, requests, records, runRecords, failures, cacheHits, coalesced atomic.Uint64
	retries                                                                map[Code]*atomic.Uint64 // fixed keys, set by init
}

// init creates a retry counter for every [Code]; the map is not written
// after.
func (s *stats) init() {
	s.retries = map[Code]*atomic.Uint64{}
	for _, c := range []Code{CodeConcurrentModification, CodeConstraintViolation, CodeReadOnlyViolation,
		CodeThrottling, CodeTimeout, CodeConnection, CodeMissingVertex, CodeOther} {
		s.retries[c] = new(atomic.Uint64)
	}
}

func (s *stats) retry(c Code) { s.retries[c].Add(1) }

// Stats returns the sink's counters. Safe for concurrent use.
func (n *Neptune) Stats() Stats {
	s := Stats{
		Batches: n.stats.batches.Load(), Requests: n.stats.requests.Load(),
		Records: n.stats.records.Load(), RunRecords: n.stats.runRecords.Load(), Failures: n.stats.failures.Load(),
		CacheHits: n.stats.cacheHits.Load(), Coalesced: n.stats.coalesced.Load(), Retries: map[Code]uint64{},
	}
	for c, v := range n.stats.retries {
		if x := v.Load(); x > 0 {
			s.Retries[c] = x
		}
	}
	return s
}
