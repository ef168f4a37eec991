package testenv_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/vmware/vmware-go-kcl-v2/clientlibrary/checkpoint"
	"github.com/vmware/vmware-go-kcl-v2/clientlibrary/config"
	par "github.com/vmware/vmware-go-kcl-v2/clientlibrary/partition"

	"github.com/lineageflow/lineageflow/testkit/testenv"
)

func dynamoClient(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       testenv.Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(testenv.AccessKeyID, testenv.SecretAccessKey, ""),
	})
}

// TestStandinDynamoKCLLeaseTable creates a KCL lease table through KCL's own
// code path (DynamoCheckpoint.Init, as the KCL worker does at start) against
// the dynalite stand-in, checks with the AWS SDK that it is ACTIVE with KCL's
// key schema, and takes a lease (KCL's conditional write) on it.
func TestStandinDynamoKCLLeaseTable(t *testing.T) {
	endpoint := testenv.DynamoDB(t)
	table := fmt.Sprintf("testenv-leases-%d-%d", os.Getpid(), time.Now().UnixNano())
	creds := credentials.NewStaticCredentialsProvider(testenv.AccessKeyID, testenv.SecretAccessKey, "")

	kcfg := config.NewKinesisClientLibConfigWithCredential(table, "testenv-stream", testenv.Region, "worker-1", creds).
		WithTableName(table).
		WithDynamoDBEndpoint(endpoint)
	cp := checkpoint.NewDynamoCheckpoint(kcfg)
	if err := cp.Init(); err != nil {
		t.Fatalf("KCL DynamoCheckpoint.Init (creates table %s) at %s: %v", table, endpoint, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := dynamoClient(endpoint)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
			t.Logf("delete table %s: %v", table, err)
		}
	})

	// Poll until ACTIVE (dynalite keeps it CREATING for createTableMs).
	var desc *types.TableDescription
	for {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatalf("DescribeTable %s: %v", table, err)
		}
		desc = out.Table
		if desc.TableStatus == types.TableStatusActive {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("table %s still %s: %v", table, desc.TableStatus, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if len(desc.KeySchema) != 1 || aws.ToString(desc.KeySchema[0].AttributeName) != checkpoint.LeaseKeyKey ||
		desc.KeySchema[0].KeyType != types.KeyTypeHash {
		t.Fatalf("key schema %+v, want HASH on %s", desc.KeySchema, checkpoint.LeaseKeyKey)
	}

	list, err := db.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	found := false
	for _, n := range list.TableNames {
		found = found || n == table
	}
	if !found {
		t.Fatalf("ListTables %v lacks %s", list.TableNames, table)
	}

	// A second Init (another worker starting) sees the table and does not
	// try to create it again.
	if err := checkpoint.NewDynamoCheckpoint(kcfg).Init(); err != nil {
		t.Fatalf("second Init: %v", err)
	}

	// KCL's lease path: a conditional PutItem that must succeed on a free
	// shard and record the owner.
	shard := &par.ShardStatus{ID: "shardId-000000000000", Mux: &sync.RWMutex{}}
	if err := cp.GetLease(shard, "worker-1"); err != nil {
		t.Fatalf("GetLease: %v", err)
	}
	owner, err := cp.GetLeaseOwner(shard.ID)
	if err != nil || owner != "worker-1" {
		t.Fatalf("GetLeaseOwner = %q, %v; want worker-1", owner, err)
	}
	// Another worker cannot take an unexpired lease.
	other := checkpoint.NewDynamoCheckpoint(config.NewKinesisClientLibConfigWithCredential(table, "testenv-stream", testenv.Region, "worker-2", creds).
		WithTableName(table).WithDynamoDBEndpoint(endpoint))
	if err := other.Init(); err != nil {
		t.Fatalf("worker-2 Init: %v", err)
	}
	if err := other.GetLease(&par.ShardStatus{ID: shard.ID, Mux: &sync.RWMutex{}}, "worker-2"); err == nil {
		t.Fatal("worker-2 took worker-1's unexpired lease")
	}
}
