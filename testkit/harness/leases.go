package harness

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Lease is one row of the KCL lease table.
type Lease struct {
	ShardID      string
	AssignedTo   string // "" when released
	Checkpoint   string // sequence number, SHARD_END, or ""
	LeaseTimeout time.Time
}

// Leases reads the lease table (a consistent scan), sorted by shard id.
func (h *Harness) Leases(ctx context.Context) ([]Lease, error) {
	out, err := h.ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(h.App), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("harness: scan lease table %s: %w", h.App, err)
	}
	var ls []Lease
	str := func(it map[string]ddbtypes.AttributeValue, k string) string {
		if v, ok := it[k].(*ddbtypes.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	for _, it := range out.Items {
		l := Lease{ShardID: str(it, "ShardID"), AssignedTo: str(it, "AssignedTo"), Checkpoint: str(it, "Checkpoint")}
		l.LeaseTimeout, _ = time.Parse(time.RFC3339Nano, str(it, "LeaseTimeout"))
		ls = append(ls, l)
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].ShardID < ls[j].ShardID })
	return ls, nil
}

// Owners returns worker id -> shards it holds (leases not yet expired).
func Owners(ls []Lease, now time.Time) map[string][]string {
	m := map[string][]string{}
	for _, l := range ls {
		if l.AssignedTo != "" && l.LeaseTimeout.After(now) {
			m[l.AssignedTo] = append(m[l.AssignedTo], l.ShardID)
		}
	}
	return m
}
