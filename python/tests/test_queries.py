"""Answers of find, aggregate and SQL on the bundled weather data, against pandas computing
the same on the same data."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pytest

import tscoll

UTC = dt.timezone.utc


def test_find_filter_projection_sort_limit_skip(weather):
    coll, frame = weather
    got = pa.table(coll.find(
        {"station": "Seattle", "temp_max": {"$gte": 25}, "weather": {"$in": ["sun", "fog"]}},
        projection={"temp_max": 1, "weather": 1},
        sort=[("ts", -1)],
    )).to_pandas()
    want = frame[(frame.station == "Seattle") & (frame.temp_max >= 25)
                 & frame.weather.isin(["sun", "fog"])].sort_values("ts", ascending=False)
    assert len(want) > 10
    assert list(got["ts"]) == list(want["ts"])
    assert list(got["temp_max"]) == list(want["temp_max"])
    assert list(got["weather"]) == list(want["weather"])
    assert "wind" not in got.columns

    page = pa.table(coll.find({"station": "New York"}, sort={"ts": 1}, skip=10, limit=5))
    want_page = frame[frame.station == "New York"].sort_values("ts").iloc[10:15]
    assert page.column("ts").to_pylist() == list(want_page["ts"])


def test_find_by_time_range_and_count(weather):
    coll, frame = weather
    start = dt.datetime(2014, 6, 1)  # naive: taken as UTC
    end = dt.datetime(2014, 9, 1, tzinfo=UTC)
    flt = {"ts": {"$gte": start, "$lt": end}, "precipitation": {"$gt": 0}}
    got = pa.table(coll.find(flt)).to_pandas()
    want = frame[(frame.ts >= pd.Timestamp(start, tz="UTC")) & (frame.ts < pd.Timestamp(end))
                 & (frame.precipitation > 0)]
    assert len(got) == len(want) > 0
    assert coll.count(flt) == len(want)
    assert sorted(got["precipitation"]) == sorted(want["precipitation"])


def test_aggregate_monthly_means_match_pandas(weather):
    coll, frame = weather
    got = pa.table(coll.aggregate([
        {"$match": {"station": "Seattle"}},
        {"$group": {"_id": {"$dateTrunc": {"date": "$ts", "unit": "month"}},
                    "avg_max": {"$avg": "$temp_max"}, "n": {"$sum": 1},
                    "wettest": {"$max": "$precipitation"}}},
        {"$sort": {"_id": 1}},
    ])).to_pandas()
    seattle = frame[frame.station == "Seattle"].set_index("ts")
    want = seattle.resample("MS").agg({"temp_max": "mean", "weather": "size",
                                       "precipitation": "max"})
    assert len(got) == len(want) == 48
    assert list(got["_id"]) == list(want.index)
    assert got["avg_max"].round(9).tolist() == want["temp_max"].round(9).tolist()
    assert got["n"].tolist() == want["weather"].tolist()
    assert got["wettest"].tolist() == want["precipitation"].tolist()


def test_aggregate_mixed_and_nested_results_are_json_text(weather):
    coll, _ = weather
    got = pa.table(coll.aggregate([
        {"$match": {"station": "Seattle"}},
        {"$limit": 2},
        {"$project": {"_id": 0, "pair": ["$temp_max", "$weather"], "ts": 1}},
    ]))
    assert got.schema.field("ts").type == pa.timestamp("ms", tz="UTC")
    # An array of mixed values: a list whose elements are JSON texts (docs/arrow.md).
    pair = got.schema.field("pair")
    assert pa.types.is_list(pair.type)
    assert pair.type.value_field.metadata == {b"tscoll.encoding": b"json"}
    assert got.column("pair").to_pylist()[0] == ["12.8", '"drizzle"']


@pytest.mark.skipif(not tscoll.HAS_SQL, reason="built without the sql feature")
def test_sql_matches_pandas(weather, db):
    _, frame = weather
    got = pa.table(db.sql(
        # The meta column is a dictionary whose groups repeat values: pandas wants it plain.
        "SELECT CAST(station AS VARCHAR) AS station, weather, count(*) AS n, avg(wind) AS wind "
        "FROM weather WHERE temp_min > 5 GROUP BY station, weather ORDER BY station, weather"
    )).to_pandas()
    want = (frame[frame.temp_min > 5].groupby(["station", "weather"])
            .agg(n=("wind", "size"), wind=("wind", "mean")).reset_index()
            .sort_values(["station", "weather"]))
    assert got["station"].astype(str).tolist() == want["station"].tolist()
    assert got["weather"].tolist() == want["weather"].tolist()
    assert got["n"].tolist() == want["n"].tolist()
    assert got["wind"].round(9).tolist() == want["wind"].round(9).tolist()


def test_update_and_delete(weather):
    coll, frame = weather
    rainy = int((frame.weather == "rain").sum())
    r = coll.update_many({"weather": "rain"}, {"$set": {"wet": True}, "$inc": {"wind": 1}})
    assert (r.matched_count, r.modified_count) == (rainy, rainy)
    assert coll.count({"wet": True}) == rainy
    r = coll.update_many({"weather": "snow"}, [{"$set": {"cold": {"$lt": ["$temp_min", 0]}}}])
    assert r.matched_count == int((frame.weather == "snow").sum())
    d = coll.delete_many({"station": "New York", "ts": {"$lt": dt.datetime(2013, 1, 1)}})
    want = int(((frame.station == "New York") & (frame.ts < pd.Timestamp("2013-01-01", tz="UTC"))).sum())
    assert d.deleted_count == want > 0
    assert coll.count() == len(frame) - want
    stats = coll.stats()
    assert stats["measurementCount"] == len(frame) - want
    assert stats["bucketsNs"] == "system.buckets.weather"


def test_database_catalog(db, tmp_path):
    db.create_collection("a", time_field="t")
    db.create_collection("b", time_field="t", meta_field="m", granularity="hours",
                         expire_after_seconds=3600)
    assert db.list_collections() == ["a", "b"]
    assert db["b"].meta_field == "m" and db.collection("a").time_field == "t"
    assert db.drop_collection("a") is True
    assert db.drop_collection("a") is False
    assert db.list_collections() == ["b"]
    with tscoll.open(tmp_path / "other") as other:
        other.create_collection("x", time_field="t").insert([{"t": dt.datetime(2024, 1, 1)}])
    assert other.closed
    with tscoll.open(tmp_path / "other", create=False) as again:
        assert again.collection("x").count() == 1
