package semantics

import (
	"fmt"

	"github.com/lineageflow/lineageflow/lineage"
)

// CheckRunJob is the run identity rule (DESIGN.md, Lineage semantics 3):
// a run belongs to the job of its first event, and a RunEvent naming
// that runId with another job is refused (dead letter
// lineage.ReasonRunJobMismatch) before it changes anything: otherwise
// any producer that learns a run id (the explorer shows them) could
// suppress the run's lineage with a FAIL, or add its own datasets to the
// run's job with a COMPLETE. r is the run the event would fold into (nil
// or one with no job yet: nothing to check).
func CheckRunJob(ev *lineage.Event, r *Run) *lineage.DecodeError {
	if ev.Kind != lineage.KindRun || r == nil || r.Job == (lineage.Job{}) || r.Job == ev.Job {
		return nil
	}
	return &lineage.DecodeError{Reason: lineage.ReasonRunJobMismatch, Field: "job",
		Msg: fmt.Sprintf("run %s belongs to job %s; this event names job %s", short(ev.RunID), jobName(r.Job), jobName(ev.Job))}
}

func jobName(j lineage.Job) string { return short(j.Namespace) + "/" + short(j.Name) }

// short quotes s, cut to 200 bytes (a dead letter's message).
func short(s string) string {
	if len(s) > 200 {
		return fmt.Sprintf("%q...", s[:200])
	}
	return fmt.Sprintf("%q", s)
}
