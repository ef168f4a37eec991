package collect

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the collector's Prometheus series (lineageflow_collect_*).
type metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec // route, code
	events         *prometheus.CounterVec // result: stored, refused, unavailable
	refused        *prometheus.CounterVec // reason (the worker's dead-letter reasons)
	keyRequests    *prometheus.CounterVec // key id (hash prefix, never the key), code
	putRequests    prometheus.Counter
	putErrors      prometheus.Counter
	throttles      prometheus.Counter
	retries        prometheus.Counter
	kinesisRecords prometheus.Counter
	kinesisBytes   prometheus.Counter
	aggregates     prometheus.Counter
	budgetFull     *prometheus.CounterVec // what: bytes, requests
	encodings      *prometheus.CounterVec // Content-Encoding: gzip, identity
	inflightBytes  prometheus.Gauge
	inflightReqs   prometheus.Gauge
	ackSeconds     prometheus.Histogram
}

func newMetrics() *metrics {
	ns := "lineageflow_collect_"
	m := &metrics{
		reg:            prometheus.NewRegistry(),
		requests:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "requests_total", Help: "HTTP requests by route and status code."}, []string{"route", "code"}),
		events:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "events_total", Help: "Events by outcome: stored (in the stream, acknowledged), refused (4xx), unavailable (Kinesis did not take them: 503)."}, []string{"result"}),
		refused:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "refused_total", Help: "Events refused at the door, by the worker's dead-letter reason."}, []string{"reason"}),
		keyRequests:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "key_requests_total", Help: "Requests by API key id (first 12 hex digits of the key's SHA-256) and status code."}, []string{"key", "code"}),
		putRequests:    prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "putrecords_requests_total", Help: "PutRecords calls."}),
		putErrors:      prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "putrecords_errors_total", Help: "PutRecords calls that failed as a whole."}),
		throttles:      prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "kinesis_throttles_total", Help: "Kinesis records refused with ProvisionedThroughputExceededException."}),
		retries:        prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "kinesis_retries_total", Help: "Kinesis records sent again after a failure."}),
		kinesisRecords: prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "kinesis_records_total", Help: "Kinesis records stored (an aggregate counts once)."}),
		kinesisBytes:   prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "kinesis_bytes_total", Help: "Bytes of the Kinesis records stored (data and partition key)."}),
		aggregates:     prometheus.NewCounter(prometheus.CounterOpts{Name: ns + "kpl_aggregates_total", Help: "KPL aggregates built."}),
		budgetFull:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "budget_full_total", Help: "Requests answered 429 because the in-flight budget was full, by what was full."}, []string{"what"}),
		encodings:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "request_encodings_total", Help: "Accepted request bodies by Content-Encoding (gzip, identity)."}, []string{"encoding"}),
		inflightBytes:  prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "inflight_bytes", Help: "Event bytes held, not yet acknowledged."}),
		inflightReqs:   prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "inflight_requests", Help: "Requests being read or waiting for Kinesis."}),
		ackSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: ns + "ack_seconds", Help: "Time from a request's body read to its events in the stream.",
			Buckets: []float64{.002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10}}),
	}
	m.reg.MustRegister(m.requests, m.events, m.refused, m.keyRequests, m.putRequests, m.putErrors, m.throttles, m.retries,
		m.kinesisRecords, m.kinesisBytes, m.aggregates, m.budgetFull, m.encodings, m.inflightBytes, m.inflightReqs, m.ackSeconds)
	return m
}
