"""Drive `lineageflow serve` with the real marquez-python client.

Usage: check.py <base-url> <namespace> <dataset> <job> <run-id> [<field>]

Calls every read method of marquez_client.MarquezClient (0.50.0: 17 of
them), plus GET /api/v1/lineage with requests (the client has no lineage
call), and prints one JSON object summarising the answers for the Go test
to check. A method the server answers 501 (not implemented) gives
{"status": 501} and the route it names; any other API error raises (exit
status 1).
"""
import json
import sys

import requests
from marquez_client import MarquezClient
from marquez_client.errors import APIError


def status_of(fn):
    """The answer of fn(), or {"status": code, "route": ...} for a 501."""
    try:
        return fn()
    except APIError as e:
        resp = getattr(e.__cause__, "response", None)
        if resp is not None and resp.status_code == 501:
            return {"status": 501, "route": resp.json().get("route")}
        raise


def main():
    base, ns, dataset, job, run_id = sys.argv[1:6]
    field = sys.argv[6] if len(sys.argv) > 6 else "id"
    c = MarquezClient(url=base)
    out = {}
    # 1-2
    out["namespaces"] = sorted(n["name"] for n in c.list_namespaces()["namespaces"])
    out["namespace"] = c.get_namespace(ns)["name"]
    # 3-4
    out["datasets"] = sorted(d["name"] for d in c.list_datasets(ns)["datasets"])
    d = c.get_dataset(ns, dataset)
    out["dataset"] = {"name": d["name"], "namespace": d["namespace"], "fields": [f["name"] for f in d["fields"]],
                      "tags": d["tags"]}
    # 5-6
    out["datasetVersions"] = status_of(lambda: c.list_dataset_versions(ns, dataset)["versions"])
    out["datasetVersion"] = status_of(lambda: c.get_dataset_version(ns, dataset, "v1"))
    # 7-8
    out["jobs"] = sorted(j["name"] for j in c.list_jobs(ns)["jobs"])
    j = c.get_job(ns, job)
    latest = j.get("latestRun") or {}
    out["job"] = {
        "name": j["name"],
        "inputs": sorted(i["name"] for i in j["inputs"]),
        "outputs": sorted(o["name"] for o in j["outputs"]),
        "latestRunState": latest.get("state"),
        "latestRunId": latest.get("id"),
        "tags": j["tags"],
    }
    # 9-10: every run id of the job is readable
    runs = c.list_job_runs(ns, job)["runs"]
    out["runs"] = [(r["id"], r["state"]) for r in runs]
    out["runById"] = {r["id"]: c.get_job_run(r["id"])["state"] for r in runs}
    out["run"] = c.get_job_run(run_id)["state"]
    # 11-12
    out["sources"] = status_of(lambda: c.list_sources()["sources"])
    out["source"] = status_of(lambda: c.get_source("src"))
    # 13
    out["tagNames"] = sorted(t["name"] for t in c.list_tags()["tags"])
    # 14
    out["events"] = status_of(lambda: c.list_events())
    out["eventsNs"] = status_of(lambda: c.list_events(ns))
    # 15-17
    out["columnLineage"] = sorted(n["id"] for n in c.get_column_lineage_by_dataset(ns, dataset)["graph"])
    out["columnLineageField"] = sorted(n["id"] for n in c.get_column_lineage_by_dataset_field(ns, dataset, field)["graph"])
    out["columnLineageJob"] = sorted(n["id"] for n in c.get_column_lineage_by_job(ns, job)["graph"])
    r = requests.get(base + "/api/v1/lineage", params={"nodeId": f"dataset:{ns}:{dataset}", "depth": 2}, timeout=30)
    r.raise_for_status()
    out["lineage"] = sorted(n["id"] for n in r.json()["graph"])
    out["lineageEdges"] = sorted(
        e["origin"] + " -> " + e["destination"] for n in r.json()["graph"] for e in n["outEdges"]
    )
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
