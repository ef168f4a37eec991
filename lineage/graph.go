package lineage

// Vertex labels and edge labels of the graph model (Neptune-compatible).
const (
	LabelDataset = "Dataset"
	LabelJob     = "Job"
	// LabelRun is a run of a job, whatever its outcome (see [RunVertexID]).
	LabelRun = "Run"

	// EdgeInputTo is Dataset -[INPUT_TO]-> Job.
	EdgeInputTo = "INPUT_TO"
	// EdgeOutputs is Job -[OUTPUTS]-> Dataset.
	EdgeOutputs = "OUTPUTS"
	// EdgeDerives is the collapsed origin->destination edge Dataset -[DERIVES]-> Dataset.
	EdgeDerives = "DERIVES"

	// EdgeRunOf (Run -[RUN_OF]-> Job), EdgeRead and EdgeWrote (Run ->
	// Dataset) are no longer written: a Run vertex names its job and its
	// datasets in properties (PropJob, PropInputs, PropOutputs). Kept for
	// graphs written before, and the sink's conformance tests.
	EdgeRunOf = "RUN_OF"
	EdgeRead  = "READ"
	EdgeWrote = "WROTE"
	// EdgeChildOf is Job -[CHILD_OF]-> Job (the parent run facet's job).
	// Structure, not lineage.
	EdgeChildOf = "CHILD_OF"
	// EdgeDependsOn is Job -[DEPENDS_ON]-> Job: the jobDependencies run
	// facet's upstream jobs of the event's job (and its downstream jobs
	// on it), whatever the run's outcome. Structure, not lineage.
	EdgeDependsOn = "DEPENDS_ON"
)

// Property keys of the vertices and edges themselves (not [Prop]s: the sink
// writes them from [Vertex] and [Edge] fields). The names of all other
// properties are the Prop* constants next to what they describe; the
// stamp of a mergeable property k is the property k + [StampSuffix].
const (
	PropNamespace = "namespace" // Dataset, Job, DatasetAlias (DatasetField: its dataset's): set when the vertex is created
	PropName      = "name"      // idem
	PropFirstSeen = "firstSeen" // edges: min eventTime (Unix ms) of the reports
	PropLastSeen  = "lastSeen"  // edges: max eventTime (Unix ms) of the reports
	PropLastRunID = "lastRunId" // edges: the run of lastSeen (ties: the larger run id)
)

// Run vertex property keys (see [Prop] for the merge rules).
const (
	PropRunID            = "runId"            // constant
	PropJobNamespace     = "jobNamespace"     // the job of the run's earliest event (stamp -eventTime)
	PropJobName          = "jobName"          // idem
	PropState            = "state"            // see RunStateProp
	PropStartedAt        = "startedAt"        // min eventTime of the run's events
	PropEndedAt          = "endedAt"          // max eventTime of its terminal events
	PropDurationMs       = "durationMs"       // max of endedAt - startedAt as the processor knows them
	PropUpdatedAt        = "updatedAt"        // max eventTime of the run's events
	PropErrorMessage     = "errorMessage"     // errorMessage run facet's message, last writer wins
	PropNominalStartTime = "nominalStartTime" // nominalTime run facet, last writer wins
	PropNominalEndTime   = "nominalEndTime"   // idem
	PropParentRunID      = "parentRunId"      // the parent run facet's runId, last writer wins
	// processing_engine and externalQuery run facets, each value at most
	// MaxRunFacetValue bytes, last writer wins.
	PropProcessingEngine          = "processingEngine"          // processing_engine.name
	PropProcessingEngineVersion   = "processingEngineVersion"   // processing_engine.version
	PropOpenlineageAdapterVersion = "openlineageAdapterVersion" // processing_engine.openlineageAdapterVersion
	PropExternalQueryID           = "externalQueryId"           // externalQuery.externalQueryId
	PropExternalQuerySource       = "externalQuerySource"       // externalQuery.source
	PropJob                       = "job"                       // the Job vertex id of the run's job (constant): runs are found by it
	PropInputs                    = "inputs"                    // the ids of the datasets the run read, a capped list (see RunDatasetList)
	PropOutputs                   = "outputs"                   // the ids of the datasets the run wrote, idem
	PropInputCount                = "inputCount"                // how many datasets it read (maximum): more than inputs holds when capped
	PropOutputCount               = "outputCount"               // how many it wrote, idem
)

// Job health and dataset write properties (DESIGN.md, Lineage semantics
// 14), written for every run whatever -runs says.
const (
	PropLatestRunID       = "latestRunId"       // Job: the runId of its latest run event by eventTime (last writer wins)
	PropLatestRunState    = "latestRunState"    // Job: that event's state, Marquez's (RUNNING, COMPLETED, FAILED, ABORTED)
	PropLatestRunAt       = "latestRunAt"       // Job: that event's eventTime (max eventTime of its run events)
	PropLastTerminalState = "lastTerminalState" // Job: the state of its latest terminal event (last writer wins)
	PropLastSuccessAt     = "lastSuccessAt"     // Job: max eventTime of its COMPLETE events
	PropLastFailureAt     = "lastFailureAt"     // Job: max eventTime of its FAIL and ABORT events
	PropLastWrittenAt     = "lastWrittenAt"     // Dataset: max lastSeen of the OUTPUTS of committed runs
	PropLastWriteRunID    = "lastWriteRunId"    // Dataset: the run of lastWrittenAt (last writer wins)
)

// IsRunHistoryProp reports whether key is one of the job health and
// dataset write properties (run history, counted apart from lineage).
func IsRunHistoryProp(key string) bool {
	switch key {
	case PropLatestRunID, PropLatestRunState, PropLatestRunAt, PropLastTerminalState, PropLastSuccessAt, PropLastFailureAt,
		PropLastWrittenAt, PropLastWriteRunID:
		return true
	}
	return false
}

// HealthState is the Marquez run state an event of type t reports
// (START and RUNNING: RUNNING; COMPLETE: COMPLETED; FAIL: FAILED; ABORT:
// ABORTED); "" for OTHER and no eventType, which report none.
func HealthState(t EventType) string {
	switch t {
	case TypeStart, TypeRunning:
		return "RUNNING"
	case TypeComplete:
		return "COMPLETED"
	case TypeFail:
		return "FAILED"
	case TypeAbort:
		return "ABORTED"
	}
	return ""
}

// HealthProps are the Job health properties one RunEvent of type t of
// run runID at eventTime ms gives its job (none for a state "").
func HealthProps(dst []Prop, t EventType, runID string, ms int64) []Prop {
	st := HealthState(t)
	if st == "" {
		return dst
	}
	dst = append(dst, StrLWW(PropLatestRunID, runID, ms), StrLWW(PropLatestRunState, st, ms), NumMax(PropLatestRunAt, ms))
	if t.Terminal() {
		dst = append(dst, StrLWW(PropLastTerminalState, st, ms))
		if t == TypeComplete {
			dst = append(dst, NumMax(PropLastSuccessAt, ms))
		} else {
			dst = append(dst, NumMax(PropLastFailureAt, ms))
		}
	}
	return dst
}

// WriteProps are the Dataset properties an OUTPUTS edge of run runID
// stamped up to last gives its dataset.
func WriteProps(dst []Prop, runID string, last int64) []Prop {
	return append(dst, NumMax(PropLastWrittenAt, last), StrLWW(PropLastWriteRunID, runID, last))
}

// Vertex is one graph vertex. Its ID is a pure, injective function of
// (Label, Namespace, Name): see [DatasetID], [JobID] and [RunVertexID].
// Namespace and Name are written when the vertex is created; Props are
// merged into the graph's by the rules of [Prop]. A Run vertex has an empty
// Namespace and Name (its name is the runId property).
type Vertex struct {
	ID        string
	Label     string
	Namespace string
	Name      string
	Props     Props `json:",omitempty"`
}

// Merge folds o (same id) into v: the properties by the rules of [Prop].
func (v *Vertex) Merge(o Vertex) { v.Props = v.Props.Merge(o.Props) }

// MergeVertexInto applies v to the vertices m (by id) as the graph applies
// a vertex upsert.
func MergeVertexInto(m map[string]Vertex, v Vertex) {
	if cur, ok := m[v.ID]; ok {
		cur.Merge(v)
		v = cur
	}
	m[v.ID] = v
}

// Edge is one graph edge with the properties that the sink merges by
// commutative rules: FirstSeen = min, LastSeen = max, LastRunID follows the
// maximum LastSeen (ties broken by the larger run id). Times are Unix
// milliseconds of producer event times, never of processing time.
type Edge struct {
	ID        string
	Label     string
	OutV      string
	InV       string
	FirstSeen int64
	LastSeen  int64
	LastRunID string
	// Props are further mergeable properties ([Prop] rules): a
	// COLUMN_DERIVES edge's transformation type and description.
	Props Props `json:",omitempty"`
}

// Merge folds o into e by the commutative, idempotent rules above. e and o
// must have the same ID.
func (e *Edge) Merge(o Edge) {
	if o.Props != "" && o.Props != e.Props {
		e.Props = e.Props.Merge(o.Props)
	}
	if o.FirstSeen < e.FirstSeen {
		e.FirstSeen = o.FirstSeen
	}
	if o.LastSeen > e.LastSeen || (o.LastSeen == e.LastSeen && o.LastRunID > e.LastRunID) {
		e.LastSeen = o.LastSeen
		e.LastRunID = o.LastRunID
	}
}

// MergeInto applies e to the edges m (by id) as the graph applies an edge
// upsert: stored as is when new, else folded into the stored one by Merge.
func MergeInto(m map[string]Edge, e Edge) {
	if cur, ok := m[e.ID]; ok {
		cur.Merge(e)
		e = cur
	}
	m[e.ID] = e
}

// Batch is one chunk of one shard's sealed window: the processor cuts a
// sealed window into batches of at most the processor's ChunkRecords
// vertices and edges, each edge in the same batch as the endpoint
// vertices the window holds (mergeE needs them), so a window may take
// several batches. A batch holds collapsed edges, their endpoint vertices
// and possibly vertices no edge touches. Applying a Batch any number of
// times, in any order relative to other batches, gives the same graph.
type Batch struct {
	// Key names the batch in logs and errors (the processor sets
	// "<shard>/<window start ms>/<outbox seq>"); the sink does not
	// interpret it, nor use it for deduplication (writes are idempotent).
	Key      string
	Vertices []Vertex
	Edges    []Edge
}

// terminalStamp lifts the stamp of terminal states above every
// non-terminal one (eventTimes stay far below it).
const terminalStamp = int64(1) << 60

// RunStateProp is the state property one event of type t at eventTime ms
// (Unix) gives its run: a terminal state wins over any non-terminal one;
// between terminal states the earliest wins (the strict commit policy
// decides by the first terminal event), between non-terminal ones the
// latest; ties by the greater state name. An event with no eventType gives
// none (ok false).
func RunStateProp(t EventType, ms int64) (p Prop, ok bool) {
	if t == TypeUnspecified {
		return Prop{}, false
	}
	stamp := ms
	if t.Terminal() {
		stamp = terminalStamp - ms
	}
	return Prop{Key: PropState, Str: string(t), Stamp: stamp}, true
}
