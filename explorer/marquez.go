package explorer

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// The Marquez-compatible read API: routes, query parameters and JSON shapes
// of Marquez's /api/v1 (spec/openapi.yml and api/src/main/java/marquez/api
// of MarquezProject/marquez), as the marquez-python client calls them.
// What the graph does not hold (dataset and job versions, tags, sources,
// raw events) answers as empty lists; times the graph does not hold (a
// namespace's createdAt) are the Unix epoch. A dataset's createdAt and
// updatedAt are the first and last time (producer event time) of its
// lineage edges.

// marquezRoutes mounts the Marquez-compatible read routes under /api/v1.
func (s *Server) marquezRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/v1/namespaces", s.mqNamespaces)
	m.HandleFunc("GET /api/v1/namespaces/{ns}", s.mqNamespace)
	m.HandleFunc("GET /api/v1/namespaces/{ns}/datasets", s.mqDatasets)
	m.HandleFunc("GET /api/v1/namespaces/{ns}/datasets/{name}", s.mqDataset)
	m.HandleFunc("GET /api/v1/namespaces/{ns}/jobs", s.mqJobs)
	m.HandleFunc("GET /api/v1/namespaces/{ns}/jobs/{name}", s.mqJob)
	m.HandleFunc("GET /api/v1/namespaces/{ns}/jobs/{name}/runs", s.mqJobRuns)
	m.HandleFunc("GET /api/v1/jobs/runs/{id}", s.mqRun)
	m.HandleFunc("GET /api/v1/lineage", s.heavy(s.mqLineage))
	m.HandleFunc("GET /api/v1/column-lineage", s.heavy(s.mqColumnLineage))
	m.HandleFunc("GET /api/v1/search", s.mqSearch)
	m.HandleFunc("GET /api/v1/jobs/runs/{id}/facets", s.mqRunFacets)
	m.HandleFunc("GET /api/v1/jobs", s.mqJobs)
	m.HandleFunc("GET /api/v1/tags", s.mqTags)
	if s.cfg.Archive != nil {
		m.HandleFunc("GET /api/v1/events/lineage", s.heavy(s.mqLineageEvents))
	}
	s.mqRefusals(m)
}

// isoTime formats Unix ms as Marquez does (ISO-8601, UTC).
func isoTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

func isoPtr(ms *int64) *string {
	if ms == nil {
		return nil
	}
	s := isoTime(*ms)
	return &s
}

var epoch = isoTime(0)

// page reads Marquez's limit (default 100) and offset (default 0).
func page(r *http.Request) (limit, offset int, err error) {
	if limit, err = intParam(r, "limit", 100, 0, 10_000); err != nil {
		return 0, 0, err
	}
	offset, err = intParam(r, "offset", 0, 0, 1<<30)
	return limit, offset, err
}

// MQNamespace is Marquez's Namespace.
type MQNamespace struct {
	Name        string  `json:"name"`
	CreatedAt   string  `json:"createdAt"`
	UpdatedAt   string  `json:"updatedAt"`
	OwnerName   string  `json:"ownerName"`
	Description *string `json:"description"`
	IsHidden    bool    `json:"isHidden"`
}

func mqNamespace(name string) MQNamespace {
	return MQNamespace{Name: name, CreatedAt: epoch, UpdatedAt: epoch, OwnerName: "anonymous"}
}

// namespaces returns the sorted namespaces of the index's datasets and jobs.
func namespaces(entries []indexEntry) []string {
	set := map[string]struct{}{}
	for i := range entries {
		if entries[i].alias == nil {
			set[entries[i].ref.Namespace] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

func (s *Server) mqNamespaces(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	nm, err := s.index.snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	entries := nm.all()
	all := namespaces(entries)
	pg := window(all, limit, offset)
	seen, err := s.namespaceTimes(r.Context(), pg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := []MQNamespace{}
	for _, ns := range pg {
		out = append(out, seen.of(ns))
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": out, "totalCount": len(all)})
}

func window[T any](all []T, limit, offset int) []T {
	if offset >= len(all) {
		return nil
	}
	all = all[offset:]
	if limit < len(all) {
		all = all[:limit]
	}
	return all
}

func (s *Server) mqNamespace(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	nm, err := s.index.snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	entries := nm.all()
	for i := range entries {
		if entries[i].alias == nil && entries[i].ref.Namespace == ns {
			seen, err := s.namespaceTimes(r.Context(), []string{ns})
			if err != nil {
				s.fail(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, seen.of(ns))
			return
		}
	}
	s.fail(w, r, &NotFoundError{Msg: "namespace " + quoteShort(ns) + " not found"})
}

// refsIn returns the index's refs of kind in namespace ns, sorted by name.
func refsIn(entries []indexEntry, kind, ns string) []Ref {
	var out []Ref
	for i := range entries {
		e := &entries[i]
		if e.alias == nil && e.ref.Kind == kind && e.ref.Namespace == ns {
			out = append(out, e.ref)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// refsAll is refsIn over every namespace, by namespace then name.
func refsAll(entries []indexEntry, kind string) []Ref {
	var out []Ref
	for i := range entries {
		e := &entries[i]
		if e.alias == nil && e.ref.Kind == kind {
			out = append(out, e.ref)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// MQDatasetID is Marquez's DatasetId / JobId.
type MQDatasetID struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// MQField is one field of a dataset's schema.
type MQField struct {
	Name        string   `json:"name"`
	Type        *string  `json:"type"`
	Tags        []string `json:"tags"`
	Description *string  `json:"description"`
}

// MQDataset is Marquez's Dataset (and the data of a DATASET lineage node).
type MQDataset struct {
	ID                 MQDatasetID    `json:"id"`
	Type               string         `json:"type"`
	Name               string         `json:"name"`
	PhysicalName       string         `json:"physicalName"`
	CreatedAt          string         `json:"createdAt"`
	UpdatedAt          string         `json:"updatedAt"`
	Namespace          string         `json:"namespace"`
	SourceName         string         `json:"sourceName"`
	Fields             []MQField      `json:"fields"`
	Tags               []string       `json:"tags"`
	LastModifiedAt     *string        `json:"lastModifiedAt"`
	LastLifecycleState *string        `json:"lastLifecycleState"`
	Description        *string        `json:"description"`
	CurrentVersion     *string        `json:"currentVersion"`
	ColumnLineage      any            `json:"columnLineage"`
	Facets             map[string]any `json:"facets"`
	Deleted            bool           `json:"deleted"`
}

func strProp(p map[string]any, k string) *string {
	v, ok := p[k]
	if !ok {
		return nil
	}
	s := asString(v)
	if s == "" {
		return nil
	}
	return &s
}

func mqDataset(d *NodeDetails) MQDataset {
	p := d.Properties
	created, updated := epoch, epoch
	if d.FirstSeen != nil {
		created, updated = isoTime(*d.FirstSeen), isoTime(*d.FirstSeen)
	}
	if d.LastSeen != nil {
		updated = isoTime(*d.LastSeen)
	}
	src := d.Namespace
	if v := strProp(p, "dataSource"); v != nil {
		src = *v
	}
	ds := MQDataset{
		ID: MQDatasetID{d.Namespace, d.Name}, Type: "DB_TABLE", Name: d.Name, PhysicalName: d.Name,
		CreatedAt: created, UpdatedAt: updated, Namespace: d.Namespace, SourceName: src,
		Fields: []MQField{}, Tags: []string{}, LastModifiedAt: isoPtr(d.LastSeen),
		LastLifecycleState: strProp(p, "lifecycleState"), Description: strProp(p, "description"),
		CurrentVersion: strProp(p, "version"), Facets: map[string]any{},
	}
	ds.Tags = tagNames(p)
	ds.Facets = datasetFacets(p)
	ds.Deleted = ds.LastLifecycleState != nil && *ds.LastLifecycleState == "DROP"
	if v := strProp(p, "schema"); v != nil {
		var fields []struct {
			Name, Type, Description string
		}
		if json.Unmarshal([]byte(*v), &fields) == nil {
			for _, f := range fields {
				mf := MQField{Name: f.Name, Tags: []string{}}
				if f.Type != "" {
					t := f.Type
					mf.Type = &t
				}
				if f.Description != "" {
					desc := f.Description
					mf.Description = &desc
				}
				ds.Fields = append(ds.Fields, mf)
			}
		}
	}
	return ds
}

// MQRun is Marquez's Run.
type MQRun struct {
	ID                    string         `json:"id"`
	CreatedAt             string         `json:"createdAt"`
	UpdatedAt             string         `json:"updatedAt"`
	NominalStartTime      *string        `json:"nominalStartTime"`
	NominalEndTime        *string        `json:"nominalEndTime"`
	State                 string         `json:"state"`
	StartedAt             *string        `json:"startedAt"`
	EndedAt               *string        `json:"endedAt"`
	DurationMs            *int64         `json:"durationMs"`
	Args                  map[string]any `json:"args"`
	JobVersion            *MQJobVersion  `json:"jobVersion"`
	InputDatasetVersions  []any          `json:"inputDatasetVersions"`
	OutputDatasetVersions []any          `json:"outputDatasetVersions"`
	Context               map[string]any `json:"context"`
	Facets                map[string]any `json:"facets"`
}

// MQJobVersion is Marquez's JobVersionId.
type MQJobVersion struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Version   *string `json:"version"`
}

// mqState maps the model's run state (OpenLineage event types) to
// Marquez's RunState.
func mqState(s string) string {
	switch s {
	case "START", "RUNNING":
		return "RUNNING"
	case "COMPLETE":
		return "COMPLETED"
	case "FAIL":
		return "FAILED"
	case "ABORT":
		return "ABORTED"
	}
	return "NEW"
}

func mqRun(rs RunSummary) MQRun {
	p := rs.props
	num := func(k string) *int64 {
		if v, ok := asInt64(p[k]); ok {
			return &v
		}
		return nil
	}
	updated := epoch
	if rs.UpdatedAt != nil {
		updated = isoTime(*rs.UpdatedAt)
	}
	created := updated
	if rs.StartedAt != nil {
		created = isoTime(*rs.StartedAt)
	}
	run := MQRun{
		ID: rs.RunID, CreatedAt: created, UpdatedAt: updated,
		NominalStartTime: isoPtr(num(lineage.PropNominalStartTime)), NominalEndTime: isoPtr(num(lineage.PropNominalEndTime)),
		State: mqState(rs.State), StartedAt: isoPtr(rs.StartedAt), EndedAt: isoPtr(rs.EndedAt), DurationMs: rs.DurationMs,
		Args: map[string]any{}, InputDatasetVersions: []any{}, OutputDatasetVersions: []any{},
		Context: map[string]any{}, Facets: map[string]any{},
	}
	if ns, name := asString(p[lineage.PropJobNamespace]), asString(p[lineage.PropJobName]); ns != "" || name != "" {
		run.JobVersion = &MQJobVersion{Namespace: ns, Name: name}
	}
	if rs.ErrorMessage != nil {
		run.Facets["errorMessage"] = map[string]any{"message": *rs.ErrorMessage}
	}
	addEngineQueryFacets(run.Facets, rs)
	return run
}

// MQJob is Marquez's Job (and the data of a JOB lineage node).
type MQJob struct {
	ID             MQDatasetID    `json:"id"`
	Type           string         `json:"type"`
	Name           string         `json:"name"`
	SimpleName     string         `json:"simpleName"`
	ParentJobName  *string        `json:"parentJobName"`
	CreatedAt      string         `json:"createdAt"`
	UpdatedAt      string         `json:"updatedAt"`
	Namespace      string         `json:"namespace"`
	Inputs         []MQDatasetID  `json:"inputs"`
	Outputs        []MQDatasetID  `json:"outputs"`
	Location       *string        `json:"location"`
	Description    *string        `json:"description"`
	LatestRun      *MQRun         `json:"latestRun"`
	LatestRuns     []MQRun        `json:"latestRuns"`
	Facets         map[string]any `json:"facets"`
	CurrentVersion *string        `json:"currentVersion"`
	Labels         []string       `json:"labels"`
	Tags           []string       `json:"tags"`
}

func mqJob(d *NodeDetails) MQJob {
	p := d.Properties
	created, updated := epoch, epoch
	if d.FirstSeen != nil {
		created, updated = isoTime(*d.FirstSeen), isoTime(*d.FirstSeen)
	}
	if d.LastSeen != nil {
		updated = isoTime(*d.LastSeen)
	}
	typ := "BATCH"
	if v := strProp(p, "processingType"); v != nil && strings.EqualFold(*v, "STREAMING") {
		typ = "STREAM"
	}
	j := MQJob{
		ID: MQDatasetID{d.Namespace, d.Name}, Type: typ, Name: d.Name, SimpleName: d.Name,
		CreatedAt: created, UpdatedAt: updated, Namespace: d.Namespace,
		Inputs: []MQDatasetID{}, Outputs: []MQDatasetID{}, Location: strProp(p, "sourceCodeLocation"),
		Description: strProp(p, "description"), LatestRuns: []MQRun{}, Facets: map[string]any{},
		Labels: []string{}, Tags: []string{},
	}
	for _, r := range d.inputRefs {
		j.Inputs = append(j.Inputs, MQDatasetID{r.Namespace, r.Name})
	}
	for _, r := range d.outputRefs {
		j.Outputs = append(j.Outputs, MQDatasetID{r.Namespace, r.Name})
	}
	runs := withLatest(d)
	for _, rs := range runs {
		j.LatestRuns = append(j.LatestRuns, mqRun(rs))
	}
	if lr := latestOf(d, runs); lr != nil {
		r := mqRun(*lr)
		j.LatestRun = &r
	}
	j.Tags = tagNames(p)
	return j
}

// listNodes answers a namespace's datasets or jobs, one page.
func (s *Server) listNodes(w http.ResponseWriter, r *http.Request, kind, key string) {
	limit, offset, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	nm, err := s.index.snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	entries := nm.all()
	var all []Ref
	if r.URL.Path == "/api/v1/jobs" {
		all = refsAll(entries, kind)
	} else {
		all = refsIn(entries, kind, r.PathValue("ns"))
	}
	pg := window(all, limit, offset)
	ids := make([]string, len(pg))
	for i, ref := range pg {
		ids[i] = ref.VertexID()
	}
	runs := 0
	if kind == KindJob {
		runs = 10
	}
	ds, err := s.details(r.Context(), ids, max(runs, 1))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items := []any{}
	for _, id := range ids {
		d := ds[id]
		if d == nil {
			continue // dropped since the index load
		}
		if kind == KindJob {
			items = append(items, mqJob(d))
		} else {
			items = append(items, mqDataset(d))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{key: items, "totalCount": len(all)})
}

func (s *Server) mqDatasets(w http.ResponseWriter, r *http.Request) {
	s.listNodes(w, r, KindDataset, "datasets")
}

func (s *Server) mqJobs(w http.ResponseWriter, r *http.Request) { s.listNodes(w, r, KindJob, "jobs") }

// pathNode resolves {ns}/{name} of kind (datasets also by alias).
func (s *Server) pathNode(ctx context.Context, r *http.Request, kind string, runs int) (*NodeDetails, error) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if ns == "" || name == "" {
		return nil, badRequest("namespace and name must not be empty")
	}
	p := parsedID{raw: kind + ":" + ns + ":" + name, kind: kind, candidates: []Ref{{Kind: kind, Namespace: ns, Name: name}}}
	ref, err := s.resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.nodeOf(ctx, ref, runs)
}

func (s *Server) mqDataset(w http.ResponseWriter, r *http.Request) {
	d, err := s.pathNode(r.Context(), r, KindDataset, 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, mqDataset(d))
}

func (s *Server) mqJob(w http.ResponseWriter, r *http.Request) {
	d, err := s.pathNode(r.Context(), r, KindJob, 10)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j := mqJob(d)
	if j.ParentJobName, err = s.parentJobName(r.Context(), d); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, j)
}

func (s *Server) mqJobRuns(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.pathNode(r.Context(), r, KindJob, min(offset+limit, s.cfg.RunScan))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	all := withLatest(d)
	runs := []MQRun{}
	for _, rs := range window(all, limit, offset) {
		runs = append(runs, mqRun(rs))
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs, "totalCount": len(all)})
}

// runVertexIDs are the ids a Run vertex of runID may have: the model's
// lineage.RunVertexID ("run:" + len + ":" + runId + "/", the encoding of
// the other vertex ids with an empty name) and the plain "run:" + runId of
// the graph contract's first wording.
func runVertexIDs(runID string) []any { return []any{vertexID("run:", runID, ""), "run:" + runID} }

// MQNode is one node of Marquez's lineage graph.
type MQNode struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Data     any      `json:"data"`
	InEdges  []MQEdge `json:"inEdges"`
	OutEdges []MQEdge `json:"outEdges"`
}

// MQEdge is one edge of Marquez's lineage graph.
type MQEdge struct {
	Origin      string `json:"origin"`
	Destination string `json:"destination"`
}

func (s *Server) mqLineage(w http.ResponseWriter, r *http.Request) {
	depth, err := intParam(r, "depth", 20, 0, s.cfg.MaxDepth)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := parseNodeID(r.URL.Query().Get("nodeId"), false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	center, err := s.resolve(ctx, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tf, err := s.mqTimeFilter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	l, err := s.lineageOf(ctx, center, LineageQuery{Up: depth, Down: depth, MaxNodes: s.cfg.MaxNodes, Time: tf})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ds, err := s.details(ctx, l.vertexIDs, 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	in, out := map[string][]MQEdge{}, map[string][]MQEdge{}
	for _, e := range l.Edges {
		if e.Type == EdgeDerives {
			continue // Marquez's graph is dataset -> job -> dataset
		}
		me := MQEdge{Origin: e.Origin, Destination: e.Destination}
		out[e.Origin] = append(out[e.Origin], me)
		in[e.Destination] = append(in[e.Destination], me)
	}
	graph := make([]MQNode, 0, len(l.Nodes))
	for i, n := range l.Nodes {
		d := ds[l.vertexIDs[i]]
		if d == nil {
			continue
		}
		mn := MQNode{ID: n.ID, Type: n.Type, InEdges: nonNil(in[n.ID]), OutEdges: nonNil(out[n.ID])}
		if n.Type == TypeJob {
			mn.Data = mqJob(d)
		} else {
			mn.Data = mqDataset(d)
		}
		graph = append(graph, mn)
	}
	writeJSON(w, http.StatusOK, map[string]any{"graph": graph})
}

// mqTimeFilter reads the time parameters of /api/lf/v1/lineage (since,
// until, asOf, stale) on Marquez's lineage route, an extension of its
// API. Without them the answer is Marquez's (every edge), so stale edges
// are shown unless stale=hide is asked for.
func (s *Server) mqTimeFilter(r *http.Request) (TimeFilter, error) {
	if r.URL.Query().Get("stale") == "" {
		r2 := r.Clone(r.Context())
		q := r2.URL.Query()
		q.Set("stale", "show")
		r2.URL.RawQuery = q.Encode()
		r = r2
	}
	return s.timeFilter(r, time.Now())
}

func nonNil(e []MQEdge) []MQEdge {
	if e == nil {
		return []MQEdge{}
	}
	return e
}

// mqColumnLineage answers Marquez's column lineage from the model's
// DatasetField vertices (DatasetField -[FIELD_OF]-> Dataset, input field
// -[COLUMN_DERIVES]-> output field): the fields of the node (one field for
// a datasetField id, every field of a dataset, every output field of a
// job's outputs), then `depth` levels upstream (and downstream with
// withDownstream=true), bounded like the lineage walk. A known node without
// field lineage answers an empty graph; an unknown one 404.
func (s *Server) mqColumnLineage(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("nodeId")
	if i := strings.LastIndexByte(raw, '#'); i > 0 {
		raw = raw[:i] // a version suffix: the graph keeps no versions
	}
	p, err := parseNodeID(raw, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	depth, err := intParam(r, "depth", 20, 0, s.cfg.MaxDepth)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	down := strings.EqualFold(r.URL.Query().Get("withDownstream"), "true")
	ref, err := s.resolve(r.Context(), p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	graph, err := s.columnLineage(r.Context(), ref, p.field, depth, down)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"graph": graph})
}

// Column lineage labels of the model.
const (
	labelField        = lineage.LabelDatasetField
	edgeFieldOf       = lineage.EdgeFieldOf
	edgeColumnDerives = lineage.EdgeColumnDerives
)

// MQFieldNode is one node of Marquez's column lineage graph.
type MQFieldNode struct {
	ID       string      `json:"id"`
	Type     string      `json:"type"`
	Data     MQFieldData `json:"data"`
	InEdges  []MQEdge    `json:"inEdges"`
	OutEdges []MQEdge    `json:"outEdges"`
}

// MQFieldData is a field and the input fields it derives from.
type MQFieldData struct {
	Namespace                 string         `json:"namespace"`
	Dataset                   string         `json:"dataset"`
	DatasetVersion            *string        `json:"datasetVersion"`
	Field                     string         `json:"field"`
	FieldType                 *string        `json:"fieldType"`
	TransformationDescription *string        `json:"transformationDescription"`
	TransformationType        *string        `json:"transformationType"`
	InputFields               []MQInputField `json:"inputFields"`
}

// MQInputField is one input of a derived field.
type MQInputField struct {
	Namespace                 string  `json:"namespace"`
	Dataset                   string  `json:"dataset"`
	DatasetVersion            *string `json:"datasetVersion"`
	Field                     string  `json:"field"`
	TransformationDescription *string `json:"transformationDescription"`
	TransformationType        *string `json:"transformationType"`
}

type fieldState struct {
	ns, ds, field string
	inputs        []fieldInput // COLUMN_DERIVES in-edges
	outputs       []string     // vertex ids downstream
}

type fieldInput struct {
	from   string // vertex id
	tt, td string
}

// columnLineage walks the field graph from ref's fields.
func (s *Server) columnLineage(ctx context.Context, ref Ref, field string, depth int, down bool) ([]MQFieldNode, error) {
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		t := g.V(ref.VertexID())
		if ref.Kind == KindJob {
			t = t.Out(EdgeOutputs)
		}
		t = t.In(edgeFieldOf).HasLabel(labelField)
		if field != "" {
			t = t.Has(lineage.PropField, field)
		}
		return t.Limit(s.cfg.MaxFanOut).Id()
	})
	if err != nil {
		return nil, err
	}
	fields := map[string]*fieldState{}
	var order, frontier []string
	for _, r := range rows {
		id := asString(r.GetInterface())
		frontier = append(frontier, id)
	}
	if field != "" && len(frontier) == 0 {
		return nil, &NotFoundError{Msg: "field " + quoteShort(field) + " of " + quoteShort(ref.NodeID()) + " not found"}
	}
	maxNodes := s.cfg.MaxNodes
	for d := 0; len(frontier) > 0; d++ {
		rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
			T, __ := gremlingo.T, gremlingo.T__
			str := func(k string) *gremlingo.GraphTraversal { return __.Coalesce(__.Values(k), __.Constant("")) }
			return g.V(anyStrings(frontier)...).Project("id", "ns", "ds", "f", "in", "out").By(T.Id).
				By(str(lineage.PropNamespace)).By(str(lineage.PropName)).By(str(lineage.PropField)).
				By(__.InE(edgeColumnDerives).Limit(s.cfg.MaxFanOut).
					Project("o", "tt", "td").By(__.OutV().Id()).By(str(lineage.PropTransformationType)).By(str(lineage.PropTransformationDescription)).Fold()).
				By(__.Out(edgeColumnDerives).Limit(s.cfg.MaxFanOut).Id().Fold())
		})
		if err != nil {
			return nil, err
		}
		var next []string
		add := func(id string) {
			if _, ok := fields[id]; !ok && len(fields) < maxNodes && d < depth {
				fields[id] = nil
				next = append(next, id)
			}
		}
		for _, r := range rows {
			m, err := rowMap(r)
			if err != nil {
				return nil, err
			}
			id := asString(m["id"])
			if fields[id] == nil {
				order = append(order, id)
			}
			st := &fieldState{ns: asString(m["ns"]), ds: asString(m["ds"]), field: asString(m["f"])}
			for _, e := range list(m["in"]) {
				if em, ok := e.(map[any]any); ok {
					fi := fieldInput{from: asString(em["o"]), tt: asString(em["tt"]), td: asString(em["td"])}
					st.inputs = append(st.inputs, fi)
					add(fi.from)
				}
			}
			for _, o := range list(m["out"]) {
				st.outputs = append(st.outputs, asString(o))
				if down {
					add(asString(o))
				}
			}
			fields[id] = st
		}
		frontier = next
	}
	nodeID := func(f *fieldState) string { return KindField + ":" + f.ns + ":" + f.ds + ":" + f.field }
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	out := make([]MQFieldNode, 0, len(order))
	for _, id := range order {
		f := fields[id]
		if f == nil {
			continue
		}
		n := MQFieldNode{ID: nodeID(f), Type: "DATASET_FIELD", InEdges: []MQEdge{}, OutEdges: []MQEdge{},
			Data: MQFieldData{Namespace: f.ns, Dataset: f.ds, Field: f.field, InputFields: []MQInputField{}}}
		for _, in := range f.inputs {
			src := fields[in.from]
			if src == nil {
				continue // beyond depth or caps
			}
			n.Data.InputFields = append(n.Data.InputFields, MQInputField{Namespace: src.ns, Dataset: src.ds, Field: src.field,
				TransformationDescription: opt(in.td), TransformationType: opt(in.tt)})
			n.InEdges = append(n.InEdges, MQEdge{Origin: nodeID(src), Destination: n.ID})
			if n.Data.TransformationType == nil {
				n.Data.TransformationType, n.Data.TransformationDescription = opt(in.tt), opt(in.td)
			}
		}
		for _, o := range f.outputs {
			if dst := fields[o]; dst != nil {
				n.OutEdges = append(n.OutEdges, MQEdge{Origin: n.ID, Destination: nodeID(dst)})
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// MQSearchResult is one hit of Marquez's search.
type MQSearchResult struct {
	Type      string  `json:"type"`
	Name      string  `json:"name"`
	UpdatedAt *string `json:"updatedAt"`
	Namespace string  `json:"namespace"`
	NodeID    string  `json:"nodeId"`
}

func (s *Server) mqSearch(w http.ResponseWriter, r *http.Request) {
	q := strings.Trim(r.URL.Query().Get("q"), "%")
	if q == "" {
		s.fail(w, r, badRequest("q is required"))
		return
	}
	kind := ""
	switch f := strings.ToLower(r.URL.Query().Get("filter")); f {
	case "":
	case "dataset":
		kind = KindDataset
	case "job":
		kind = KindJob
	default:
		s.fail(w, r, badRequest("filter=%s: want dataset or job", quoteShort(f)))
		return
	}
	limit, err := intParam(r, "limit", 10, 1, 1000)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	nm, err := s.index.snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ns := r.URL.Query().Get("namespace")
	hits, total := search(nm, q, limit, kind)
	if ns != "" {
		// Marquez's namespace= filter: among the first 10,000 hits.
		all, _ := search(nm, q, 10_000, kind)
		hits, total = hits[:0], 0
		for _, h := range all {
			if h.ref.Namespace == ns {
				total++
				if len(hits) < limit {
					hits = append(hits, h)
				}
			}
		}
	}
	if strings.EqualFold(r.URL.Query().Get("sort"), "name") {
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].ref.Name < hits[j].ref.Name })
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ref.VertexID()
	}
	ds, err := s.details(r.Context(), ids, 1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res := make([]MQSearchResult, 0, len(hits))
	for i, h := range hits {
		sr := MQSearchResult{Type: h.ref.Type(), Name: h.ref.Name, Namespace: h.ref.Namespace, NodeID: h.ref.NodeID()}
		if d := ds[ids[i]]; d != nil {
			// The last time a lineage edge of it was seen.
			sr.UpdatedAt = isoPtr(d.LastSeen)
		}
		res = append(res, sr)
	}
	writeJSON(w, http.StatusOK, map[string]any{"totalCount": total, "results": res})
}
