package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/lineageflow/lineageflow/processor"
)

// DynamoRunStore is the DynamoDB [processor.RunStore] (DESIGN.md,
// "Shared run store"): table <app>-runs by default, hash key RunKey =
// <app> "/" <runId> (a table shared by several applications keeps them
// apart), one item per run: State (the processor's encoding: job, datasets
// with their names, column pairs, status, COMPLETE times, Run-vertex
// state), Status and Job (for an operator), Shard (its last writer) and
// ExpiresAt (Unix seconds, DynamoDB TTL: the run retention).
//
// Put writes BatchWriteItem requests of 25 items, up to Parallel at once,
// and retries the unprocessed items (throttling) with backoff until they
// are written or ctx ends; Get reads BatchGetItem requests of 100 keys
// with consistent reads (a shard may move right after its last barrier)
// and retries the unprocessed keys the same way. Errors the service will
// give again (validation, missing table) are returned at once.
type DynamoRunStore struct {
	Client *dynamodb.Client
	Table  string
	App    string
	// Parallel bounds the concurrent requests of one Put or Get (default 4).
	Parallel int
	Logger   *slog.Logger // default slog.Default()
}

const (
	rsKey     = "RunKey"
	rsState   = "State"
	rsStatus  = "Status"
	rsJob     = "Job"
	rsShard   = "Shard"
	rsExpires = "ExpiresAt"

	rsWriteChunk = 25  // BatchWriteItem's limit
	rsReadChunk  = 100 // BatchGetItem's limit
)

var tableNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// ValidateRunStoreTable says what is wrong with a DynamoDB table name.
func ValidateRunStoreTable(name string) error {
	if !tableNameRE.MatchString(name) {
		return fmt.Errorf("%w: run store table %q: a DynamoDB table name is 3 to 255 characters of a-z, A-Z, 0-9, '_', '-' and '.'", processor.ErrConfig, name)
	}
	return nil
}

// EnsureTable creates the run table if it is missing (on-demand capacity),
// waits until it is ACTIVE, and enables TTL on ExpiresAt (a failure there
// is only logged: dynalite has no TTL; the workers also forget runs past
// the retention themselves).
func (s *DynamoRunStore) EnsureTable(ctx context.Context) error {
	if err := ValidateRunStoreTable(s.Table); err != nil {
		return err
	}
	err := ensureTable(ctx, s.Client, &dynamodb.CreateTableInput{
		TableName:            aws.String(s.Table),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String(rsKey), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String(rsKey), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	if err != nil {
		return err
	}
	_, terr := s.Client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(s.Table),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(rsExpires), Enabled: aws.Bool(true)},
	})
	if terr != nil && !isTTLAlreadyOn(terr) {
		s.logger().Info("run store table: TTL not enabled (items stay until deleted; workers still forget runs past the retention)", "table", s.Table, "err", terr)
	}
	return nil
}

func (s *DynamoRunStore) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *DynamoRunStore) key(id string) string { return s.App + "/" + id }

func (s *DynamoRunStore) parallel() int {
	if s.Parallel > 0 {
		return s.Parallel
	}
	return 4
}

// each runs fn on the chunks [i, j) of n elements of size at most size,
// at most parallel() at once, and returns the first error.
func (s *DynamoRunStore) each(ctx context.Context, n, size int, fn func(ctx context.Context, i, j int) error) error {
	if n <= size {
		return fn(ctx, 0, n)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, s.parallel())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := 0; i < n; i += size {
		j := min(i+size, n)
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, i, j); err != nil {
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// Put implements [processor.RunStore].
func (s *DynamoRunStore) Put(ctx context.Context, items []processor.RunItem) error {
	if len(items) == 0 {
		return nil // DynamoDB refuses an empty request
	}
	return s.each(ctx, len(items), rsWriteChunk, func(ctx context.Context, i, j int) error {
		reqs := make([]ddbtypes.WriteRequest, 0, j-i)
		for _, it := range items[i:j] {
			reqs = append(reqs, ddbtypes.WriteRequest{PutRequest: &ddbtypes.PutRequest{Item: map[string]ddbtypes.AttributeValue{
				rsKey:     &ddbtypes.AttributeValueMemberS{Value: s.key(it.ID)},
				rsState:   &ddbtypes.AttributeValueMemberB{Value: it.Value},
				rsStatus:  &ddbtypes.AttributeValueMemberS{Value: it.Status},
				rsJob:     &ddbtypes.AttributeValueMemberS{Value: nonEmpty(it.Job)},
				rsShard:   &ddbtypes.AttributeValueMemberS{Value: nonEmpty(it.Shard)},
				rsExpires: num(it.Expires.Unix()),
			}}})
		}
		return s.retry(ctx, "write runs", func(ctx context.Context) (bool, error) {
			out, err := s.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{s.Table: reqs}})
			if err != nil {
				return false, err
			}
			reqs = out.UnprocessedItems[s.Table]
			return len(reqs) == 0, nil
		})
	})
}

// Get implements [processor.RunStore].
func (s *DynamoRunStore) Get(ctx context.Context, ids []string) (map[string][]byte, error) {
	got := make(map[string][]byte, len(ids))
	if len(ids) == 0 {
		return got, nil // DynamoDB refuses an empty request
	}
	var mu sync.Mutex
	prefix := s.App + "/"
	err := s.each(ctx, len(ids), rsReadChunk, func(ctx context.Context, i, j int) error {
		keys := make([]map[string]ddbtypes.AttributeValue, 0, j-i)
		for _, id := range ids[i:j] {
			keys = append(keys, map[string]ddbtypes.AttributeValue{rsKey: &ddbtypes.AttributeValueMemberS{Value: s.key(id)}})
		}
		return s.retry(ctx, "read runs", func(ctx context.Context) (bool, error) {
			out, err := s.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
				s.Table: {Keys: keys, ConsistentRead: aws.Bool(true), ProjectionExpression: aws.String("#k, #s"),
					ExpressionAttributeNames: map[string]string{"#k": rsKey, "#s": rsState}},
			}})
			if err != nil {
				return false, err
			}
			mu.Lock()
			for _, it := range out.Responses[s.Table] {
				k, _ := it[rsKey].(*ddbtypes.AttributeValueMemberS)
				v, _ := it[rsState].(*ddbtypes.AttributeValueMemberB)
				if k != nil && v != nil && strings.HasPrefix(k.Value, prefix) {
					got[k.Value[len(prefix):]] = v.Value
				}
			}
			mu.Unlock()
			keys = out.UnprocessedKeys[s.Table].Keys
			return len(keys) == 0, nil
		})
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// retry calls fn until it reports done, returns an error the service will
// give again, or ctx ends; with backoff (20 ms doubling to 1 s) between
// partial results and transient errors.
func (s *DynamoRunStore) retry(ctx context.Context, what string, fn func(ctx context.Context) (bool, error)) error {
	wait := 20 * time.Millisecond
	for {
		done, err := fn(ctx)
		if err == nil && done {
			return nil
		}
		if err != nil && permanent(err) {
			return fmt.Errorf("source: run store %s: %s: %w", s.Table, what, err)
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("items left unprocessed (throttled)")
			}
			return fmt.Errorf("source: run store %s: %s: %w (gave up: %w)", s.Table, what, err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// permanent reports whether err will come back on a retry.
func permanent(err error) bool {
	var nf *ddbtypes.ResourceNotFoundException
	if errors.As(err, &nf) {
		return true
	}
	var api interface{ ErrorCode() string }
	return errors.As(err, &api) && api.ErrorCode() == "ValidationException"
}

// nonEmpty: DynamoDB refuses an empty string in a key, not in an
// attribute, but an operator reads "-" better than nothing.
func nonEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
