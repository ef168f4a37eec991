package replay

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"

	"github.com/lineageflow/lineageflow/internal/kpl"
)

// fakeKinesis is an in-memory Kinesis stream with fault injection. Safe for
// concurrent use.
type fakeKinesis struct {
	mu       sync.Mutex
	exists   bool
	shards   int
	creating int // DescribeStreamSummary calls left answering CREATING
	data     [][]stored
	rng      *rand.Rand

	// fail, if set, decides the error code of a record (or "" to store it).
	fail func(rng *rand.Rand, pk string) string
	// requestErr, if set, fails whole requests.
	requestErr   func() error
	noListShards bool

	creates, requests int
	maxRecords        int
	maxBytes          int
}

type stored struct {
	pk   string
	data []byte
}

func newFake(shards int) *fakeKinesis {
	f := &fakeKinesis{rng: rand.New(rand.NewPCG(42, 43))}
	if shards > 0 {
		f.exists, f.shards = true, shards
		f.data = make([][]stored, shards)
	}
	return f
}

var max128 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))

// rangeOf returns the hash key range of shard i of n, as Kinesis splits it.
func rangeOf(i, n int) (start, end *big.Int) {
	step := new(big.Int).Div(new(big.Int).Add(max128, big.NewInt(1)), big.NewInt(int64(n)))
	start = new(big.Int).Mul(step, big.NewInt(int64(i)))
	end = new(big.Int).Sub(new(big.Int).Add(start, step), big.NewInt(1))
	if i == n-1 {
		end = max128
	}
	return start, end
}

// shardOf is the fake's own routing, independent of shardMap.
func shardOf(pk string, n int) int {
	h := md5.Sum([]byte(pk))
	v := new(big.Int).SetBytes(h[:])
	for i := 0; i < n; i++ {
		_, end := rangeOf(i, n)
		if v.Cmp(end) <= 0 {
			return i
		}
	}
	return n - 1
}

func apiErr(code string) error { return &smithy.GenericAPIError{Code: code, Message: code} }

func (f *fakeKinesis) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if !f.exists {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no stream")}
	}
	if len(in.Records) > MaxBatchRecords || len(in.Records) == 0 {
		return nil, apiErr("ValidationException")
	}
	size := 0
	for _, r := range in.Records {
		size += len(r.Data) + len(aws.ToString(r.PartitionKey))
		if len(r.Data)+len(aws.ToString(r.PartitionKey)) > MaxRecordBytes {
			return nil, apiErr("ValidationException")
		}
	}
	if size > MaxBatchBytes {
		return nil, apiErr("ValidationException")
	}
	f.maxRecords = max(f.maxRecords, len(in.Records))
	f.maxBytes = max(f.maxBytes, size)
	if f.requestErr != nil {
		if err := f.requestErr(); err != nil {
			return nil, err
		}
	}
	out := &kinesis.PutRecordsOutput{}
	for _, r := range in.Records {
		pk := aws.ToString(r.PartitionKey)
		if f.fail != nil {
			if code := f.fail(f.rng, pk); code != "" {
				out.FailedRecordCount = aws.Int32(aws.ToInt32(out.FailedRecordCount) + 1)
				out.Records = append(out.Records, types.PutRecordsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("injected")})
				continue
			}
		}
		s := shardOf(pk, f.shards)
		f.data[s] = append(f.data[s], stored{pk, bytes.Clone(r.Data)})
		out.Records = append(out.Records, types.PutRecordsResultEntry{ShardId: aws.String(fmt.Sprintf("shardId-%012d", s)), SequenceNumber: aws.String(fmt.Sprint(len(f.data[s])))})
	}
	return out, nil
}

func (f *fakeKinesis) CreateStream(ctx context.Context, in *kinesis.CreateStreamInput, _ ...func(*kinesis.Options)) (*kinesis.CreateStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates++
	if f.exists {
		return nil, &types.ResourceInUseException{Message: aws.String("exists")}
	}
	f.exists, f.shards = true, int(aws.ToInt32(in.ShardCount))
	f.data = make([][]stored, f.shards)
	return &kinesis.CreateStreamOutput{}, nil
}

func (f *fakeKinesis) DescribeStreamSummary(ctx context.Context, in *kinesis.DescribeStreamSummaryInput, _ ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.exists {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no stream")}
	}
	status := types.StreamStatusActive
	if f.creating > 0 {
		f.creating--
		status = types.StreamStatusCreating
	}
	return &kinesis.DescribeStreamSummaryOutput{StreamDescriptionSummary: &types.StreamDescriptionSummary{
		StreamName: in.StreamName, StreamStatus: status, OpenShardCount: aws.Int32(int32(f.shards)),
	}}, nil
}

func (f *fakeKinesis) ListShards(ctx context.Context, in *kinesis.ListShardsInput, _ ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noListShards {
		return nil, apiErr("UnknownOperationException")
	}
	// Two pages, to exercise NextToken; the closed shard must be ignored.
	out := &kinesis.ListShardsOutput{}
	first := in.NextToken == nil
	for i := 0; i < f.shards; i++ {
		if (i < f.shards/2) != first {
			continue
		}
		start, end := rangeOf(i, f.shards)
		out.Shards = append(out.Shards, types.Shard{
			ShardId:             aws.String(fmt.Sprintf("shardId-%012d", i)),
			HashKeyRange:        &types.HashKeyRange{StartingHashKey: aws.String(start.String()), EndingHashKey: aws.String(end.String())},
			SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String("1")},
		})
	}
	if first {
		out.Shards = append(out.Shards, types.Shard{
			ShardId:             aws.String("shardId-closed"),
			HashKeyRange:        &types.HashKeyRange{StartingHashKey: aws.String("0"), EndingHashKey: aws.String("5")},
			SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String("1"), EndingSequenceNumber: aws.String("2")},
		})
		out.NextToken = aws.String("page2")
	}
	return out, nil
}

// shardRecords returns what each shard holds, in order.
func (f *fakeKinesis) shardRecords() [][]stored {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]stored, len(f.data))
	for i := range f.data {
		out[i] = append([]stored(nil), f.data[i]...)
	}
	return out
}

// testRecords makes n records over keys partition keys with data of
// minSize..maxSize bytes; data starts with the record's index ("%08d|").
func testRecords(seed uint64, n, keys, minSize, maxSize int) []Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	recs := make([]Record, n)
	for i := range recs {
		size := minSize + rng.IntN(maxSize-minSize+1)
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		copy(data, fmt.Sprintf("%08d|", i))
		// A skewed key distribution: a few hot keys, a long tail.
		k := rng.IntN(keys)
		if rng.IntN(3) == 0 {
			k = rng.IntN(max(1, keys/20))
		}
		recs[i] = Record{PartitionKey: fmt.Sprintf("run:ns-%d/job-%d", k%7, k), Data: data}
	}
	return recs
}

// verifyDelivery checks that the shards hold every record of sent exactly
// once, byte for byte, each on the shard of its own key (shardOfKey), in
// per-key order; it returns how many Kinesis records were aggregates.
// strict=false only counts order violations instead of failing.
func verifyDelivery(t *testing.T, sent []Record, shards [][]stored, shardOfKey func(string) int, strict bool) (aggregates, outOfOrder int) {
	t.Helper()
	seen := make([]bool, len(sent))
	last := map[string]int{}
	for s, recs := range shards {
		for _, kr := range recs {
			users := []kpl.Record{{PartitionKey: kr.pk, Data: kr.data}}
			if kpl.IsAggregated(kr.data) {
				var err error
				if users, err = kpl.Deaggregate(kr.data); err != nil {
					t.Fatalf("shard %d: %v", s, err)
				}
				aggregates++
			}
			for _, u := range users {
				var i int
				if _, err := fmt.Sscanf(string(u.Data[:min(9, len(u.Data))]), "%08d|", &i); err != nil || i < 0 || i >= len(sent) {
					t.Fatalf("shard %d: a record not sent: %q...", s, u.Data[:min(20, len(u.Data))])
				}
				want := sent[i]
				if u.PartitionKey != want.PartitionKey || !bytes.Equal(u.Data, want.Data) {
					t.Fatalf("record %d arrived as key %q, %d bytes; sent key %q, %d bytes", i, u.PartitionKey, len(u.Data), want.PartitionKey, len(want.Data))
				}
				if seen[i] {
					t.Fatalf("record %d arrived twice", i)
				}
				seen[i] = true
				if got := shardOfKey(u.PartitionKey); got != s {
					t.Fatalf("record %d (key %q) on shard %d, its key maps to shard %d", i, u.PartitionKey, s, got)
				}
				if prev, ok := last[u.PartitionKey]; ok && prev > i {
					outOfOrder++
					if strict {
						t.Fatalf("key %q: record %d arrived after record %d", u.PartitionKey, i, prev)
					}
				}
				last[u.PartitionKey] = max(last[u.PartitionKey], i)
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("record %d (key %q) never arrived", i, sent[i].PartitionKey)
		}
	}
	return aggregates, outOfOrder
}
