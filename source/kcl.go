package source

// The KCL configuration and the KCL logger adapter.

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	kcfg "github.com/vmware/vmware-go-kcl-v2/clientlibrary/config"
	klog "github.com/vmware/vmware-go-kcl-v2/logger"
)

func (w *Worker) kclConfig(ctx context.Context) (*kcfg.KinesisClientLibConfiguration, error) {
	var creds aws.CredentialsProvider
	if w.cfg.AWS.StaticCredentials() {
		c, err := w.cfg.AWS.Credentials(ctx)
		if err != nil {
			return nil, err
		}
		creds = c
	}
	kc := kcfg.NewKinesisClientLibConfigWithCredential(w.cfg.AppName, w.cfg.Stream, w.cfg.AWS.Region, w.cfg.WorkerID, creds)
	if creds == nil {
		// Default chain: the KCL's config loader uses it when no provider is set.
		kc = kcfg.NewKinesisClientLibConfig(w.cfg.AppName, w.cfg.Stream, w.cfg.AWS.Region, w.cfg.WorkerID)
	}
	if w.cfg.AWS.KinesisEndpoint != "" {
		kc = kc.WithKinesisEndpoint(w.cfg.AWS.KinesisEndpoint)
	}
	if w.cfg.AWS.DynamoDBEndpoint != "" {
		kc = kc.WithDynamoDBEndpoint(w.cfg.AWS.DynamoDBEndpoint)
	}
	pos := kcfg.TRIM_HORIZON
	if w.cfg.FromLatest {
		pos = kcfg.LATEST
	}
	failover := int(w.cfg.FailoverTime.Milliseconds())
	sync := int(w.cfg.ShardSync.Milliseconds())
	kc = kc.WithInitialPositionInStream(pos).
		WithShardSyncIntervalMillis(sync).
		WithFailoverTimeMillis(failover).
		// v1.0.0's polling consumer renews every LeaseRefreshWaitTime
		// (default 2.5 s, whatever the failover time); LeaseRefreshPeriodMillis
		// is only read by the fan-out consumer. Renew three times per lease.
		WithLeaseRefreshWaitTime(max(failover/3, 1)).
		WithLeaseRefreshPeriodMillis(max(failover/3, 1)).
		// Lease sync (the lease-table scan behind rebalancing) defaults to 60 s.
		WithLeaseSyncingIntervalMillis(sync).
		WithIdleTimeBetweenReadsInMillis(int(w.cfg.IdleBetweenReads.Milliseconds())).
		WithCallProcessRecordsEvenForEmptyRecordList(true).
		WithMaxRecords(w.cfg.MaxRecords).
		WithLogger(kclLogger{w.log.With("component", "kcl")})
	if w.cfg.MaxLeases > 0 {
		kc = kc.WithMaxLeasesForWorker(w.cfg.MaxLeases)
	}
	if w.cfg.LeaseStealing {
		kc = kc.WithLeaseStealing(true).WithLeaseStealingIntervalMillis(sync * 2)
	}
	return kc, nil
}

// kclLogger routes the KCL's logs to slog.
type kclLogger struct{ l *slog.Logger }

func (k kclLogger) Debugf(f string, a ...interface{}) { k.l.Debug(fmt.Sprintf(f, a...)) }
func (k kclLogger) Infof(f string, a ...interface{})  { k.l.Debug(fmt.Sprintf(f, a...)) }
func (k kclLogger) Warnf(f string, a ...interface{})  { k.l.Warn(fmt.Sprintf(f, a...)) }
func (k kclLogger) Errorf(f string, a ...interface{}) { k.l.Error(fmt.Sprintf(f, a...)) }
func (k kclLogger) Fatalf(f string, a ...interface{}) {
	k.l.Error(fmt.Sprintf(f, a...))
	panic(fmt.Sprintf(f, a...))
}
func (k kclLogger) Panicf(f string, a ...interface{}) { panic(fmt.Sprintf(f, a...)) }
func (k kclLogger) WithFields(fs klog.Fields) klog.Logger {
	args := make([]any, 0, 2*len(fs))
	for n, v := range fs {
		args = append(args, n, v)
	}
	return kclLogger{k.l.With(args...)}
}
