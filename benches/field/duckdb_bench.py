"""DuckDB's side of `benches/field/run.sh`, and the table of every side.

Subcommands (each prints JSON lines on stdout, except `table`):

  split   --csv FILE --rows N --out DIR     cut a CSV into files of N rows, each with the header
  bulk    --csv FILE --db PATH              one CREATE TABLE ... AS SELECT * FROM read_csv(...)
  commits --dir DIR --db PATH               one COPY per file of DIR, each its own transaction
  appends --csv FILE --db PATH [--rows N]   the CSV read into an Arrow table in memory first
                                            (untimed), then one INSERT INTO cpu SELECT * FROM
                                            <Arrow slice of N rows> per slice, each its own
                                            transaction (BEGIN ... COMMIT)
  query   --db PATH --hosts H --days D      q1, q2, q3: one untimed run, then the median of N
  tag     LABEL [--set KEY=JSON]...         adds "system": LABEL (and KEY: JSON) to the JSON
                                            object on the last line of stdin (with
                                            measurements_per_cpu_s from cpu_seconds when it
                                            lacks one)
  table   FILE --hosts H --days D           the markdown table of a file of these JSON lines

Loads measure, around the load only: wall time (time.perf_counter), user+sys CPU time of
this process, every DuckDB thread included (resource.getrusage(RUSAGE_SELF)); then
CHECKPOINT (timed apart; its CPU time is counted with the load's, as tscoll counts `close`)
and the database file's allocated size (st_blocks, as `du` counts; the WAL too if one is
left). Peak RSS is this process's ru_maxrss, read before any query runs (for `appends`, it
includes the Arrow table held in memory).
"""

import argparse
import glob
import json
import os
import resource
import statistics
import sys
import time

TAGS = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
]
FIELDS = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
]
# The CSV of `tscoll bench gen --format csv`: time in RFC 3339 (UTC), 10 tags, 10 int fields.
COLUMNS = {"time": "TIMESTAMP", **{t: "VARCHAR" for t in TAGS}, **{f: "INTEGER" for f in FIELDS}}
SCHEMA = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_bytes():
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def allocated_bytes(path):
    total = 0
    for p in (path, path + ".wal"):
        if os.path.exists(p):
            total += os.stat(p).st_blocks * 512
    return total


def read_arrow(path, zone=None):
    """The CSV of `tscoll bench gen` as an Arrow table of COLUMNS' types: `time` a timestamp
    in microseconds (UTC; without a time zone when `zone` is None, as DuckDB's TIMESTAMP),
    the tags strings, the fields int32."""
    import pyarrow as pa
    from pyarrow import csv

    types = {
        "time": pa.timestamp("us", tz="UTC"),
        **{t: pa.string() for t in TAGS},
        **{f: pa.int32() for f in FIELDS},
    }
    table = csv.read_csv(
        path,
        convert_options=csv.ConvertOptions(column_types=types, include_columns=list(COLUMNS)),
    )
    # The values stay UTC: only the type's time zone changes.
    return table.set_column(0, "time", table["time"].cast(pa.timestamp("us", tz=zone)))


def arrow_batches(table, rows):
    """`table` cut into slices of `rows` rows (zero-copy), in order."""
    return [table.slice(offset, rows) for offset in range(0, table.num_rows, rows)]


def connect(path):
    import duckdb

    return duckdb, duckdb.connect(path)


def fresh(path):
    for p in (path, path + ".wal"):
        if os.path.exists(p):
            os.remove(p)


def load_report(duckdb, con, db, mode, wall, cpu, checkpoint_s, commits, durability):
    rows = con.execute("SELECT count(*) FROM cpu").fetchone()[0]
    disk = allocated_bytes(db)
    threads = int(con.execute("SELECT current_setting('threads')").fetchone()[0])
    return {
        "system": f"DuckDB {duckdb.__version__}, {mode}, {threads} threads",
        "engine": "duckdb",
        "duckdb_version": duckdb.__version__,
        "mode": mode,
        "measurements": rows,
        "seconds": wall,
        "measurements_per_s": rows / max(wall, 1e-9),
        "cpu_seconds": cpu,
        "measurements_per_cpu_s": rows / cpu if cpu > 0 else None,
        "checkpoint_seconds": checkpoint_s,
        "commits": commits,
        "disk_bytes": disk,
        "bytes_per_measurement": disk / max(rows, 1),
        "peak_rss_bytes": peak_rss_bytes(),
        "durability": durability,
        "threads": threads,
    }


def checkpoint(con):
    start = time.perf_counter()
    con.execute("CHECKPOINT")
    return time.perf_counter() - start


def cmd_split(args):
    os.makedirs(args.out, exist_ok=True)
    for old in glob.glob(os.path.join(args.out, "part-*.csv")):
        os.remove(old)
    files = 0
    with open(args.csv, "r", encoding="utf-8") as src:
        header = src.readline()
        out = None
        for i, line in enumerate(src):
            if i % args.rows == 0:
                if out:
                    out.close()
                out = open(os.path.join(args.out, f"part-{files:06d}.csv"), "w", encoding="utf-8")
                out.write(header)
                files += 1
            out.write(line)
        if out:
            out.close()
    print(json.dumps({"split": args.csv, "rows_per_file": args.rows, "files": files}))


def cmd_bulk(args):
    fresh(args.db)
    duckdb, con = connect(args.db)
    cpu0, start = cpu_seconds(), time.perf_counter()
    # One statement in auto-commit mode: one transaction, committed (and synced) at its end.
    con.execute(
        "CREATE TABLE cpu AS SELECT * FROM read_csv($path, header = true, columns = $columns)",
        {"path": args.csv, "columns": COLUMNS},
    )
    wall = time.perf_counter() - start
    checkpoint_s = checkpoint(con)
    cpu = cpu_seconds() - cpu0
    report = load_report(
        duckdb, con, args.db, "bulk CSV load, one transaction", wall, cpu, checkpoint_s, 1,
        "sync, one commit",
    )
    con.close()
    print(json.dumps(report))


def cmd_commits(args):
    files = sorted(glob.glob(os.path.join(args.dir, "part-*.csv")))
    if not files:
        sys.exit(f"no part-*.csv files in {args.dir}")
    fresh(args.db)
    duckdb, con = connect(args.db)
    con.execute(f"CREATE TABLE cpu ({SCHEMA})")
    cpu0, start = cpu_seconds(), time.perf_counter()
    for path in files:
        # DuckDB writes the WAL and syncs it at every commit (its default).
        con.execute("BEGIN TRANSACTION")
        con.execute(f"COPY cpu FROM '{path}' (FORMAT csv, HEADER true)")
        con.execute("COMMIT")
    wall = time.perf_counter() - start
    checkpoint_s = checkpoint(con)
    cpu = cpu_seconds() - cpu0
    rows_per_file = args.rows_per_file
    report = load_report(
        duckdb, con, args.db, f"{rows_per_file}-row commits (COPY per file)", wall, cpu,
        checkpoint_s, len(files), "sync, per commit",
    )
    con.close()
    print(json.dumps(report))


def cmd_appends(args):
    # Read and cut before the clock starts: only the appends are timed.
    batches = arrow_batches(read_arrow(args.csv), args.rows)
    if not batches:
        sys.exit(f"no rows in {args.csv}")
    fresh(args.db)
    duckdb, con = connect(args.db)
    con.execute(f"CREATE TABLE cpu ({SCHEMA})")
    cpu0, start = cpu_seconds(), time.perf_counter()
    for batch in batches:
        # What `con.append` does with a data frame: register it, INSERT ... SELECT from it;
        # DuckDB scans the Arrow slice in place. The WAL is synced at every commit.
        con.execute("BEGIN TRANSACTION")
        con.register("batch", batch)
        con.execute("INSERT INTO cpu SELECT * FROM batch")
        con.execute("COMMIT")
    con.unregister("batch")
    wall = time.perf_counter() - start
    checkpoint_s = checkpoint(con)
    cpu = cpu_seconds() - cpu0
    report = load_report(
        duckdb, con, args.db, f"Arrow appends of {args.rows} rows, a commit each", wall, cpu,
        checkpoint_s, len(batches), "sync, per commit",
    )
    con.close()
    print(json.dumps(report))


def queries(hosts, days, table="cpu", hour="date_trunc('hour', time)", at="TIMESTAMP '{}'"):
    """q1, q2, q3 as (name, what, sql, expected rows) in a dialect: `table`, the `hour` of a
    row's time, and `at`, a format turning "YYYY-MM-DD hh:mm:ss" (UTC) into a time literal."""
    host = f"host_{min(42, hosts - 1)}"
    fields = ", ".join(FIELDS)
    avgs = ", ".join(f"avg({f}) AS avg_{f}" for f in FIELDS)
    hours = int(days * 24 + 0.999999)
    lo, hi = at.format("2016-01-01 12:00:00"), at.format("2016-01-01 18:00:00")
    return [
        (
            "q1",
            f"all 10 fields of {host}, 12:00 to 18:00 of the first day, sorted on time",
            f"SELECT time, {fields} FROM {table} WHERE hostname = '{host}' "
            f"AND time >= {lo} AND time < {hi} ORDER BY time",
            2160 if days >= 0.75 else None,
        ),
        (
            "q2",
            "max(usage_user) per host per hour, all data",
            f"SELECT hostname, {hour} AS hour, max(usage_user) AS max_usage_user "
            f"FROM {table} GROUP BY hostname, hour",
            hosts * hours,
        ),
        (
            "q3",
            "avg of the 10 fields per host per hour, all data",
            f"SELECT hostname, {hour} AS hour, {avgs} FROM {table} GROUP BY hostname, hour",
            hosts * hours,
        ),
    ]


def timed_queries(qs, run, count, reps):
    """Times each query of `qs` with `run(sql)`: one untimed run, then `reps` timed ones;
    `count(sql)` gives its rows. Returns the JSON objects of the queries."""
    out = []
    for name, what, sql, expected in qs:
        run(sql)  # warm-up, untimed
        runs = []
        for _ in range(reps):
            start = time.perf_counter()
            run(sql)
            runs.append((time.perf_counter() - start) * 1000.0)
        rows = count(sql)
        if expected is not None and rows != expected:
            print(f"{name}: {rows} rows, expected {expected}", file=sys.stderr)
        out.append(
            {
                "name": name,
                "query": what,
                "sql": sql,
                "median_ms": statistics.median(runs),
                "runs_ms": runs,
                "rows": rows,
                "expected_rows": expected,
            }
        )
    return out


def cmd_query(args):
    duckdb, con = connect(args.db)

    def run(sql):
        # The result is materialized inside DuckDB (a temporary table), not converted to
        # Python objects, so the time is the engine's.
        con.execute(f"CREATE OR REPLACE TEMP TABLE result AS {sql}")

    def count(_sql):
        return con.execute("SELECT count(*) FROM result").fetchone()[0]

    out = timed_queries(queries(args.hosts, args.days), run, count, args.reps)
    print(
        json.dumps(
            {
                "system": f"DuckDB {duckdb.__version__}, queries",
                "engine": "duckdb",
                "kind": "query",
                "reps": args.reps,
                "threads": int(con.execute("SELECT current_setting('threads')").fetchone()[0]),
                "queries": out,
            }
        )
    )
    con.close()


def cmd_tag(args):
    text = sys.stdin.read().strip()
    obj = json.loads(text.splitlines()[-1])
    extra = {}
    for item in args.set:
        key, _, value = item.partition("=")
        extra[key] = json.loads(value)
    cpu = obj.get("cpu_seconds")
    if obj.get("measurements_per_cpu_s") is None and isinstance(cpu, (int, float)) and cpu > 0:
        obj["measurements_per_cpu_s"] = obj.get("measurements", 0) / cpu
    print(json.dumps({"system": args.label, **extra, **obj}))


def fmt_int(x):
    return "–" if x is None else f"{x:,.0f}"


def fmt_float(x):
    return "–" if x is None else f"{x:.2f}"


def fmt_bytes(x):
    if x is None:
        return "–"
    return f"{x / (1 << 20):,.0f} MiB"


def fmt_ms(q):
    if not q:
        return "–"
    parts = []
    for name in ("q1", "q2", "q3"):
        t = q.get(name)
        parts.append("–" if t is None else f"{t:.1f}")
    return " / ".join(parts)


def cmd_table(args):
    with open(args.file, "r", encoding="utf-8") as f:
        lines = [json.loads(l) for l in f if l.strip().startswith("{")]
    # Loads, and the loads the script skipped (a "skipped" reason instead of figures).
    loads = [l for l in lines if "measurements_per_s" in l or "skipped" in l]
    counts = sorted({l["measurements"] for l in loads if "measurements" in l})
    print(
        f"TSBS cpu-only, {args.hosts} hosts x {args.days:g} days: "
        f"{' / '.join(f'{c:,}' for c in counts)} measurements\n"
    )
    # Query timings: DuckDB's own, and tscoll's `bench query` (keys name and median_ms).
    duck_q = {}
    ch_q = {}
    tscoll_q = {}
    for l in lines:
        if l.get("engine") == "duckdb" and l.get("kind") == "query":
            duck_q = {q["name"]: q["median_ms"] for q in l["queries"]}
        elif l.get("engine") == "clickhouse" and l.get("kind") == "query":
            ch_q = {q["name"]: q["median_ms"] for q in l["queries"]}
        elif l.get("engine") == "tscoll" and l.get("kind") == "query":
            # `bench query --json`: the medians as q1_ms, q2_ms, q3_ms (earlier versions: a
            # "queries" list of {name, median_ms}).
            tscoll_q = {
                q.get("name"): q.get("median_ms")
                for q in l.get("queries", [])
                if q.get("name") in ("q1", "q2", "q3")
            }
            for name in ("q1", "q2", "q3"):
                if isinstance(l.get(f"{name}_ms"), (int, float)):
                    tscoll_q[name] = l[f"{name}_ms"]
    print(
        "| engine / loader | measurements/s (wall) | measurements per CPU-second "
        "| bytes/measurement | peak RSS | durability | q1 / q2 / q3 ms |"
    )
    print("|---|---:|---:|---:|---:|---|---|")
    for l in loads:
        if "skipped" in l:
            print(f"| {l['system']} | skipped: {l['skipped']} | – | – | – | – | – |")
            continue
        q = None
        if l.get("engine") == "duckdb" and l.get("mode", "").startswith("bulk"):
            q = duck_q
        elif l.get("engine") == "clickhouse" and l.get("mode", "").startswith("bulk"):
            q = ch_q
        elif l.get("engine") == "tscoll" and l.get("queried"):
            q = tscoll_q
        print(
            f"| {l['system']} | {fmt_int(l['measurements_per_s'])} "
            f"| {fmt_int(l.get('measurements_per_cpu_s'))} "
            f"| {fmt_float(l.get('bytes_per_measurement'))} "
            f"| {fmt_bytes(l.get('peak_rss_bytes'))} "
            f"| {l.get('durability', '–')} | {fmt_ms(q)} |"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("split")
    p.add_argument("--csv", required=True)
    p.add_argument("--rows", type=int, default=5000)
    p.add_argument("--out", required=True)
    p = sub.add_parser("bulk")
    p.add_argument("--csv", required=True)
    p.add_argument("--db", required=True)
    p = sub.add_parser("commits")
    p.add_argument("--dir", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--rows-per-file", type=int, default=5000)
    p = sub.add_parser("appends")
    p.add_argument("--csv", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--rows", type=int, default=5000)
    p = sub.add_parser("query")
    p.add_argument("--db", required=True)
    p.add_argument("--hosts", type=int, required=True)
    p.add_argument("--days", type=float, required=True)
    p.add_argument("--reps", type=int, default=5)
    p = sub.add_parser("tag")
    p.add_argument("label")
    p.add_argument("--set", action="append", default=[], metavar="KEY=JSON")
    p = sub.add_parser("table")
    p.add_argument("file")
    p.add_argument("--hosts", type=int, required=True)
    p.add_argument("--days", type=float, required=True)
    args = parser.parse_args()
    {
        "split": cmd_split,
        "bulk": cmd_bulk,
        "commits": cmd_commits,
        "appends": cmd_appends,
        "query": cmd_query,
        "tag": cmd_tag,
        "table": cmd_table,
    }[args.cmd](args)


if __name__ == "__main__":
    main()
