package reader

import (
	"context"
	"errors"
	"fmt"
	"github.com/lineageflow/lineageflow/archive"
	"io"
	"sort"
	"time"

	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/lineage"
)

// RebuildConfig says what to put back on a stream.
type RebuildConfig struct {
	// From and To bound the event times put back: [From, To).
	From, To time.Time
	// Replay is how records are put (stream, shards to create it with,
	// lanes, retries); its Progress lines are per day.
	Replay replay.Config
	// Progress gets one line per day (nil: none).
	Progress io.Writer
}

// Validate reports what to fix in c.
func (c RebuildConfig) Validate() error {
	var errs []error
	if c.From.IsZero() || c.To.IsZero() {
		errs = append(errs, errors.New("rebuild: give both ends of the time range (-from and -to)"))
	} else if !c.To.After(c.From) {
		errs = append(errs, fmt.Errorf("rebuild: -to %s is not after -from %s", c.To.UTC().Format(time.RFC3339), c.From.UTC().Format(time.RFC3339)))
	} else if n := len(Days(c.From, c.To)); n > 3660 {
		errs = append(errs, fmt.Errorf("rebuild: the range covers %d days: give at most ten years", n))
	}
	if err := c.Replay.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RebuildSummary counts what a rebuild did.
type RebuildSummary struct {
	Days, Objects int
	Events        int64 // events put back on the stream
	Bytes         int64 // object bytes read
	Replay        replay.Summary
}

func (s RebuildSummary) String() string {
	return fmt.Sprintf("%d days, %d objects (%d bytes) read, %d events put (%d Kinesis records, %d requests, %d retries, %d throttled)",
		s.Days, s.Objects, s.Bytes, s.Events, s.Replay.Records, s.Replay.Requests, s.Replay.Retries, s.Replay.Throttles)
}

// RebuildKey is the partition key an archived event is put back with: the
// one the OpenLineage Kinesis transport gives it (the root job of its run,
// so every event of a run, and of its parent's runs, lands on one shard in
// order), read from the raw event; for a record the decoder no longer
// reads, the run id, else the job.
func RebuildKey(r *archive.Row) string {
	if ev, err := lineage.Decode(r.Event); err == nil {
		if k := ev.PartitionKey(); k != "" {
			return k
		}
	}
	if r.RunID != "" {
		return "run:" + r.RunID
	}
	return "job:" + r.JobNamespace + "/" + r.JobName
}

// Rebuild puts the archived events of [c.From, c.To) back on c.Replay's
// stream (created if missing and c.Replay.Shards > 0), day by day, each
// day's events in event-time order (ties in stream order), with the raw
// bytes the producer sent. A worker of a new application reading that
// stream into an empty graph rebuilds the graph of those events. Only
// the partitions of the days in range are listed and read; a day's events
// are held in memory while they are put.
func Rebuild(ctx context.Context, st Store, kin replay.Client, c RebuildConfig) (RebuildSummary, error) {
	var sum RebuildSummary
	if err := c.Validate(); err != nil {
		return sum, err
	}
	for _, day := range Days(c.From, c.To.Add(-time.Millisecond)) {
		from, to := day, day.AddDate(0, 0, 1)
		if from.Before(c.From) {
			from = c.From
		}
		if to.After(c.To) {
			to = c.To
		}
		var rows []archive.Row
		sc, err := st.EventsIn(ctx, from, to, func(r archive.Row) error {
			rows = append(rows, r)
			return nil
		})
		if err != nil {
			return sum, err
		}
		sum.Days++
		sum.Objects += sc.Objects
		sum.Bytes += sc.Bytes
		// EventsIn gives rows in key order (shard, first sequence) and
		// each object in stream order: a stable sort by event time keeps
		// stream order between equal times.
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].EventTime.Before(rows[j].EventTime) })
		recs := make([]replay.Record, len(rows))
		for i := range rows {
			recs[i] = replay.Record{PartitionKey: RebuildKey(&rows[i]), Data: rows[i].Event}
		}
		if len(recs) > 0 {
			rc := c.Replay
			rc.Total = int64(len(recs))
			rs, err := replay.Run(ctx, kin, rc, replay.FromSlice(recs))
			sum.Events += rs.UserRecords
			sum.Replay.Records += rs.Records
			sum.Replay.Requests += rs.Requests
			sum.Replay.Retries += rs.Retries
			sum.Replay.Throttles += rs.Throttles
			sum.Replay.Bytes += rs.Bytes
			sum.Replay.Duration += rs.Duration
			if err != nil {
				return sum, fmt.Errorf("rebuild: %s: %w", day.Format(archive.DateLayout), err)
			}
		}
		if c.Progress != nil {
			fmt.Fprintf(c.Progress, "rebuild: %s: %d objects, %d events put (total %d)\n", day.Format(archive.DateLayout), sc.Objects, len(recs), sum.Events)
		}
	}
	return sum, nil
}
