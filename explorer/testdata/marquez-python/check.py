"""Drive `lineageflow serve` with the real marquez-python client.

Usage: check.py <base-url> <namespace> <dataset> <job> <run-id>

Calls every read method of marquez_client.MarquezClient (0.50.0) that the
explorer serves, plus GET /api/v1/lineage with requests (the client has no
lineage call), and prints one JSON object summarising the answers for the
Go test to check. Any API error raises (exit status 1).
"""
import json
import sys

import requests
from marquez_client import MarquezClient


def main():
    base, ns, dataset, job, run_id = sys.argv[1:6]
    c = MarquezClient(url=base)
    out = {}
    out["namespaces"] = sorted(n["name"] for n in c.list_namespaces()["namespaces"])
    out["namespace"] = c.get_namespace(ns)["name"]
    out["datasets"] = sorted(d["name"] for d in c.list_datasets(ns)["datasets"])
    out["jobs"] = sorted(j["name"] for j in c.list_jobs(ns)["jobs"])
    d = c.get_dataset(ns, dataset)
    out["dataset"] = {"name": d["name"], "namespace": d["namespace"], "fields": [f["name"] for f in d["fields"]]}
    j = c.get_job(ns, job)
    out["job"] = {
        "name": j["name"],
        "inputs": sorted(i["name"] for i in j["inputs"]),
        "outputs": sorted(o["name"] for o in j["outputs"]),
        "latestRunState": (j.get("latestRun") or {}).get("state"),
    }
    out["runs"] = [(r["id"], r["state"]) for r in c.list_job_runs(ns, job)["runs"]]
    out["run"] = c.get_job_run(run_id)["state"]
    out["datasetVersions"] = c.list_dataset_versions(ns, dataset)["versions"]
    out["tags"] = c.list_tags()["tags"]
    out["columnLineage"] = sorted(n["id"] for n in c.get_column_lineage_by_dataset(ns, dataset)["graph"])
    r = requests.get(base + "/api/v1/lineage", params={"nodeId": f"dataset:{ns}:{dataset}", "depth": 2}, timeout=30)
    r.raise_for_status()
    out["lineage"] = sorted(n["id"] for n in r.json()["graph"])
    out["lineageEdges"] = sorted(
        e["origin"] + " -> " + e["destination"] for n in r.json()["graph"] for e in n["outEdges"]
    )
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
