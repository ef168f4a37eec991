package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// TestMissingStreamMakesWorkerUnready (issue 26, item 11, on kinesalite):
// a worker whose stream does not exist is not ready and says why; once
// the stream exists, it is ready again.
func TestMissingStreamMakesWorkerUnready(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kinesalite")
	}
	ep := testenv.Kinesis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, _ := testWorker(t, nil)
	w.cfg.Stream = fmt.Sprintf("missing-%d", time.Now().UnixNano())
	ac := awsconf.Config{Region: testenv.Region, KinesisEndpoint: ep, AccessKeyID: testenv.AccessKeyID, SecretAccessKey: testenv.SecretAccessKey}
	kin, err := ac.Kinesis(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.kin = kin
	w.checkStream(ctx)
	err = w.Unready()
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), w.cfg.Stream) {
		t.Fatalf("missing stream: Unready %v, want a reason naming the stream", err)
	}
	if strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("the reason names the endpoint: %v", err)
	}
	if _, err := kin.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(w.cfg.Stream), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stream to be readable", func() bool {
		w.checkStream(ctx)
		return w.Unready() == nil
	})
}

// TestDuplicateWorkerIDRefused (issue 26, item 11, on dynalite): before
// its KCL starts, a worker finds a live lease assigned to its own id. If
// the lease is renewed meanwhile, another process runs with the same
// -worker-id: the worker refuses to start. If not (its own previous run),
// it starts once the lease expired.
func TestDuplicateWorkerIDRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("needs dynalite")
	}
	ep := testenv.DynamoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ac := awsconf.Config{Region: testenv.Region, AccessKeyID: testenv.AccessKeyID, SecretAccessKey: testenv.SecretAccessKey, DynamoDBEndpoint: ep}
	awsCfg, err := ac.AWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := testWorker(t, nil)
	w.ddb = dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(ep) })
	w.cfg.AppName = fmt.Sprintf("dup-id-%d", time.Now().UnixNano())
	w.cfg.FailoverTime = 3 * time.Second
	if err := w.ensureLeaseTable(ctx); err != nil {
		t.Fatal(err)
	}
	putLease := func(shard string, timeout time.Time) {
		t.Helper()
		_, err := w.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.cfg.AppName), Item: map[string]ddbtypes.AttributeValue{
			"ShardID":      &ddbtypes.AttributeValueMemberS{Value: shard},
			"AssignedTo":   &ddbtypes.AttributeValueMemberS{Value: w.cfg.WorkerID},
			"LeaseTimeout": &ddbtypes.AttributeValueMemberS{Value: timeout.UTC().Format(time.RFC3339Nano)},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Its own previous run's lease, not renewed: it starts.
	putLease("shardId-000000000000", time.Now().Add(time.Second))
	if err := w.checkDuplicateID(ctx); err != nil {
		t.Fatalf("a stale lease of this id: %v, want nil", err)
	}
	// A twin renews its lease while the worker waits: refused.
	putLease("shardId-000000000001", time.Now().Add(2*time.Second))
	// The twin's renewal, after the worker's first look.
	w.opts.afterLeaseScan = func() { putLease("shardId-000000000001", time.Now().Add(5*time.Second)) }
	err = w.checkDuplicateID(ctx)
	if !errors.Is(err, ErrDuplicateWorkerID) || !strings.Contains(err.Error(), "shardId-000000000001") {
		t.Fatalf("a lease renewed by a twin: %v, want ErrDuplicateWorkerID naming the shard", err)
	}
}
