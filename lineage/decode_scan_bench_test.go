package lineage

import "testing"

// Benchmarks of the scanner and of the facet readers built on it.

// Facets as producers send them, read without the memo: what a worker
// pays for a facet it has not seen (the memo's miss), and what column
// lineage, symlinks and lifecycle cost per event.
var (
	benchSchemaFacet   = []byte(`{"_producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark","_schemaURL":"https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet","fields":[{"name":"order_id","type":"long"},{"name":"customer_id","type":"long","description":"the buyer"},{"name":"amount","type":"decimal(12,2)"},{"name":"note","type":"string","description":"free text, may hold \"quotes\" and <tags>"},{"name":"ts","type":"timestamp"}]}`)
	benchJobTypeFacet  = []byte(`{"_producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark","_schemaURL":"https://openlineage.io/spec/facets/2-0-3/JobTypeJobFacet.json#/$defs/JobTypeJobFacet","processingType":"BATCH","integration":"SPARK","jobType":"SQL_JOB"}`)
	benchColumnFacet   = []byte(`{"_producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark","_schemaURL":"https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet","fields":{"order_id":{"inputFields":[{"namespace":"s3://raw-bucket","name":"landing/orders","field":"order_id","transformations":[{"type":"DIRECT","subtype":"IDENTITY","description":"","masking":false}]}]},"amount":{"inputFields":[{"namespace":"s3://raw-bucket","name":"landing/orders","field":"price","transformations":[{"type":"DIRECT","subtype":"TRANSFORMATION","description":"price * qty","masking":false}]},{"namespace":"s3://raw-bucket","name":"landing/orders","field":"qty","transformations":[{"type":"DIRECT","subtype":"TRANSFORMATION","masking":false},{"type":"INDIRECT","subtype":"FILTER","masking":false}]}]},"country":{"inputFields":[{"namespace":"s3://raw-bucket","name":"landing/customers","field":"country"}]}},"dataset":[{"namespace":"s3://raw-bucket","name":"landing/orders","field":"status","transformations":[{"type":"INDIRECT","subtype":"FILTER"}]}]}`)
	benchSymlinksFacet = []byte(`{"_producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark","_schemaURL":"https://openlineage.io/spec/facets/1-0-1/SymlinksDatasetFacet.json#/$defs/SymlinksDatasetFacet","identifiers":[{"namespace":"arn:aws:glue:us-east-1:123456789012","name":"table/warehouse/orders","type":"TABLE"},{"namespace":"hive://metastore:9083","name":"warehouse.orders","type":"TABLE"}]}`)
	benchLifecycle     = []byte(`{"_producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark","_schemaURL":"https://openlineage.io/spec/facets/1-0-1/LifecycleStateChangeDatasetFacet.json#/$defs/LifecycleStateChangeDatasetFacet","lifecycleStateChange":"OVERWRITE"}`)
	benchErrorFacet    = []byte(`{"_producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark","message":"Job aborted due to stage failure: Task 3 in stage 7.0 failed 4 times","programmingLanguage":"JAVA","stackTrace":"org.apache.spark.SparkException: Job aborted\n\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2672)\n\tat scala.collection.mutable.ResizableArray.foreach(ResizableArray.scala:62)"}`)
	benchNominalFacet  = []byte(`{"_producer":"https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/airflow","nominalStartTime":"2026-03-01T00:00:00Z","nominalEndTime":"2026-03-02T00:00:00Z"}`)
)

func BenchmarkFacetSchema(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if f := interpretFacet(fSchema, benchSchemaFacet); !f.ok[0] {
			b.Fatal("no schema")
		}
	}
}

func BenchmarkFacetJobType(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if f := interpretFacet(fJobType, benchJobTypeFacet); !f.ok[2] {
			b.Fatal("no integration")
		}
	}
}

func BenchmarkColumnEdges(b *testing.B) {
	c := ColumnLineage{Output: Dataset{Namespace: "s3://warehouse", Name: "warehouse/orders"}, Raw: benchColumnFacet}
	var dst []FieldEdge
	b.ReportAllocs()
	for b.Loop() {
		if dst = c.Edges(dst[:0]); len(dst) != 4 {
			b.Fatalf("%d edges", len(dst))
		}
	}
}

func BenchmarkAliases(b *testing.B) {
	d := Dataset{Namespace: "s3://warehouse", Name: "warehouse/orders"}
	var dst []Alias
	b.ReportAllocs()
	for b.Loop() {
		if dst = aliasesOf(dst[:0], d, benchSymlinksFacet); len(dst) != 2 {
			b.Fatalf("%d aliases", len(dst))
		}
	}
}

func BenchmarkRunAndLifecycleFacets(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if lifecycleOf(benchLifecycle) != "OVERWRITE" {
			b.Fatal("no state")
		}
		if f := runFacetsOf(benchErrorFacet, benchNominalFacet); !f.HasError || !f.HasNominalEnd {
			b.Fatal("no run facets")
		}
	}
}

// BenchmarkScanSkip validates whole records with skip: the scanner's
// inner loop, which most of a record (its facets) goes through.
func BenchmarkScanSkip(b *testing.B) {
	evs := benchEvents(64)
	size := 0
	for _, e := range evs {
		size += len(e)
	}
	b.SetBytes(int64(size / len(evs)))
	var s scanner
	n := 0
	for b.Loop() {
		s.reset(evs[n%len(evs)])
		s.skip(1)
		if s.end(); s.err != nil {
			b.Fatal(s.err)
		}
		n++
	}
}
