// Package metrics exports the worker's counters to Prometheus (prefix
// lineage_). Almost everything is read at scrape time from what the
// processor, the KCL worker and the sink already count ([processor.Stats],
// [source.Stats], [source.Worker.Shards], [sink.Neptune.Stats]): no second set of
// counters, no cost on the record path. The only things measured here are
// per sink batch, by [Exporter.WrapSink]: its latency and the vertices and
// edges it made true in the graph.
//
// It owns no state of the pipeline and never blocks it: a scrape takes the
// worker's shard-map lock and each shard's outbox lock briefly, one at a
// time.
package metrics

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/source"
)

// Worker is what the exporter reads of a running worker
// ([*source.Worker] implements it): the pipeline's counters, the KCL
// side's, and the shards it holds.
type Worker interface {
	PipelineStats() *processor.Stats
	Stats() *source.Stats
	Running() bool
	Shards() []source.ShardStatus
}

// SinkStats is implemented by sinks that count their requests and retries
// ([*sink.Neptune]).
type SinkStats interface {
	Stats() sink.Stats
}

// SinkCodes are the error classes of [sink.Code], each exported as a
// lineage_sink_retries_total series from the start (0 until it happens), so
// that rate() and alerts see the series before the first retry.
var SinkCodes = []sink.Code{
	sink.CodeConcurrentModification, sink.CodeConstraintViolation, sink.CodeReadOnlyViolation,
	sink.CodeThrottling, sink.CodeTimeout, sink.CodeConnection, sink.CodeMissingVertex, sink.CodeOther,
}

// SinkLatencyBuckets are the bounds (seconds) of lineage_sink_batch_duration_seconds.
var SinkLatencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Config configures an [Exporter].
type Config struct {
	// Sink is the sink's own counters, if it has them (nil: log, file and
	// memory sinks; the lineage_sink_requests/records/retries series are
	// then absent).
	Sink SinkStats
	// Now is the clock of checkpoint ages (default time.Now).
	Now func() time.Time
	// Process adds the Go runtime and process collectors (go_*, process_*).
	Process bool
}

// Exporter is the Prometheus registry of one worker process. Create it
// before the worker (its sink wrapper goes into the worker's config), then
// [Exporter.SetWorker]. Safe for concurrent use.
type Exporter struct {
	cfg    Config
	reg    *prometheus.Registry
	worker atomic.Pointer[workerBox]

	// Measured by the sink wrapper.
	batchDur     *prometheus.HistogramVec
	vertexWrites atomic.Uint64
	edgeWrites   atomic.Uint64
	unique       uniqueWrites
	lastResult   struct {
		sync.Mutex
		err error // of the last finished WriteBatch (nil: ok or none yet)
		at  time.Time
	}
}

type workerBox struct{ w Worker }

// New returns an exporter with every lineage_ metric registered.
func New(cfg Config) *Exporter {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Exporter{cfg: cfg, reg: prometheus.NewRegistry()}
	e.batchDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "lineage_sink_batch_duration_seconds",
		Help:    "Latency of one sink WriteBatch (a sealed-window chunk made true in the graph, retries included), by result (ok, error).",
		Buckets: SinkLatencyBuckets,
	}, []string{"result"})
	e.batchDur.WithLabelValues("ok")
	e.batchDur.WithLabelValues("error")
	e.reg.MustRegister(e.batchDur, &collector{e: e})
	if cfg.Process {
		e.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return e
}

// SetWorker makes the exporter read w from now on.
func (e *Exporter) SetWorker(w Worker) { e.worker.Store(&workerBox{w}) }

func (e *Exporter) currentWorker() Worker {
	if b := e.worker.Load(); b != nil {
		return b.w
	}
	return nil
}

// Registry is the exporter's registry (for tests and extra collectors).
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Handler serves the registry in the Prometheus text format.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{Registry: e.reg})
}

// WrapSink returns w measured: every WriteBatch is timed, and an
// acknowledged one counts its vertices and edges as graph writes. The
// wrapper adds no blocking and no retries; it keeps w's optional
// capabilities out of reach, so pass the unwrapped sink as Config.Sink.
func (e *Exporter) WrapSink(w sink.Writer) sink.Writer { return &measured{w: w, e: e} }

type measured struct {
	w sink.Writer
	e *Exporter
}

func (m *measured) WriteBatch(ctx context.Context, b sink.Batch) error {
	start := time.Now()
	err := m.w.WriteBatch(ctx, b)
	d := time.Since(start).Seconds()
	if err == nil {
		m.e.batchDur.WithLabelValues("ok").Observe(d)
		m.e.vertexWrites.Add(uint64(len(b.Vertices)))
		m.e.edgeWrites.Add(uint64(len(b.Edges)))
		m.e.unique.add(b)
	} else {
		m.e.batchDur.WithLabelValues("error").Observe(d)
	}
	if ctx.Err() == nil { // a cancelled call says nothing about the graph
		m.e.lastResult.Lock()
		m.e.lastResult.err, m.e.lastResult.at = err, time.Now()
		m.e.lastResult.Unlock()
	}
	return err
}

func (m *measured) Close(ctx context.Context) error { return m.w.Close(ctx) }

// LastSinkError returns when the last WriteBatch finished and its error
// (nil if it succeeded or none has finished yet).
func (e *Exporter) LastSinkError() (time.Time, error) {
	e.lastResult.Lock()
	defer e.lastResult.Unlock()
	return e.lastResult.at, e.lastResult.err
}

// The metrics read at scrape time.
var (
	descRecords    = desc("lineage_records_read_total", "User records read from Kinesis (after KPL de-aggregation), redeliveries skipped on resume excluded.")
	descSkipped    = desc("lineage_records_skipped_total", "Redelivered records at or before a shard's resumed position (already processed before a restart).")
	descEvents     = desc("lineage_events_decoded_total", "Records decoded into valid OpenLineage events (duplicates excluded).")
	descDuplicates = desc("lineage_duplicates_detected_total", "Valid records byte-identical to one seen within the dedup TTL (producer retries).")
	descInvalid    = desc("lineage_invalid_records_total", "Records refused as dead letters, by reason.", "reason")
	descLenient    = desc("lineage_lenient_records_total", "Events accepted only by a leniency Marquez also has (zoneless_event_time: eventTime without a zone, read as UTC; kind_from_schema_url: an eventType without a run, read as the JobEvent/DatasetEvent its schemaURL names; invalid_parent_facet: a parent run facet that is not valid, ignored): producers to fix.", "kind")
	descParked     = desc("lineage_sink_parked_items_total", "Vertices and edges the graph or its client refused permanently, each set apart from its batch and parked (the rest written): lineageflow deadletters -parked lists them, -replay-parked writes them again.")
	descNFC        = desc("lineage_names_normalized_total", "Events one of whose namespaces or names was rewritten to Unicode NFC (so NFC and NFD spellings are one dataset).")
	descLate       = desc("lineage_late_records_total", "Records whose window had already sealed (still written, in a later batch).")
	descSealed     = desc("lineage_windows_sealed_total", "Windows sealed into the outbox.")
	descEdges      = desc("lineage_edges_emitted_total", "Collapsed edges written to outbox entries.")
	descVertices   = desc("lineage_vertices_emitted_total", "Vertices written to outbox entries.")
	descRunsExp    = desc("lineage_runs_expired_total", "Open runs dropped after the run timeout without a terminal event.")
	descRefresh    = desc("lineage_refresh_lane_records_total", "Records sent to a refresh window (-refresh-window): stamp-only refreshes collapsed over the longer window.")
	descBudget     = desc("lineage_budget_total", "What the processor's budgets did, by budget (processor.BudgetStats): events refused, datasets and edges left out, spills and barriers forced, dead letters deleted, runs evicted, datasets cut from a run store item (run_store_item).", "budget")
	descCkpt       = desc("lineage_checkpoints_total", "KCL checkpoints written.")
	descHandedOff  = desc("lineage_runs_handed_off_total", "Runs a parent shard handed to its children at shard end (split or merge).")
	descHandedIn   = desc("lineage_runs_handed_in_total", "Runs a child shard loaded from its parents' handoffs.")
	descHandoffExp = desc("lineage_handoff_runs_expired_total", "Handed-in runs that expired on this child (their events went to the sibling).")
	descHandoffMis = desc("lineage_handoffs_missing_total", "Parent shards whose handoff a child did not find (alert: open runs of that parent may lose edges).")
	descHOWait     = desc("lineage_handoffs_waiting", "Child shards waiting for a parent's handoff they cannot read (retried for ever; the worker is not ready meanwhile).")
	descHOFail     = desc("lineage_handoff_read_failures_total", "Failed reads of a parent's handoff (or of a child's parents) by a child shard, each retried.")
	descSinkErrs   = desc("lineage_sink_errors_total", "Failed sink WriteBatch calls seen by the processor (each retried, never dropped).")
	descOutboxAck  = desc("lineage_outbox_acked_total", "Outbox entries acknowledged by the sink.")
	descReduction  = desc("lineage_write_reduction_ratio", "Write reduction: graph writes per decoded input event since start (with the Gremlin sink: the records it sent, after its vertex cache and cross-shard merge; otherwise the upserts in acknowledged batches). Lower is better; 0 before the first event.")
	descBackpress  = desc("lineage_backpressured", "1 while intake is blocked because a shard's outbox is full (the graph is slow or down): the analogue of Flink's isBackPressured.")
	descBarrier    = desc("lineage_barrier_duration_seconds", "Duration of barriers (one synced Pebble batch: window deltas, sealed windows, run and dedup state, position).")
	descBarrierMax = desc("lineage_barrier_duration_max_seconds", "Longest barrier since start.")
	descRunning    = desc("lineage_worker_running", "1 while the KCL worker is started and not shutting down (holding leases or waiting for some).")
	descLeases     = desc("lineage_leases_held", "Shards this worker holds a lease on (a lease found taken by another worker is dropped from it at once).")
	descLeasesLost = desc("lineage_leases_lost_total", "Leases found taken by another worker while this one still held the shard (frozen past the failover time, a partition, a steal).")
	descOutbox     = desc("lineage_outbox_depth", "Sealed-window entries of a shard not yet acknowledged by the sink (the analogue of Neptune's request queue); sealing blocks at -outbox-cap.", "shard")
	descShardBP    = desc("lineage_shard_backpressured", "1 while the shard's sealing waits for outbox room.", "shard")
	descBehind     = desc("lineage_shard_millis_behind_latest", "MillisBehindLatest of the shard's last GetRecords: how far reading is behind the tip of the stream.", "shard")
	descCkptAge    = desc("lineage_shard_checkpoint_age_seconds", "Seconds the oldest records read since the shard's last KCL checkpoint have waited for one (0 when everything read is checkpointed): about what a restart would replay. Grows while an open window or run holds the checkpoint back.", "shard")
	descSinkReq    = desc("lineage_sink_requests_total", "Gremlin requests (traversals) acknowledged by the graph.")
	descSinkRec    = desc("lineage_sink_records_total", "Vertices and edges in acknowledged Gremlin requests (after the vertex cache).")
	descSinkRun    = desc("lineage_sink_run_records_total", "Run vertices (run history) in acknowledged Gremlin requests: the part of lineage_sink_records_total that is not lineage.")
	descSinkFail   = desc("lineage_sink_request_failures_total", "Gremlin requests given up after their retries (the batch is sent again).")
	descSinkCache  = desc("lineage_sink_vertex_cache_hits_total", "Vertices not sent because the sink's cache knew them as written.")
	descSinkMerged = desc("lineage_sink_coalesced_records_total", "Edges and vertices not sent because a request merged from several batches carried them already.")
	descSinkRetry  = desc("lineage_sink_retries_total", "Gremlin request retries by error code (Neptune exception class, Timeout, Connection, ...).", "code")
	descSinkBatch  = desc("lineage_sink_batches_total", "Sink WriteBatch calls.")
	descUnique     = desc("lineage_sink_unique_writes_total", "Distinct vertex and edge ids (idempotency keys) per window in acknowledged sink batches, by kind: a batch sent again adds nothing. What a canary and production compare (the divergence ratio of their rates).", "kind")
	descSDClaims   = desc("lineage_dedup_shared_claims_total", "Record keys claimed on the shared dedup tier (-dedup redis://...): one SET NX GET each, pipelined per batch.")
	descSDDups     = desc("lineage_dedup_shared_duplicates_total", "Duplicates only the shared dedup tier knew (seen by another shard or worker; included in lineage_duplicates_detected_total): what the local tier alone would have missed.")
	descSDFallback = desc("lineage_dedup_shared_fallback_records_total", "Records the local dedup tier decided alone because the shared tier's claim failed or timed out (-dedup-timeout).")
	descSDDegraded = desc("lineage_dedup_shared_degraded", "1 while the last claim on the shared dedup tier failed (the local tier decides alone; ingestion goes on).")
	descSDClaimDur = desc("lineage_dedup_shared_claim_duration_seconds", "Time of the shared dedup tier's claims, one per record batch: the latency it adds to a batch.")
	descRSReads    = desc("lineage_run_store_reads_total", "Runs asked of the shared run store (-run-store dynamodb): the runs of a batch a shard did not hold, one batched read per batch.")
	descRSHits     = desc("lineage_run_store_hits_total", "Runs found in the shared run store (a shard's new owner loading a run its predecessor held).")
	descRSWrites   = desc("lineage_run_store_writes_total", "Runs written to the shared run store (those changed since the last barrier, before its commit).")
	descRSReadDur  = desc("lineage_run_store_read_duration_seconds", "Time of the run store's batched reads (one per batch with unknown runs): the latency added to the first event of a run a shard does not hold.")
	descRSWriteDur = desc("lineage_run_store_write_duration_seconds", "Time of the run store's writes, one per barrier with changed runs (part of the barrier's duration).")
	descArcObjects = desc("lineage_archive_objects_total", "Parquet objects the event archive (-archive) put, by table (events, dead_letters).", "table")
	descArcBytes   = desc("lineage_archive_bytes_total", "Bytes of the Parquet objects the event archive put, by table (events, dead_letters).", "table")
	descArcRows    = desc("lineage_archive_rows_total", "Rows added to the event archive's pending entries, by table (events: unique valid events; dead_letters).", "table")
	descArcPending = desc("lineage_archive_pending_bytes", "Bytes of archive entries in Pebble not yet written to S3 (all shards of the worker).")
	descArcLag     = desc("lineage_archive_lag_seconds", "Age of the oldest archive entry not yet written to S3: the KCL checkpoint waits for it (bounded by -archive-max-age while S3 answers).")
	descArcErrors  = desc("lineage_archive_errors_total", "Failed archive cut attempts (S3 or Pebble), each retried, never dropped.")
	descWrites     = desc("lineage_graph_writes_total", "Vertex and edge upserts in acknowledged sink batches, by kind (vertex, edge): what the processor asked for; the Gremlin sink sends fewer (lineage_sink_records_total).", "kind")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// collector reads the worker and the sink at scrape time.
type collector struct{ e *Exporter }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecords, descSkipped, descEvents, descDuplicates, descInvalid, descLenient,
		descNFC, descParked, descLate, descSealed, descEdges, descVertices, descRunsExp, descRefresh, descBudget, descLeasesLost, descCkpt, descSinkErrs, descOutboxAck,
		descHandedOff, descHandedIn, descHandoffExp, descHandoffMis, descHOWait, descHOFail,
		descReduction, descBackpress, descBarrier, descBarrierMax, descRunning, descLeases, descOutbox,
		descShardBP, descBehind, descCkptAge, descSinkReq, descSinkRec, descSinkRun, descSinkFail, descSinkCache, descSinkMerged,
		descSinkRetry, descSinkBatch, descWrites, descUnique, descSDClaims, descSDDups, descSDFallback, descSDDegraded, descSDClaimDur,
		descRSReads, descRSHits, descRSWrites, descRSReadDur, descRSWriteDur,
		descArcObjects, descArcBytes, descArcRows, descArcPending, descArcLag, descArcErrors} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	vw, ew := float64(e.vertexWrites.Load()), float64(e.edgeWrites.Load())
	counter(descWrites, vw, "vertex")
	counter(descWrites, ew, "edge")
	uv, ue := e.unique.totals()
	counter(descUnique, float64(uv), "vertex")
	counter(descUnique, float64(ue), "edge")
	graphWrites := vw + ew
	if s := e.cfg.Sink; s != nil {
		st := s.Stats()
		graphWrites = float64(st.Records) // what reached the graph: after the vertex cache and the merge
		counter(descSinkBatch, float64(st.Batches))
		counter(descSinkReq, float64(st.Requests))
		counter(descSinkRec, float64(st.Records))
		counter(descSinkRun, float64(st.RunRecords))
		counter(descSinkFail, float64(st.Failures))
		counter(descSinkCache, float64(st.CacheHits))
		counter(descSinkMerged, float64(st.Coalesced))
		for _, code := range SinkCodes {
			counter(descSinkRetry, float64(st.Retries[code]), string(code))
		}
		for code, n := range st.Retries { // a class added to the sink later
			if !knownCode(code) {
				counter(descSinkRetry, float64(n), string(code))
			}
		}
	}
	w := e.currentWorker()
	if w == nil {
		gauge(descRunning, 0)
		gauge(descLeases, 0)
		gauge(descBackpress, 0)
		return
	}
	st, src := w.PipelineStats(), w.Stats()
	counter(descRecords, float64(st.Records.Load()))
	counter(descSkipped, float64(st.Skipped.Load()))
	events := st.Events.Load()
	counter(descEvents, float64(events))
	counter(descDuplicates, float64(st.Duplicates.Load()))
	counter(descSDClaims, float64(st.SharedDedupClaims.Load()))
	counter(descSDDups, float64(st.SharedDedupDuplicates.Load()))
	counter(descSDFallback, float64(st.SharedDedupFallbacks.Load()))
	gauge(descSDDegraded, b2f(st.SharedDedupDegraded()))
	ch <- prometheus.MustNewConstSummary(descSDClaimDur, uint64(st.SharedDedupCalls.Load()),
		time.Duration(st.SharedDedupNanos.Load()).Seconds(), nil)
	for reason, n := range st.Invalid() {
		counter(descInvalid, float64(n), string(reason))
	}
	for kind, n := range st.Lenient() {
		counter(descLenient, float64(n), kind)
	}
	counter(descLate, float64(st.Late.Load()))
	counter(descNFC, float64(st.NamesNormalized.Load()))
	counter(descParked, float64(st.ItemsParked.Load()))
	counter(descSealed, float64(st.WindowsSealed.Load()))
	counter(descEdges, float64(st.EdgesEmitted.Load()))
	counter(descVertices, float64(st.VerticesEmitted.Load()))
	counter(descRunsExp, float64(st.RunsExpired.Load()))
	counter(descRefresh, float64(st.RefreshLane.Load()))
	for name, n := range st.Budget.Map() {
		counter(descBudget, float64(n), name)
	}
	counter(descCkpt, float64(src.Checkpoints.Load()))
	counter(descLeasesLost, float64(src.LeasesLost.Load()))
	counter(descHandedOff, float64(st.RunsHandedOff.Load()))
	counter(descHandedIn, float64(st.RunsHandedIn.Load()))
	counter(descHandoffExp, float64(st.HandoffRunsExpired.Load()))
	counter(descHandoffMis, float64(src.HandoffsMissing.Load()))
	counter(descRSReads, float64(st.RunStoreReads.Load()))
	counter(descRSHits, float64(st.RunStoreHits.Load()))
	counter(descRSWrites, float64(st.RunStoreWrites.Load()))
	ch <- prometheus.MustNewConstSummary(descRSReadDur, uint64(st.RunStoreReadCalls.Load()),
		time.Duration(st.RunStoreReadNanos.Load()).Seconds(), nil)
	ch <- prometheus.MustNewConstSummary(descRSWriteDur, uint64(st.RunStoreWriteCalls.Load()),
		time.Duration(st.RunStoreWriteNanos.Load()).Seconds(), nil)
	gauge(descHOWait, float64(src.HandoffsWaiting.Load()))
	counter(descHOFail, float64(src.HandoffReadFails.Load()))
	counter(descSinkErrs, float64(st.SinkErrors.Load()))
	counter(descOutboxAck, float64(st.OutboxAcked.Load()))
	for i, table := range [...]string{"events", "dead_letters"} {
		counter(descArcObjects, float64(st.ArchiveObjects[i].Load()), table)
		counter(descArcBytes, float64(st.ArchiveBytes[i].Load()), table)
	}
	counter(descArcRows, float64(st.ArchiveEvents.Load()), "events")
	counter(descArcRows, float64(st.ArchiveDeadLetters.Load()), "dead_letters")
	gauge(descArcPending, float64(st.ArchivePendingBytes.Load()))
	gauge(descArcLag, st.ArchiveLag(time.Now()).Seconds())
	counter(descArcErrors, float64(st.ArchiveErrors.Load()))
	ratio := 0.0
	if events > 0 {
		ratio = graphWrites / float64(events)
	}
	gauge(descReduction, ratio)
	gauge(descBackpress, b2f(st.IsBackPressured()))
	cum, count, sum := st.BarrierHistogram()
	buckets := make(map[float64]uint64, len(cum))
	for i, b := range processor.BarrierBuckets {
		buckets[b.Seconds()] = cum[i]
	}
	ch <- prometheus.MustNewConstHistogram(descBarrier, count, sum, buckets)
	gauge(descBarrierMax, time.Duration(st.BarrierMaxNanos.Load()).Seconds())
	gauge(descRunning, b2f(w.Running()))
	shards := w.Shards()
	gauge(descLeases, float64(len(shards)))
	now := e.cfg.Now()
	for _, s := range shards {
		gauge(descOutbox, float64(s.OutboxDepth), s.ID)
		gauge(descShardBP, b2f(s.Backpressured), s.ID)
		if s.MillisBehindLatest >= 0 {
			gauge(descBehind, float64(s.MillisBehindLatest), s.ID)
		}
		age := 0.0
		if !s.Uncheckpointed.IsZero() {
			age = max(0, now.Sub(s.Uncheckpointed).Seconds())
		}
		gauge(descCkptAge, age, s.ID)
	}
}

func knownCode(c sink.Code) bool {
	for _, k := range SinkCodes {
		if k == c {
			return true
		}
	}
	return false
}
