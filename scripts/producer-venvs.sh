#!/usr/bin/env bash
# Make (or refresh) the Python virtual environments of the real producers
# the collect tests run, from their pinned requirements, where the tests
# look for them: next to the stand-ins' env file ($STANDIN_DIR, default
# .standins). The tests make a missing one themselves on first use; this
# script does it ahead (CI caches them), and `make test-airflow` uses it.
#
#   scripts/producer-venvs.sh [openlineage] [dbt] [airflow]   # no args: openlineage and dbt
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${STANDIN_DIR:-$PWD/.standins}"
mkdir -p "$dir"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then names=(openlineage dbt); fi
for n in "${names[@]}"; do
	case "$n" in
	openlineage) venv=openlineage-venv req=testdata/openlineage-python/requirements.txt probe="import openlineage.client.transport.http" ;;
	dbt) venv=dbt-venv req=testdata/producers/dbt/requirements.txt probe="import dbt.adapters.duckdb, openlineage.common.provider.dbt" ;;
	airflow) venv=airflow-venv req=testdata/producers/airflow/requirements.txt probe="import airflow.providers.openlineage" ;;
	*) echo "producer-venvs: unknown venv $n (openlineage, dbt, airflow)" >&2; exit 2 ;;
	esac
	if "$dir/$venv/bin/python" -c "$probe" 2>/dev/null; then
		echo "producer-venvs: $dir/$venv is ready"
		continue
	fi
	echo "producer-venvs: creating $dir/$venv from $req"
	python3 -m venv "$dir/$venv"
	"$dir/$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
	"$dir/$venv/bin/python" -c "$probe"
done
