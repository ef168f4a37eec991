package harness

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTimeout is wrapped by WaitFor when the deadline passes.
var ErrTimeout = errors.New("harness: timed out")

// WaitFor polls cond every 200 ms until it returns true, an error, ctx
// ends or timeout passes. what names the condition in the error and log.
func (h *Harness) WaitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	return Poll(ctx, timeout, 200*time.Millisecond, func() (bool, error) {
		ok, err := cond()
		if err == nil && !ok {
			return false, nil
		}
		return ok, err
	}, what)
}

// Poll calls cond every interval until it returns true or an error, ctx
// ends, or timeout passes (an error wrapping ErrTimeout naming what).
func Poll(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error), what string) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("harness: waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %v waiting for %s", ErrTimeout, timeout, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("harness: waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}
