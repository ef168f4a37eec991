package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoHandoff is the DynamoDB [Handoff]: table <app>-handoff, hash key
// ShardID (the parent shard), range key Chunk. Chunk 0 is the header
// (number of data chunks, size, SHA-256 of the whole payload), written
// last; chunks 1..n hold at most ChunkBytes each (under DynamoDB's 400 KB
// item limit). Every item carries ExpiresAt (Unix seconds) for DynamoDB
// TTL. Rewriting the same payload writes the same items.
type DynamoHandoff struct {
	Client     *dynamodb.Client
	Table      string
	TTL        time.Duration // default 7 days
	ChunkBytes int           // default 350000
	Logger     *slog.Logger  // default slog.Default()
}

const (
	// DefaultHandoffTTL keeps a handoff long enough for a child that starts
	// late (backlog, outage) or moves and loads it again.
	DefaultHandoffTTL = 7 * 24 * time.Hour
	defaultChunkBytes = 350000

	hoShard   = "ShardID"
	hoChunk   = "Chunk"
	hoData    = "Data"
	hoChunks  = "Chunks"
	hoSize    = "Size"
	hoSum     = "SHA256"
	hoExpires = "ExpiresAt"
)

// EnsureTable creates the handoff table if it is missing (another worker
// creating it at once is fine), waits until it is ACTIVE, and enables TTL
// on ExpiresAt (a failure there is only logged: dynalite has no TTL).
func (h *DynamoHandoff) EnsureTable(ctx context.Context) error {
	err := ensureTable(ctx, h.Client, &dynamodb.CreateTableInput{
		TableName: aws.String(h.Table),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String(hoShard), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(hoChunk), AttributeType: ddbtypes.ScalarAttributeTypeN},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(hoShard), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String(hoChunk), KeyType: ddbtypes.KeyTypeRange},
		},
		// On demand: a handoff is rare and large (a 350 KB chunk costs
		// 350 write units), provisioned capacity would only throttle it.
		BillingMode: ddbtypes.BillingModePayPerRequest,
	})
	if err != nil {
		return err
	}
	_, terr := h.Client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(h.Table),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(hoExpires), Enabled: aws.Bool(true)},
	})
	if terr != nil && !isTTLAlreadyOn(terr) {
		h.logger().Info("handoff table: TTL not enabled (items stay until deleted)", "table", h.Table, "err", terr)
	}
	return nil
}

func isTTLAlreadyOn(err error) bool {
	var ve interface{ ErrorMessage() string }
	return errors.As(err, &ve) && bytes.Contains([]byte(ve.ErrorMessage()), []byte("already enabled"))
}

func (h *DynamoHandoff) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

func (h *DynamoHandoff) chunkBytes() int {
	if h.ChunkBytes > 0 {
		return h.ChunkBytes
	}
	return defaultChunkBytes
}

func num(n int64) ddbtypes.AttributeValue {
	return &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// Put implements [Handoff]: data chunks first, the header last.
func (h *DynamoHandoff) Put(ctx context.Context, shard string, runs []byte) error {
	ttl := h.TTL
	if ttl <= 0 {
		ttl = DefaultHandoffTTL
	}
	exp := num(time.Now().Add(ttl).Unix())
	size := h.chunkBytes()
	n := int64(0)
	for off := 0; off < len(runs); off += size {
		n++
		end := min(off+size, len(runs))
		_, err := h.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(h.Table), Item: map[string]ddbtypes.AttributeValue{
			hoShard: &ddbtypes.AttributeValueMemberS{Value: shard}, hoChunk: num(n),
			hoData: &ddbtypes.AttributeValueMemberB{Value: runs[off:end]}, hoExpires: exp,
		}})
		if err != nil {
			return fmt.Errorf("source: handoff of %s, chunk %d: %w", shard, n, err)
		}
	}
	sum := sha256.Sum256(runs)
	_, err := h.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(h.Table), Item: map[string]ddbtypes.AttributeValue{
		hoShard: &ddbtypes.AttributeValueMemberS{Value: shard}, hoChunk: num(0),
		hoChunks: num(n), hoSize: num(int64(len(runs))), hoSum: &ddbtypes.AttributeValueMemberB{Value: sum[:]}, hoExpires: exp,
	}})
	if err != nil {
		return fmt.Errorf("source: handoff of %s, header: %w", shard, err)
	}
	return nil
}

// Get implements [Handoff] (consistent reads). A payload that does not
// match its header (a rewrite in progress) is an error: retry.
func (h *DynamoHandoff) Get(ctx context.Context, shard string) ([]byte, bool, error) {
	chunks := map[int64][]byte{}
	var header map[string]ddbtypes.AttributeValue
	var start map[string]ddbtypes.AttributeValue
	for {
		out, err := h.Client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(h.Table),
			ConsistentRead:            aws.Bool(true),
			KeyConditionExpression:    aws.String("#s = :s"),
			ExpressionAttributeNames:  map[string]string{"#s": hoShard},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":s": &ddbtypes.AttributeValueMemberS{Value: shard}},
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, false, fmt.Errorf("source: read handoff of %s: %w", shard, err)
		}
		for _, it := range out.Items {
			c, ok := it[hoChunk].(*ddbtypes.AttributeValueMemberN)
			if !ok {
				continue
			}
			i, err := strconv.ParseInt(c.Value, 10, 64)
			if err != nil {
				continue
			}
			if i == 0 {
				header = it
			} else if d, ok := it[hoData].(*ddbtypes.AttributeValueMemberB); ok {
				chunks[i] = d.Value
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	if header == nil {
		return nil, false, nil
	}
	getN := func(k string) int64 {
		if v, ok := header[k].(*ddbtypes.AttributeValueMemberN); ok {
			n, _ := strconv.ParseInt(v.Value, 10, 64)
			return n
		}
		return -1
	}
	n, size := getN(hoChunks), getN(hoSize)
	sum, _ := header[hoSum].(*ddbtypes.AttributeValueMemberB)
	if n < 0 || size < 0 || sum == nil {
		return nil, false, fmt.Errorf("source: handoff of %s: bad header", shard)
	}
	data := make([]byte, 0, size)
	for i := int64(1); i <= n; i++ {
		c, ok := chunks[i]
		if !ok {
			return nil, false, fmt.Errorf("source: handoff of %s: chunk %d of %d missing", shard, i, n)
		}
		data = append(data, c...)
	}
	if got := sha256.Sum256(data); int64(len(data)) != size || !bytes.Equal(got[:], sum.Value) {
		return nil, false, fmt.Errorf("source: handoff of %s: payload does not match its header (rewritten meanwhile?)", shard)
	}
	return data, true, nil
}

// ensureTable creates the table of in if it is missing (ResourceInUse:
// another worker is creating it) and waits until it is ACTIVE.
func ensureTable(ctx context.Context, ddb *dynamodb.Client, in *dynamodb.CreateTableInput) error {
	name := aws.ToString(in.TableName)
	deadline := time.Now().Add(2 * time.Minute)
	created := false
	for {
		out, err := ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
		var nf *ddbtypes.ResourceNotFoundException
		switch {
		case err == nil && out.Table != nil && out.Table.TableStatus == ddbtypes.TableStatusActive:
			return nil
		case errors.As(err, &nf) && !created:
			_, cerr := ddb.CreateTable(ctx, in)
			var inUse *ddbtypes.ResourceInUseException
			if cerr != nil && !errors.As(cerr, &inUse) {
				return fmt.Errorf("source: create table %s: %w", name, cerr)
			}
			created = true
		case err != nil && !errors.As(err, &nf):
			return fmt.Errorf("source: describe table %s: %w", name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("source: table %s not ACTIVE after 2 minutes", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
