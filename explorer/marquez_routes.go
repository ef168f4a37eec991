package explorer

import (
	"net/http"
	"slices"
	"strings"
)

// The Marquez API (openapi of Marquez 0.50) route by route: what this
// read-only server does with each. Answered routes are served from the
// graph; a read route the graph cannot answer says so with 501 and a JSON
// body naming the route and why (never an empty 200 that would read as
// "none"); every write answers 405 with Allow. README.md ("Marquez API
// routes") carries the same table; TestMarquezRouteTable checks both.

// mqStatus is what the server does with a Marquez route.
type mqStatus string

const (
	mqAnswered mqStatus = "answered"
	mqNotImpl  mqStatus = "501"
	mqReadOnly mqStatus = "405"
)

// mqRoute is one route of Marquez's openapi.
type mqRoute struct {
	Method, Path string // Path as Marquez's openapi writes it, under /api/v1
	Status       mqStatus
	Reason       string // for 501 and 405
}

const (
	whyVersions = "the graph keeps no dataset or job versions: each vertex holds the latest facets only"
	whySources  = "the graph keeps no source entities (a dataset's dataSource facet is its dataSource property)"
	whyArchive  = "no raw event archive: lineageflow keeps the graph, not the events"
	// whyNoArchive: GET /api/v1/events/lineage is served from the event
	// archive when serve has -archive.
	whyNoArchive = "no event archive: serve was started without -archive s3://bucket/prefix (the graph keeps no raw events)"
	whyStats     = "no event counts by time in the graph"
	whyReadOnly  = "read-only: lineageflow writes the graph from OpenLineage events on Kinesis only"
)

// mqRouteTable lists every route of Marquez's openapi.
var mqRouteTable = []mqRoute{
	{"GET", "/namespaces", mqAnswered, ""},
	{"GET", "/namespaces/{namespace}", mqAnswered, ""},
	{"PUT", "/namespaces/{namespace}", mqReadOnly, whyReadOnly},
	{"DELETE", "/namespaces/{namespace}", mqReadOnly, whyReadOnly},
	{"GET", "/namespaces/{namespace}/datasets", mqAnswered, ""},
	{"GET", "/namespaces/{namespace}/datasets/{dataset}", mqAnswered, ""},
	{"PUT", "/namespaces/{namespace}/datasets/{dataset}", mqReadOnly, whyReadOnly},
	{"DELETE", "/namespaces/{namespace}/datasets/{dataset}", mqReadOnly, whyReadOnly},
	{"GET", "/namespaces/{namespace}/datasets/{dataset}/versions", mqNotImpl, whyVersions},
	{"GET", "/namespaces/{namespace}/datasets/{dataset}/versions/{version}", mqNotImpl, whyVersions},
	{"POST", "/namespaces/{namespace}/datasets/{dataset}/tags/{tag}", mqReadOnly, whyReadOnly},
	{"DELETE", "/namespaces/{namespace}/datasets/{dataset}/tags/{tag}", mqReadOnly, whyReadOnly},
	{"POST", "/namespaces/{namespace}/datasets/{dataset}/fields/{field}/tags/{tag}", mqReadOnly, whyReadOnly},
	{"DELETE", "/namespaces/{namespace}/datasets/{dataset}/fields/{field}/tags/{tag}", mqReadOnly, whyReadOnly},
	{"GET", "/namespaces/{namespace}/jobs", mqAnswered, ""},
	{"GET", "/namespaces/{namespace}/jobs/{job}", mqAnswered, ""},
	{"PUT", "/namespaces/{namespace}/jobs/{job}", mqReadOnly, whyReadOnly},
	{"DELETE", "/namespaces/{namespace}/jobs/{job}", mqReadOnly, whyReadOnly},
	{"GET", "/namespaces/{namespace}/jobs/{job}/runs", mqAnswered, ""},
	{"POST", "/namespaces/{namespace}/jobs/{job}/runs", mqReadOnly, whyReadOnly},
	{"GET", "/namespaces/{namespace}/jobs/{job}/versions", mqNotImpl, whyVersions},
	{"GET", "/namespaces/{namespace}/jobs/{job}/versions/{version}", mqNotImpl, whyVersions},
	{"POST", "/namespaces/{namespace}/jobs/{job}/tags/{tag}", mqReadOnly, whyReadOnly},
	{"DELETE", "/namespaces/{namespace}/jobs/{job}/tags/{tag}", mqReadOnly, whyReadOnly},
	{"GET", "/jobs", mqAnswered, ""},
	{"GET", "/jobs/runs/{id}", mqAnswered, ""},
	{"GET", "/jobs/runs/{id}/facets", mqAnswered, ""},
	{"POST", "/jobs/runs/{id}/start", mqReadOnly, whyReadOnly},
	{"POST", "/jobs/runs/{id}/complete", mqReadOnly, whyReadOnly},
	{"POST", "/jobs/runs/{id}/fail", mqReadOnly, whyReadOnly},
	{"POST", "/jobs/runs/{id}/abort", mqReadOnly, whyReadOnly},
	{"GET", "/sources", mqNotImpl, whySources},
	{"GET", "/sources/{source}", mqNotImpl, whySources},
	{"PUT", "/sources/{source}", mqReadOnly, whyReadOnly},
	{"GET", "/tags", mqAnswered, ""},
	{"PUT", "/tags/{tag}", mqReadOnly, whyReadOnly},
	{"GET", "/lineage", mqAnswered, ""},
	{"POST", "/lineage", mqReadOnly, whyReadOnly},
	{"GET", "/column-lineage", mqAnswered, ""},
	{"GET", "/search", mqAnswered, ""},
	{"GET", "/events/lineage", mqNotImpl, whyNoArchive},
	// Not in Marquez's openapi, but marquez-python's list_events calls them.
	{"GET", "/events", mqNotImpl, whyArchive},
	{"GET", "/events/{namespace}", mqNotImpl, whyArchive},
	{"GET", "/stats/lineage-events", mqNotImpl, whyStats},
	{"GET", "/stats/jobs", mqNotImpl, whyStats},
	{"GET", "/stats/datasets", mqNotImpl, whyStats},
	{"GET", "/stats/sources", mqNotImpl, whyStats},
}

// muxPattern is p as an http.ServeMux path (Marquez's {namespace},
// {dataset}, {job} are this package's {ns} and {name}).
func muxPattern(p string) string {
	if p == "/events/{namespace}" {
		// marquez-python puts the namespace into the path unescaped: a
		// namespace with '/' (s3://..., spark://...) is several segments.
		return "/api/v1/events/{ns...}"
	}
	r := strings.NewReplacer("{namespace}", "{ns}", "{dataset}", "{name}", "{job}", "{name}")
	return "/api/v1" + r.Replace(p)
}

// mqRefusals mounts the 501 answers of mqRouteTable (the answered routes
// are mounted by marquezRoutes), and 405 for POST, PUT, DELETE and PATCH
// on every path of the table (the writes it lists and any other).
func (s *Server) mqRefusals(m *http.ServeMux) {
	allow := map[string][]string{}
	for _, rt := range mqRouteTable {
		if rt.Status != mqReadOnly {
			allow[rt.Path] = append(allow[rt.Path], rt.Method)
		}
	}
	seen := map[string]bool{}
	for _, rt := range mqRouteTable {
		route := rt.Method + " /api/v1" + rt.Path
		switch rt.Status {
		case mqNotImpl:
			if rt.Path == "/events/lineage" && s.cfg.Archive != nil {
				break // served from the archive (marquezRoutes)
			}
			reason := rt.Reason
			m.HandleFunc(rt.Method+" "+muxPattern(rt.Path), func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, http.StatusNotImplemented, notImplBody{Code: http.StatusNotImplemented,
					Message: route + " is not implemented: " + reason, Route: route, Reason: reason})
			})
		}
		if seen[rt.Path] {
			continue
		}
		seen[rt.Path] = true
		allowed := strings.Join(allow[rt.Path], ", ")
		path := rt.Path
		for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			if slices.Contains(allow[rt.Path], method) {
				continue
			}
			m.HandleFunc(method+" "+muxPattern(rt.Path), func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Allow", allowed)
				route := r.Method + " /api/v1" + path
				writeJSON(w, http.StatusMethodNotAllowed, notImplBody{Code: http.StatusMethodNotAllowed,
					Message: route + ": " + whyReadOnly, Route: route, Reason: whyReadOnly})
			})
		}
	}
}

// notImplBody is the JSON of a 501 or 405 answer: Marquez's ErrorMessage
// shape with the route and the reason.
type notImplBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Route   string `json:"route"`
	Reason  string `json:"reason"`
}
