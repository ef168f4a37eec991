package source

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	kcl "github.com/vmware/vmware-go-kcl-v2/clientlibrary/interfaces"

	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/gen"
	"github.com/lineageflow/lineageflow/internal/replay"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// countingCheckpointer records the checkpoints a processor asks for.
type countingCheckpointer struct {
	n    atomic.Int64
	last atomic.Pointer[string]
}

func (c *countingCheckpointer) Checkpoint(seq *string) error {
	c.n.Add(1)
	c.last.Store(seq)
	return nil
}

func (c *countingCheckpointer) PrepareCheckpoint(*string) (kcl.IPreparedCheckpointer, error) {
	return nil, errors.New("not used")
}

// TestMirrorLeaseGuard: a mirror's shard processor, on the stand-ins (its
// lease row in dynalite, the canary stream on kinesalite). While the lease
// row names this mirror, a batch is put on the canary and checkpointed.
// When the lease read fails, the batch is still put (the new owner may put
// it again: harmless) but not checkpointed. Once the row names another
// mirror (the lease was stolen or expired), the processor puts nothing
// more and never checkpoints again, not even when the row names it again
// later (the KCL has given the shard to the other mirror) nor at shard end.
func TestMirrorLeaseGuard(t *testing.T) {
	kinEP, ddbEP := testenv.Kinesis(t), testenv.DynamoDB(t)
	ac := awsconf.Config{Region: testenv.Region, KinesisEndpoint: kinEP, DynamoDBEndpoint: ddbEP,
		AccessKeyID: testenv.AccessKeyID, SecretAccessKey: testenv.SecretAccessKey}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	awsCfg, err := ac.AWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kin := kinesis.NewFromConfig(awsCfg, func(o *kinesis.Options) { o.BaseEndpoint = awsconf.Endpoint(kinEP) })
	ddb := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(ddbEP) })
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("mguard-%d-%s", time.Now().Unix()%100000, hex.EncodeToString(rnd[:]))
	canary, app, shard := name+"-canary", name+"-mirror", "shardId-000000000000"
	if _, err := replay.Run(ctx, kin, replay.Config{Stream: canary, Shards: 1}, replay.FromSlice(nil)); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	kw := &Worker{cfg: Config{Stream: name, AppName: app, WorkerID: "mirror-a", AWS: ac, Logger: quiet}.WithDefaults(), log: quiet, ddb: ddb}
	if err := kw.ensureLeaseTable(ctx); err != nil {
		t.Fatal(err)
	}
	assign := func(owner string) {
		t.Helper()
		_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(app), Item: map[string]ddbtypes.AttributeValue{
			"ShardID": &ddbtypes.AttributeValueMemberS{Value: shard}, "AssignedTo": &ddbtypes.AttributeValueMemberS{Value: owner}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	readFails := atomic.Bool{}
	st := &MirrorStats{}
	m := &Mirror{cfg: MirrorConfig{Canary: canary, WorkerID: "mirror-a", Share: 1, Stats: st}, log: quiet, kin: kin, ctx: ctx,
		owner: func(ctx context.Context, shard string) (string, error) {
			if readFails.Load() {
				return "", errors.New("dynamodb: throttled")
			}
			return kw.leaseOwner(ctx, shard)
		}}
	p := &mirrorShard{m: m}
	p.Initialize(&kcl.InitializationInput{ShardId: shard})

	_, data := generated(t)
	seq := 0
	batch := func(n int) *kcl.ProcessRecordsInput {
		in := &kcl.ProcessRecordsInput{Checkpointer: &countingCheckpointer{}}
		for i := 0; i < n; i++ {
			seq++
			in.Records = append(in.Records, ktypes.Record{Data: data[seq%len(data)],
				PartitionKey: aws.String(fmt.Sprint(seq)), SequenceNumber: aws.String(fmt.Sprintf("%056d", seq))})
		}
		return in
	}
	cps := func(in *kcl.ProcessRecordsInput) int64 { return in.Checkpointer.(*countingCheckpointer).n.Load() }

	assign("mirror-a")
	in := batch(20)
	p.ProcessRecords(in)
	if st.Put.Load() != 20 || cps(in) != 1 {
		t.Fatalf("owned lease: put %d checkpoints %d, want 20 and 1", st.Put.Load(), cps(in))
	}

	readFails.Store(true)
	in = batch(10)
	p.ProcessRecords(in)
	if st.Put.Load() != 30 || cps(in) != 0 || p.lost.Load() {
		t.Fatalf("lease unreadable: put %d checkpoints %d lost %v, want 30, 0 and not lost", st.Put.Load(), cps(in), p.lost.Load())
	}
	readFails.Store(false)

	assign("mirror-b")
	for i := 0; i < 3; i++ {
		if i == 2 {
			assign("mirror-a") // too late: the KCL gave the shard to mirror-b
		}
		in = batch(10)
		p.ProcessRecords(in)
		if st.Put.Load() != 30 || cps(in) != 0 {
			t.Fatalf("lost lease, batch %d: put %d checkpoints %d, want 30 and 0", i, st.Put.Load(), cps(in))
		}
	}
	end := &countingCheckpointer{}
	p.Shutdown(&kcl.ShutdownInput{ShutdownReason: kcl.TERMINATE, Checkpointer: end})
	if end.n.Load() != 0 {
		t.Fatal("lost lease: the shard-end checkpoint was written")
	}
	if st.LeasesLost.Load() != 1 || !p.lost.Load() {
		t.Fatalf("leases lost %d (lost %v), want 1", st.LeasesLost.Load(), p.lost.Load())
	}
	// What the canary holds: the 30 records put while the lease was ours.
	if n := canaryRecords(ctx, t, kin, canary); n != 30 {
		t.Fatalf("canary stream holds %d records, want 30", n)
	}
}

func generated(t *testing.T) ([]gen.Record, [][]byte) {
	t.Helper()
	recs := gen.Generate(gen.Config{Seed: 5, Events: 200, MalformedShare: -1})
	data := make([][]byte, 0, len(recs))
	for _, r := range recs {
		data = append(data, r.Data)
	}
	return recs, data
}

// canaryRecords counts the records of the one-shard stream.
func canaryRecords(ctx context.Context, t *testing.T, kin *kinesis.Client, stream string) int {
	t.Helper()
	it, err := kin.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(stream),
		ShardId: aws.String("shardId-000000000000"), ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for iter := it.ShardIterator; iter != nil; {
		res, err := kin.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			t.Fatal(err)
		}
		n += len(res.Records)
		if len(res.Records) == 0 {
			break
		}
		iter = res.NextShardIterator
	}
	return n
}
