"""The S3 stand-in: moto's server (S3 API) on loopback, durable like S3.

    python serve.py --host 127.0.0.1 --port 4569 --data DIR

moto keeps its buckets in memory. Like the Gremlin stand-in, this wrapper
loads them from DIR/s3.pickle at start and writes them back there when it
is stopped cleanly (SIGTERM or SIGINT, as scripts/standins-stop.sh sends),
so a cleanly restarted stand-in has the objects it had; a SIGKILL loses
what was written since the last start. Only S3 state is kept.
"""

import argparse
import os
import pickle

from moto.s3.models import s3_backends
from moto.server import main as moto_main

PARTITION = "aws"


def state_file(data):
    return os.path.join(data, "s3.pickle")


def load(data):
    path = state_file(data)
    if not os.path.exists(path):
        return
    with open(path, "rb") as f:
        saved = pickle.load(f)
    for account, buckets in saved.items():
        backend = s3_backends[account][PARTITION]
        backend.buckets.update(buckets)
    print(f"s3 stand-in: loaded {sum(len(b) for b in saved.values())} bucket(s) from {path}", flush=True)


def save(data):
    saved = {}
    for account in list(s3_backends.keys()):
        backend = s3_backends[account][PARTITION]
        if backend.buckets:
            saved[account] = dict(backend.buckets)
    path = state_file(data)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(saved, f)
    os.replace(tmp, path)
    print(f"s3 stand-in: saved {sum(len(b) for b in saved.values())} bucket(s) to {path}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--data", required=True)
    a = p.parse_args()
    os.makedirs(a.data, exist_ok=True)
    load(a.data)

    # moto's main turns SIGTERM and SIGINT into sys.exit(0): save on the
    # way out.
    try:
        moto_main(["-H", a.host, "-p", str(a.port)])
    finally:
        save(a.data)


if __name__ == "__main__":
    main()
