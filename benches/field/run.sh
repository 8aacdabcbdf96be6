#!/usr/bin/env bash
# The field, side by side: DuckDB, ClickHouse and tscoll load and query the same TSBS
# cpu-only data.
#
#   benches/field/run.sh [--hosts H] [--days D]      (default 1000 hosts x 1 day)
#
# Needs Rust and Python 3 (with venv) and the network for pip: DuckDB and ClickHouse (chDB,
# in process) go into a venv under target/field-venv (versions pinned in
# benches/field/requirements.txt). The data goes
# to target/field-data (NDJSON and CSV of `tscoll bench gen`, kept for the next run with the
# same size; the CSV also cut into 5000-row files), then, one after the other:
#
#   (a) DuckDB: CREATE TABLE ... AS SELECT * FROM read_csv(...) of the CSV, one transaction
#   (b) DuckDB: one COPY per 5000-row file, each in its own transaction (synced per commit)
#   (b2) ClickHouse (chDB): INSERT ... SELECT * FROM file(...) of the CSV into a MergeTree
#   (c) tscoll ingest --json of the NDJSON file, then of the CSV file (parsing on one thread,
#       inserting on another, batches of 5000, buffered)
#   (d) tscoll bench ingest --json: 1 and 2 threads, buffered and sync
#   then the queries q1, q2, q3 (median of 5 runs after one untimed) on the databases of
#   (a) (duckdb_bench.py query), (b2) (clickhouse_bench.py query) and (c) (tscoll bench
#   query --json).
#
# Prints a markdown table, then the raw JSON lines (also kept in
# target/field-data/results-<H>x<D>.jsonl).
set -euo pipefail

hosts=1000
days=1
while [ $# -gt 0 ]; do
    case "$1" in
        --hosts) hosts="$2"; shift 2 ;;
        --days) days="$2"; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

cd "$(dirname "$0")/../.."
venv=target/field-venv
data=target/field-data
here=benches/field
py="$venv/bin/python"
tscoll="$data/tscoll"

echo "== DuckDB in $venv" >&2
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
chunks="$data/cpu-$name-5000"
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
    echo "== cutting $csv into 5000-row files" >&2
    "$py" "$here/duckdb_bench.py" split --csv "$csv" --rows 5000 --out "$chunks" >&2
    touch "$chunks/done"
fi

echo "== (a) DuckDB bulk load" >&2
"$py" "$here/duckdb_bench.py" bulk --csv "$csv" --db "$data/duckdb-bulk.db" >> "$results"

echo "== (b) DuckDB 5000-row commits" >&2
"$py" "$here/duckdb_bench.py" commits --dir "$chunks" --db "$data/duckdb-commits.db" >> "$results"
rm -f "$data/duckdb-commits.db" "$data/duckdb-commits.db.wal"

echo "== (b2) ClickHouse bulk load" >&2
"$py" "$here/clickhouse_bench.py" bulk --csv "$csv" --db "$data/clickhouse-bulk" >> "$results"

echo "== (c) tscoll ingest" >&2
csv_db="$data/tscoll-ingest-csv.db"
rm -rf "$csv_db"
"$tscoll" create --db "$csv_db" cpu --time-field time --meta-field tags --granularity seconds >/dev/null
"$tscoll" ingest --db "$csv_db" cpu "$csv" --json --compact \
    --csv-meta-columns hostname,region,datacenter,rack,os,arch,team,service,service_version,service_environment \
    | "$py" "$here/duckdb_bench.py" tag "tscoll ingest, CSV, 2 threads (parse, insert), batches of 5000" \
        --set engine='"tscoll"' >> "$results"
rm -rf "$csv_db"
db="$data/tscoll-ingest.db"
rm -rf "$db"
"$tscoll" create --db "$db" cpu --time-field time --meta-field tags --granularity seconds >/dev/null
"$tscoll" ingest --db "$db" cpu "$ndjson" --json --compact \
    | "$py" "$here/duckdb_bench.py" tag "tscoll ingest, NDJSON, 2 threads (parse, insert), batches of 5000" \
        --set engine='"tscoll"' --set queried=true >> "$results"

echo "== (d) tscoll bench ingest" >&2
for durability in buffered sync; do
    for threads in 1 2; do
        label="$threads thread"; [ "$threads" = 1 ] || label="${label}s"
        bench_db="$data/tscoll-bench.db"
        rm -rf "$bench_db"
        "$tscoll" bench ingest --hosts "$hosts" --days "$days" --threads "$threads" \
            --durability "$durability" --db "$bench_db" --json \
            | "$py" "$here/duckdb_bench.py" tag \
                "tscoll bench ingest, $label, batches of 5000, documents built in process" \
                --set engine='"tscoll"' >> "$results"
        rm -rf "$bench_db"
    done
done

echo "== queries: DuckDB" >&2
"$py" "$here/duckdb_bench.py" query --db "$data/duckdb-bulk.db" --hosts "$hosts" --days "$days" \
    --reps 5 >> "$results"

echo "== queries: ClickHouse" >&2
"$py" "$here/clickhouse_bench.py" query --db "$data/clickhouse-bulk" --hosts "$hosts" --days "$days" \
    --reps 5 >> "$results"

echo "== queries: tscoll bench query" >&2
query() {
    "$tscoll" bench query --db "$db" --hosts "$hosts" --days "$days" --reps 5 --json "$@"
}
if out=$(query --queries q1,q2,q3) || out=$(query); then
    printf '%s\n' "$out" \
        | "$py" "$here/duckdb_bench.py" tag "tscoll bench query" \
            --set engine='"tscoll"' --set kind='"query"' >> "$results"
else
    echo "tscoll bench query failed; the table has no tscoll query times" >&2
fi

echo
"$py" "$here/duckdb_bench.py" table "$results" --hosts "$hosts" --days "$days"
echo
cat "$results"
