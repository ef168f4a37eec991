// Package keyspace is the deterministic choice of a share of the lineage
// key space: what a mirror puts on the canary stream and what
// `lineageflow diff -key-share` compares. Both must agree, so both call
// [Selected] on [EventKey].
//
// The key of an event is its OWN job ("job:<namespace>/<name>"; a
// DatasetEvent: "dataset:<namespace>/<name>"), not the Kinesis partition
// key (which the OpenLineage transport takes from the root job of a child
// run). Every event of a run names the run's job, so whole runs are in or
// out, as with the partition key; and the graph holds each Job's namespace
// and name, so diff can tell from the graph alone which jobs are in the
// share (the root of a child job is not in a graph without CHILD_OF edges).
package keyspace

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
)

// Selected reports whether partition key pk is in the share (0..1) of the
// key space: xxhash64(pk) below share * 2^64. Whole partition keys are in
// or out, so every event of a run (one partition key under the OpenLineage
// transport) goes the same way.
func Selected(pk string, share float64) bool {
	switch {
	case share <= 0:
		return false
	case share >= 1:
		return true
	}
	return float64(xxhash.Sum64String(pk)) < share*math.Exp2(64)
}

// ValidateShare says what to fix in a share given on the command line.
func ValidateShare(flag string, share float64) error {
	if math.IsNaN(share) || share <= 0 || share > 1 {
		return fmt.Errorf("%s %v: give a share in (0, 1], e.g. 0.1 for 10%%", flag, share)
	}
	return nil
}

// JobKey is the key of the events of job namespace/name.
func JobKey(namespace, name string) string { return "job:" + namespace + "/" + name }

// EventKey returns the key of one OpenLineage event (JSON): [JobKey] of its
// "job", or "dataset:<ns>/<name>" of a DatasetEvent's "dataset"; ok false
// when the record has neither (malformed: not mirrored).
func EventKey(data []byte) (key string, ok bool) {
	var f struct {
		Job *struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"job"`
		Dataset *struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"dataset"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return "", false
	}
	switch {
	case f.Job != nil:
		return JobKey(f.Job.Namespace, f.Job.Name), true
	case f.Dataset != nil:
		return "dataset:" + f.Dataset.Namespace + "/" + f.Dataset.Name, true
	}
	return "", false
}
