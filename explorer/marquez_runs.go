package explorer

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"

	gremlingo "github.com/apache/tinkerpop/gremlin-go/v3/driver"

	"github.com/lineageflow/lineageflow/lineage"
)

// Runs in the Marquez API. A job's latestRun is its latest run event by
// eventTime, any state (the job's health properties, DESIGN.md Lineage
// semantics 14), whether or not -runs recorded a Run vertex for it; a
// run with no vertex is answered from the health properties of the job
// whose latest run it is.

// eventType is the OpenLineage event type of a Marquez run state (the
// Run vertex's state property holds event types).
func eventType(mqState string) string {
	switch mqState {
	case "COMPLETED":
		return string(lineage.TypeComplete)
	case "FAILED":
		return string(lineage.TypeFail)
	case "ABORTED":
		return string(lineage.TypeAbort)
	case "RUNNING":
		return string(lineage.TypeRunning)
	}
	return ""
}

// latestRunOf is the run the health properties p of job (ns, name) name
// as its latest, if any: its id, state, and the eventTime of that event
// as updatedAt (and endedAt when terminal).
func latestRunOf(p map[string]any, ns, name string) (RunSummary, bool) {
	id := asString(p[lineage.PropLatestRunID])
	if id == "" {
		return RunSummary{}, false
	}
	st := asString(p[lineage.PropLatestRunState])
	rs := RunSummary{RunID: id, State: eventType(st),
		props: map[string]any{lineage.PropRunID: id, lineage.PropJobNamespace: ns, lineage.PropJobName: name}}
	if t, ok := asInt64(p[lineage.PropLatestRunAt]); ok {
		rs.UpdatedAt = &t
		if st == "COMPLETED" || st == "FAILED" || st == "ABORTED" {
			rs.EndedAt = &t
		}
	}
	return rs, true
}

// withLatest returns the job's recorded runs with its latest run first
// when no Run vertex holds it, newest first by updatedAt.
func withLatest(d *NodeDetails) []RunSummary {
	runs := d.Runs
	lr, ok := latestRunOf(d.Properties, d.Namespace, d.Name)
	if !ok {
		return runs
	}
	for _, r := range runs {
		if r.RunID == lr.RunID {
			return runs
		}
	}
	out := append([]RunSummary{lr}, runs...)
	sort.SliceStable(out, func(i, j int) bool { return updatedOf(out[i]) > updatedOf(out[j]) })
	return out
}

func updatedOf(r RunSummary) int64 {
	if r.UpdatedAt != nil {
		return *r.UpdatedAt
	}
	return 0
}

// latestOf picks the job's latest run: the one its health properties
// name, else the newest recorded run.
func latestOf(d *NodeDetails, runs []RunSummary) *RunSummary {
	id := asString(d.Properties[lineage.PropLatestRunID])
	for i := range runs {
		if id != "" && runs[i].RunID == id {
			return &runs[i]
		}
	}
	if id == "" && len(runs) > 0 {
		return &runs[0]
	}
	return nil
}

// runByID finds run id: its Run vertex, else the job whose latest run it
// is. ok false: neither.
func (s *Server) runByID(ctx context.Context, id string) (RunSummary, bool, error) {
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		return g.V(runVertexIDs(id)...).HasLabel(lineage.LabelRun).ValueMap()
	})
	if err != nil {
		return RunSummary{}, false, err
	}
	if len(rows) > 0 {
		m, err := rowMap(rows[0])
		if err != nil {
			return RunSummary{}, false, err
		}
		return runSummary(props(m)), true, nil
	}
	rows, err = s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		return g.V().HasLabel(lineage.LabelJob).Has(lineage.PropLatestRunID, id).Limit(1).ValueMap()
	})
	if err != nil || len(rows) == 0 {
		return RunSummary{}, false, err
	}
	m, err := rowMap(rows[0])
	if err != nil {
		return RunSummary{}, false, err
	}
	p := props(m)
	rs, ok := latestRunOf(p, asString(p[lineage.PropNamespace]), asString(p[lineage.PropName]))
	return rs, ok, nil
}

func (s *Server) mqRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > 256 {
		s.fail(w, r, badRequest("run id must be 1 to 256 characters"))
		return
	}
	rs, ok, err := s.runByID(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		s.fail(w, r, &NotFoundError{Msg: "run " + quoteShort(id) + " not found"})
		return
	}
	writeJSON(w, http.StatusOK, mqRun(rs))
}

// mqRunFacets answers GET /api/v1/jobs/runs/{id}/facets: the run facets
// the graph keeps (errorMessage, nominalTime, parent, processing_engine,
// externalQuery), as Marquez's
// {runId, facets}.
func (s *Server) mqRunFacets(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if id == "" || len(id) > 256 {
		s.fail(w, r, badRequest("run id must be 1 to 256 characters"))
		return
	}
	rs, ok, err := s.runByID(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		s.fail(w, r, &NotFoundError{Msg: "run " + quoteShort(id) + " not found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"runId": id, "facets": runFacets(rs)})
}

// runFacets rebuilds the run facets a Run vertex's properties hold.
func runFacets(rs RunSummary) map[string]any {
	f := map[string]any{}
	p := rs.props
	if rs.ErrorMessage != nil {
		f["errorMessage"] = map[string]any{"message": *rs.ErrorMessage}
	}
	nom := map[string]any{}
	if v, ok := asInt64(p[lineage.PropNominalStartTime]); ok {
		nom["nominalStartTime"] = isoTime(v)
	}
	if v, ok := asInt64(p[lineage.PropNominalEndTime]); ok {
		nom["nominalEndTime"] = isoTime(v)
	}
	if len(nom) > 0 {
		f["nominalTime"] = nom
	}
	if v := asString(p[lineage.PropParentRunID]); v != "" {
		f["parent"] = map[string]any{"run": map[string]any{"runId": v}}
	}
	addEngineQueryFacets(f, rs)
	return f
}

// addEngineQueryFacets adds to f the processing_engine and externalQuery
// run facets a Run vertex's properties hold, in the OpenLineage shape
// (only the members the graph has).
func addEngineQueryFacets(f map[string]any, rs RunSummary) {
	members := func(m map[string]string) map[string]any {
		out := map[string]any{}
		for member, key := range m {
			if v, ok := rs.props[key].(string); ok {
				out[member] = v
			}
		}
		return out
	}
	if m := members(map[string]string{"name": lineage.PropProcessingEngine, "version": lineage.PropProcessingEngineVersion,
		"openlineageAdapterVersion": lineage.PropOpenlineageAdapterVersion}); len(m) > 0 {
		f["processing_engine"] = m
	}
	if m := members(map[string]string{"externalQueryId": lineage.PropExternalQueryID, "source": lineage.PropExternalQuerySource}); len(m) > 0 {
		f["externalQuery"] = m
	}
}

// tagNames are the tag keys of a job or dataset's tags property (tags
// facet: [{key, value, source}]), as Marquez lists tag names.
func tagNames(p map[string]any) []string {
	out := []string{}
	v := strProp(p, lineage.PropTags)
	if v == nil {
		return out
	}
	var tags []struct{ Key string }
	if json.Unmarshal([]byte(*v), &tags) != nil {
		return out
	}
	for _, t := range tags {
		out = append(out, t.Key)
	}
	return out
}

// parentJobName is the name of the job's parent job (Job -[CHILD_OF]->
// Job, the parent run facet's job), if any: the most recent one by
// lastSeen.
func (s *Server) parentJobName(ctx context.Context, d *NodeDetails) (*string, error) {
	id := lineage.JobID(lineage.Job{Namespace: d.Namespace, Name: d.Name})
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		return g.V(id).OutE(lineage.EdgeChildOf).Order().By(lineage.PropLastSeen, gremlingo.Order.Desc).Limit(1).
			InV().HasLabel(lineage.LabelJob).Values(lineage.PropName)
	})
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	name := asString(rows[0].GetInterface())
	return &name, nil
}

// datasetFacets rebuilds the dataset facets its properties hold (schema,
// dataSource, documentation, ownership, version, lifecycleStateChange,
// tags), as OpenLineage writes them.
func datasetFacets(p map[string]any) map[string]any {
	f := map[string]any{}
	raw := func(k string) any {
		v := strProp(p, k)
		if v == nil {
			return nil
		}
		var x any
		if json.Unmarshal([]byte(*v), &x) != nil {
			return nil
		}
		return x
	}
	if v := raw(lineage.PropSchema); v != nil {
		f["schema"] = map[string]any{"fields": v}
	}
	if v := strProp(p, lineage.PropDataSource); v != nil {
		f["dataSource"] = map[string]any{"name": *v, "uri": *v}
	}
	if v := strProp(p, lineage.PropDescription); v != nil {
		f["documentation"] = map[string]any{"description": *v}
	}
	if v := raw(lineage.PropOwners); v != nil {
		f["ownership"] = map[string]any{"owners": v}
	}
	if v := strProp(p, lineage.PropVersion); v != nil {
		f["version"] = map[string]any{"datasetVersion": *v}
	}
	if v := strProp(p, "lifecycleState"); v != nil {
		f["lifecycleStateChange"] = map[string]any{"lifecycleStateChange": *v}
	}
	if v := raw(lineage.PropTags); v != nil {
		f["tags"] = map[string]any{"tags": v}
	}
	return f
}

// nsTimes are the first and last time (Unix ms) a namespace's datasets
// and jobs were seen: the min firstSeen and max lastSeen of their lineage
// edges (each vertex's first CountCap edges).
type nsTimes map[string][2]int64

// of is namespace ns as Marquez shows it: createdAt and updatedAt its
// first and last seen (the Unix epoch when no lineage edge touches it).
func (t nsTimes) of(ns string) MQNamespace {
	n := mqNamespace(ns)
	if v, ok := t[ns]; ok {
		n.CreatedAt, n.UpdatedAt = isoTime(v[0]), isoTime(v[1])
	}
	return n
}

// namespaceTimes reads the first and last seen times of namespaces nss.
func (s *Server) namespaceTimes(ctx context.Context, nss []string) (nsTimes, error) {
	out := nsTimes{}
	if len(nss) == 0 {
		return out, nil
	}
	within := make([]any, len(nss))
	for i, ns := range nss {
		within[i] = ns
	}
	rows, err := s.graph.read(ctx, func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		P, __ := gremlingo.P, gremlingo.T__
		limit := int64(s.cfg.CountCap)
		return g.V().HasLabel(lineage.LabelDataset, lineage.LabelJob).Has(lineage.PropNamespace, P.Within(within...)).
			Group().By(lineage.PropNamespace).
			By(__.Local(__.BothE(lineageLabels...).Limit(limit)).Fold().
				Project("first", "last").
				By(__.Coalesce(__.Unfold().Values(lineage.PropFirstSeen).Min(), __.Constant(int64(-1)))).
				By(__.Coalesce(__.Unfold().Values(lineage.PropLastSeen).Max(), __.Constant(int64(-1)))))
	})
	if err != nil || len(rows) == 0 {
		return out, err
	}
	m, ok := rows[0].GetInterface().(map[any]any)
	if !ok {
		return out, nil
	}
	for k, v := range m {
		p, ok := v.(map[any]any)
		if !ok {
			continue
		}
		first, ok1 := asInt64(p["first"])
		last, ok2 := asInt64(p["last"])
		if ok1 && ok2 && first >= 0 && last >= 0 {
			out[asString(k)] = [2]int64{first, last}
		}
	}
	return out, nil
}

// mqTags answers GET /api/v1/tags: the tag keys of every job's and
// dataset's tags property (tags facets), sorted, as Marquez's
// {tags: [{name, description}]} (first 10,000 distinct tags properties).
func (s *Server) mqTags(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows, err := s.graph.read(r.Context(), func(g *gremlingo.GraphTraversalSource) *gremlingo.GraphTraversal {
		return g.V().HasLabel(lineage.LabelDataset, lineage.LabelJob).Has(lineage.PropTags).Values(lineage.PropTags).Dedup().Limit(10_000)
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	set := map[string]struct{}{}
	for _, row := range rows {
		for _, k := range tagNames(map[string]any{lineage.PropTags: asString(row.GetInterface())}) {
			set[k] = struct{}{}
		}
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	tags := []map[string]any{}
	for _, k := range window(names, limit, offset) {
		tags = append(tags, map[string]any{"name": k, "description": nil})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tags": tags, "totalCount": len(names)})
}
