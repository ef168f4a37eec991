package lineage

// Vertex labels and edge labels of the graph model (Neptune-compatible).
const (
	LabelDataset = "Dataset"
	LabelJob     = "Job"

	// EdgeInputTo is Dataset -[INPUT_TO]-> Job.
	EdgeInputTo = "INPUT_TO"
	// EdgeOutputs is Job -[OUTPUTS]-> Dataset.
	EdgeOutputs = "OUTPUTS"
	// EdgeDerives is the collapsed origin->destination edge Dataset -[DERIVES]-> Dataset.
	EdgeDerives = "DERIVES"
)

// Vertex is one graph vertex. Its ID is a pure, injective function of
// (Label, Namespace, Name): see [DatasetID] and [JobID].
type Vertex struct {
	ID        string
	Label     string
	Namespace string
	Name      string
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
}

// Merge folds o into e by the commutative, idempotent rules above. e and o
// must have the same ID.
func (e *Edge) Merge(o Edge) {
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
