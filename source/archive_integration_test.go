package source_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lineageflow/lineageflow/archive"
	"github.com/lineageflow/lineageflow/archive/archivetest"
	"github.com/lineageflow/lineageflow/archive/s3store"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// archiveContent is what the archive holds, read back with
// archive.ReadEvents and archive.ReadDeadLetters.
type archiveContent struct {
	events  []archive.Row
	dead    []archive.DeadLetterRow
	objects int
}

func readArchiveS3(ctx context.Context, st *s3store.Store, prefix string) (archiveContent, error) {
	var a archiveContent
	for _, table := range []string{archive.EventsTable, archive.DeadLettersTable} {
		keys, err := st.List(ctx, prefix+table+"/", "")
		if err != nil {
			return a, err
		}
		for _, k := range keys {
			b, err := st.Get(ctx, k)
			if err != nil {
				return a, err
			}
			a.objects++
			if table == archive.EventsTable {
				rows, err := archive.ReadEvents(bytes.NewReader(b), int64(len(b)))
				if err != nil {
					return a, fmt.Errorf("%s: %w", k, err)
				}
				a.events = append(a.events, rows...)
			} else {
				rows, err := archive.ReadDeadLetters(bytes.NewReader(b), int64(len(b)))
				if err != nil {
					return a, fmt.Errorf("%s: %w", k, err)
				}
				a.dead = append(a.dead, rows...)
			}
		}
	}
	return a, nil
}

// archiveDiff says how a differs from the unique valid events (by
// idempotency key) and the malformed records (by bytes, as a multiset) of
// the input: "" when it holds each exactly once.
func archiveDiff(a archiveContent, wantEv map[string]bool, wantDead map[string]int) string {
	var problems []string
	seen := map[string]bool{}
	for _, e := range a.events {
		sum := sha256.Sum256(e.Event)
		if hex.EncodeToString(sum[:]) != e.IdempotencyKey {
			problems = append(problems, fmt.Sprintf("event %s/%d: idempotency key is not the SHA-256 of its bytes", e.Sequence, e.SubSequence))
		}
		if seen[e.IdempotencyKey] {
			problems = append(problems, fmt.Sprintf("event %s archived twice (again from %s %s/%d)", e.IdempotencyKey[:12], e.Shard, e.Sequence, e.SubSequence))
		}
		seen[e.IdempotencyKey] = true
		if !wantEv[e.IdempotencyKey] {
			problems = append(problems, fmt.Sprintf("event %s/%d is not a valid input record", e.Sequence, e.SubSequence))
		}
	}
	if len(seen) != len(wantEv) {
		problems = append(problems, fmt.Sprintf("%d unique events archived, want %d", len(seen), len(wantEv)))
	}
	dead := map[string]int{}
	for _, d := range a.dead {
		if d.Reason == "" {
			problems = append(problems, fmt.Sprintf("dead letter %s/%d without a reason", d.Sequence, d.SubSequence))
		}
		dead[string(d.Record)]++
	}
	for rec, n := range wantDead {
		if dead[rec] != n {
			problems = append(problems, fmt.Sprintf("a malformed record archived %d times, want %d", dead[rec], n))
		}
	}
	if len(a.dead) != sumCounts(wantDead) {
		problems = append(problems, fmt.Sprintf("%d dead letters archived, want %d", len(a.dead), sumCounts(wantDead)))
	}
	if len(problems) > 5 {
		problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
	}
	return strings.Join(problems, "; ")
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// TestArchiveTwoWorkersKill: two workers with the archive on S3 (the moto
// stand-in) and the shared dedup tier (Redis) read a 4-shard stream of the
// generated workload (20% duplicates, malformed records, half the records
// KPL-aggregated); the worker holding more shards is killed (SIGKILL)
// mid-stream and the other takes its shards over from the KCL checkpoint.
// The archive then holds each unique valid event exactly once and each
// malformed record once as a dead letter with its reason.
func TestArchiveTwoWorkersKill(t *testing.T) {
	s3ep, ok := testenv.Lookup("LINEAGEFLOW_S3_ENDPOINT")
	redisURL, ok2 := testenv.Lookup("LINEAGEFLOW_REDIS_ENDPOINT")
	if !ok || !ok2 {
		if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
			t.Fatal("LINEAGEFLOW_S3_ENDPOINT or LINEAGEFLOW_REDIS_ENDPOINT not set: start the stand-ins (scripts/standins-start.sh)")
		}
		t.Skip("no S3 or Redis stand-in (scripts/standins-start.sh)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := harness.ForTest(t, "arc2")
	events := envInt(t, "LINEAGEFLOW_ARCHIVE_EVENTS", 12000)
	if testing.Short() {
		events = envInt(t, "LINEAGEFLOW_ARCHIVE_EVENTS", 5000)
	}
	grecs := gen.Generate(gen.Config{Seed: 24, Events: events, Pipelines: 32, DuplicateShare: 0.2})
	recs, _ := harness.Generated(grecs)
	wantEv, wantDead := map[string]bool{}, map[string]int{}
	dups := 0
	for _, g := range grecs {
		if g.Malformed != "" {
			wantDead[string(g.Data)]++
			continue
		}
		if g.Duplicate {
			dups++
		}
		sum := sha256.Sum256(g.Data)
		wantEv[hex.EncodeToString(sum[:])] = true
	}
	t.Logf("input: %d records, %d unique valid events, %d duplicates, %d malformed", len(grecs), len(wantEv), dups, sumCounts(wantDead))

	s3c, bucket := archivetest.StandinBucket(ctx, t, "lf-archive")
	store := s3store.New(s3c, bucket, "")
	const prefix = "lineage/"

	if err := h.CreateStream(ctx, 4); err != nil {
		t.Fatal(err)
	}
	const failover = 4 * time.Second
	spec := func(id string) harness.WorkerSpec {
		return harness.WorkerSpec{ID: id, FailoverTime: failover, ShardSync: 500 * time.Millisecond,
			Args: []string{"-archive", "s3://" + bucket + "/" + prefix, "-archive-endpoint", s3ep,
				"-archive-min-bytes", "262144", "-archive-max-age", "2s", "-dedup", redisURL, "-dedup-timeout", "2s"}}
	}
	w1, err := h.StartWorker(ctx, spec("w1"))
	if err != nil {
		t.Fatal(err)
	}
	w2, err := h.StartWorker(ctx, spec("w2"))
	if err != nil {
		t.Fatal(err)
	}
	workers := map[string]*harness.Proc{"w1": w1, "w2": w2}
	owners := waitBothHoldAll(ctx, t, h, workers)

	// The whole stream over about 30 s, half of it KPL-aggregated.
	rcfg := h.ReplayConfig()
	rcfg.Rate, rcfg.Aggregate = float64(len(recs))/30, 0.5
	done := make(chan error, 1)
	go func() {
		sum, err := replay.Run(ctx, h.Kinesis(), rcfg, replay.FromSlice(recs))
		if err == nil && sum.UserRecords != int64(len(recs)) {
			err = fmt.Errorf("replayed %d of %d records", sum.UserRecords, len(recs))
		}
		h.Logf("replay: %s", sum)
		done <- err
	}()

	victim, survivor := "w1", "w2"
	if len(owners["w2"]) > len(owners["w1"]) {
		victim, survivor = "w2", "w1"
	}
	// Kill the victim once the archive has objects of its shards.
	err = h.WaitFor(ctx, 90*time.Second, "archive objects of "+victim+"'s shards", func() (bool, error) {
		a, err := readArchiveS3(ctx, store, prefix)
		if err != nil {
			return false, err
		}
		for _, e := range a.events {
			for _, sh := range owners[victim] {
				if e.Shard == sh {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("the replay ended before the kill (%v): records were not flowing", err)
	default:
	}
	if err := workers[victim].Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL %s (shards %v)", victim, owners[victim])
	err = h.WaitFor(ctx, 60*time.Second, survivor+" to hold all 4 shards", func() (bool, error) {
		if done, err := workers[survivor].Exited(); done {
			return false, fmt.Errorf("survivor exited: %w", err)
		}
		ls, err := h.Leases(ctx)
		if err != nil {
			return false, err
		}
		owners = harness.Owners(ls, time.Now())
		return len(owners[survivor]) == 4, nil
	})
	if err != nil {
		t.Fatalf("%v; owners %v", err, owners)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Everything archived: each unique valid event and each dead letter
	// exactly once (an event twice never disappears again: checked once
	// the counts are reached).
	var last archiveContent
	err = h.WaitFor(ctx, 3*time.Minute, "the archive to hold every unique valid event and dead letter", func() (bool, error) {
		a, err := readArchiveS3(ctx, store, prefix)
		if err != nil {
			return false, err
		}
		last = a
		return len(a.events) >= len(wantEv) && len(a.dead) >= sumCounts(wantDead), nil
	})
	if err != nil {
		t.Fatalf("%v (%d events, %d dead letters): %s", err, len(last.events), len(last.dead), archiveDiff(last, wantEv, wantDead))
	}
	if d := archiveDiff(last, wantEv, wantDead); d != "" {
		t.Fatal(d)
	}
	t.Logf("archive: %d events, %d dead letters in %d objects; exactly once; the survivor reproduced cuts of the victim: %v",
		len(last.events), len(last.dead), last.objects, h.LogContains(survivor, "taking over cuts"))
	if err := workers[survivor].Stop(30 * time.Second); err != nil {
		t.Errorf("SIGTERM of the survivor: %v", err)
	}
}
