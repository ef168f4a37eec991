package main

import (
	"fmt"
)

type reduction struct {
	rate                   float64 // replay rate (user records/s)
	records, events        int64   // user records read, decoded events
	edges, vertices        int64   // emitted by the processor (outbox)
	sinkRecords            int64   // records in acknowledged Gremlin requests (after the vertex cache), -1 if unknown
	sinkRunRecords         int64   // the Run vertices among them (run history), -1 if unknown
	runs                   int64   // Run vertices of the reference model: the workload's recorded runs
	windows                int64
	writesPerRecord, ratio float64
}

func (r reduction) String() string {
	s := fmt.Sprintf("rate=%.0f/s records=%d events=%d edges_emitted=%d vertices_emitted=%d windows=%d writes_per_record=%.4f reduction=%.1f%%",
		r.rate, r.records, r.events, r.edges, r.vertices, r.windows, r.writesPerRecord, 100*r.ratio)
	if r.sinkRecords >= 0 {
		s += fmt.Sprintf(" sink_records_after_cache=%d reduction_after_cache=%.1f%%", r.sinkRecords, 100*(1-float64(r.sinkRecords)/float64(r.records)))
	}
	if r.sinkRunRecords >= 0 && r.records > 0 && r.runs > 0 {
		s += fmt.Sprintf(" run_writes=%d runs=%d run_writes_per_run=%.3f lineage_reduction_after_cache=%.2f%%",
			r.sinkRunRecords, r.runs, r.runWritesPerRun(), r.lineageReduction())
	}
	return s
}

func newReduction(rate float64, st map[string]int64, sinkRecords int64) reduction {
	r := reduction{rate: rate, records: st["records"], events: st["events"], edges: st["edges_emitted"],
		vertices: st["vertices_emitted"], windows: st["windows_sealed"], sinkRecords: sinkRecords}
	if r.records > 0 {
		r.writesPerRecord = float64(r.edges+r.vertices) / float64(r.records)
		r.ratio = 1 - r.writesPerRecord
	}
	return r
}

// lineageReduction is 1 - lineage's graph writes (all but the Run
// vertices) per input record, in percent.
func (r reduction) lineageReduction() float64 {
	return 100 * (1 - float64(r.sinkRecords-r.sinkRunRecords)/float64(r.records))
}

// runWritesPerRun is the run history's graph writes per recorded run.
func (r reduction) runWritesPerRun() float64 {
	return float64(r.sinkRunRecords) / float64(r.runs)
}
