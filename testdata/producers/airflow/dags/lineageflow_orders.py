"""A small Airflow DAG for collect/TestAirflowDagsTest: extract -> load.
Every task event of the OpenLineage provider carries the parent run facet
of the DAG run. The tasks declare inlets/outlets, but Airflow 3.3.2 with
provider 2.20.3 does not turn a PythonOperator's Assets into OpenLineage
datasets: the events carry none (the test checks the DAG -> task links)."""

import pendulum
from airflow.sdk import DAG, Asset
from airflow.providers.standard.operators.python import PythonOperator


def _noop():
    return None


with DAG(
    dag_id="lineageflow_orders",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    schedule=None,
    catchup=False,
):
    extract = PythonOperator(
        task_id="extract",
        python_callable=_noop,
        inlets=[Asset("s3://lake/raw/orders")],
        outlets=[Asset("s3://lake/staging/orders")],
    )
    load = PythonOperator(
        task_id="load",
        python_callable=_noop,
        inlets=[Asset("s3://lake/staging/orders")],
        outlets=[Asset("s3://lake/marts/orders")],
    )
    extract >> load
