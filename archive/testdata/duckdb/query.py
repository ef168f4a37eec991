"""Run the archive's Athena queries with DuckDB over a local copy of the
archive (the objects downloaded from S3 into ROOT, keys kept as paths).

    python query.py < request.json > result.json

request: {"root": DIR, "queries": [{"file": "job_runs.sql", "params": [...]}]}
result:  [[row, ...], ...] one list per query; timestamps as
         "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC), everything else as JSON.

The Athena SQL is run as it is but for two documented substitutions
(DuckDB's httpfs extension, which would read s3:// directly, cannot be
downloaded here, so the objects are read from a local tree):
  - the table lineageflow_archive.<table> becomes read_parquet over
    ROOT/<table>/*/*.parquet with hive_partitioning, event_date read as a
    string (Athena's partition column type; no date autocast);
  - from_utf8(x) (Athena/Trino: varbinary to varchar) becomes decode(x).
"""

import datetime
import json
import re
import sys

import duckdb


def substitute(sql, root):
    def table(m):
        glob = f"{root}/{m.group(1)}/*/*.parquet".replace("'", "''")
        return f"read_parquet('{glob}', hive_partitioning = true, hive_types_autocast = false)"

    sql = re.sub(r"\blineageflow_archive\.(events|dead_letters)\b", table, sql)
    return re.sub(r"\bfrom_utf8\(", "decode(", sql)


def value(v):
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("utf-8", "replace")
    return v


def main():
    req = json.load(sys.stdin)
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    out = []
    for q in req["queries"]:
        with open(q["file"], encoding="utf-8") as f:
            sql = substitute(f.read(), req["root"])
        rows = con.execute(sql, q.get("params", [])).fetchall()
        out.append([[value(v) for v in r] for r in rows])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
