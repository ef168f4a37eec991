package graph

import (
	"errors"
	"strings"
)

// Code names the class of a failed Gremlin request. Codes are stable
// strings: the sink keys its retry counters (lineage_sink_retries_total)
// by them and the explorer maps them to its answers.
type Code string

const (
	// CodeConcurrentModification: Neptune lost a race on a vertex or edge
	// (another transaction held it).
	CodeConcurrentModification Code = "ConcurrentModificationException"
	// CodeConstraintViolation: two transactions created the same id at once.
	CodeConstraintViolation Code = "ConstraintViolationException"
	// CodeReadOnlyViolation: the endpoint is now a reader (the cluster
	// failed over).
	CodeReadOnlyViolation Code = "ReadOnlyViolationException"
	// CodeThrottling: the server is overloaded (throttled, out of memory
	// or time for the query).
	CodeThrottling Code = "ThrottlingException"
	// CodeTimeout: no answer within the caller's time ([ErrTimeout]).
	CodeTimeout Code = "Timeout"
	// CodeConnection: the connection could not be opened or broke.
	CodeConnection Code = "Connection"
	// CodeMissingVertex: mergeE found no vertex for an endpoint.
	CodeMissingVertex Code = "MissingVertex"
	// CodeOther: any other server answer (a bad traversal, a type error,
	// a request larger than the write buffer).
	CodeOther Code = "Other"
)

// ErrTimeout is the error of a request abandoned because no answer came in
// the caller's time (gremlin-go has no timeout of its own); wrap it so that
// [Classify] says [CodeTimeout].
var ErrTimeout = errors.New("graph: request timed out")

// Classify returns the class of an error of a Gremlin request. gremlin-go
// reports server errors as plain strings ("E0502: error in read loop,
// error message '...'. statusCode: 244" for a 500); Neptune puts
// "code":"<Exception>" in the message. Anything that is not a server
// answer (dial failure, broken socket, closed connection) is
// [CodeConnection].
func Classify(err error) Code {
	if errors.Is(err, ErrTimeout) {
		return CodeTimeout
	}
	s := err.Error()
	switch {
	case strings.Contains(s, "ConcurrentModificationException"):
		return CodeConcurrentModification
	case strings.Contains(s, "ConstraintViolationException"):
		return CodeConstraintViolation
	case strings.Contains(s, "ReadOnlyViolationException"):
		return CodeReadOnlyViolation
	case strings.Contains(s, "ThrottlingException"), strings.Contains(s, "TooManyRequestsException"),
		strings.Contains(s, "MemoryLimitExceededException"), strings.Contains(s, "TimeLimitExceededException"):
		return CodeThrottling
	case isMissingVertex(s):
		return CodeMissingVertex
	case strings.Contains(s, "E0502"), strings.Contains(s, "statusCode:"):
		return CodeOther
	case strings.Contains(s, "E1201"):
		// Request larger than the client's write buffer.
		return CodeOther
	}
	return CodeConnection
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
