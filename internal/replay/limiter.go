package replay

import (
	"context"
	"time"
)

// limiter paces events to rate per second with a small burst: a token
// bucket of burst tokens refilled at rate. Not safe for concurrent use.
type limiter struct {
	rate  float64 // events/s; 0 = no limit
	burst float64
	now   func() time.Time
	sleep func(context.Context, time.Duration) error

	next time.Time // when the next event may go, with no burst left
}

func newLimiter(rate float64, now func() time.Time, sleep func(context.Context, time.Duration) error) *limiter {
	burst := rate / 20 // 50 ms worth
	if burst < 1 {
		burst = 1
	}
	return &limiter{rate: rate, burst: burst, now: now, sleep: sleep}
}

// wait blocks until one more event may go.
func (l *limiter) wait(ctx context.Context) error {
	if l.rate <= 0 {
		return nil
	}
	now := l.now()
	interval := time.Duration(float64(time.Second) / l.rate)
	// Unused time earns at most burst events.
	if earliest := now.Add(-time.Duration((l.burst - 1) * float64(interval))); l.next.Before(earliest) {
		l.next = earliest
	}
	at := l.next
	l.next = l.next.Add(interval)
	if d := at.Sub(now); d > 0 {
		return l.sleep(ctx, d)
	}
	return nil
}
