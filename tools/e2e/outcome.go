package main

import (
	"fmt"
	"sort"

	"github.com/lineageflow/lineageflow/checkpoint"
	"github.com/lineageflow/lineageflow/graph"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/verify"
	"github.com/lineageflow/lineageflow/verify/refmodel"
	"github.com/lineageflow/lineageflow/window"
)

// outcome is one scenario's result line.
type outcome struct {
	name                                            string
	events, expEdges, actEdges, missing, extra, dup int
	ghost, dlq, mismatched                          int
	recover                                         float64
	note                                            string // scenario-specific key=value fields
	err                                             error
}

func (o *outcome) fill(rep *verify.Report, snap *graph.Snapshot, anyG, want *refmodel.Graph) {
	o.actEdges = len(snap.Edges)
	o.missing = rep.MissingEdges.Count + rep.MissingVertices.Count
	o.extra = rep.ExtraEdges.Count + rep.ExtraVertices.Count
	o.dup = rep.DuplicateEdges.Count
	o.mismatched = rep.MismatchedEdges.Count + rep.MismatchedVertices.Count
	// Ghost lineage: edges in the graph that only uncommitted (FAIL, ABORT,
	// never finished) runs give.
	for _, e := range snap.Edges {
		if _, ok := want.Edges[e.ID]; ok {
			continue
		}
		if _, ok := anyG.Edges[e.ID]; ok {
			o.ghost++
		}
	}
}

func (o *outcome) line() string {
	res := "PASS"
	if o.err != nil {
		res = "FAIL"
	}
	l := fmt.Sprintf("scenario=%s events=%d expected_edges=%d actual_edges=%d missing=%d extra=%d duplicate=%d ghost=%d dlq=%d mismatched=%d recover_s=%.1f",
		o.name, o.events, o.expEdges, o.actEdges, o.missing, o.extra, o.dup, o.ghost, o.dlq, o.mismatched, o.recover)
	if o.note != "" {
		l += " " + o.note
	}
	l += " result=" + res
	if o.err != nil {
		l += fmt.Sprintf(" error=%q", o.err.Error())
	}
	return l
}

// countDeadLetters counts the distinct dead letters (by shard, sequence
// and sub-sequence number) in every worker's data dir: a record that two
// workers refused (before and after a failover) counts once.
func countDeadLetters(procs []*harness.Proc) (int, error) {
	seen := map[string]bool{}
	dirs := map[string]bool{}
	for _, p := range procs {
		dirs[p.DataDir] = true
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		db, err := checkpoint.Open(d, checkpoint.Options{Merger: window.Merger})
		if err != nil {
			return 0, fmt.Errorf("dead letters of %s: %w", d, err)
		}
		err = checkpoint.ListDeadLetters(db, func(dl checkpoint.DeadLetter) error {
			seen[fmt.Sprintf("%s/%s/%d", dl.Shard, dl.Seq, dl.Sub)] = true
			return nil
		})
		_ = db.Close()
		if err != nil {
			return 0, err
		}
	}
	return len(seen), nil
}
