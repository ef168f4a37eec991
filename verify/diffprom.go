package verify

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// WritePromText writes r in the Prometheus text format, for the node
// exporter's textfile collector or any scraper of a file (`lineageflow
// diff -prom-file`): the divergence ratio the LineageCanaryDiverging alert
// watches (deploy/monitoring), the ids compared and diverging, and when.
func WritePromText(w io.Writer, r *DiffReport, at time.Time) error {
	scope := `scope="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(r.Scope) + `"`
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	_, err := fmt.Fprintf(w, `# HELP lineage_diff_divergence_ratio Diverging ids (missing, extra, different) per id compared between production and canary graphs, at the last lineageflow diff.
# TYPE lineage_diff_divergence_ratio gauge
lineage_diff_divergence_ratio{%[1]s} %[2]s
# HELP lineage_diff_compared_ids Vertex and edge ids compared (in scope) at the last lineageflow diff.
# TYPE lineage_diff_compared_ids gauge
lineage_diff_compared_ids{%[1]s} %[3]d
# HELP lineage_diff_diverging_ids Ids missing from the canary, extra in it, or different, at the last lineageflow diff.
# TYPE lineage_diff_diverging_ids gauge
lineage_diff_diverging_ids{%[1]s,kind="missing"} %[4]d
lineage_diff_diverging_ids{%[1]s,kind="extra"} %[5]d
lineage_diff_diverging_ids{%[1]s,kind="different"} %[6]d
# HELP lineage_diff_last_run_timestamp_seconds When the last lineageflow diff finished (Unix seconds).
# TYPE lineage_diff_last_run_timestamp_seconds gauge
lineage_diff_last_run_timestamp_seconds{%[1]s} %[7]s
`, scope, f(r.Divergence), r.Compared,
		r.MissingVertices.Count+r.MissingEdges.Count, r.ExtraVertices.Count+r.ExtraEdges.Count,
		r.DifferentVertices.Count+r.DifferentEdges.Count, f(float64(at.UnixMilli())/1000))
	return err
}
