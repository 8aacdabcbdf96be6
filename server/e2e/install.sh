#!/usr/bin/env bash
# Installs the clients of the end-to-end test under target/e2e/ (run.sh calls it):
#   mongosh  (npm)  -> target/e2e/node/node_modules/.bin/mongosh
#   pymongo  (PyPI) -> target/e2e/venv, a virtual environment of python3
# Each is pinned; one already there at the pinned version is kept, any other is replaced.
# Needs node with npm, and python3 with the venv module and pip.
set -euo pipefail
cd "$(dirname "$0")/../.."

MONGOSH_VERSION=2.12.0
PYMONGO_VERSION=4.20.1

node_dir=target/e2e/node
venv_dir=target/e2e/venv
mongosh="$node_dir/node_modules/.bin/mongosh"

have_mongosh="$("$mongosh" --version 2>/dev/null || true)"
if [ "$have_mongosh" = "$MONGOSH_VERSION" ]; then
    echo "install: mongosh $MONGOSH_VERSION already in $node_dir"
else
    command -v npm >/dev/null || { echo "install: npm not found (mongosh needs node and npm)" >&2; exit 1; }
    echo "install: mongosh $MONGOSH_VERSION into $node_dir (had: ${have_mongosh:-none})"
    rm -rf "$node_dir"
    mkdir -p "$node_dir"
    # --ignore-scripts: the native add-ons that mongosh can do without (Kerberos, DNS, machine
    # id) would build with node-gyp, which fetches Node's headers from outside the registry.
    npm install --prefix "$node_dir" --no-audit --no-fund --ignore-scripts --loglevel=error \
        "mongosh@$MONGOSH_VERSION"
    have_mongosh="$("$mongosh" --version)"
    if [ "$have_mongosh" != "$MONGOSH_VERSION" ]; then
        echo "install: mongosh reports version '$have_mongosh', not $MONGOSH_VERSION" >&2
        exit 1
    fi
fi

pymongo_version() {
    "$venv_dir/bin/python" -c 'import pymongo; print(pymongo.version)' 2>/dev/null || true
}
have_pymongo="$(pymongo_version)"
if [ "$have_pymongo" = "$PYMONGO_VERSION" ]; then
    echo "install: pymongo $PYMONGO_VERSION already in $venv_dir"
else
    echo "install: pymongo $PYMONGO_VERSION into $venv_dir (had: ${have_pymongo:-none})"
    if [ ! -x "$venv_dir/bin/python" ]; then
        rm -rf "$venv_dir"
        python3 -m venv "$venv_dir"
    fi
    "$venv_dir/bin/python" -m pip install --quiet --disable-pip-version-check \
        "pymongo==$PYMONGO_VERSION"
    have_pymongo="$(pymongo_version)"
    if [ "$have_pymongo" != "$PYMONGO_VERSION" ]; then
        echo "install: pymongo reports version '$have_pymongo', not $PYMONGO_VERSION" >&2
        exit 1
    fi
fi
