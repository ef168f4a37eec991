package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

func dynaliteClient(t testing.TB, ctx context.Context) *dynamodb.Client {
	t.Helper()
	ep := testenv.DynamoDB(t)
	cfg := awsconf.Config{Region: testenv.Region, AccessKeyID: testenv.AccessKeyID,
		SecretAccessKey: testenv.SecretAccessKey, DynamoDBEndpoint: ep}
	awsCfg, err := cfg.AWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(ep) })
}

func newDynamoRunStore(t testing.TB, ctx context.Context, app string) *DynamoRunStore {
	t.Helper()
	s := &DynamoRunStore{Client: dynaliteClient(t, ctx), Table: fmt.Sprintf("runs-%d", time.Now().UnixNano()), App: app,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := s.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDynamoRunStore on dynalite: many items (several BatchWriteItem and
// BatchGetItem requests, in parallel), rewritten items, absent ids, an item
// at the size bound, two applications sharing a table, the attributes an
// operator reads, and a bad table name refused.
func TestDynamoRunStore(t *testing.T) {
	if testing.Short() {
		t.Skip("needs dynalite")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := newDynamoRunStore(t, ctx, "app1")
	exp := time.Now().Add(72 * time.Hour)
	var items []processor.RunItem
	for i := 0; i < 130; i++ {
		items = append(items, processor.RunItem{ID: fmt.Sprintf("run-%03d", i), Shard: "shardId-000000000001",
			Value: []byte(fmt.Sprintf("state-%d", i)), Status: "open", Job: "n/j", Expires: exp})
	}
	big := bytes.Repeat([]byte{0xAB}, processor.MaxRunItemBytes)
	items[7].Value = big
	if err := s.Put(ctx, items); err != nil {
		t.Fatal(err)
	}
	items[3].Value, items[3].Status = []byte("state-3-v2"), "committed"
	if err := s.Put(ctx, items[3:4]); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 260; i += 2 { // half of them absent
		ids = append(ids, fmt.Sprintf("run-%03d", i/2*2), fmt.Sprintf("absent-%d", i))
	}
	got, err := s.Get(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 65 {
		t.Fatalf("got %d runs, want the 65 even ones stored", len(got))
	}
	for i := 0; i < 130; i += 2 {
		id := fmt.Sprintf("run-%03d", i)
		want := items[i].Value
		if !bytes.Equal(got[id], want) {
			t.Fatalf("%s: got %d bytes %.20q, want %.20q", id, len(got[id]), got[id], want)
		}
	}
	if g, err := s.Get(ctx, []string{"run-003", "run-007"}); err != nil || string(g["run-003"]) != "state-3-v2" || len(g["run-007"]) != processor.MaxRunItemBytes {
		t.Fatalf("rewritten and large items: %v, %d bytes, %v", string(g["run-003"]), len(g["run-007"]), err)
	}

	// Another application on the same table sees none of app1's runs.
	other := *s
	other.App = "app2"
	if g, err := other.Get(ctx, []string{"run-000", "run-002"}); err != nil || len(g) != 0 {
		t.Fatalf("app2 read app1's runs: %d, %v", len(g), err)
	}

	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{rsKey: &ddbtypes.AttributeValueMemberS{Value: "app1/run-003"}}})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := out.Item[rsStatus].(*ddbtypes.AttributeValueMemberS)
	ex, _ := out.Item[rsExpires].(*ddbtypes.AttributeValueMemberN)
	if st == nil || st.Value != "committed" || ex == nil || ex.Value != fmt.Sprint(exp.Unix()) {
		t.Fatalf("item attributes: %v", out.Item)
	}

	// Over DynamoDB's item limit: refused at once (not retried until the
	// deadline).
	t0 := time.Now()
	err = s.Put(ctx, []processor.RunItem{{ID: "huge", Value: make([]byte, 410_000), Status: "open", Expires: exp}})
	if err == nil {
		t.Fatal("a 410 KB item was accepted")
	}
	if time.Since(t0) > 10*time.Second {
		t.Errorf("a permanent error took %v", time.Since(t0))
	}

	bad := &DynamoRunStore{Client: s.Client, Table: "x", App: "a"}
	if err := bad.EnsureTable(ctx); !errors.Is(err, processor.ErrConfig) {
		t.Fatalf("table name %q: %v, want a config error", bad.Table, err)
	}
}

// TestDynamoRunStoreGivesUp: a store whose table vanished answers with an
// error, promptly, not after the context's deadline.
func TestDynamoRunStoreGivesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("needs dynalite")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &DynamoRunStore{Client: dynaliteClient(t, ctx), Table: "no-such-table-runs", App: "a"}
	t0 := time.Now()
	if _, err := s.Get(ctx, []string{"r"}); err == nil {
		t.Fatal("read from a missing table succeeded")
	}
	if err := s.Put(ctx, []processor.RunItem{{ID: "r", Value: []byte("x"), Status: "open"}}); err == nil {
		t.Fatal("write to a missing table succeeded")
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("missing table: errors took %v", d)
	}
}

// TestRunStoreRetentionDefault: -run-timeout is a retention of days with a
// run store, the old hour without; an explicit value is kept.
func TestRunStoreRetentionDefault(t *testing.T) {
	for _, tt := range []struct {
		table string
		given time.Duration
		want  time.Duration
	}{
		{"", 0, processor.DefaultRunTimeout},
		{"app-runs", 0, processor.DefaultStoreRunTimeout},
		{"app-runs", 240 * time.Hour, 240 * time.Hour},
		{"", 2 * time.Hour, 2 * time.Hour},
	} {
		c := Config{RunStoreTable: tt.table, Pipeline: processor.PipelineConfig{Semantics: processor.SemanticsConfig{RunTimeout: tt.given}}}.WithDefaults()
		if c.Pipeline.Semantics.RunTimeout != tt.want {
			t.Errorf("table %q, -run-timeout %v: retention %v, want %v", tt.table, tt.given, c.Pipeline.Semantics.RunTimeout, tt.want)
		}
	}
	if got := (processor.PipelineConfig{RunStore: processor.RunStoreConfig{Store: &DynamoRunStore{}}}).WithDefaults().Semantics.RunTimeout; got != processor.DefaultStoreRunTimeout {
		t.Errorf("processor default with a store: %v", got)
	}
}
