package processor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// runStoreResult records the outcome of a run store call: the store is
// failing from the first error until a call succeeds
// (RunStoreUnavailable).
func (s *Stats) runStoreResult(err error) {
	if err == nil {
		s.runStoreFailing.Store(0)
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	s.runStoreFailing.CompareAndSwap(0, time.Now().UnixNano())
}

// RunStoreUnavailable returns nil while the run store answers (or none is
// configured), else since when it does not: shards cannot read or write
// their runs, ingestion stalls, and the worker is not ready. The error
// names no endpoint (/readyz answers anyone who can reach it).
func (s *Stats) RunStoreUnavailable() error {
	ns := s.runStoreFailing.Load()
	if ns == 0 {
		return nil
	}
	return fmt.Errorf("run store not answering since %s: shards cannot read or write their runs (details in the worker log)",
		time.Unix(0, ns).UTC().Format(time.RFC3339))
}
