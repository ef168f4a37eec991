package source

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/lineageflow/lineageflow/internal/awsconf"
	"github.com/lineageflow/lineageflow/testkit/testenv"
)

// The handoff conformance suite: every [Handoff] store passes the same
// tests, the in-memory one (fast) and the DynamoDB one on dynalite (real),
// the latter with a tiny chunk size so that the multi-chunk path runs.

func TestHandoffConformanceMemory(t *testing.T) {
	handoffConformance(t, func(t *testing.T) Handoff { return NewMemHandoff() })
}

func TestHandoffConformanceDynamo(t *testing.T) {
	if testing.Short() {
		t.Skip("needs dynalite")
	}
	ep := testenv.DynamoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := awsconf.Config{Region: testenv.Region, AccessKeyID: testenv.AccessKeyID,
		SecretAccessKey: testenv.SecretAccessKey, DynamoDBEndpoint: ep}
	awsCfg, err := cfg.AWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = awsconf.Endpoint(ep) })
	n := 0
	handoffConformance(t, func(t *testing.T) Handoff {
		n++
		h := &DynamoHandoff{Client: client, Table: fmt.Sprintf("conformance-%d-%d", time.Now().UnixNano(), n), ChunkBytes: 7,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if err := h.EnsureTable(ctx); err != nil {
			t.Fatal(err)
		}
		return h
	})
}

func handoffConformance(t *testing.T, newStore func(*testing.T) Handoff) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	long := bytes.Repeat([]byte("run-state|"), 40) // many chunks at ChunkBytes 7

	t.Run("missing", func(t *testing.T) {
		h := newStore(t)
		if data, ok, err := h.Get(ctx, "shardId-000000000000"); err != nil || ok || len(data) != 0 {
			t.Fatalf("Get of a shard never Put = %q, %v, %v; want nothing, false, nil", data, ok, err)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		h := newStore(t)
		for i, payload := range [][]byte{all, long, {0}, []byte("x")} {
			shard := fmt.Sprintf("shardId-%012d", i)
			if err := h.Put(ctx, shard, payload); err != nil {
				t.Fatal(err)
			}
			got, ok, err := h.Get(ctx, shard)
			if err != nil || !ok || !bytes.Equal(got, payload) {
				t.Fatalf("payload %d: Get = %d bytes, %v, %v; want the %d bytes Put", i, len(got), ok, err, len(payload))
			}
		}
	})
	t.Run("empty payload is stored", func(t *testing.T) {
		h := newStore(t)
		if err := h.Put(ctx, "s", nil); err != nil {
			t.Fatal(err)
		}
		got, ok, err := h.Get(ctx, "s")
		if err != nil || !ok || len(got) != 0 {
			t.Fatalf("Get after Put(nil) = %q, %v, %v; want empty, true, nil", got, ok, err)
		}
	})
	t.Run("put replaces, longer then shorter", func(t *testing.T) {
		h := newStore(t)
		for _, payload := range [][]byte{[]byte("short"), long, []byte("shorter again")} {
			if err := h.Put(ctx, "s", payload); err != nil {
				t.Fatal(err)
			}
			got, ok, err := h.Get(ctx, "s")
			if err != nil || !ok || !bytes.Equal(got, payload) {
				t.Fatalf("after Put(%d bytes): Get = %q, %v, %v", len(payload), got, ok, err)
			}
		}
	})
	t.Run("put is idempotent", func(t *testing.T) {
		h := newStore(t)
		for range 2 {
			if err := h.Put(ctx, "s", long); err != nil {
				t.Fatal(err)
			}
		}
		if got, ok, err := h.Get(ctx, "s"); err != nil || !ok || !bytes.Equal(got, long) {
			t.Fatalf("after two identical Puts: Get = %d bytes, %v, %v", len(got), ok, err)
		}
	})
	t.Run("shards are independent", func(t *testing.T) {
		h := newStore(t)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = h.Put(ctx, fmt.Sprintf("shard-%d", i), bytes.Repeat([]byte{byte(i)}, 10+i))
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := h.Get(ctx, fmt.Sprintf("shard-%d", i))
			if err != nil || !ok || !bytes.Equal(got, bytes.Repeat([]byte{byte(i)}, 10+i)) {
				t.Fatalf("shard-%d: Get = %v, %v, %v", i, got, ok, err)
			}
		}
	})
	t.Run("caller owns the bytes", func(t *testing.T) {
		h := newStore(t)
		in := []byte("abcdefghijklmnop")
		if err := h.Put(ctx, "s", in); err != nil {
			t.Fatal(err)
		}
		in[0] = 'X' // the store must have copied
		got, _, err := h.Get(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		got[1] = 'Y' // and must hand out a copy
		again, _, err := h.Get(ctx, "s")
		if err != nil || string(again) != "abcdefghijklmnop" {
			t.Fatalf("Get = %q, %v; want the bytes as Put, untouched by the caller", again, err)
		}
	})
}
