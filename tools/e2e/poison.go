package main

// The poison and freeze scenarios (issue 11): hostile records on the
// stream, and a worker frozen past its failover time.

import (
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"google.golang.org/protobuf/encoding/protowire"
)

// poisonEmpty is the number of empty user records in the poison aggregate.
const poisonEmpty = 100_000

// sealAggregate frames msg as a KPL aggregate with a valid MD5.
func sealAggregate(msg []byte) []byte {
	sum := md5.Sum(msg)
	out := append(append([]byte{}, kpl.Magic[:]...), msg...)
	return append(out, sum[:]...)
}

// poisonRecords are the hostile records: an aggregate whose user record
// points at partition key 7 of a table of 1 (it carries a valid COMPLETE
// event on quarantine datasets: if it leaks, it shows as an extra edge),
// an aggregate whose protobuf does not decode, and one aggregate of
// poisonEmpty empty user records. The first two are one dead letter each
// (kpl_corrupt), the last poisonEmpty (not_json).
func poisonRecords() [][]byte {
	leak := []byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T00:00:01Z","run":{"runId":"0f6e2b1c-1111-4222-8333-444455556666"},` +
		`"job":{"namespace":"poison","name":"leak"},"inputs":[{"namespace":"s3://datalake-quarantine","name":"poison/in"}],` +
		`"outputs":[{"namespace":"s3://datalake-quarantine","name":"poison/out"}],"producer":"e2e","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`)
	var rec, msg []byte
	rec = protowire.AppendTag(rec, 1, protowire.VarintType)
	rec = protowire.AppendVarint(rec, 7)
	rec = protowire.AppendTag(rec, 3, protowire.BytesType)
	rec = protowire.AppendBytes(rec, leak)
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendString(msg, "k")
	msg = protowire.AppendTag(msg, 3, protowire.BytesType)
	msg = protowire.AppendBytes(msg, rec)
	empty := make([]kpl.Record, poisonEmpty)
	for i := range empty {
		empty[i] = kpl.Record{PartitionKey: "e", Data: []byte{}}
	}
	return [][]byte{
		sealAggregate(msg),
		sealAggregate([]byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}),
		kpl.Marshal(empty),
	}
}

// poisonFault puts the poison records mid-stream, between good ones, on
// partition keys that spread them over the shards.
func poisonFault(ctx context.Context, s *state) error {
	if err := s.waitAcked(ctx); err != nil {
		return err
	}
	for i, data := range poisonRecords() {
		if len(data) > kpl.MaxRecordSize-16 {
			return fmt.Errorf("poison record %d is %d bytes, over the Kinesis limit", i, len(data))
		}
		out, err := s.h.Kinesis().PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(s.h.Stream),
			PartitionKey: aws.String(fmt.Sprintf("poison-%d", i)), Data: data})
		if err != nil {
			return fmt.Errorf("put poison record %d: %w", i, err)
		}
		s.h.Logf("poison record %d (%d bytes) at %s %s", i, len(data), aws.ToString(out.ShardId), aws.ToString(out.SequenceNumber))
	}
	s.extraDLQ = 2 + poisonEmpty
	return nil
}

// poisonCheck: every worker ran to the end (no crash, no restart) and the
// dead-letter budget bit (the 100k dead letters were never held at once).
func poisonCheck(ctx context.Context, s *state) error {
	var barriers int64
	for _, p := range s.procs {
		if done, err := p.Exited(); done && err != nil {
			return fmt.Errorf("worker %s exited: %w", p.Spec.ID, err)
		}
		if strings.Contains(p.Log(), "panic") {
			return fmt.Errorf("worker %s logged a panic", p.Spec.ID)
		}
		st := p.Stats()
		barriers += st["budget_dead_letter_barriers"]
	}
	if barriers < poisonEmpty/1024 {
		return fmt.Errorf("%d dead-letter barriers for %d dead letters: the budget did not bite", barriers, poisonEmpty)
	}
	s.h.Logf("poison: %d dead-letter barriers", barriers)
	return nil
}

// freezeFault SIGSTOPs the busiest worker past its failover time (the
// other takes its leases), then SIGCONTs it. It freezes once every record
// is processed: with records still flowing, the thawed worker's next
// checkpoint would meet the lease guard anyway; on an idle stream only the
// lease watcher sees the loss.
func freezeFault(ctx context.Context, s *state) error {
	if err := s.waitCaughtUp(ctx); err != nil {
		return err
	}
	victim, err := s.busiest(ctx)
	if err != nil {
		return err
	}
	s.frozen = victim
	s.h.Logf("SIGSTOP %s", victim.Spec.ID)
	if err := victim.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	// The survivor takes every lease after the failover time.
	err = s.waitOwners(ctx, 1)
	s.h.Logf("SIGCONT %s", victim.Spec.ID)
	if cerr := victim.Signal(syscall.SIGCONT); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// freezeLive: once thawed, the frozen worker's lease gauge and /readyz
// report the leases the lease table gives it (none, unless it took some
// back), not the ones it held before the freeze.
func freezeLive(ctx context.Context, s *state) error {
	p := s.frozen
	m := listenRe.FindStringSubmatch(p.Log())
	if m == nil {
		return fmt.Errorf("worker %s logged no http listen address", p.Spec.ID)
	}
	var last string
	err := s.h.WaitFor(ctx, 60*time.Second, "the frozen worker's lease gauge and readiness to match the lease table", func() (bool, error) {
		ls, err := s.h.Leases(ctx)
		if err != nil {
			return false, nil
		}
		held := len(harness.Owners(ls, time.Now())[p.Spec.ID])
		series, err := scrape(ctx, "http://"+m[1]+"/metrics")
		if err != nil {
			return false, nil
		}
		body, err := readyz(ctx, "http://"+m[1]+"/readyz")
		if err != nil {
			return false, nil
		}
		want := "waiting for leases"
		if held > 0 {
			want = fmt.Sprintf("%d lease(s) held", held)
		}
		last = fmt.Sprintf("table %d, gauge %v, readyz %q", held, series["lineage_leases_held"], body)
		return int(series["lineage_leases_held"]) == held && strings.Contains(body, want), nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %s)", err, last)
	}
	if !strings.Contains(p.Log(), "lease lost") {
		return fmt.Errorf("worker %s did not log the lease loss", p.Spec.ID)
	}
	s.h.Logf("freeze: %s", last)
	return nil
}

func readyz(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
