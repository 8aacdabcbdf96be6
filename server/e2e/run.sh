#!/usr/bin/env bash
# End-to-end test of `tscoll serve` with real MongoDB clients (server/e2e/README.md).
#
#   bash server/e2e/run.sh PATH/TO/tscoll
#
# Installs mongosh and pymongo under target/e2e/ on first run (install.sh), serves a fresh
# database on a free loopback port, replays a mongosh session and a pymongo session against
# it (each checks every answer), drives the interactive shell (`show dbs`, `show
# collections`), stops the server with SIGTERM and expects exit status 0 within 30 s, then
# reads the collections the sessions left with the tscoll binary itself.
# Every part runs even after one fails; the run exits non-zero, naming each failed part.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: bash server/e2e/run.sh PATH/TO/tscoll" >&2
    exit 2
fi
if [ ! -x "$1" ]; then
    echo "e2e: '$1' is not an executable (build it first: cargo build -p tscoll-cli)" >&2
    exit 2
fi
tscoll="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "$(dirname "$0")/../.."
here=server/e2e
started=$SECONDS

# A failure that ends the run at once (nothing after it could run).
fail() {
    echo "e2e: FAILED: $*" >&2
    exit 1
}
# A failed part: the run goes on, and ends non-zero.
failures=()
failed() {
    echo "e2e: FAIL: $*" >&2
    failures+=("$*")
}

bash "$here/install.sh" || fail "installing the clients (server/e2e/install.sh)"
echo "e2e: clients ready in $((SECONDS - started)) s"
mongosh="$PWD/target/e2e/node/node_modules/.bin/mongosh"
python="$PWD/target/e2e/venv/bin/python"

tmp="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
db="$tmp/db"
log="$tmp/server.log"
# mongosh keeps its config, history and logs under $HOME: a scratch one.
export HOME="$tmp/home"
mkdir -p "$HOME"

show_log() {
    echo "---- tscoll serve's output:" >&2
    cat "$log" >&2 || true
    echo "----" >&2
}

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
uri="mongodb://127.0.0.1:$port"
"$tscoll" serve --db "$db" --bind "127.0.0.1:$port" >"$log" 2>&1 &
server_pid=$!
echo "e2e: tscoll serve --db $db --bind 127.0.0.1:$port (pid $server_pid)"

# Ready when mongosh's handshake and a ping (`--eval`) go through: 30 s at most.
deadline=$((SECONDS + 30))
until out="$("$mongosh" --quiet "$uri/e2e?serverSelectionTimeoutMS=1000" \
    --eval 'db.runCommand({ping: 1}).ok' 2>&1)" && [ "$out" = "1" ]; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        show_log
        fail "tscoll serve exited before it accepted connections"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "$out" >&2
        show_log
        fail "tscoll serve did not answer mongosh's ping within 30 s"
    fi
    sleep 0.5
done
echo "ok  mongosh --eval 'db.runCommand({ping: 1})' (at $((SECONDS - started)) s)"

echo "e2e: mongosh session ($here/mongosh_session.js)"
"$mongosh" --quiet --file "$here/mongosh_session.js" "$uri/e2e" \
    || failed "the mongosh session ($here/mongosh_session.js): see FAIL above"

echo "e2e: pymongo session ($here/pymongo_session.py)"
"$python" "$here/pymongo_session.py" "$uri/" \
    || failed "the pymongo session ($here/pymongo_session.py): see FAIL above"

# The interactive shell (no --quiet, commands on stdin): its banner needs buildInfo and the
# startup checks; `show dbs` and `show collections` are the shell's own syntax.
echo "e2e: interactive mongosh"
if out="$(printf '%s\n' 'db.runCommand({ping: 1})' 'show dbs' 'show collections' \
    'db.mongosh_kept.countDocuments()' | "$mongosh" "$uri/e2e" 2>&1)"; then
    echo "$out" | sed -n '/^e2e> /,$p'
    missing=""
    for want in "Using MongoDB:" "e2e> { ok: 1 }" "e2e_py" "mongosh_kept" "[time-series]" "e2e> 3"; do
        grep -qF -- "$want" <<<"$out" || missing="$want"
    done
    if [ -n "$missing" ]; then
        echo "$out" >&2
        failed "the interactive mongosh session printed no '$missing'"
    else
        echo "ok  interactive mongosh: banner, ping, show dbs, show collections"
    fi
else
    echo "$out" >&2
    failed "mongosh with commands on stdin exited non-zero"
fi

# Graceful shutdown: SIGTERM, then exit status 0 within 30 s.
if ! kill -0 "$server_pid" 2>/dev/null; then
    show_log
    fail "tscoll serve is no longer running after the sessions"
fi
kill -TERM "$server_pid"
deadline=$((SECONDS + 30))
while kill -0 "$server_pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        show_log
        fail "tscoll serve did not exit within 30 s of SIGTERM"
    fi
    sleep 0.2
done
status=0
wait "$server_pid" || status=$?
server_pid=""
if [ "$status" -ne 0 ]; then
    show_log
    failed "tscoll serve exited with status $status after SIGTERM (want 0)"
else
    echo "ok  tscoll serve stopped on SIGTERM with status 0"
fi

# What the sessions left, read by tscoll itself from the closed database.
if "$tscoll" list --db "$db" --json >"$tmp/list.json"; then
    python3 - "$tmp/list.json" <<'EOF' || failed "the collections left on disk (tscoll list --json)"
import json, sys
text = open(sys.argv[1]).read()
try:
    value = json.loads(text)
    rows = value if isinstance(value, list) else [value]
except json.JSONDecodeError:
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
got = {r["name"]: r["measurements"] for r in rows}
want = {"e2e.mongosh_kept": 3, "e2e_py.pymongo_kept": 4}
if got != want:
    print(text, file=sys.stderr)
    sys.exit(f"collections and measurements: got {got}, want {want}")
EOF
else
    failed "tscoll list --db $db"
fi
# shellcheck disable=SC2016 # $gte is MongoDB's, not the shell's
count="$("$tscoll" find --db "$db" e2e.mongosh_kept --filter '{"v": {"$gte": 2}}' --count)" \
    || count="(tscoll find failed)"
if [ "$count" = "2" ]; then
    echo "ok  tscoll list and tscoll find read what the sessions left"
else
    failed "tscoll find --db $db e2e.mongosh_kept --filter '{\"v\": {\"\$gte\": 2}}' --count printed '$count', want 2"
fi

if [ "${#failures[@]}" -gt 0 ]; then
    echo "e2e: FAILED after $((SECONDS - started)) s, ${#failures[@]} part(s):" >&2
    printf '  %s\n' "${failures[@]}" >&2
    exit 1
fi
echo "e2e: passed in $((SECONDS - started)) s"
