"""Throughput of a running `tscoll serve` through pymongo, on the TSBS cpu-only workload.

The workload is the NDJSON (relaxed Extended JSON) that `driver_bench` writes, the same
measurements as `tscoll bench ingest`'s generator:

    cargo run --release -p tscoll-server --example driver_bench -- --write-ndjson target/cpu.ndjson
    python3 -m venv target/pymongo-venv && target/pymongo-venv/bin/pip install pymongo
    cargo build --release -p tscoll-cli
    target/release/tscoll serve --db "$(mktemp -d)/db" --bind 127.0.0.1:27018 &
    target/pymongo-venv/bin/python server/bench/pymongo_bench.py \
        --uri mongodb://127.0.0.1:27018/ --ndjson target/cpu.ndjson [--batch 5000] [--find 1000000]

It creates the time-series collection `bench.cpu` (it must not exist yet), then:

- inserts the file's measurements with `insert_many` in batches of `--batch` (write concern
  w: 1; the documents of a batch are parsed with the clock stopped, and get an `_id` before
  the clock starts, as pymongo would give them), and prints measurements/s;
- finds `--find` measurements, iterating the cursor to its end over getMore batches, and
  prints documents/s.

CPU seconds are this Python process's (client side only).
"""

import argparse
import resource
import sys
import time

from bson import ObjectId, json_util
from pymongo import MongoClient


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def batches(path, size):
    """The file's documents, `size` at a time."""
    batch = []
    with open(path, "r", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            batch.append(json_util.loads(line))
            if len(batch) == size:
                yield batch
                batch = []
    if batch:
        yield batch


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--uri", default="mongodb://127.0.0.1:27017/")
    p.add_argument("--ndjson", required=True, help="the workload, from driver_bench --write-ndjson")
    p.add_argument("--batch", type=int, default=5000)
    p.add_argument("--find", type=int, default=1_000_000)
    p.add_argument("--db", default="bench")
    p.add_argument("--collection", default="cpu")
    args = p.parse_args()

    client = MongoClient(args.uri, directConnection=True)
    db = client[args.db]
    db.command({"create": args.collection, "timeseries": {"timeField": "time", "metaField": "tags"}})
    coll = db[args.collection]

    n = 0
    wall = 0.0
    used = 0.0
    for batch in batches(args.ndjson, args.batch):
        for d in batch:
            d["_id"] = ObjectId()
        c0, t0 = cpu(), time.perf_counter()
        r = coll.insert_many(batch)
        wall += time.perf_counter() - t0
        used += cpu() - c0
        n += len(r.inserted_ids)
    print(f"pymongo insert_many: {n} in {wall:.2f} s = {n / wall:.0f}/s; "
          f"client CPU {used:.2f} s ({used * 1e6 / n:.2f} µs/measurement)")

    c0, t0 = cpu(), time.perf_counter()
    found = 0
    for _ in coll.find({}, limit=args.find):
        found += 1
    wall = time.perf_counter() - t0
    used = cpu() - c0
    print(f"pymongo find: {found} in {wall:.2f} s = {found / wall:.0f}/s; client CPU {used:.2f} s")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
