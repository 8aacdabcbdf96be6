"""Shared fixtures: a fresh database per test, and the mark of the column types the
engine's Arrow mapping does not take yet."""

from __future__ import annotations

from pathlib import Path

import pytest

import tscoll

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path):
    """A database in a fresh directory, closed after the test."""
    database = tscoll.open(tmp_path / "db")
    yield database
    database.close()


def weather_table():
    """The bundled NOAA daily weather (data/noaa_weather_daily.ndjson.xz: Seattle and New
    York, 2012-2015) as a pyarrow Table: ``ts``, ``station``, four float columns and the
    ``weather`` string."""
    import json
    import lzma

    import pyarrow as pa

    rows = [json.loads(line)
            for line in lzma.open(REPO / "data" / "noaa_weather_daily.ndjson.xz", "rt")]
    ts = pa.array([r["ts"]["$date"] for r in rows], pa.string())
    floats = ["precipitation", "temp_max", "temp_min", "wind"]
    return pa.table({
        "ts": pa.compute.cast(pa.compute.strptime(ts, "%Y-%m-%dT%H:%M:%SZ", "ms"),
                              pa.timestamp("ms", tz="UTC")),
        "station": [r["meta"]["series"] for r in rows],
        **{f: pa.array([r.get(f) for r in rows], pa.float64()) for f in floats},
        "weather": [r.get("weather") for r in rows],
    })


@pytest.fixture
def weather(db):
    """A collection ``weather`` (time ``ts``, meta ``station``) holding the weather table,
    and the same data as a pandas DataFrame."""
    table = weather_table()
    coll = db.create_collection("weather", time_field="ts", meta_field="station")
    assert coll.insert(table).inserted_count == table.num_rows
    return coll, table.to_pandas()
