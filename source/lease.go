package source

// The lease table and the lease guard.

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ensureLeaseTable creates the KCL lease table (the KCL's schema: hash key
// ShardID) if it is missing and waits until it is ACTIVE.
func (w *Worker) ensureLeaseTable(ctx context.Context) error {
	return ensureTable(ctx, w.ddb, &dynamodb.CreateTableInput{
		TableName:             aws.String(w.cfg.AppName),
		AttributeDefinitions:  []ddbtypes.AttributeDefinition{{AttributeName: aws.String("ShardID"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:             []ddbtypes.KeySchemaElement{{AttributeName: aws.String("ShardID"), KeyType: ddbtypes.KeyTypeHash}},
		ProvisionedThroughput: &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(10), WriteCapacityUnits: aws.Int64(10)},
	})
}

// leaseOwner reads the owner of shard's lease (consistent read).
func (w *Worker) leaseOwner(ctx context.Context, shard string) (string, error) {
	owner, _, _, err := w.lease(ctx, shard)
	return owner, err
}

// lease reads shard's lease row (consistent read): owner, checkpoint, and
// whether the row exists.
func (w *Worker) lease(ctx context.Context, shard string) (owner, ckpt string, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := w.ddb.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(w.cfg.AppName),
		ConsistentRead: aws.Bool(true),
		Key:            map[string]ddbtypes.AttributeValue{"ShardID": &ddbtypes.AttributeValueMemberS{Value: shard}},
	})
	if err != nil {
		return "", "", false, err
	}
	if v, ok := out.Item["AssignedTo"].(*ddbtypes.AttributeValueMemberS); ok {
		owner = v.Value
	}
	if v, ok := out.Item["Checkpoint"].(*ddbtypes.AttributeValueMemberS); ok {
		ckpt = v.Value
	}
	return owner, ckpt, len(out.Item) > 0, nil
}

// ownsLease is the lease guard: v1.0.0 writes a checkpoint as an
// unconditional PutItem that also sets AssignedTo to this worker, so a
// processor whose lease was taken (expired under load, or stolen) would
// hand the lease back to itself and disturb the new owner. Read the owner
// first; when it is another worker, stop this processor for good (the KCL
// will not tell it) and abandon the shard's pipeline.
func (p *recordProcessor) ownsLease() bool {
	if p.lost.Load() {
		return false
	}
	owner, err := p.w.leaseOwner(p.w.ctx, p.s.ID())
	if err != nil {
		p.w.log.Warn("lease guard: reading the lease failed; not checkpointing now", "shard", p.s.ID(), "err", err)
		return false
	}
	if owner == p.w.cfg.WorkerID {
		return true
	}
	p.w.log.Warn("lease lost: another worker owns the shard; abandoning it here", "shard", p.s.ID(), "owner", owner)
	p.abandonLost()
	return false
}

// abandonLost marks the processor lost, abandons its shard and forgets it:
// the lease gauge and readiness stop counting it. The caller holds p.busy
// (a KCL call, or the lease watcher between KCL calls).
func (p *recordProcessor) abandonLost() {
	p.lost.Store(true)
	p.s.Abandon()
	p.w.mu.Lock()
	if p.w.mu.shards[p.s.ID()] == p.s {
		delete(p.w.mu.shards, p.s.ID())
		delete(p.w.mu.procs, p.s.ID())
	}
	p.w.mu.Unlock()
	p.w.Stats().LeasesLost.Add(1)
}

// watchLeases checks, every period, that this worker still owns the lease
// of every shard it holds. v1.0.0 tells a processor nothing when its lease
// is lost (renewal failed: the process was frozen past the failover time,
// a long GC pause, a partition) and the KCL no longer calls it; without
// this the worker would report the lease as held (lineage_leases_held,
// /readyz) for ever. A processor inside a KCL call is checked at its next
// checkpoint by the lease guard instead.
func (w *Worker) watchLeases(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		procs := make([]*recordProcessor, 0, len(w.mu.procs))
		for _, p := range w.mu.procs {
			procs = append(procs, p)
		}
		w.mu.Unlock()
		for _, p := range procs {
			owner, err := w.leaseOwner(ctx, p.s.ID())
			if err != nil || owner == w.cfg.WorkerID {
				continue // unknown (retried next period) or still ours
			}
			if !p.busy.TryLock() {
				continue // inside a KCL call: the lease guard sees it at the checkpoint
			}
			if !p.lost.Load() {
				w.log.Warn("lease lost: the lease table names another owner and the KCL stopped calling this shard; abandoning it here",
					"shard", p.s.ID(), "owner", owner)
				p.abandonLost()
			}
			p.busy.Unlock()
		}
	}
}
