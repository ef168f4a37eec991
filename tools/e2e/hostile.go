package main

// The hostile scenario (issue 26): producers that send what one event
// must never be allowed to do to the others' lineage, mixed with the
// generated traffic.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/lineageflow/lineageflow/internal/replay"
)

// hostileVictim is the first RunEvent of the generated stream: its run
// is the one the hijack events name.
func hostileVictim(recs []replay.Record) (runID, ns, partitionKey string, err error) {
	for _, r := range recs {
		var ev struct {
			Run *struct {
				RunID string `json:"runId"`
			} `json:"run"`
			Job struct{ Namespace, Name string } `json:"job"`
		}
		if json.Unmarshal(r.Data, &ev) == nil && ev.Run != nil && ev.Run.RunID != "" {
			return ev.Run.RunID, ev.Job.Namespace, r.PartitionKey, nil
		}
	}
	return "", "", "", fmt.Errorf("no RunEvent in the generated stream")
}

// hostileRecords are the hostile records, each of which must be exactly
// one dead letter and change nothing in the graph: a COMPLETE whose output
// name has 600,000 characters (name_too_long; before, it sank its whole
// outbox entry), a COMPLETE and a FAIL of another job naming the victim's
// run (run_job_mismatch; before, they added the attacker's datasets to
// the victim's job or suppressed its lineage), COMPLETEs dated 9999 and
// year 0 (event_time_out_of_range; before, the 9999 one fixed the
// properties of what it named for ever), and one naming a dataset by
// invalid UTF-8 (invalid_utf8; before, it collapsed with other names).
func hostileRecords(victimRun, victimNS string) []replay.Record {
	ev := func(typ, when, runID, jobNS, job, out string) []byte {
		return []byte(fmt.Sprintf(`{"eventType":%q,"eventTime":%q,"run":{"runId":%q},"job":{"namespace":%q,"name":%q},`+
			`"inputs":[{"namespace":"s3://datalake-hostile","name":"evil/in"}],"outputs":[{"namespace":"s3://datalake-hostile","name":%q}],`+
			`"producer":"e2e-hostile","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`, typ, when, runID, jobNS, job, out))
	}
	now := "2026-01-01T00:00:30Z"
	return []replay.Record{
		{PartitionKey: "run:hostile/oversized", Data: ev("COMPLETE", now, "0f6e2b1c-2222-4222-8333-000000000001", "hostile", "oversized", strings.Repeat("x", 600000))},
		{PartitionKey: "", Data: ev("COMPLETE", now, victimRun, victimNS, "evil_job", "evil/out")},
		{PartitionKey: "", Data: ev("FAIL", now, victimRun, victimNS, "evil_job", "evil/out2")},
		{PartitionKey: "run:hostile/future", Data: ev("COMPLETE", "9999-12-31T23:59:59Z", "0f6e2b1c-2222-4222-8333-000000000002", "hostile", "future", "evil/future")},
		{PartitionKey: "run:hostile/year0", Data: ev("COMPLETE", "0000-01-01T00:00:00Z", "0f6e2b1c-2222-4222-8333-000000000003", "hostile", "year0", "evil/year0")},
		// %q would escape the byte: put it in raw.
		{PartitionKey: "run:hostile/utf8", Data: bytes.Replace(ev("COMPLETE", now, "0f6e2b1c-2222-4222-8333-000000000004", "hostile", "utf8", "bad-BYTE"),
			[]byte("-BYTE"), []byte{0xff}, 1)},
	}
}

// hostileFault puts the hostile records mid-stream; the hijack events on
// the victim's partition key, so they follow its first event on its shard.
func hostileFault(ctx context.Context, s *state) error {
	run, ns, key, err := hostileVictim(s.generated)
	if err != nil {
		return err
	}
	if err := s.waitAcked(ctx); err != nil {
		return err
	}
	recs := hostileRecords(run, ns)
	for i, r := range recs {
		if r.PartitionKey == "" {
			r.PartitionKey = key
		}
		out, err := s.h.Kinesis().PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(s.h.Stream),
			PartitionKey: aws.String(r.PartitionKey), Data: r.Data})
		if err != nil {
			return fmt.Errorf("put hostile record %d: %w", i, err)
		}
		s.h.Logf("hostile record %d (%d bytes) at %s %s", i, len(r.Data), aws.ToString(out.ShardId), aws.ToString(out.SequenceNumber))
	}
	s.extraDLQ = len(recs)
	return nil
}

// hostileCheck: each hostile record was dead-lettered for its own reason.
func hostileCheck(_ context.Context, s *state) error {
	want := map[string]int64{"name_too_long": 1, "run_job_mismatch": 2, "event_time_out_of_range": 2, "invalid_utf8": 1}
	got := map[string]int64{}
	for _, p := range s.procs {
		for reason := range want {
			got[reason] += p.Stats()["invalid_"+reason]
		}
	}
	for reason, n := range want {
		if got[reason] < n {
			return fmt.Errorf("dead letters %s: %d, want %d (all: %v)", reason, got[reason], n, got)
		}
	}
	var n int64
	for _, v := range want {
		n += v
	}
	s.note = fmt.Sprintf("hostile_dead_letters=%d", n)
	return nil
}
