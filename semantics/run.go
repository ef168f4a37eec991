package semantics

import "github.com/lineageflow/lineageflow/lineage"

// Status is where a run stands (DESIGN.md, Lineage semantics 4). The
// values are stored (run state): never renumber them.
type Status uint8

const (
	// StatusOpen: no terminal event yet; gives no edge.
	StatusOpen Status = 1
	// StatusCommitted: first terminal event COMPLETE (or policy any).
	StatusCommitted Status = 2
	// StatusClosed: first terminal event FAIL/ABORT: never gives edges.
	StatusClosed Status = 3
	// StatusStreaming: a streaming job's run (an event said
	// jobType.processingType STREAMING) with no terminal event yet:
	// committed, and every event stamps it.
	StatusStreaming Status = 4
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool { return s >= StatusOpen && s <= StatusStreaming }

// String is the status as a run store shows it to an operator.
func (s Status) String() string {
	switch s {
	case StatusOpen:
		return "open"
	case StatusCommitted:
		return "committed"
	case StatusClosed:
		return "closed"
	}
	return "unknown"
}

// Run is the accumulation of one run (DESIGN.md, Lineage semantics 3-6):
// what the rules know of it. Its exported fields are what a stored run
// holds; the holder adds what it needs of its own (pins, arrival times).
type Run struct {
	ID     string
	Status Status
	// HasC: MinC and MaxC are set: the min and max eventTime (Unix ms) of
	// the events that stamp the run (COMPLETE; every event under policy
	// any or of a streaming run).
	HasC bool
	// Reemit: the run's next emission carries everything it holds, not
	// only what its event adds (set by the holder for a run whose earlier
	// emissions may be lost, e.g. loaded from a shared store; not stored).
	Reemit     bool
	Job        lineage.Job
	JobID      string
	MinC, MaxC int64
	Inputs     []DatasetRef
	Outputs    []DatasetRef
	// Cols are the run's column lineage pairs (columnLineage facets of
	// its events).
	Cols []ColRef
	// Explicit: an event folded while the run was open (or already
	// explicit) carried explicit-lineage facets: its DERIVES are Pairs,
	// not Inputs x Outputs (DESIGN.md, Lineage semantics 5).
	Explicit bool
	Pairs    []PairRef
	// RV is what the run's Run vertex needs.
	RV RunVertexState

	// inIdx, outIdx index the ids of Inputs and Outputs once a run has
	// more than runIdxMin of them, so that adding a dataset costs the same
	// whatever the run's size (runIndex); colIdx is the set of Cols (built
	// on first use).
	inIdx, outIdx map[string]struct{}
	colIdx        map[colKey]struct{}
}

// StartRun returns the state of a run with no event yet.
func StartRun(id string, job lineage.Job, jobID string) Run {
	return Run{ID: id, Status: StatusOpen, Job: job, JobID: jobID}
}

// RunVertexState is what a run's Run vertex needs beyond its lineage
// state: the earliest eventTime of its events and the latest of its
// terminal events (Unix ms), for durationMs; the latest eventTime; the
// datasets it read and wrote (its inputs and outputs lists, whatever its
// outcome). It is kept for closed (FAILed, ABORTed) runs too. With -runs
// failed it also holds the properties folded over its events, written
// only once the run fails.
type RunVertexState struct {
	HasStart, HasEnd bool
	StartMin, EndMax int64
	TMax             int64
	// Props: folded in place at every event (lineage.PropList), encoded
	// only when written or emitted (a closed run).
	Props         lineage.PropList
	Reads, Writes []DatasetRef
}

// runIdxMin: below it a run's datasets are scanned, above they are indexed.
const runIdxMin = 16

// runIndex returns the index of rs in *idx, built (or rebuilt, when some
// code replaced the slice) once rs is longer than runIdxMin; nil below.
func runIndex(rs []DatasetRef, idx *map[string]struct{}) map[string]struct{} {
	if len(rs) <= runIdxMin {
		*idx = nil
		return nil
	}
	if len(*idx) != len(rs) {
		m := make(map[string]struct{}, len(rs)*2)
		for i := range rs {
			m[rs[i].ID] = struct{}{}
		}
		*idx = m
	}
	return *idx
}

func contains(rs []DatasetRef, id string) bool {
	for i := range rs {
		if rs[i].ID == id {
			return true
		}
	}
	return false
}

// addAll appends the datasets of ds not yet in *rs (indexed by *idx),
// at most room of them, and returns how many new ones did not fit.
func addAll(ids *IDs, rs *[]DatasetRef, idx *map[string]struct{}, ds []lineage.Dataset, room int) (dropped int) {
	for _, d := range ds {
		id := ids.Dataset(d)
		if m := runIndex(*rs, idx); m != nil {
			if _, ok := m[id]; ok {
				continue
			}
		} else if contains(*rs, id) {
			continue
		}
		if room <= 0 {
			dropped++
			continue
		}
		room--
		*rs = append(*rs, DatasetRef{D: d, ID: id})
		if *idx != nil {
			(*idx)[id] = struct{}{}
		}
	}
	return dropped
}

// hasPair reports whether ps holds p.
func hasPair(ps []PairRef, p PairRef) bool {
	for i := range ps {
		if ps[i].In.ID == p.In.ID && ps[i].Out.ID == p.Out.ID {
			return true
		}
	}
	return false
}

// addPair appends p to ps unless it is there.
func addPair(ps []PairRef, p PairRef) []PairRef {
	if hasPair(ps, p) {
		return ps
	}
	return append(ps, p)
}

// Merge folds r into x: the same run held by two holders (both parents
// of a shard merge). FAIL/ABORT first anywhere closes it; otherwise the
// most advanced status and the union of the datasets and stamps.
func (x *Run) Merge(r *Run) {
	if x.Status == StatusClosed || r.Status == StatusClosed {
		x.Status, x.Inputs, x.Outputs = StatusClosed, nil, nil
		return
	}
	switch {
	case x.Status == StatusCommitted || r.Status == StatusCommitted:
		x.Status = StatusCommitted // ended by a COMPLETE
	default:
		x.Status = max(x.Status, r.Status) // streaming over open
	}
	for _, d := range r.Inputs {
		if !contains(x.Inputs, d.ID) {
			x.Inputs = append(x.Inputs, d)
		}
	}
	for _, d := range r.Outputs {
		if !contains(x.Outputs, d.ID) {
			x.Outputs = append(x.Outputs, d)
		}
	}
	x.Explicit = x.Explicit || r.Explicit
	for _, p := range r.Pairs {
		x.Pairs = addPair(x.Pairs, p)
	}
	if r.HasC {
		if !x.HasC {
			x.MinC, x.MaxC, x.HasC = r.MinC, r.MaxC, true
		} else {
			x.MinC, x.MaxC = min(x.MinC, r.MinC), max(x.MaxC, r.MaxC)
		}
	}
}
