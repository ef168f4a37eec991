package reader

import (
	"context"
	"github.com/lineageflow/lineageflow/archive"
	"sort"
	"time"
)

// Page is one page of archived events, newest first.
type Page struct {
	Rows []archive.Row
	// More: older events of the asked range may exist; NextBefore is the
	// before of the next page (every event older than the page's oldest
	// time, or than the last partition read).
	More       bool
	NextBefore time.Time
	// Scanned is what the page read: at most maxDays partitions.
	Scanned ScanStats
}

// PageDesc returns the events of [after, before), newest first (ties in
// reverse stream order), at most limit of them unless the limit falls
// inside a run of equal event times, which the page then keeps whole (so
// that before=NextBefore neither repeats nor skips an event). It reads
// the day partitions from before's day backwards, at most maxDays of
// them: the cost of a page is bounded by maxDays partitions whatever the
// range. When it stops at maxDays with days of the range left, More is
// set and NextBefore is the start of the last day read.
func (s Store) PageDesc(ctx context.Context, after, before time.Time, limit, maxDays int) (Page, error) {
	var p Page
	if !before.After(after) || limit <= 0 {
		return p, nil
	}
	if maxDays <= 0 {
		maxDays = 1
	}
	first := truncDay(after)
	day := truncDay(before.Add(-time.Millisecond))
	for n := 0; !day.Before(first); n, day = n+1, day.AddDate(0, 0, -1) {
		if n == maxDays {
			p.More, p.NextBefore = true, day.AddDate(0, 0, 1)
			return p, nil
		}
		from, to := day, day.AddDate(0, 0, 1)
		if from.Before(after) {
			from = after
		}
		if to.After(before) {
			to = before
		}
		var rows []archive.Row
		st, err := s.EventsIn(ctx, from, to, func(r archive.Row) error {
			rows = append(rows, r)
			return nil
		})
		p.Scanned.Partitions += st.Partitions
		p.Scanned.Objects += st.Objects
		p.Scanned.Bytes += st.Bytes
		p.Scanned.Rows += st.Rows
		if err != nil {
			return p, err
		}
		// Newest first; equal times in reverse stream order.
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].EventTime.After(rows[j].EventTime) })
		p.Rows = append(p.Rows, rows...)
		if len(p.Rows) >= limit {
			cut := limit
			for cut < len(p.Rows) && p.Rows[cut].EventTime.Equal(p.Rows[limit-1].EventTime) {
				cut++
			}
			more := cut < len(p.Rows) || day.After(first)
			p.Rows = p.Rows[:cut]
			if more {
				p.More, p.NextBefore = true, p.Rows[cut-1].EventTime
			}
			return p, nil
		}
	}
	return p, nil
}
