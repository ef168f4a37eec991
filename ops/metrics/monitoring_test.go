package metrics_test

// Checks of deploy/monitoring against the exporter: the Prometheus rules,
// the PrometheusRule generated from them, their promtool unit tests and the
// Grafana dashboard.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"gopkg.in/yaml.v3"

	"github.com/lineageflow/lineageflow/ops/metrics"
	"github.com/lineageflow/lineageflow/processor"
	"github.com/lineageflow/lineageflow/sink"
	"github.com/lineageflow/lineageflow/source"
	"github.com/lineageflow/lineageflow/verify"
)

var rewrite = flag.Bool("rewrite", false, "regenerate deploy/monitoring/prometheusrule.yaml from lineageflow.rules.yml")

var (
	monitoringDir  = filepath.Join("..", "..", "deploy", "monitoring")
	rulesFile      = filepath.Join(monitoringDir, "lineageflow.rules.yml")
	rulesTestFile  = filepath.Join(monitoringDir, "lineageflow.rules.test.yml")
	promRuleFile   = filepath.Join(monitoringDir, "prometheusrule.yaml")
	dashboardFile  = filepath.Join(monitoringDir, "dashboard.json")
	runbookURL     = "https://github.com/lineageflow/lineageflow/blob/main/README.md#metrics"
	metricNameExpr = regexp.MustCompile(`\blineage_[a-zA-Z0-9_]+`)
)

// wantAlerts are README's "What to alert on" list (graph slow or down is
// two alerts: backpressure and a growing outbox), plus the two counters the
// metrics table says to alert on.
var wantAlerts = []string{
	"LineageFallingBehind", "LineageGraphSlowOrDown", "LineageOutboxGrowing", "LineageCheckpointStuck",
	"LineageBadProducers", "LineageShardsUnassigned", "LineageSinkLatencyHigh", "LineageSlowDisk",
	"LineageHandoffsMissing", "LineageSinkRequestFailures", "LineageSinkParked", "LineageCanaryDiverging",
	"LineageArchiveLagging",
}

type ruleGroups struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []rule `yaml:"rules"`
}

type rule struct {
	Alert       string            `yaml:"alert,omitempty"`
	Record      string            `yaml:"record,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

func readStrictYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func loadRules(t *testing.T) ruleGroups {
	t.Helper()
	var rg ruleGroups
	readStrictYAML(t, rulesFile, &rg)
	return rg
}

// exportedNames scrapes an exporter with every series present (a pipeline
// run with dead letters, a Gremlin-like sink, a worker with shards) and
// returns the sample names it serves: a histogram gives _bucket, _sum and
// _count; family names (histograms included) are in families.
func exportedNames(t *testing.T) (samples, families map[string]bool) {
	t.Helper()
	now := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	sinkStats := &fakeSinkStats{st: sink.Stats{Batches: 1, Requests: 1, Records: 1,
		Retries: map[sink.Code]uint64{sink.CodeThrottling: 1}}}
	mx := metrics.New(metrics.Config{Sink: sinkStats, Now: func() time.Time { return now }})
	st := &processor.Stats{}
	runPipeline(t, mx, st)
	w := &fakeWorker{st: st}
	w.set(true, source.ShardStatus{ID: "shardId-000000000000", MillisBehindLatest: 10, OutboxDepth: 1,
		Uncheckpointed: now.Add(-time.Second), Since: now.Add(-time.Hour)})
	mx.SetWorker(w)
	mfs, err := mx.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	samples, families = map[string]bool{}, map[string]bool{}
	for _, mf := range mfs {
		name := mf.GetName()
		families[name] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				samples[name+s] = true
			}
			continue
		}
		if mf.GetType() == dto.MetricType_SUMMARY {
			samples[name+"_sum"], samples[name+"_count"] = true, true
			continue
		}
		samples[name] = true
	}
	// lineageflow diff's metrics (-prom-file), which the rollout alert
	// watches: from the writer the command uses.
	var buf bytes.Buffer
	if err := verify.WritePromText(&buf, &verify.DiffReport{Scope: "key-share=0.1", Compared: 7, Divergence: 1.0 / 7}, now); err != nil {
		t.Fatal(err)
	}
	var tp expfmt.TextParser
	diffFamilies, err := tp.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("diff's Prometheus text does not parse: %v", err)
	}
	for name := range diffFamilies {
		samples[name] = true
	}
	if !samples["lineage_invalid_records_total"] || !samples["lineage_sink_retries_total"] || !samples["lineage_shard_millis_behind_latest"] {
		t.Fatal("the scrape lacks series the rules need: fix the test setup")
	}
	return samples, families
}

// usedNames returns the lineage_ metric names in the expressions.
func usedNames(exprs []string) map[string]bool {
	used := map[string]bool{}
	for _, e := range exprs {
		for _, n := range metricNameExpr.FindAllString(e, -1) {
			used[n] = true
		}
	}
	return used
}

func TestMonitoringUsesExportedMetrics(t *testing.T) {
	samples, families := exportedNames(t)
	var ruleExprs []string
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			ruleExprs = append(ruleExprs, r.Expr)
		}
	}
	d := loadDashboard(t)
	var dashExprs []string
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			dashExprs = append(dashExprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			dashExprs = append(dashExprs, v.Definition)
		}
	}
	for what, exprs := range map[string][]string{rulesFile: ruleExprs, dashboardFile: dashExprs} {
		used := usedNames(exprs)
		if len(used) == 0 {
			t.Errorf("%s: no lineage_ metric found in its expressions", what)
		}
		for n := range used {
			if !samples[n] {
				t.Errorf("%s uses %s, which the exporter does not serve", what, n)
			}
		}
	}
	// The dashboard shows every lineage_ family the exporter serves.
	used := usedNames(dashExprs)
	for f := range families {
		if !strings.HasPrefix(f, "lineage_") {
			continue
		}
		if !used[f] && !used[f+"_bucket"] && !used[f+"_count"] && !used[f+"_sum"] {
			t.Errorf("%s: no panel shows %s", dashboardFile, f)
		}
	}
}

func TestRulesShape(t *testing.T) {
	rg := loadRules(t)
	var got []string
	for _, g := range rg.Groups {
		if g.Name == "" {
			t.Error("a rule group without a name")
		}
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a rule that is not an alert (expr %q)", g.Name, r.Expr)
				continue
			}
			got = append(got, r.Alert)
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: no expr", r.Alert)
			}
			if _, err := time.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: annotation %s missing", r.Alert, a)
				}
			}
			if r.Annotations["runbook"] != runbookURL {
				t.Errorf("%s: runbook %q, want %q", r.Alert, r.Annotations["runbook"], runbookURL)
			}
		}
	}
	sort.Strings(got)
	want := slices.Clone(wantAlerts)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("alerts %v, want %v", got, want)
	}
	// The runbook anchor is README's Metrics section.
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^## Metrics$`).Match(readme) {
		t.Error(`README.md has no "## Metrics" section: the runbook links point nowhere`)
	}

	// Every alert has promtool cases that fire it and cases where it must
	// stay silent.
	var tests struct {
		RuleFiles          []string `yaml:"rule_files"`
		EvaluationInterval string   `yaml:"evaluation_interval"`
		Tests              []struct {
			Name          string           `yaml:"name"`
			Interval      string           `yaml:"interval"`
			InputSeries   []map[string]any `yaml:"input_series"`
			AlertRuleTest []struct {
				EvalTime  string           `yaml:"eval_time"`
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readStrictYAML(t, rulesTestFile, &tests)
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, a := range wantAlerts {
		if !fires[a] {
			t.Errorf("%s: no promtool case where it fires", a)
		}
		if !silent[a] {
			t.Errorf("%s: no promtool case where it must not fire", a)
		}
	}
}

// renderPrometheusRule is prometheusrule.yaml: the groups of the rules file,
// as they are (comments included), under the spec of a PrometheusRule.
func renderPrometheusRule(rules []byte) ([]byte, error) {
	i := bytes.Index(rules, []byte("\ngroups:\n"))
	if i < 0 {
		return nil, errors.New("no top-level groups: line")
	}
	var b bytes.Buffer
	b.WriteString(`# Generated from lineageflow.rules.yml: do not edit; edit that file, then
#   go test ./ops/metrics -run TestPrometheusRule -rewrite
# For the Prometheus Operator: add the labels your Prometheus' ruleSelector
# selects (kube-prometheus-stack: release: <its release name>).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: lineageflow
  labels:
    app.kubernetes.io/name: lineageflow
    app.kubernetes.io/component: monitoring
spec:
`)
	for _, line := range strings.SplitAfter(string(rules[i+1:]), "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString("  ")
		}
		b.WriteString(line)
	}
	return b.Bytes(), nil
}

func TestPrometheusRule(t *testing.T) {
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := renderPrometheusRule(rules)
	if err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if *rewrite {
		if err := os.WriteFile(promRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(promRuleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with %s (run go test ./ops/metrics -run TestPrometheusRule -rewrite)", promRuleFile, rulesFile)
	}
	// Decoded, it is a PrometheusRule carrying the same groups.
	var pr struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name   string            `yaml:"name"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec ruleGroups `yaml:"spec"`
	}
	readStrictYAML(t, promRuleFile, &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Name == "" {
		t.Errorf("%s: apiVersion %q kind %q name %q", promRuleFile, pr.APIVersion, pr.Kind, pr.Metadata.Name)
	}
	if rg := loadRules(t); !reflect.DeepEqual(pr.Spec, rg) {
		t.Errorf("%s: spec.groups differ from %s", promRuleFile, rulesFile)
	}
}

// A Grafana dashboard, strictly: an unknown (misspelt) field fails.
type dashboard struct {
	Title         string   `json:"title"`
	UID           string   `json:"uid"`
	Description   string   `json:"description"`
	Tags          []string `json:"tags"`
	SchemaVersion int      `json:"schemaVersion"`
	Version       int      `json:"version"`
	Editable      bool     `json:"editable"`
	GraphTooltip  int      `json:"graphTooltip"`
	Refresh       string   `json:"refresh"`
	Time          struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"time"`
	Timezone    string          `json:"timezone"`
	Annotations json.RawMessage `json:"annotations"`
	Links       []any           `json:"links"`
	Templating  struct {
		List []templateVar `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type templateVar struct {
	Name       string          `json:"name"`
	Label      string          `json:"label"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
	Definition string          `json:"definition"`
	Current    json.RawMessage `json:"current"`
	Options    []any           `json:"options"`
	Hide       int             `json:"hide"`
	Refresh    int             `json:"refresh"`
	Regex      string          `json:"regex"`
	IncludeAll bool            `json:"includeAll"`
	Multi      bool            `json:"multi"`
	AllValue   string          `json:"allValue"`
	Sort       int             `json:"sort"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Datasource  *datasourceRef `json:"datasource"`
	GridPos     struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
	FieldConfig json.RawMessage `json:"fieldConfig"`
	Options     json.RawMessage `json:"options"`
	Targets     []struct {
		Datasource   *datasourceRef `json:"datasource"`
		RefID        string         `json:"refId"`
		Expr         string         `json:"expr"`
		LegendFormat string         `json:"legendFormat"`
	} `json:"targets"`
	Collapsed bool    `json:"collapsed"`
	Panels    []panel `json:"panels"` // of a collapsed row
}

func (d *dashboard) allPanels() []panel {
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	return all
}

func loadDashboard(t *testing.T) *dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return &d
}

func TestDashboardSchema(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q uid %q: both needed", d.Title, d.UID)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d: want 36 or later (datasource references by uid)", d.SchemaVersion)
	}
	vars := map[string]templateVar{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v, ok := vars["datasource"]; !ok || v.Type != "datasource" || string(v.Query) != `"prometheus"` {
		t.Errorf("templating: want a variable datasource of type datasource, query prometheus; got %+v", v)
	}
	const ds = "${datasource}"
	ids := map[int]bool{}
	graphs := 0
	for _, p := range d.allPanels() {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Title == "" {
			t.Errorf("panel %d: no title", p.ID)
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
		}
		switch p.Type {
		case "row":
			continue
		case "timeseries", "stat":
		default:
			t.Errorf("panel %q: type %q", p.Title, p.Type)
		}
		graphs++
		if p.Datasource == nil || p.Datasource.UID != ds || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %q: datasource %+v, want prometheus %s", p.Title, p.Datasource, ds)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no targets", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: target %+v: needs an expr and a refId of its own", p.Title, tg)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || tg.Datasource.UID != ds {
				t.Errorf("panel %q: target %s: datasource %+v, want %s", p.Title, tg.RefID, tg.Datasource, ds)
			}
			if strings.Count(tg.Expr, "(") != strings.Count(tg.Expr, ")") || strings.Count(tg.Expr, "{") != strings.Count(tg.Expr, "}") {
				t.Errorf("panel %q: target %s: unbalanced brackets in %q", p.Title, tg.RefID, tg.Expr)
			}
		}
	}
	if graphs == 0 {
		t.Error("no graph panels")
	}
	// The panels the README's metrics call for.
	for _, want := range []string{"Records read", "Millis behind", "Checkpoint age", "Backpressured", "Outbox depth",
		"Barrier latency", "Sink batch latency", "Sink retries by code", "Duplicates", "dead letters by reason",
		"Write reduction", "Leases held"} {
		found := false
		for _, p := range d.allPanels() {
			if strings.Contains(strings.ToLower(p.Title), strings.ToLower(want)) {
				found = true
			}
		}
		if !found {
			t.Errorf("no panel titled like %q", want)
		}
	}
}

// TestPromtool runs promtool check rules and promtool test rules. Without
// promtool the test skips, unless LINEAGEFLOW_REQUIRE_STANDINS=1 (CI).
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("LINEAGEFLOW_REQUIRE_STANDINS") == "1" {
			t.Fatal("promtool is not on PATH and LINEAGEFLOW_REQUIRE_STANDINS=1: install the `prometheus` Debian package (apt-get install -y prometheus; .ci/run does it)")
		}
		t.Skip("promtool not on PATH (Debian package prometheus): rules not checked")
	}
	for _, args := range [][]string{
		{"check", "rules", filepath.Base(rulesFile)},
		{"test", "rules", filepath.Base(rulesTestFile)},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = monitoringDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
