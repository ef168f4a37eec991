package gen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The world: pipelines, their jobs and datasets. Built once per stream from
// the seeded generator, then re-run many times.

type field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type dataset struct {
	ns, name string
	fields   []field
	source   string // dataSource facet name
	glue     bool   // has a symlinks facet to a Glue table
}

type jobDef struct {
	ns, name string
	command  string
	sql      string
	inputs   []*dataset
	outputs  []*dataset
	extra    *dataset // may be named by a RUNNING event (a broadcast lookup)
}

type pipeline struct {
	ns, app string // root job
	engine  string // "spark" or "glue"
	weight  int
	jobs    []*jobDef
	layers  [][]*dataset
	runs    int
}

type world struct {
	pipelines []*pipeline
	dims      []*dataset // shared lookup tables
	orphans   []*dataset // only ever named by DatasetEvents
	quarant   []*dataset // named only by malformed records
	total     int        // sum of pipeline weights
}

var (
	appNames = []string{
		"orders_daily", "clickstream_sessionize", "customer_360", "inventory_snapshot",
		"payments_reconcile", "marketing_attribution", "fraud_features", "supply_chain_eta",
		"ledger_close", "returns_enrichment", "search_relevance", "pricing_elasticity",
	}
	jobNamespaces = []string{
		"spark://emr-analytics-prod", "glue://etl-prod-eu-west-1", "spark://databricks-ws-4471", "spark://emr-finance",
	}
	domains  = []string{"sales", "web", "crm", "finance", "ops", "catalog", "logistics", "marketing"}
	entities = []string{
		"orders", "order_items", "customers", "sessions", "events", "payments", "refunds",
		"shipments", "products", "inventory", "invoices", "campaigns", "clicks", "carts", "accounts",
	}
	rawNamespaces   = []string{"s3://datalake-raw", "s3://datalake-raw-eu", "kafka://broker-1.internal:9092"}
	stageNamespaces = []string{"glue://catalog", "s3://datalake-staging", "arn:aws:glue:eu-west-1:123456789012"}
	martNamespaces  = []string{"jdbc://warehouse.internal:5432", "redshift://dwh.c1x2y3.eu-west-1:5439", "jdbc://warehouse.internal:5432/analytics"}
	commands        = []string{
		"execute_insert_into_hadoop_fs_relation_command", "execute_create_table_as_select_command",
		"append_data_exec_v1", "merge_into_command_edge", "execute_save_into_data_source_command",
	}
	columnNames = []string{
		"id", "customer_id", "order_id", "sku", "amount", "currency", "created_at", "updated_at",
		"country", "channel", "status", "quantity", "price", "discount", "session_id", "user_agent",
		"event_ts", "ingest_date", "region", "segment", "is_test", "source_system", "batch_id",
	}
	columnTypes = []string{"string", "bigint", "int", "double", "decimal(18,2)", "timestamp", "date", "boolean"}
	// Awkward decorations for names: separators the ids must survive,
	// quotes, and non-ASCII text.
	awkward = []func(string) string{
		func(s string) string { return s + "|v2" },
		func(s string) string { return s + ":snapshot" },
		func(s string) string { return `"` + s + `" 'EU'` },
		func(s string) string { return "ventes_été/" + s },
		func(s string) string { return "売上/" + s + "_日次" },
		func(s string) string { return s + " Ünïcødé ✓ 🚀" },
		func(s string) string { return s + `\back\slash` },
		func(s string) string { return s + "//double//slash/" },
	}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// subset returns between lo and hi distinct elements of xs, in xs order.
func subset[T any](r *rand.Rand, xs []T, lo, hi int) []T {
	if hi > len(xs) {
		hi = len(xs)
	}
	if lo > hi {
		lo = hi
	}
	n := lo + r.IntN(hi-lo+1)
	perm := r.Perm(len(xs))[:n]
	chosen := make([]bool, len(xs))
	for _, i := range perm {
		chosen[i] = true
	}
	out := make([]T, 0, n)
	for i, x := range xs {
		if chosen[i] {
			out = append(out, x)
		}
	}
	return out
}

func newFields(r *rand.Rand) []field {
	n := 3 + r.IntN(3)
	cols := subset(r, columnNames, n, n)
	fs := make([]field, len(cols))
	for i, c := range cols {
		fs[i] = field{Name: c, Type: pick(r, columnTypes)}
	}
	return fs
}

func (w *world) newDataset(r *rand.Rand, layer int, p int, i int) *dataset {
	dom, ent := pick(r, domains), pick(r, entities)
	d := &dataset{fields: newFields(r)}
	switch layer {
	case 0:
		d.ns = pick(r, rawNamespaces)
		d.name = fmt.Sprintf("%s/%s/p%d_%d", dom, ent, p, i)
		d.source = "s3"
	case 1:
		d.ns = pick(r, stageNamespaces)
		if strings.HasPrefix(d.ns, "arn:") {
			d.name = fmt.Sprintf("table/staging/stg_%s_p%d_%d", ent, p, i)
		} else {
			d.name = fmt.Sprintf("staging.stg_%s_%s_p%d_%d", dom, ent, p, i)
		}
		d.source, d.glue = "glue", true
	default:
		d.ns = pick(r, martNamespaces)
		kind := "fct"
		if r.IntN(3) == 0 {
			kind = "dim"
		}
		d.name = fmt.Sprintf("analytics.marts.%s_%s_l%d_p%d_%d", kind, ent, layer, p, i)
		d.source = "warehouse"
	}
	if r.IntN(6) == 0 {
		d.name = pick(r, awkward)(d.name)
	}
	return d
}

func buildWorld(r *rand.Rand, c Config) *world {
	w := &world{}
	for i := 0; i < 3; i++ {
		w.dims = append(w.dims, &dataset{ns: "glue://catalog", name: fmt.Sprintf("reference.dim_%s", []string{"country", "currency", "calendar"}[i]),
			fields: newFields(r), source: "glue", glue: true})
	}
	for i := 0; i < 2; i++ {
		w.orphans = append(w.orphans, &dataset{ns: "s3://datalake-archive", name: fmt.Sprintf("exports/legacy_%d/part-00000.parquet", i),
			fields: newFields(r), source: "s3"})
	}
	for i := 0; i < 4; i++ {
		w.quarant = append(w.quarant, &dataset{ns: "s3://datalake-quarantine", name: fmt.Sprintf("bad/%s_%d", pick(r, entities), i),
			fields: newFields(r), source: "s3"})
	}
	per := max(c.DatasetsPerStage, 1)
	const nLayers = 3
	for p := 0; p < c.Pipelines; p++ {
		pl := &pipeline{
			ns:     pick(r, jobNamespaces),
			app:    appNames[p%len(appNames)],
			weight: 1 + r.IntN(4),
		}
		if p >= len(appNames) {
			pl.app = fmt.Sprintf("%s_%d", pl.app, p/len(appNames))
		}
		pl.engine = "spark"
		if strings.HasPrefix(pl.ns, "glue:") {
			pl.engine = "glue"
		}
		for l := 0; l < nLayers; l++ {
			var layer []*dataset
			for i := 0; i < per; i++ {
				layer = append(layer, w.newDataset(r, l, p, i))
			}
			pl.layers = append(pl.layers, layer)
		}
		if p == 0 && per >= 2 {
			// Two datasets whose namespace+name concatenate to the same
			// string: ids that are not injective merge them.
			pl.layers[0][0].ns, pl.layers[0][0].name = "s3://datalake-raw", "shared/landing"
			pl.layers[0][1].ns, pl.layers[0][1].name = "s3://datalake-raw/shared", "landing"
		}
		if p > 0 && r.IntN(2) == 0 {
			// Multi-pipeline hops: read a mart of an earlier pipeline.
			prev := w.pipelines[r.IntN(p)]
			pl.layers[0] = append(pl.layers[0], pick(r, prev.layers[nLayers-1]))
		}
		for s := 0; s+1 < nLayers; s++ {
			nJobs := (len(pl.layers[s+1]) + 1) / 2 // at most two outputs each
			outs := pl.layers[s+1]
			for j := 0; j < nJobs; j++ {
				jd := &jobDef{ns: pl.ns, command: pick(r, commands)}
				jd.inputs = subset(r, pl.layers[s], 1, 2)
				for k, o := range outs {
					if k%nJobs == j {
						jd.outputs = append(jd.outputs, o)
					}
				}
				if len(jd.outputs) == 0 {
					jd.outputs = []*dataset{pick(r, outs)}
				}
				if jd.command == "merge_into_command_edge" {
					// MERGE INTO reads and writes its target.
					jd.inputs = append(jd.inputs, jd.outputs[0])
				}
				if r.IntN(2) == 0 {
					jd.extra = pick(r, w.dims)
				}
				table := jd.outputs[0].name
				if k := strings.LastIndexAny(table, "./"); k >= 0 && k+1 < len(table) {
					table = table[k+1:]
				}
				jd.name = pl.app + "." + jd.command + "." + table
				jd.sql = fmt.Sprintf("INSERT OVERWRITE TABLE %s SELECT %s FROM %s", jd.outputs[0].name,
					strings.Join(fieldNames(jd.outputs[0].fields), ", "), jd.inputs[0].name)
				pl.jobs = append(pl.jobs, jd)
			}
		}
		w.pipelines = append(w.pipelines, pl)
		w.total += pl.weight
	}
	return w
}

func fieldNames(fs []field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}
