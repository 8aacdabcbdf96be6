#!/usr/bin/env bash
# CI's step for the Python package (.ci/run): a virtual environment under
# target/python/venv with pinned maturin, pytest, pandas, pyarrow, polars and arro3-core
# (made once, kept while the pins hold), the wheel built in the debug profile into the
# workspace's target directory (the engine's build from the test step serves), installed,
# and the pytest suite run on it.
#
#   bash python/ci.sh          # from anywhere; needs python3 with venv and pip
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/python/venv
pins=(maturin==1.16.0 pytest==9.2.0 pandas==3.1.1 pyarrow==26.0.1 polars==2.1.0 arro3-core==0.9.1)
stamp="$venv/pins.txt"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]; then
    echo "python: creating $venv with ${pins[*]}"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
    echo "${pins[*]}" > "$stamp"
fi

wheels=target/python/wheels
rm -rf "$wheels"
# The debug profile: the workspace's dev build of the engine (and DataFusion, for `sql`) is
# reused; the wheel is the package's own crate and pyo3 on top of it.
"$venv/bin/maturin" build --quiet --manifest-path python/Cargo.toml --out "$wheels"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --force-reinstall "$wheels"/tscoll-*.whl

# From a scratch directory, so that `import tscoll` finds the installed wheel and not the
# sources in python/python/.
cd python/tests
"../../$venv/bin/python" -m pytest -q -p no:cacheprovider .
