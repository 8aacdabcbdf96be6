#!/usr/bin/env bash
# The field, side by side: DuckDB, ClickHouse and tscoll load and query the same TSBS
# cpu-only data, in bulk and in calls of 5000 rows.
#
#   benches/field/run.sh [--hosts H] [--days D] [--no-queries]
#
#   --hosts H      hosts (series), each reporting every 10 s (default 1000)
#   --days D       days of data per host, may be fractional: ceil(8640 x D) points per host
#                  (default 1). The high-cardinality set: --hosts 200000 --days 0.0003
#                  (3 points per host)
#   --no-queries   loads only, no queries (q2 and q3 group by host and hour: with a few
#                  points per host they measure little)
#
# Needs Rust and Python 3 (with venv) and the network for pip: DuckDB, ClickHouse (chDB, in
# process) and pyarrow go into a venv under target/field-venv (versions pinned in
# benches/field/requirements.txt). The data goes to target/field-data (NDJSON and CSV of
# `tscoll bench gen`, kept for the next run with the same size; the CSV also cut into
# 5000-row files), then, one after the other:
#
#   (a) DuckDB: CREATE TABLE ... AS SELECT * FROM read_csv(...) of the CSV, one transaction
#   (b) DuckDB: one COPY per 5000-row file, each in its own transaction (synced per commit)
#   (c) DuckDB: the CSV read into an Arrow table (untimed), then one INSERT INTO ... SELECT
#       of each 5000-row Arrow slice, each in its own transaction (synced per commit)
#   (d) ClickHouse (chDB): INSERT ... SELECT * FROM file(...) of the CSV into a MergeTree
#   (e) ClickHouse (chDB): the CSV read into an Arrow table (untimed), then one INSERT ...
#       SELECT * FROM Python(...) of each 5000-row Arrow slice (a part each, not fsync'd)
#   (f) tscoll ingest --json of the CSV file, then of the NDJSON file (parsing on one
#       thread, inserting on another, batches of 5000, buffered)
#   (g) tscoll bench ingest --json: 1 and 2 threads, buffered and sync, documents built
#       batch by batch with the clock stopped
#   (h) tscoll bench ingest --json --generate ahead --columnar: Arrow record batches of
#       5000 rows (insert_record_batch), 1 thread, buffered, built before the clock starts.
#       That holds every record batch in memory (about 150 bytes a measurement; 300 are
#       asked for): skipped, with a row saying so, when /proc/meminfo's MemAvailable is
#       smaller
#   then, unless --no-queries, the queries q1, q2, q3 (median of 5 runs after one untimed)
#   on the databases of (a) (duckdb_bench.py query), (d) (clickhouse_bench.py query) and
#   (f)'s NDJSON (tscoll bench query --json).
#
# Every load reports measurements per wall second of its timed part (the inserts and
# commits) and per CPU-second: user+sys CPU time of its process, every thread, from the
# start of the timed part to after its close (DuckDB's CHECKPOINT, ClickHouse's OPTIMIZE
# ... FINAL, tscoll's close and compaction): getrusage(RUSAGE_SELF) in the Python scripts,
# /proc/self/stat in tscoll (`cpu_seconds` of its --json).
#
# Prints a markdown table (engine / loader, measurements/s, per CPU-second, bytes per
# measurement, peak RSS, durability, q1/q2/q3 ms), then the raw JSON lines (also kept in
# target/field-data/results-<H>x<D>.jsonl).
set -euo pipefail

hosts=1000
days=1
queries=1
while [ $# -gt 0 ]; do
    case "$1" in
        --hosts) hosts="$2"; shift 2 ;;
        --days) days="$2"; shift 2 ;;
        --no-queries) queries=0; shift ;;
        -h|--help)
            # The header comment, from line 2 to the first line that is not a comment.
            awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
            exit 0
            ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$hosts" in
    ''|*[!0-9]*|0) echo "--hosts needs a positive whole number, not '$hosts'" >&2; exit 2 ;;
esac
case "$days" in
    ''|*[!0-9.]*|*.*.*) echo "--days needs a positive number, not '$days'" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/../.."
venv=target/field-venv
data=target/field-data
here=benches/field
py="$venv/bin/python"
tscoll="$data/tscoll"
batch=5000

echo "== DuckDB, chDB and pyarrow in $venv" >&2
[ -x "$py" ] || python3 -m venv "$venv"
"$py" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"

echo "== tscoll (release build)" >&2
cargo build --release -p tscoll-cli
mkdir -p "$data"
# A copy, so that a rebuild of target/release during the run changes nothing.
rm -f "$tscoll"
cp target/release/tscoll "$tscoll"
name="${hosts}x${days}"
ndjson="$data/cpu-$name.ndjson"
csv="$data/cpu-$name.csv"
chunks="$data/cpu-$name-$batch"
results="$data/results-$name.jsonl"
: > "$results"

gen() { # FORMAT FILE
    if [ ! -s "$2" ]; then
        echo "== generating $2" >&2
        "$tscoll" bench gen --hosts "$hosts" --days "$days" --format "$1" --out "$2.tmp"
        mv "$2.tmp" "$2"
    fi
}
gen ndjson "$ndjson"
gen csv "$csv"
if [ ! -e "$chunks/done" ] || [ "$chunks/done" -ot "$csv" ]; then
    echo "== cutting $csv into $batch-row files" >&2
    "$py" "$here/duckdb_bench.py" split --csv "$csv" --rows "$batch" --out "$chunks" >&2
    touch "$chunks/done"
fi
# Measurements of the data set: the CSV's lines but its header.
measurements=$(($(wc -l < "$csv") - 1))

tag() { # LABEL [--set KEY=JSON]...: the JSON object on stdin, labelled, into the results
    "$py" "$here/duckdb_bench.py" tag "$@" >> "$results"
}

echo "== (a) DuckDB bulk load" >&2
"$py" "$here/duckdb_bench.py" bulk --csv "$csv" --db "$data/duckdb-bulk.db" >> "$results"

echo "== (b) DuckDB $batch-row commits, COPY per file" >&2
"$py" "$here/duckdb_bench.py" commits --dir "$chunks" --db "$data/duckdb-commits.db" \
    --rows-per-file "$batch" >> "$results"
rm -f "$data/duckdb-commits.db" "$data/duckdb-commits.db.wal"

echo "== (c) DuckDB $batch-row commits, Arrow appends" >&2
"$py" "$here/duckdb_bench.py" appends --csv "$csv" --db "$data/duckdb-appends.db" \
    --rows "$batch" >> "$results"
rm -f "$data/duckdb-appends.db" "$data/duckdb-appends.db.wal"

echo "== (d) ClickHouse bulk load" >&2
"$py" "$here/clickhouse_bench.py" bulk --csv "$csv" --db "$data/clickhouse-bulk" >> "$results"

echo "== (e) ClickHouse INSERT per $batch-row Arrow batch" >&2
"$py" "$here/clickhouse_bench.py" inserts --csv "$csv" --db "$data/clickhouse-inserts" \
    --rows "$batch" >> "$results"
rm -rf "$data/clickhouse-inserts"

echo "== (f) tscoll ingest" >&2
csv_db="$data/tscoll-ingest-csv.db"
rm -rf "$csv_db"
"$tscoll" create --db "$csv_db" cpu --time-field time --meta-field tags --granularity seconds >/dev/null
"$tscoll" ingest --db "$csv_db" cpu "$csv" --json --compact --batch-size "$batch" \
    --csv-meta-columns hostname,region,datacenter,rack,os,arch,team,service,service_version,service_environment \
    | tag "tscoll ingest, CSV, 2 threads (parse, insert), batches of $batch" \
        --set engine='"tscoll"'
rm -rf "$csv_db"
db="$data/tscoll-ingest.db"
rm -rf "$db"
"$tscoll" create --db "$db" cpu --time-field time --meta-field tags --granularity seconds >/dev/null
"$tscoll" ingest --db "$db" cpu "$ndjson" --json --compact --batch-size "$batch" \
    | tag "tscoll ingest, NDJSON, 2 threads (parse, insert), batches of $batch" \
        --set engine='"tscoll"' --set queried=true

bench_db="$data/tscoll-bench.db"
echo "== (g) tscoll bench ingest" >&2
for durability in buffered sync; do
    for threads in 1 2; do
        label="$threads thread"; [ "$threads" = 1 ] || label="${label}s"
        rm -rf "$bench_db"
        "$tscoll" bench ingest --hosts "$hosts" --days "$days" --threads "$threads" \
            --batch-size "$batch" --durability "$durability" --db "$bench_db" --json \
            | tag "tscoll bench ingest, $label, batches of $batch, documents built in process" \
                --set engine='"tscoll"'
        rm -rf "$bench_db"
    done
done

echo "== (h) tscoll bench ingest --columnar" >&2
label="tscoll bench ingest --columnar, 1 thread, Arrow record batches of $batch (insert_record_batch)"
need_kb=$((measurements * 300 / 1024))
avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo 2>/dev/null || true)
if [ -n "$avail_kb" ] && [ "$need_kb" -gt "$avail_kb" ]; then
    echo "skipped: --generate ahead needs about $((need_kb >> 20)) GiB, $((avail_kb >> 20)) GiB available" >&2
    printf '{"skipped": "needs about %s GiB of memory (--generate ahead), %s GiB available"}\n' \
        "$(((need_kb + (1 << 20) - 1) >> 20))" "$((avail_kb >> 20))" \
        | tag "$label" --set engine='"tscoll"'
else
    rm -rf "$bench_db"
    if out=$("$tscoll" bench ingest --hosts "$hosts" --days "$days" --threads 1 \
        --batch-size "$batch" --durability buffered --generate ahead --columnar \
        --db "$bench_db" --json); then
        printf '%s\n' "$out" | tag "$label" --set engine='"tscoll"'
    else
        status=$?
        echo "tscoll bench ingest --columnar failed (exit $status)" >&2
        printf '{"skipped": "failed, exit %s"}\n' "$status" | tag "$label" --set engine='"tscoll"'
    fi
    rm -rf "$bench_db"
fi

if [ "$queries" = 1 ]; then
    echo "== queries: DuckDB" >&2
    "$py" "$here/duckdb_bench.py" query --db "$data/duckdb-bulk.db" --hosts "$hosts" \
        --days "$days" --reps 5 >> "$results"

    echo "== queries: ClickHouse" >&2
    "$py" "$here/clickhouse_bench.py" query --db "$data/clickhouse-bulk" --hosts "$hosts" \
        --days "$days" --reps 5 >> "$results"

    echo "== queries: tscoll bench query" >&2
    query() {
        "$tscoll" bench query --db "$db" --hosts "$hosts" --days "$days" --reps 5 --json "$@"
    }
    if out=$(query --queries q1,q2,q3) || out=$(query); then
        printf '%s\n' "$out" | tag "tscoll bench query" --set engine='"tscoll"' --set kind='"query"'
    else
        echo "tscoll bench query failed; the table has no tscoll query times" >&2
    fi
else
    echo "== no queries (--no-queries)" >&2
fi

echo
"$py" "$here/duckdb_bench.py" table "$results" --hosts "$hosts" --days "$days"
echo
cat "$results"
