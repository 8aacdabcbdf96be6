"""ClickHouse's side of `benches/field/run.sh`, in process (chDB, `pip install chdb-core`).

Subcommands (each prints one JSON line on stdout):

  bulk    --csv FILE --db DIR              one INSERT ... SELECT * FROM file(...) of the CSV
                                           into a MergeTree table ordered by (hostname, time)
  inserts --csv FILE --db DIR [--rows N]   the CSV read into an Arrow table in memory first
                                           (untimed), then one INSERT ... SELECT * FROM
                                           Python(<Arrow slice of N rows>) per slice into the
                                           same table: a part per INSERT, merged in the
                                           background
  query   --db DIR --hosts H --days D      q1, q2, q3: one untimed run, then the median of N

A load measures, around the INSERTs only: wall time, user+sys CPU time of this process
(every ClickHouse thread included), then OPTIMIZE TABLE ... FINAL (timed apart; its CPU
time is counted with the load's, as DuckDB's CHECKPOINT and tscoll's `close` are), and the
allocated size of the database directory but the parts merged away (outdated parts, which
ClickHouse deletes some time later). ClickHouse does not fsync inserted parts by
default, and both loads keep that default. Peak RSS is this process's ru_maxrss (for
`inserts`, it includes the Arrow table held in memory). Query results are discarded by the
Null output format inside ClickHouse, so the time is the engine's. The queries, columns and
figures are those of `duckdb_bench.py`.
"""

import argparse
import json
import os
import shutil
import sys
import time

from duckdb_bench import (
    FIELDS,
    TAGS,
    arrow_batches,
    cpu_seconds,
    peak_rss_bytes,
    queries,
    read_arrow,
    timed_queries,
)

TABLE = ", ".join(
    ["time DateTime64(3, 'UTC')"]
    + [f"{t} LowCardinality(String)" for t in TAGS]
    + [f"{f} Int32" for f in FIELDS]
)
# The structure of the CSV as file() reads it (no quotes: it sits inside a string literal).
STRUCTURE = ", ".join(
    ["time DateTime64(3)"] + [f"{t} String" for t in TAGS] + [f"{f} Int32" for f in FIELDS]
)


def session(path):
    import chdb
    from chdb import session as chs

    return chdb, chs.Session(path)


def allocated_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def create(path):
    """A fresh database in `path` with the empty MergeTree table bench.cpu."""
    shutil.rmtree(path, ignore_errors=True)
    chdb, s = session(path)
    s.query("CREATE DATABASE IF NOT EXISTS bench")
    s.query(f"CREATE TABLE bench.cpu ({TABLE}) ENGINE = MergeTree ORDER BY (hostname, time)")
    return chdb, s


def finish(chdb, s, db, mode, wall, cpu0, inserts):
    """Merges the table's parts into one (OPTIMIZE ... FINAL, timed apart, its CPU time
    counted with the load's), closes the session and prints the load's JSON line."""
    merge_start = time.perf_counter()
    s.query("OPTIMIZE TABLE bench.cpu FINAL")
    merge_s = time.perf_counter() - merge_start
    cpu = cpu_seconds() - cpu0
    rows = int(str(s.query("SELECT count() FROM bench.cpu", "CSV")).strip())
    threads = int(str(s.query("SELECT getSetting('max_threads')", "CSV")).strip().strip('"'))
    # The parts merged away stay on disk until a cleanup (every 30 s or so): not counted.
    outdated = str(
        s.query(
            "SELECT path FROM system.parts WHERE database = 'bench' AND table = 'cpu' "
            "AND NOT active",
            "TSVRaw",
        )
    ).split()
    s.close()
    outdated_bytes = sum(allocated_bytes(path) for path in outdated)
    disk = allocated_bytes(db) - outdated_bytes
    print(
        json.dumps(
            {
                "system": f"ClickHouse {chdb.__version__} (chDB), {mode}, {threads} threads",
                "engine": "clickhouse",
                "chdb_version": chdb.__version__,
                "mode": mode,
                "measurements": rows,
                "seconds": wall,
                "measurements_per_s": rows / max(wall, 1e-9),
                "cpu_seconds": cpu,
                "measurements_per_cpu_s": rows / cpu if cpu > 0 else None,
                "merge_seconds": merge_s,
                "inserts": inserts,
                "disk_bytes": disk,
                "outdated_part_bytes": outdated_bytes,
                "bytes_per_measurement": disk / max(rows, 1),
                "peak_rss_bytes": peak_rss_bytes(),
                "durability": "no fsync",
                "threads": threads,
            }
        )
    )


def cmd_bulk(args):
    chdb, s = create(args.db)
    path = os.path.abspath(args.csv)
    cpu0, start = cpu_seconds(), time.perf_counter()
    s.query(
        f"INSERT INTO bench.cpu SELECT * FROM file('{path}', 'CSVWithNames', '{STRUCTURE}') "
        "SETTINGS date_time_input_format = 'best_effort'"
    )
    wall = time.perf_counter() - start
    finish(chdb, s, args.db, "bulk CSV load", wall, cpu0, 1)


def cmd_inserts(args):
    # Read and cut before the clock starts: only the INSERTs are timed. The time column
    # keeps its zone (UTC), as the table's DateTime64(3, 'UTC').
    batches = arrow_batches(read_arrow(args.csv, zone="UTC"), args.rows)
    if not batches:
        sys.exit(f"no rows in {args.csv}")
    chdb, s = create(args.db)
    cpu0, start = cpu_seconds(), time.perf_counter()
    for batch in batches:
        # Python(batch): chDB reads the Arrow slice `batch` of this frame in place. Each
        # INSERT of fewer than min_insert_block_size_rows rows is one block, one part.
        s.query("INSERT INTO bench.cpu SELECT * FROM Python(batch)")
    wall = time.perf_counter() - start
    finish(
        chdb, s, args.db, f"one INSERT per {args.rows}-row Arrow batch (a part each)", wall,
        cpu0, len(batches),
    )


def cmd_query(args):
    chdb, s = session(args.db)

    def run(sql):
        # The result is discarded inside ClickHouse, so the time is the engine's.
        s.query(sql, "Null")

    def count(sql):
        return int(str(s.query(f"SELECT count() FROM ({sql})", "CSV")).strip())

    qs = queries(
        args.hosts,
        args.days,
        table="bench.cpu",
        hour="toStartOfHour(time)",
        at="toDateTime64('{}', 3, 'UTC')",
    )
    out = timed_queries(qs, run, count, args.reps)
    s.close()
    print(
        json.dumps(
            {
                "system": f"ClickHouse {chdb.__version__} (chDB), queries",
                "engine": "clickhouse",
                "kind": "query",
                "reps": args.reps,
                "queries": out,
            }
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("bulk")
    p.add_argument("--csv", required=True)
    p.add_argument("--db", required=True)
    p = sub.add_parser("inserts")
    p.add_argument("--csv", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--rows", type=int, default=5000)
    p = sub.add_parser("query")
    p.add_argument("--db", required=True)
    p.add_argument("--hosts", type=int, required=True)
    p.add_argument("--days", type=float, required=True)
    p.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    {"bulk": cmd_bulk, "inserts": cmd_inserts, "query": cmd_query}[args.cmd](args)


if __name__ == "__main__":
    main()
