package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/lineageflow/lineageflow/sink"
)

// Readiness decides /readyz. The worker is ready when
//
//   - its KCL worker is running: started (Pebble open, lease table ACTIVE,
//     KCL started) and not shutting down. Holding leases is not required:
//     a worker waiting for a lease (more workers than shards, or right
//     after a peer took them) is ready, as it is doing its job; and
//   - the sink is connected: it has no evidence that the graph cannot be
//     reached. The evidence is (a) the last WriteBatch that finished
//     failed with a connection-class error (Connection, Timeout,
//     ReadOnlyViolation: the graph could not be reached or is a reader
//     now; not a refused request) and no later one succeeded, or (b) over
//     the last Window the sink's own counters show connection-class
//     retries and no acknowledged request. An idle sink is connected:
//     connections open lazily, on the first request.
//
// Not ready does not restart the pod (that is /healthz); it takes it out
// of rollouts and of the PodDisruptionBudget's healthy count. Safe for
// concurrent use.
type Readiness struct {
	// Running reports whether the worker is started and not stopping
	// ([source.Worker.Running]). Nil: not ready.
	Running func() bool
	// Leases returns the number of leases held (for the message only).
	Leases func() int
	// LastSinkError is when the last WriteBatch finished and its error
	// (nil: succeeded or none yet) ([metrics.Exporter.LastSinkError]). Optional.
	LastSinkError func() (time.Time, error)
	// SinkStats are the sink's own counters ([sink.Neptune.Stats]). Optional.
	SinkStats func() sink.Stats
	// Blocked returns nil unless something keeps the worker from
	// processing ([source.Worker.Unready]: a child waiting for a parent's
	// handoff it cannot read, a stream that does not exist or cannot be
	// read, a run store that does not answer); then the worker is not
	// ready and the error says why. Optional.
	Blocked func() error
	// SharedDedup returns nil while the shared dedup tier answers, else
	// why not. Optional. It does not make the worker unready (ingestion
	// goes on with the local tier: Redis never blocks it); Status says so.
	SharedDedup func() error
	// Window is the span over which the sink counters are compared
	// (default 15 s).
	Window time.Duration
	// Now (default time.Now).
	Now func() time.Time

	mu struct {
		sync.Mutex
		samples []sample // oldest first, spanning at least Window when possible
	}
}

type sample struct {
	at                time.Time
	requests, retries uint64
}

// Check returns nil when ready, else what is missing.
func (r *Readiness) Check() error {
	if r.Running == nil || !r.Running() {
		return errors.New("worker not running (starting: opening state, creating the lease table, starting KCL; or shutting down)")
	}
	if r.Blocked != nil {
		if err := r.Blocked(); err != nil {
			return err
		}
	}
	if err := r.sinkConnected(); err != nil {
		return err
	}
	return nil
}

// Status is Check's answer in words, for the /readyz body.
func (r *Readiness) Status() string {
	s := "running"
	if r.Leases != nil {
		if n := r.Leases(); n == 0 {
			s = "running, waiting for leases"
		} else {
			s = fmt.Sprintf("running, %d lease(s) held", n)
		}
	}
	if r.SharedDedup != nil {
		if err := r.SharedDedup(); err != nil {
			// The class only: /readyz answers anyone who reaches the
			// port, and the error names Redis's host (the log has it).
			s += fmt.Sprintf("; shared dedup degraded (local tier only): %s error; details in the worker log", dedupClass(err))
		} else {
			s += "; shared dedup ok"
		}
	}
	return s
}

func (r *Readiness) sinkConnected() error {
	if r.LastSinkError != nil {
		if at, err := r.LastSinkError(); IsConnectionError(err) {
			// The class only: the error itself may name the graph's host,
			// and /readyz answers anyone who can reach the port. The
			// details are in the log.
			return fmt.Errorf("sink not connected: last write at %s failed (%s error; details in the worker log)", at.UTC().Format(time.RFC3339), errorClass(err))
		}
	}
	if r.SinkStats == nil {
		return nil
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	window := r.Window
	if window <= 0 {
		window = 15 * time.Second
	}
	st := r.SinkStats()
	cur := sample{at: now(), requests: st.Requests,
		retries: st.Retries[sink.CodeConnection] + st.Retries[sink.CodeTimeout] + st.Retries[sink.CodeReadOnlyViolation]}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.samples = append(r.mu.samples, cur)
	// Keep the newest sample at least Window old as the base.
	for len(r.mu.samples) > 2 && cur.at.Sub(r.mu.samples[1].at) >= window {
		r.mu.samples = r.mu.samples[1:]
	}
	base := r.mu.samples[0]
	if cur.retries > base.retries && cur.requests == base.requests {
		return fmt.Errorf("sink not connected: %d connection retries and no acknowledged request in the last %s",
			cur.retries-base.retries, cur.at.Sub(base.at).Round(time.Second))
	}
	return nil
}

// errorClass names the class of a sink error without its text.
// dedupClass is the class of a shared dedup tier error: timeout,
// connection or redis (an answer Redis gave).
func dedupClass(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.As(err, &ne):
		return "connection"
	}
	return "redis"
}

func errorClass(err error) string {
	if errors.Is(err, sink.ErrClosed) {
		return "closed"
	}
	var se *sink.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return "unknown"
}

// IsConnectionError reports whether err says the graph could not be
// reached (rather than that it refused a request): a [*sink.Error] of
// class Connection, Timeout or ReadOnlyViolation, or [sink.ErrClosed].
func IsConnectionError(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, sink.ErrClosed) {
		return true
	}
	var se *sink.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sink.CodeConnection, sink.CodeTimeout, sink.CodeReadOnlyViolation:
			return true
		}
	}
	return false
}
