package sink

import (
	"errors"
	"fmt"
	"strings"
)

// Code names the class of a failed graph request. Codes are stable strings:
// they key [Stats] retry counters (and so lineage_sink_retries_total).
type Code string

const (
	// CodeConcurrentModification: Neptune lost a race on a vertex or edge
	// (another transaction held it). Retried with backoff and full jitter.
	CodeConcurrentModification Code = "ConcurrentModificationException"
	// CodeConstraintViolation: two transactions created the same id at once.
	// Retried with backoff (the second try matches instead of creating).
	CodeConstraintViolation Code = "ConstraintViolationException"
	// CodeReadOnlyViolation: the endpoint is now a reader (the cluster failed
	// over). The connection is closed and reopened, then the request retried.
	CodeReadOnlyViolation Code = "ReadOnlyViolationException"
	// CodeThrottling: the server is overloaded. Backed off, then retried.
	CodeThrottling Code = "ThrottlingException"
	// CodeTimeout: no answer within Config.RequestTimeout. The call is
	// abandoned, the connection replaced, the request retried.
	CodeTimeout Code = "Timeout"
	// CodeConnection: the connection could not be opened or broke. Reopened
	// with backoff, the request retried.
	CodeConnection Code = "Connection"
	// CodeMissingVertex: mergeE found no vertex for an endpoint (the graph
	// lost it, or the vertex cache was wrong). The batch's vertices are
	// dropped from the cache and written again, then its edges.
	CodeMissingVertex Code = "MissingVertex"
	// CodeOther: any other server error (a bad traversal, a type error).
	// Not retried by the writer; WriteBatch returns it.
	CodeOther Code = "Other"
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

// IsRetriable reports whether err is an [*Error] whose Retriable bit is set.
func IsRetriable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retriable
}

// ErrClosed is returned by [Neptune.WriteBatch] after [Neptune.Close].
var ErrClosed = errors.New("sink: closed")

// errTimeout is what a connection returns when a call is abandoned after
// Config.RequestTimeout.
var errTimeout = errors.New("sink: request timed out")

// action is what a writer does about an error class.
type action uint8

const (
	actFail      action = iota // give up: return the error
	actBackoff                 // wait, then retry on the same connection
	actReconnect               // close and reopen the connection, then retry
)

// classify maps an error of a graph request to its class and the writer's
// action. gremlin-go reports server errors as plain strings ("E0502: error
// in read loop, error message '...'. statusCode: 244" for a 500); Neptune
// puts "code":"<Exception>" in the message. Anything that is not a server
// answer (dial failure, broken socket, closed connection) is a connection
// error.
func classify(err error) (Code, action) {
	if errors.Is(err, errTimeout) {
		return CodeTimeout, actReconnect
	}
	s := err.Error()
	switch {
	case strings.Contains(s, "ConcurrentModificationException"):
		return CodeConcurrentModification, actBackoff
	case strings.Contains(s, "ConstraintViolationException"):
		return CodeConstraintViolation, actBackoff
	case strings.Contains(s, "ReadOnlyViolationException"):
		return CodeReadOnlyViolation, actReconnect
	case strings.Contains(s, "ThrottlingException"), strings.Contains(s, "TooManyRequestsException"),
		strings.Contains(s, "MemoryLimitExceededException"), strings.Contains(s, "TimeLimitExceededException"):
		return CodeThrottling, actBackoff
	case isMissingVertex(s):
		return CodeMissingVertex, actFail
	case strings.Contains(s, "E0502"), strings.Contains(s, "statusCode:"):
		// A server answer we do not know how to cure by retrying.
		return CodeOther, actFail
	case strings.Contains(s, "E1201"):
		// Request larger than the client's write buffer: a sizing bug.
		return CodeOther, actFail
	}
	return CodeConnection, actReconnect
}

// isMissingVertex recognises mergeE's "an endpoint does not exist" answers
// (TinkerGraph 3.7.4: "Vertex id could not be resolved from mergeE: ...",
// older: "Vertex does not exist for mergeE: ...", Neptune: "... vertex ...
// not found").
func isMissingVertex(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "vertex") && (strings.Contains(l, "does not exist") || strings.Contains(l, "not found") || strings.Contains(l, "could not be found") ||
		strings.Contains(l, "could not be resolved"))
}

// Classify returns the class of an error of a graph request, as the
// writers see it (a server answer by its Neptune exception name, anything
// else a connection error). Readers of the graph (the explorer) use it to
// report why the graph did not answer.
func Classify(err error) Code {
	c, _ := classify(err)
	return c
}
