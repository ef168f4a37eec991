"""Send the events of testdata/openlineage-python/emit.py through the real
openlineage-python client's HTTP transport (api_key auth, gzip) instead of
its file transport.

Usage: python emit_http.py NAMESPACE_PREFIX RUN_PREFIX

The endpoint and the key come from OPENLINEAGE_URL and OPENLINEAGE_API_KEY,
the variables Airflow's OpenLineage provider and dbt-ol read. emit.py is
run unchanged, with its FileTransport replaced by an HttpTransport: the
same events, in the same order, serialised by the same client code. The
transport raises on any non-2xx answer, so the script fails unless the
collector acknowledged every event.
"""

import os
import runpy
import sys

from openlineage.client.transport import file as filemod
from openlineage.client.transport.http import HttpConfig, HttpTransport


class ViaHTTP(HttpTransport):
    def __init__(self, _file_config):
        super().__init__(
            HttpConfig.from_dict(
                {
                    "type": "http",
                    "url": os.environ["OPENLINEAGE_URL"],
                    "endpoint": "api/v1/lineage",
                    "auth": {"type": "api_key", "apiKey": os.environ["OPENLINEAGE_API_KEY"]},
                    "compression": "gzip",
                }
            )
        )


filemod.FileTransport = ViaHTTP
emit = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "openlineage-python", "emit.py")
sys.argv = [emit, os.devnull] + sys.argv[1:]
runpy.run_path(emit, run_name="__main__")
