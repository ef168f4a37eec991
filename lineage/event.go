package lineage

import "time"

// EventKind says which OpenLineage event shape a record carried.
type EventKind uint8

const (
	// KindRun is an OpenLineage RunEvent: lineage observed while a job ran.
	KindRun EventKind = iota + 1
	// KindDataset is an OpenLineage DatasetEvent: static metadata, no run.
	KindDataset
	// KindJob is an OpenLineage JobEvent: design-time lineage, no run.
	KindJob
)

func (k EventKind) String() string {
	switch k {
	case KindRun:
		return "RunEvent"
	case KindDataset:
		return "DatasetEvent"
	case KindJob:
		return "JobEvent"
	}
	return "UnknownEvent"
}

// EventType is the OpenLineage run state transition. The spec makes it
// optional: [TypeUnspecified] is a valid value.
type EventType string

const (
	TypeUnspecified EventType = ""
	TypeStart       EventType = "START"
	TypeRunning     EventType = "RUNNING"
	TypeComplete    EventType = "COMPLETE"
	TypeAbort       EventType = "ABORT"
	TypeFail        EventType = "FAIL"
	TypeOther       EventType = "OTHER"
)

// Terminal reports whether t ends a run.
func (t EventType) Terminal() bool {
	return t == TypeComplete || t == TypeAbort || t == TypeFail
}

// Dataset names a dataset. Namespace and Name may hold any Unicode,
// including '/', ':', '|' and quotes.
type Dataset struct {
	Namespace string
	Name      string
}

// Job names a job.
type Job struct {
	Namespace string
	Name      string
}

// ParentRun is the OpenLineage parent run facet: the run that started this
// one (a Spark application for a Spark SQL execution, an Airflow task...).
type ParentRun struct {
	RunID string
	Job   Job
}

// ColumnLineage is the columnLineage facet of one output dataset, kept
// verbatim (raw JSON): [ColumnLineage.Edges] reads its field pairs.
type ColumnLineage struct {
	Output Dataset
	Raw    []byte
}

// Leniency is a set of departures from the OpenLineage spec that the
// decoder accepted where Marquez accepts them, so that producers can be
// told (each is counted in a metric).
type Leniency uint8

const (
	// LenientZonelessTime: eventTime without a zone offset, read as UTC
	// (older Python clients and Marquez samples write them).
	LenientZonelessTime Leniency = 1 << iota
	// LenientKindFromSchemaURL: a record with an eventType but no run,
	// read as a JobEvent (or DatasetEvent) because its schemaURL says so.
	LenientKindFromSchemaURL
	// LenientInvalidParent: a parent run facet that is not a valid
	// {run: {runId}, job: {namespace, name}} (the Spark integration's own
	// serde test event has one without run) is ignored: the event has no
	// Parent. Nothing in the graph depends on it (it only picks the
	// Kinesis partition key).
	LenientInvalidParent
	// LenientCappedRunFacet: a processing_engine or externalQuery run
	// facet value longer than MaxRunFacetValue bytes was dropped (the
	// property is absent, as if the member were not there).
	LenientCappedRunFacet
)

// Leniencies lists every Leniency with its metric label.
var Leniencies = []struct {
	L    Leniency
	Name string
}{{LenientZonelessTime, "zoneless_event_time"}, {LenientKindFromSchemaURL, "kind_from_schema_url"},
	{LenientInvalidParent, "invalid_parent_facet"}, {LenientCappedRunFacet, "capped_run_facet_value"}}

// Event is one decoded lineage event, whatever format it arrived in.
//
// For KindRun, RunID and Job are set. For KindJob, Job is set and RunID is
// empty. For KindDataset, Datasets holds the dataset(s) described and Job is
// the zero value.
type Event struct {
	Kind   EventKind
	Type   EventType
	Time   time.Time // eventTime, as sent by the producer (UTC)
	RunID  string
	Job    Job
	Parent *ParentRun
	// KeyJob is the job the OpenLineage Kinesis transport keys a RunEvent
	// by when its parent run facet names one (OpenLineage format):
	// run.facets.parent.root.job, else run.facets.parent.job (each when a
	// valid {namespace, name}, even in a facet that is not a valid Parent);
	// zero otherwise. See [Event.RootJob].
	KeyJob   Job
	Inputs   []Dataset
	Outputs  []Dataset
	Datasets []Dataset // KindDataset only
	Columns  []ColumnLineage
	Run      RunFacets // KindRun only
	// Upstream and Downstream are the jobs of the jobDependencies run
	// facet's upstream and downstream entries ([JobDependencies]; KindRun
	// only).
	Upstream, Downstream []Job
	Aliases              []Alias // the symlinks of the datasets named (OpenLineage format only)
	// Lifecycle holds the outputs' lifecycleStateChange facets (OpenLineage
	// format only). An output whose state is DROP is not in Outputs.
	Lifecycle []Lifecycle
	// Facets are the vertex properties the facets of the event's
	// datasets (inputs, outputs not DROPped, a DatasetEvent's dataset)
	// and job give (OpenLineage format only): see [FacetProps].
	Facets []FacetProps
	// Explicit: a LineageJobFacet or an output's LineageDatasetFacet
	// counts (see [JobLineagePairs]); Pairs are the DatasetPairs they name.
	// With Explicit, Pairs are the event's DERIVES instead of inputs x
	// outputs (DESIGN.md, Lineage semantics 5).
	Explicit  bool
	Pairs     []DatasetPair
	Producer  string
	SchemaURL string
	Lenient   Leniency // the leniencies the record needed
}

// RootJob is the job whose name keys the event's records on Kinesis, the
// way the OpenLineage Kinesis transport does: the parent run facet's root
// job when given, else the parent's job, else the event's own job.
func (e *Event) RootJob() Job {
	if e.KeyJob.Name != "" {
		return e.KeyJob
	}
	if e.Parent != nil && e.Parent.Job.Name != "" {
		return e.Parent.Job
	}
	return e.Job
}

// PartitionKey is the Kinesis partition key the OpenLineage Kinesis
// transport gives this event: run:<ns>/<name> of [Event.RootJob] for run
// events, job:<ns>/<name> for job events, dataset:<ns>/<name> for dataset
// events.
func (e *Event) PartitionKey() string {
	switch e.Kind {
	case KindDataset:
		if len(e.Datasets) > 0 {
			return "dataset:" + e.Datasets[0].Namespace + "/" + e.Datasets[0].Name
		}
		return "dataset:"
	case KindJob:
		return "job:" + e.Job.Namespace + "/" + e.Job.Name
	}
	j := e.RootJob()
	return "run:" + j.Namespace + "/" + j.Name
}
