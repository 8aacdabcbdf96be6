"""Python against Rust on the same Arrow batches: TSBS cpu-only rows (1000 hosts) inserted
from a pyarrow Table with ``Collection.insert`` against ``Collection::insert_record_batch``,
and the whole collection read back with ``Collection.find`` into a pyarrow Table against
``Collection::find_arrow``.

Run from the repository root, after ``maturin build --release`` and installing the wheel
(docs/BENCHMARKS.md)::

    python python/bench/arrow_pair.py --hosts 1000 --steps 1000 --reps 5

The Rust side (``benches/examples/arrow_pair.rs``, built in release) generates the batches,
writes them to a Parquet file (a row group per batch), times its own runs and prints them;
this script then reads the same batches from that file and times the same operations in
Python, each run in a fresh database. Medians of ``--reps`` runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import tscoll


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=1000, help="rows per host (10 s apart)")
    parser.add_argument("--batch", type=int, default=10_000, help="rows per record batch")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tscoll-bench-") as scratch:
        parquet = Path(scratch) / "tsbs.parquet"
        rust = subprocess.run(
            ["cargo", "run", "--quiet", "--release", "-p", "tscoll-benches", "--example",
             "arrow_pair", "--", "--hosts", str(args.hosts), "--steps", str(args.steps),
             "--batch", str(args.batch), "--reps", str(args.reps), "--parquet", str(parquet)],
            check=True, capture_output=True, text=True,
        )
        rust_figures = json.loads(rust.stdout.strip().splitlines()[-1])
        batches = list(pq.ParquetFile(parquet).iter_batches(batch_size=args.batch))
        table = pa.Table.from_batches(batches)
        rows = table.num_rows
        assert rows == rust_figures["rows"], (rows, rust_figures["rows"])

        insert_s, find_s = [], []
        for rep in range(args.reps):
            with tscoll.open(Path(scratch) / f"db{rep}") as db:
                coll = db.create_collection("cpu", time_field="time", meta_field="tags")
                start = time.perf_counter()
                result = coll.insert(table)
                insert_s.append(time.perf_counter() - start)
                assert result.inserted_count == rows
                start = time.perf_counter()
                found = pa.table(coll.find())
                find_s.append(time.perf_counter() - start)
                assert found.num_rows == rows
                # Dropped before the next run, as the Rust side drops its batches.
                del found

    def line(what: str, rust_s: float, py_s: float) -> str:
        return (f"{what}: Rust {rows / rust_s / 1e6:.2f} M rows/s ({rust_s * 1000:.0f} ms), "
                f"Python {rows / py_s / 1e6:.2f} M rows/s ({py_s * 1000:.0f} ms), "
                f"Python/Rust {rust_s / py_s:.2f}x")

    print(f"{rows} rows in {len(batches)} batches, medians of {args.reps} runs")
    print(line("insert", rust_figures["insert_s_median"], statistics.median(insert_s)))
    print(line("find", rust_figures["find_s_median"], statistics.median(find_s)))
    print(json.dumps({"rust": rust_figures, "python": {"insert_s": insert_s, "find_s": find_s}}))


if __name__ == "__main__":
    main()
