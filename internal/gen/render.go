package gen

import (
	"fmt"
	"strings"
)

func (g *generator) producer(pl *pipeline) string {
	if pl != nil && pl.engine == "glue" {
		return olGlueProducer
	}
	return olProducer
}

// runEvent renders a planned run event with the next eventTime.
func (g *generator) runEvent(p planned) Record {
	ev := g.runEventStruct(p, g.formatTime(g.nextTime()))
	root := p.run
	if root.parent != nil {
		root = root.parent
	}
	return Record{PartitionKey: "run:" + root.ns + "/" + root.name, Data: mustJSON(ev)}
}

func (g *generator) runEventStruct(p planned, eventTime string) *olRunEvent {
	pl := p.run.pl
	prod := g.producer(pl)
	ev := &olRunEvent{
		EventTime: eventTime,
		Producer:  prod,
		SchemaURL: olRunSchema,
		EventType: p.typ,
		Run:       olRun{RunID: p.run.id, Facets: &runFacets{}},
		Job:       olJob{Namespace: p.run.ns, Name: p.run.name},
		Inputs:    []olDataset{},
		Outputs:   []olDataset{},
	}
	rf := ev.Run.Facets
	start := p.typ == "START"
	if start && p.run.parent == nil {
		rf.ProcessingEngine = &processingEngineFacet{
			facetBase: fb(prod, facetSchemaBase1+"ProcessingEngineRunFacet.json#/$defs/ProcessingEngineRunFacet"),
			Version:   "3.5.1", Name: "spark", OpenlineageAdapterVersion: "1.26.0",
		}
	}
	if p.run.parent != nil {
		pf := &parentFacet{facetBase: fb(prod, facetSchemaBase+"ParentRunFacet.json#/$defs/ParentRunFacet")}
		pf.Run.RunID = p.run.parent.id
		pf.Job.Namespace, pf.Job.Name = p.run.parent.ns, p.run.parent.name
		rf.Parent = pf
	} else {
		rf.SparkVersion = &sparkVersionFacet{facetBase: fb(prod, olRunSchema+"Facet"), SparkVersion: "3.5.1"}
		if start {
			rf.SparkProperties = &sparkPropertiesFacet{facetBase: fb(prod, olRunSchema+"Facet"), Properties: map[string]string{
				"spark.master":                 "yarn",
				"spark.app.name":               pl.app,
				"spark.submit.deployMode":      "cluster",
				"spark.sql.shuffle.partitions": "400",
			}}
		}
	}
	if p.errMsg {
		rf.ErrorMessage = &errorMessageFacet{
			facetBase:           fb(prod, facetSchemaBase+"ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet"),
			Message:             "Job aborted due to stage failure: Task 17 in stage 4.0 failed 4 times",
			ProgrammingLanguage: "JAVA",
			StackTrace:          "org.apache.spark.SparkException: Job aborted due to stage failure\n\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n\tat org.apache.spark.sql.execution.datasources.FileFormatWriter$.write(FileFormatWriter.scala:251)",
		}
	}
	jt := "APPLICATION"
	if p.run.job != nil {
		jt = "SQL_JOB"
	}
	integration := "SPARK"
	if pl.engine == "glue" {
		integration = "GLUE"
	}
	if start {
		ev.Job.Facets = &jobFacets{JobType: &jobTypeFacet{
			facetBase:      fb(prod, facetSchemaBase2+"JobTypeJobFacet.json#/$defs/JobTypeJobFacet"),
			ProcessingType: "BATCH", Integration: integration, JobType: jt,
		}}
		if p.run.job != nil && g.r.IntN(4) == 0 {
			ev.Job.Facets.SQL = &sqlFacet{facetBase: fb(prod, facetSchemaBase+"SQLJobFacet.json#/$defs/SQLJobFacet"), Query: p.run.job.sql}
		}
	}
	// Facets where Spark has them in full: inputs at START, outputs at
	// COMPLETE; other events name datasets only.
	for i, d := range p.inputs {
		if start {
			od := g.datasetJSON(prod, d, true, nil, false)
			if i > 0 {
				od.Facets.DataSource, od.Facets.Symlinks = nil, nil
			}
			ev.Inputs = append(ev.Inputs, od)
		} else {
			ev.Inputs = append(ev.Inputs, olDataset{Namespace: d.ns, Name: d.name})
		}
	}
	for i, d := range p.outputs {
		if p.typ == "COMPLETE" {
			var cl []*dataset
			if i == 0 && g.r.IntN(2) == 0 {
				cl = p.inputs // columnLineage, when Spark could work it out
			}
			ev.Outputs = append(ev.Outputs, g.datasetJSON(prod, d, false, cl, p.stats && i == 0))
		} else {
			ev.Outputs = append(ev.Outputs, olDataset{Namespace: d.ns, Name: d.name})
		}
	}
	return ev
}

// datasetJSON renders a dataset with its schema facet; where adds the
// dataSource and symlinks facets, inputs the columnLineage facet, stats the
// outputStatistics facet.
func (g *generator) datasetJSON(prod string, d *dataset, where bool, inputs []*dataset, stats bool) olDataset {
	od := olDataset{Namespace: d.ns, Name: d.name, Facets: &datasetFacets{}}
	f := od.Facets
	f.Schema = &schemaFacet{facetBase: fb(prod, facetSchemaBase1+"SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"), Fields: d.fields}
	if where {
		// Inputs and static events: where the data lives.
		f.DataSource = &dataSourceFacet{facetBase: fb(prod, facetSchemaBase+"DatasourceDatasetFacet.json#/$defs/DatasourceDatasetFacet"),
			Name: d.source, URI: d.ns}
		if d.glue {
			f.Symlinks = &symlinksFacet{facetBase: fb(prod, facetSchemaBase+"SymlinksDatasetFacet.json#/$defs/SymlinksDatasetFacet"),
				Identifiers: []symlink{{Namespace: "arn:aws:glue:eu-west-1:123456789012", Name: "table/" + strings.ReplaceAll(d.name, ".", "/"), Type: "TABLE"}}}
		}
	}
	if len(inputs) > 0 {
		cl := &columnLineageFacet{facetBase: fb(prod, facetSchemaBase2+"ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet"),
			Fields: make(map[string]columnInputs, len(d.fields))}
		for i, fl := range d.fields {
			if i >= 2 {
				break
			}
			in := inputs[g.r.IntN(len(inputs))]
			src := in.fields[g.r.IntN(len(in.fields))].Name
			for _, x := range in.fields {
				if x.Name == fl.Name {
					src = x.Name
				}
			}
			sub := "IDENTITY"
			if src != fl.Name {
				sub = "TRANSFORMATION"
			}
			cl.Fields[fl.Name] = columnInputs{InputFields: []inputField{{Namespace: in.ns, Name: in.name, Field: src,
				Transformations: []transformation{{Type: "DIRECT", Subtype: sub}}}}}
		}
		f.ColumnLineage = cl
	}
	if stats && g.r.IntN(2) == 0 {
		rows := g.r.Int64N(50_000_000)
		od.OutputFacets = &outputFacets{OutputStatistics: &outputStatisticsFacet{
			facetBase: fb(prod, facetSchemaBase2+"OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"),
			RowCount:  rows, Size: rows * (40 + g.r.Int64N(200)),
		}}
	}
	return od
}

// jobEvent renders a JobEvent: the design-time lineage of a pipeline job,
// sometimes declaring an output that no run writes (yet).
func (g *generator) jobEvent() Record {
	pl := g.pickPipeline()
	jd := pick(g.r, pl.jobs)
	prod := "https://github.com/OpenLineage/OpenLineage/tree/1.26.0/integration/dbt"
	ev := &olJobEvent{
		EventTime: g.formatTime(g.nextTime()),
		Producer:  prod,
		SchemaURL: olJobSchema,
		Job: olJob{Namespace: jd.ns, Name: jd.name, Facets: &jobFacets{
			JobType: &jobTypeFacet{facetBase: fb(prod, facetSchemaBase2+"JobTypeJobFacet.json#/$defs/JobTypeJobFacet"),
				ProcessingType: "BATCH", Integration: "DBT", JobType: "MODEL"},
			SQL: &sqlFacet{facetBase: fb(prod, facetSchemaBase+"SQLJobFacet.json#/$defs/SQLJobFacet"), Query: jd.sql},
		}},
		Inputs:  []olDataset{},
		Outputs: []olDataset{},
	}
	for _, d := range jd.inputs {
		ev.Inputs = append(ev.Inputs, olDataset{Namespace: d.ns, Name: d.name})
	}
	outs := jd.outputs
	if g.r.IntN(10) < 3 {
		last := pl.layers[len(pl.layers)-1]
		outs = append(append([]*dataset(nil), outs...), last[g.r.IntN(len(last))])
	}
	for _, d := range outs {
		ev.Outputs = append(ev.Outputs, g.datasetJSON(prod, d, true, nil, false))
	}
	return Record{PartitionKey: "job:" + jd.ns + "/" + jd.name, Data: mustJSON(ev)}
}

// datasetEvent renders a DatasetEvent for a pipeline dataset or, one time
// in five, for an archive dataset no run ever names.
func (g *generator) datasetEvent() Record {
	var d *dataset
	if g.r.IntN(5) == 0 {
		d = pick(g.r, g.w.orphans)
	} else {
		pl := g.pickPipeline()
		d = pick(g.r, pick(g.r, pl.layers))
	}
	prod := "https://github.com/OpenLineage/OpenLineage/tree/1.26.0/integration/spark"
	od := g.datasetJSON(prod, d, true, nil, false)
	od.Facets.Lifecycle = &lifecycleFacet{facetBase: fb(prod, facetSchemaBase+"LifecycleStateChangeDatasetFacet.json#/$defs/LifecycleStateChangeDatasetFacet"),
		LifecycleStateChange: pick(g.r, []string{"ALTER", "CREATE", "OVERWRITE"})}
	ev := &olDatasetEvent{EventTime: g.formatTime(g.nextTime()), Producer: prod, SchemaURL: olDatasetSchema, Dataset: od}
	return Record{PartitionKey: "dataset:" + d.ns + "/" + d.name, Data: mustJSON(ev)}
}

func (g *generator) pickPipeline() *pipeline {
	n := g.r.IntN(g.w.total)
	for _, pl := range g.w.pipelines {
		n -= pl.weight
		if n < 0 {
			return pl
		}
	}
	panic(fmt.Sprintf("gen: weight %d out of range", n))
}
