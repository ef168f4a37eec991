package graph

import (
	"errors"
	"fmt"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	neptune := func(code string) error {
		return fmt.Errorf(`E0502: error in read loop, error message '{"code":"%s","detailedMessage":"..."}'. statusCode: 244`, code)
	}
	tests := []struct {
		err  error
		code Code
	}{
		{neptune("ConcurrentModificationException"), CodeConcurrentModification},
		{neptune("ConstraintViolationException"), CodeConstraintViolation},
		{neptune("ReadOnlyViolationException"), CodeReadOnlyViolation},
		{neptune("ThrottlingException"), CodeThrottling},
		{neptune("TooManyRequestsException"), CodeThrottling},
		{neptune("MemoryLimitExceededException"), CodeThrottling},
		{neptune("TimeLimitExceededException"), CodeThrottling},
		{ErrTimeout, CodeTimeout},
		{fmt.Errorf("wrapped: %w", ErrTimeout), CodeTimeout},
		{errors.New("E0104: no successful connections could be made: dial tcp 127.0.0.1:1: connect: connection refused"), CodeConnection},
		{errors.New("websocket: close 1006 (abnormal closure): unexpected EOF"), CodeConnection},
		{errors.New("websocket: bad handshake"), CodeConnection},
		{errors.New("E0502: error in read loop, error message '{code:500 message:Vertex does not exist for mergeE: dataset:1:a/b}'. statusCode: 244"), CodeMissingVertex},
		{errors.New("E0502: error in read loop, error message '{code:244 message:Vertex id could not be resolved from mergeE: dataset:1:a/b attributes:map[exceptions:[java.lang.IllegalArgumentException]]}'"), CodeMissingVertex},
		{errors.New("E0502: error in read loop, error message '{code:597 message:No signature of method}'. statusCode: 85"), CodeOther},
		{errors.New("E1201: Request size cannot exceed the configured WriteBufferSize"), CodeOther},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.code {
			t.Errorf("Classify(%q) = %s, want %s", tt.err, got, tt.code)
		}
	}
}
