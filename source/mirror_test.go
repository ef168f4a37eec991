package source_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/keyspace"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/source"
	"github.com/lineageflow/lineageflow/testkit/harness"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// readStream reads every user record of every shard of stream from
// TRIM_HORIZON, de-aggregating KPL records.
func readStream(ctx context.Context, kin *kinesis.Client, stream string) ([]kpl.Record, error) {
	shards, err := kin.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		return nil, err
	}
	var out []kpl.Record
	for _, sh := range shards.Shards {
		it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream),
			ShardId: sh.ShardId, ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			return nil, err
		}
		iter := it.ShardIterator
		for iter != nil {
			res, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				return nil, err
			}
			for _, r := range res.Records {
				if kpl.IsAggregated(r.Data) {
					users, err := kpl.Deaggregate(r.Data)
					if err != nil {
						return nil, err
					}
					out = append(out, users...)
					continue
				}
				out = append(out, kpl.Record{PartitionKey: aws.ToString(r.PartitionKey), Data: r.Data})
			}
			if len(res.Records) == 0 || aws.ToInt64(res.MillisBehindLatest) == 0 && len(res.Records) < 1000 {
				break
			}
			iter = res.NextShardIterator
		}
	}
	return out, nil
}

// TestMirrorPutsShareOnCanary: a mirror (its own KCL application) on a
// 2-shard stream of generated, partly KPL-aggregated records puts exactly
// the records whose key is in the 10% share on the canary stream, with
// their partition keys, re-aggregated; and checkpoints every source shard
// only after the canary acknowledged.
func TestMirrorPutsShareOnCanary(t *testing.T) {
	testenv.Kinesis(t)
	testenv.DynamoDB(t)
	env, _ := harness.StandinsEnv()
	ac := env.AWS()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	awsCfg, err := ac.AWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kin := kinesis.NewFromConfig(awsCfg, func(o *kinesis.Options) { o.BaseEndpoint = awsconf.Endpoint(ac.KinesisEndpoint) })
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(ac.DynamoDBEndpoint) })
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("mirror-%d-%s", time.Now().Unix()%100000, hex.EncodeToString(rnd[:]))
	prod, canary, app := name+"-prod", name+"-canary", name+"-mirror"
	for _, s := range []struct {
		name   string
		shards int
	}{{prod, 2}, {canary, 1}} {
		if _, err := replay.Run(ctx, kin, replay.Config{Stream: s.name, Shards: s.shards}, replay.FromSlice(nil)); err != nil {
			t.Fatal(err)
		}
	}
	recs, data := harness.Generated(gen.Generate(gen.Config{Seed: 71, Events: 3000}))
	const share = 0.1
	var want []string
	for _, d := range data {
		if k, ok := keyspace.EventKey(d); ok && keyspace.Selected(k, share) {
			want = append(want, string(d))
		}
	}
	if len(want) == 0 {
		t.Fatal("nothing in the share: the test proves nothing")
	}
	if _, err := replay.Run(ctx, kin, replay.Config{Stream: prod, Concurrency: 4, Aggregate: 0.5}, replay.FromSlice(recs)); err != nil {
		t.Fatal(err)
	}

	st := &source.MirrorStats{}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- source.RunMirror(mctx, source.MirrorConfig{Stream: prod, Canary: canary, AppName: app, WorkerID: "m1", AWS: ac,
			Share: share, Aggregate: true, FailoverTime: 3 * time.Second, ShardSync: 200 * time.Millisecond,
			IdleBetweenReads: 100 * time.Millisecond, MaxRecords: 2500, Stats: st,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("mirror: %v", err)
		}
	}()

	var got []kpl.Record
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err = readStream(ctx, kin, canary)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= len(want) && st.Read.Load() >= int64(len(recs)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("canary holds %d records after 2 min, want %d (mirror read %d, put %d)", len(got), len(want), st.Read.Load(), st.Put.Load())
		}
		time.Sleep(200 * time.Millisecond) // poll interval
	}
	var gotData []string
	for _, r := range got {
		gotData = append(gotData, string(r.Data))
		if pk := replay.PartitionKey(r.Data); r.PartitionKey != pk {
			t.Fatalf("canary record with partition key %q, the source put it under %q", r.PartitionKey, pk)
		}
	}
	slices.Sort(gotData)
	slices.Sort(want)
	if !slices.Equal(gotData, want) {
		t.Fatalf("canary holds %d records, want the %d of the share (equal as multisets: false)", len(gotData), len(want))
	}
	if st.Put.Load() != int64(len(want)) || st.PutRecords.Load() >= st.Put.Load() {
		t.Fatalf("stats: put %d user records in %d Kinesis records; want %d, re-aggregated into fewer", st.Put.Load(), st.PutRecords.Load(), len(want))
	}
	// Every source shard checkpointed, at its last record.
	err = func() error {
		for time.Now().Before(deadline) {
			out, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(app), ConsistentRead: aws.Bool(true)})
			if err != nil {
				return err
			}
			ok := len(out.Items) == 2
			for _, it := range out.Items {
				c, _ := it["Checkpoint"].(*ddbtypes.AttributeValueMemberS)
				if c == nil || c.Value == "" || c.Value == "TRIM_HORIZON" {
					ok = false
				}
			}
			if ok {
				return nil
			}
			time.Sleep(200 * time.Millisecond) // poll interval
		}
		return fmt.Errorf("source shards not checkpointed in the mirror's lease table %s", app)
	}()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mirror: read %d, selected %d, put %d user records in %d Kinesis records, %d checkpoints",
		st.Read.Load(), st.Selected.Load(), st.Put.Load(), st.PutRecords.Load(), st.Checkpoints.Load())
}

// TestMirrorCheckpointsOnlyAcknowledged: while the canary stream refuses
// the records (it does not exist yet), the mirror reads, retries, and
// writes no checkpoint; once the canary exists, the records arrive and the
// shard is checkpointed.
func TestMirrorCheckpointsOnlyAcknowledged(t *testing.T) {
	testenv.Kinesis(t)
	testenv.DynamoDB(t)
	env, _ := harness.StandinsEnv()
	ac := env.AWS()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	awsCfg, err := ac.AWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kin := kinesis.NewFromConfig(awsCfg, func(o *kinesis.Options) { o.BaseEndpoint = awsconf.Endpoint(ac.KinesisEndpoint) })
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(ac.DynamoDBEndpoint) })
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("mirrorack-%d-%s", time.Now().Unix()%100000, hex.EncodeToString(rnd[:]))
	prod, canary, app := name+"-prod", name+"-canary", name+"-mirror"
	if _, err := replay.Run(ctx, kin, replay.Config{Stream: prod, Shards: 1}, replay.FromSlice(nil)); err != nil {
		t.Fatal(err)
	}
	recs, _ := harness.Generated(gen.Generate(gen.Config{Seed: 72, Events: 500}))
	if _, err := replay.Run(ctx, kin, replay.Config{Stream: prod, Concurrency: 2}, replay.FromSlice(recs)); err != nil {
		t.Fatal(err)
	}
	st := &source.MirrorStats{}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- source.RunMirror(mctx, source.MirrorConfig{Stream: prod, Canary: canary, AppName: app, WorkerID: "m1", AWS: ac,
			Share: 1, FailoverTime: 3 * time.Second, ShardSync: 200 * time.Millisecond,
			IdleBetweenReads: 100 * time.Millisecond, Stats: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("mirror: %v", err)
		}
	}()
	checkpoint := func() string {
		out, err := ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(app), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return ""
		}
		for _, it := range out.Items {
			if c, ok := it["Checkpoint"].(*ddbtypes.AttributeValueMemberS); ok && c.Value != "TRIM_HORIZON" {
				return c.Value
			}
		}
		return ""
	}
	poll := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(90 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) { // poll interval
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 90 s (read %d, put %d, retries %d)", what, st.Read.Load(), st.Put.Load(), st.PutRetries.Load())
			}
		}
	}
	poll("the mirror reads and its puts fail", func() bool { return st.Read.Load() > 0 && st.PutRetries.Load() >= 3 })
	if c := checkpoint(); c != "" || st.Checkpoints.Load() != 0 || st.Put.Load() != 0 {
		t.Fatalf("checkpoint %q (%d) and %d records put while the canary refuses every record", c, st.Checkpoints.Load(), st.Put.Load())
	}
	if _, err := replay.Run(ctx, kin, replay.Config{Stream: canary, Shards: 1}, replay.FromSlice(nil)); err != nil {
		t.Fatal(err)
	}
	poll("checkpoint after the canary exists", func() bool { return checkpoint() != "" })
	got, err := readStream(ctx, kin, canary)
	if err != nil {
		t.Fatal(err)
	}
	if st.Put.Load() == 0 || len(got) < int(st.Put.Load()) {
		t.Fatalf("checkpointed with %d records put and %d on the canary", st.Put.Load(), len(got))
	}
}
