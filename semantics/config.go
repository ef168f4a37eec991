package semantics

import "math"

// Policy says which runs give edges (DESIGN.md, Lineage semantics 4).
type Policy string

const (
	// PolicyStrict: a run gives edges only if its first terminal event is COMPLETE.
	PolicyStrict Policy = "strict"
	// PolicyAny: every RunEvent commits its run and stamps it.
	PolicyAny Policy = "any"
)

// RunRecords says which runs get Run vertices (DESIGN.md, "Graph model").
type RunRecords string

const (
	// RunsAll records every run, whatever its outcome.
	RunsAll RunRecords = "all"
	// RunsFailed records only the runs that fail (strict policy: first
	// terminal event FAIL or ABORT), from that event on.
	RunsFailed RunRecords = "failed"
	// RunsNone records no run: lineage only.
	RunsNone RunRecords = "none"
)

// Config is what the rules need to know. Policy and Runs must be set
// (the processor's defaults are strict and all).
type Config struct {
	Policy Policy
	Runs   RunRecords
	// NoColumnLineage drops the columnLineage facets.
	NoColumnLineage bool
	// MaxRunDatasets bounds a run's inputs+outputs (and, apart, its column
	// pairs); MaxEmissionEdges the edges of one emission. 0: no bound.
	MaxRunDatasets   int
	MaxEmissionEdges int
}

func (c *Config) runRoom(used int) int {
	if c.MaxRunDatasets <= 0 {
		return math.MaxInt
	}
	return c.MaxRunDatasets - used
}
