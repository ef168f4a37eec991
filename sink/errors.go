package sink

import (
	"errors"
	"fmt"

	"github.com/lineageflow/lineageflow/graph"
)

// Code is the class of a failed graph request ([graph.Code]); it keys
// [Stats] retry counters (and so lineage_sink_retries_total). What the
// writer does about each class is its policy below ([classify]).
type Code = graph.Code

// The classes of [Code], with the writer's policy for each.
const (
	// CodeConcurrentModification: retried with backoff and full jitter.
	CodeConcurrentModification = graph.CodeConcurrentModification
	// CodeConstraintViolation: retried with backoff (the second try
	// matches instead of creating).
	CodeConstraintViolation = graph.CodeConstraintViolation
	// CodeReadOnlyViolation: the connection is closed and reopened, then
	// the request retried.
	CodeReadOnlyViolation = graph.CodeReadOnlyViolation
	// CodeThrottling: backed off, then retried.
	CodeThrottling = graph.CodeThrottling
	// CodeTimeout: no answer within Config.RequestTimeout. The call is
	// abandoned, the connection replaced, the request retried.
	CodeTimeout = graph.CodeTimeout
	// CodeConnection: reopened with backoff, the request retried.
	CodeConnection = graph.CodeConnection
	// CodeMissingVertex: the batch's vertices are dropped from the cache
	// and written again, then its edges.
	CodeMissingVertex = graph.CodeMissingVertex
	// CodeOther: not retried by the writer; WriteBatch returns it.
	CodeOther = graph.CodeOther
)

// Error is a failed graph request after the writer's retries.
// Retriable says whether sending the same batch again may succeed; the
// caller keeps the batch either way.
type Error struct {
	Code      Code
	Retriable bool
	Attempts  int    // requests sent before giving up
	Writer    int    // index of the writer that gave up
	Err       error  // the last underlying error
	Op        string // "vertices" or "edges"
}

func (e *Error) Error() string {
	return fmt.Sprintf("sink: writer %d: %s: %s after %d attempt(s): %v", e.Writer, e.Op, e.Code, e.Attempts, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Permanent reports that sending the same batch again cannot succeed (the
// processor parks a batch refused permanently several times).
func (e *Error) Permanent() bool { return !e.Retriable }

// IsRetriable reports whether err is an [*Error] whose Retriable bit is set.
func IsRetriable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retriable
}

// ErrClosed is returned by [Neptune.WriteBatch] after [Neptune.Close].
var ErrClosed = errors.New("sink: closed")

// action is what a writer does about an error class.
type action uint8

const (
	actFail      action = iota // give up: return the error
	actBackoff                 // wait, then retry on the same connection
	actReconnect               // close and reopen the connection, then retry
)

// classify maps an error of a graph request to its class ([graph.Classify])
// and the writer's action.
func classify(err error) (Code, action) {
	c := graph.Classify(err)
	switch c {
	case CodeConcurrentModification, CodeConstraintViolation, CodeThrottling:
		return c, actBackoff
	case CodeReadOnlyViolation, CodeTimeout, CodeConnection:
		return c, actReconnect
	}
	return c, actFail // CodeMissingVertex (WriteBatch rewrites), CodeOther
}
