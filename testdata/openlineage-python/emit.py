"""Emit OpenLineage events with the real openlineage-python client.

Usage: python emit.py OUT.ndjson NAMESPACE_PREFIX RUN_PREFIX

NAMESPACE_PREFIX prefixes every namespace, RUN_PREFIX (8 hex digits) is the
first group of every run id (a test's own graph on a shared server).

The client's file transport (append mode: one JSON event per line) writes a
small data platform's day: a Spark application with a SQL job that
completes (schema, symlinks, column lineage with 1-2-0 transformations, an
OVERWRITE), a SQL job of the same application that fails (errorMessage,
parent facet), a Flink job that streams (jobType STREAMING on START only,
then RUNNING), a dbt model whose output is DROPped, a JobEvent and a
DatasetEvent. Event times are fixed, so the output is the same for the same
arguments and client version.
"""

import sys

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import (
    DatasetEvent,
    InputDataset,
    Job,
    JobEvent,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
    StaticDataset,
)
from openlineage.client.facet_v2 import (
    column_lineage_dataset,
    datasource_dataset,
    documentation_dataset,
    error_message_run,
    job_type_job,
    lifecycle_state_change_dataset,
    nominal_time_run,
    ownership_job,
    parent_run,
    schema_dataset,
    sql_job,
    symlinks_dataset,
)
from openlineage.client.transport.file import FileConfig, FileTransport

out, ns, rp = sys.argv[1], sys.argv[2], sys.argv[3]
client = OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=out, append=True)))

SPARK, FLINK, DBT = ns + "-spark", ns + "-flink", ns + "-dbt"
S3, KAFKA, PG = ns + "-s3://lake", ns + "-kafka://broker:9092", ns + "-postgres://db:5432"

APP_RUN = rp + "-0000-7000-8000-000000000001"
OK_RUN = rp + "-0000-7000-8000-000000000002"
FAIL_RUN = rp + "-0000-7000-8000-000000000003"
STREAM_RUN = rp + "-0000-7000-8000-000000000004"
DBT_RUN = rp + "-0000-7000-8000-000000000005"


def t(s):
    return "2026-03-01T02:%s+00:00" % s


def parent():
    return parent_run.ParentRunFacet(
        run=parent_run.Run(runId=APP_RUN),
        job=parent_run.Job(namespace=SPARK, name="nightly_app"),
    )


def spark_type(kind):
    return job_type_job.JobTypeJobFacet(processingType="BATCH", integration="SPARK", jobType=kind)


def schema(*cols):
    return schema_dataset.SchemaDatasetFacet(
        fields=[schema_dataset.SchemaDatasetFacetFields(name=c, type="string") for c in cols]
    )


orders = InputDataset(
    namespace=S3,
    name="raw/orders",
    facets={
        "schema": schema("id", "amount", "customer"),
        "symlinks": symlinks_dataset.SymlinksDatasetFacet(
            identifiers=[symlinks_dataset.Identifier(namespace=ns + "-glue", name="raw.orders", type="TABLE")]
        ),
        "dataSource": datasource_dataset.DatasourceDatasetFacet(name="s3", uri=S3),
    },
)
daily = OutputDataset(
    namespace=S3,
    name="mart/orders_daily",
    facets={
        "schema": schema("day", "total"),
        "documentation": documentation_dataset.DocumentationDatasetFacet(description="orders per day"),
        "lifecycleStateChange": lifecycle_state_change_dataset.LifecycleStateChangeDatasetFacet(
            lifecycleStateChange=lifecycle_state_change_dataset.LifecycleStateChange.OVERWRITE
        ),
        "columnLineage": column_lineage_dataset.ColumnLineageDatasetFacet(
            fields={
                "total": column_lineage_dataset.Fields(
                    inputFields=[
                        column_lineage_dataset.InputField(
                            namespace=S3,
                            name="raw/orders",
                            field="amount",
                            transformations=[
                                column_lineage_dataset.Transformation(
                                    type="DIRECT", subtype="AGGREGATION", description="sum(amount)"
                                )
                            ],
                        )
                    ]
                )
            }
        ),
    },
)

# The Spark application and its SQL job that completes.
app = Job(namespace=SPARK, name="nightly_app", facets={"jobType": spark_type("APPLICATION")})
client.emit(RunEvent(eventType=RunState.START, eventTime=t("00:00.000"), run=Run(runId=APP_RUN), job=app))
ok_job = Job(
    namespace=SPARK,
    name="nightly_app.insert_orders_daily",
    facets={
        "jobType": spark_type("SQL_JOB"),
        "sql": sql_job.SQLJobFacet(query="INSERT OVERWRITE mart.orders_daily SELECT ..."),
        "ownership": ownership_job.OwnershipJobFacet(owners=[ownership_job.Owner(name="team:data-eng", type="TEAM")]),
    },
)
run_ok = Run(
    runId=OK_RUN,
    facets={
        "parent": parent(),
        "nominalTime": nominal_time_run.NominalTimeRunFacet(nominalStartTime="2026-03-01T02:00:00+00:00"),
    },
)
client.emit(RunEvent(eventType=RunState.START, eventTime=t("00:01.000"), run=run_ok, job=ok_job, inputs=[orders]))
client.emit(RunEvent(eventType=RunState.COMPLETE, eventTime=t("00:41.500"), run=run_ok, job=ok_job, inputs=[orders], outputs=[daily]))

# A SQL job of the same application that fails: a Run, never lineage.
fail_job = Job(namespace=SPARK, name="nightly_app.insert_customers", facets={"jobType": spark_type("SQL_JOB")})
customers = OutputDataset(namespace=S3, name="mart/customers")
client.emit(RunEvent(eventType=RunState.START, eventTime=t("00:02.000"), run=Run(runId=FAIL_RUN, facets={"parent": parent()}), job=fail_job, inputs=[orders]))
client.emit(
    RunEvent(
        eventType=RunState.FAIL,
        eventTime=t("00:09.250"),
        run=Run(
            runId=FAIL_RUN,
            facets={
                "parent": parent(),
                "errorMessage": error_message_run.ErrorMessageRunFacet(
                    message="AnalysisException: column customer_id not found", programmingLanguage="python"
                ),
            },
        ),
        job=fail_job,
        outputs=[customers],
    )
)
client.emit(RunEvent(eventType=RunState.COMPLETE, eventTime=t("01:00.000"), run=Run(runId=APP_RUN), job=app))

# A Flink job that streams: the jobType facet on its START only.
clicks = InputDataset(namespace=KAFKA, name="clicks")
sessions = OutputDataset(namespace=KAFKA, name="sessions")
stream_job = Job(
    namespace=FLINK,
    name="sessionize",
    facets={"jobType": job_type_job.JobTypeJobFacet(processingType="STREAMING", integration="FLINK", jobType="JOB")},
)
client.emit(RunEvent(eventType=RunState.START, eventTime=t("00:05.000"), run=Run(runId=STREAM_RUN), job=stream_job, inputs=[clicks], outputs=[sessions]))
for i in range(3):
    client.emit(
        RunEvent(
            eventType=RunState.RUNNING,
            eventTime=t("%02d:05.000" % (i + 1)),
            run=Run(runId=STREAM_RUN),
            job=Job(namespace=FLINK, name="sessionize"),
            inputs=[clicks],
            outputs=[sessions],
        )
    )

# A dbt model whose old output is dropped: no OUTPUTS to it.
dbt_job = Job(namespace=DBT, name="jaffle.stg_orders", facets={"jobType": job_type_job.JobTypeJobFacet(processingType="BATCH", integration="DBT", jobType="MODEL")})
old = OutputDataset(
    namespace=PG,
    name="analytics.stg_orders_v1",
    facets={
        "lifecycleStateChange": lifecycle_state_change_dataset.LifecycleStateChangeDatasetFacet(
            lifecycleStateChange=lifecycle_state_change_dataset.LifecycleStateChange.DROP
        )
    },
)
new = OutputDataset(namespace=PG, name="analytics.stg_orders", facets={"schema": schema("id", "amount")})
src = InputDataset(namespace=PG, name="raw.orders")
client.emit(RunEvent(eventType=RunState.START, eventTime=t("10:00.000"), run=Run(runId=DBT_RUN), job=dbt_job, inputs=[src]))
client.emit(RunEvent(eventType=RunState.COMPLETE, eventTime=t("10:30.000"), run=Run(runId=DBT_RUN), job=dbt_job, inputs=[src], outputs=[new, old]))

# Design-time lineage and a dataset's metadata.
client.emit(
    JobEvent(
        eventTime=t("11:00.000"),
        job=Job(namespace=DBT, name="jaffle.orders_report"),
        inputs=[InputDataset(namespace=PG, name="analytics.stg_orders")],
        outputs=[OutputDataset(namespace=PG, name="reports.orders")],
    )
)
client.emit(DatasetEvent(eventTime=t("11:30.000"), dataset=StaticDataset(namespace=PG, name="raw.orders", facets={"schema": schema("id", "amount")})))
