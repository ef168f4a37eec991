package replay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/awslabs/kinesis-aggregation/go/v2/deaggregator"

	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/internal/kpl"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// TestKinesalite replays generated records into kinesalite, reads every
// shard back and de-aggregates them with the KCL's de-aggregator: every
// user record must arrive byte for byte, exactly once, on its key's shard,
// in per-key order.
func TestKinesalite(t *testing.T) {
	ep := testenv.Kinesis(t)
	n := 10000
	if testing.Short() {
		n = 1000
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ac := awsconf.Config{Region: testenv.Region, KinesisEndpoint: ep, AccessKeyID: testenv.AccessKeyID, SecretAccessKey: testenv.SecretAccessKey}
	client, err := ac.Kinesis(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream := fmt.Sprintf("replay-it-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		_, err := client.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: &stream})
		if err != nil {
			t.Logf("delete stream %s: %v", stream, err)
		}
	})

	sent := testRecords(uint64(time.Now().UnixNano()), n, 300, 200, 4096)
	var progress syncBuffer
	cfg := Config{
		Stream:        stream,
		Shards:        4,
		Aggregate:     0.3,
		Concurrency:   4,
		Progress:      &progress,
		ProgressEvery: 500 * time.Millisecond,
		PollInterval:  50 * time.Millisecond,
	}
	sum, err := Run(ctx, client, cfg, FromSlice(sent))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replay: %s", sum)
	if out := progress.String(); out != "" {
		t.Logf("progress:\n%s", out)
	}
	if sum.UserRecords != int64(n) || sum.Shards != 4 {
		t.Fatalf("summary %+v", sum)
	}
	if share := float64(sum.AggregatedUserRecords) / float64(n); share < 0.25 || share > 0.35 {
		t.Fatalf("%.2f of the records aggregated, want ~0.3", share)
	}

	shards, err := loadShards(ctx, client, stream)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	read := make([][]stored, shards.len())
	kinesisRecords, aggregates := 0, 0
	for i, id := range shards.ids {
		it, err := client.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
			StreamName: &stream, ShardId: &id, ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := client.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(10000)})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.Records {
				if kpl.IsAggregated(r.Data) {
					aggregates++
				}
			}
			kinesisRecords += len(out.Records)
			users, err := deaggregator.DeaggregateRecords(out.Records)
			if err != nil {
				t.Fatalf("KCL de-aggregator: %v", err)
			}
			for _, u := range users {
				read[i] = append(read[i], stored{pk: *u.PartitionKey, data: u.Data})
			}
			iter = out.NextShardIterator
			if len(out.Records) == 0 && (out.MillisBehindLatest == nil || *out.MillisBehindLatest == 0) {
				break
			}
		}
	}
	readTime := time.Since(start)
	verifyDelivery(t, sent, read, shards.shard, true)
	if kinesisRecords != int(sum.Records) || aggregates != int(sum.AggregatedRecords) {
		t.Fatalf("read %d Kinesis records (%d aggregates), replay wrote %d (%d)", kinesisRecords, aggregates, sum.Records, sum.AggregatedRecords)
	}
	t.Logf("read back %d Kinesis records (%d aggregates) = %d user records from %d shards in %s: all arrived once, intact, in per-key order",
		kinesisRecords, aggregates, n, shards.len(), readTime.Round(time.Millisecond))
}
