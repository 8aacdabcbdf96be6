"""Errors: pymongo's exception names, MongoDB's codes, BulkWriteError details."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import tscoll
from tscoll import errors

T = dt.datetime(2024, 1, 1)


def test_hierarchy_and_module():
    assert issubclass(errors.OperationFailure, errors.TscollError)
    assert issubclass(errors.BulkWriteError, errors.OperationFailure)
    assert tscoll.OperationFailure is errors.OperationFailure
    assert issubclass(errors.InvalidDocument, TypeError)


@pytest.mark.parametrize("ordered", [True, False])
def test_bulk_write_error_from_dicts(db, ordered):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    docs = [{"t": T, "m": 1}, {"t": "not a date", "m": 2}, {"t": T, "m": 3},
            {"m": 4}, {"t": T, "m": 5}]
    with pytest.raises(tscoll.BulkWriteError) as info:
        coll.insert(docs, ordered=ordered)
    e = info.value
    assert e.code == 65
    written = [1] if ordered else [1, 3, 5]
    assert e.details["nInserted"] == len(written)
    indexes = [w["index"] for w in e.details["writeErrors"]]
    assert indexes == ([1] if ordered else [1, 3])
    assert all(w["code"] == 2 and "t" in w["errmsg"] for w in e.details["writeErrors"])
    assert sorted(pa.table(coll.find()).column("m").to_pylist()) == written


@pytest.mark.parametrize("ordered", [True, False])
def test_bulk_write_error_from_arrow_batches(db, ordered):
    coll = db.create_collection("c", time_field="t")
    times = pa.array([0, 1, None, 3, None, 5], pa.timestamp("ms"))
    table = pa.Table.from_batches(
        pa.table({"t": times, "v": list(range(6))}).to_batches(max_chunksize=2))
    with pytest.raises(tscoll.BulkWriteError) as info:
        coll.insert(table, ordered=ordered)
    details = info.value.details
    # Positions count over the whole input, across batches.
    assert [w["index"] for w in details["writeErrors"]] == ([2] if ordered else [2, 4])
    assert details["nInserted"] == (2 if ordered else 4)
    assert coll.count() == details["nInserted"]


def test_operation_failure_codes(db):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    coll.insert([{"t": T, "m": 1, "v": 1}])
    cases = [
        (lambda: coll.find({"v": {"$bogus": 1}}), 2, "BadValue"),
        (lambda: coll.aggregate([{"$bogus": {}}]), 40324, "Location40324"),
        (lambda: coll.aggregate([{"$project": {"x": {"$divide": ["$v", 0]}}}]), 16608,
         "Location16608"),
        (lambda: coll.update_many({}, {"$bogus": {"v": 1}}), 9, "FailedToParse"),
        (lambda: coll.update_many({}, {"$inc": {"m": "x"}}), 14, "TypeMismatch"),
        (lambda: db.collection("missing"), 26, "NamespaceNotFound"),
        (lambda: db.create_collection("c", time_field="other"), 48, "NamespaceExists"),
        (lambda: db.create_collection("d", time_field="t", granularity="weeks"), 2, "BadValue"),
        (lambda: db.create_collection("e", time_field="t", bucket_max_span_seconds=10), 72,
         "InvalidOptions"),
    ]
    for call, code, name in cases:
        with pytest.raises(tscoll.OperationFailure) as info:
            call()
        e = info.value
        assert (e.code, e.code_name, e.codeName) == (code, name, name), (code, str(e))
        assert e.details["code"] == code and e.details["errmsg"]


def test_bad_python_values(db):
    coll = db.create_collection("c", time_field="t")
    with pytest.raises(tscoll.InvalidDocument, match="object"):
        coll.insert([{"t": T, "v": object()}])
    with pytest.raises(tscoll.InvalidDocument, match="string keys"):
        coll.find({1: 2})
    with pytest.raises(OverflowError):
        coll.insert([{"t": T, "v": 2**64}])
    with pytest.raises(TypeError):
        coll.insert(42)
    with pytest.raises(ValueError):
        coll.find(sort=[("t", 2)])
    with pytest.raises(TypeError, match="unexpected keyword"):
        tscoll.open(db.path, bogus=1)
    assert coll.count() == 0


def test_closed_database(tmp_path):
    db = tscoll.open(tmp_path / "db")
    coll = db.create_collection("c", time_field="t")
    db.close()
    db.close()
    with pytest.raises(tscoll.InvalidOperation):
        coll.count()
    with pytest.raises(tscoll.InvalidOperation):
        db.list_collections()


def test_locked_and_read_only(tmp_path):
    with tscoll.open(tmp_path / "db") as db:
        db.create_collection("c", time_field="t")
        with pytest.raises(tscoll.OperationFailure):
            tscoll.open(tmp_path / "db")
    with tscoll.open(tmp_path / "db", read_only=True) as ro:
        with pytest.raises(tscoll.OperationFailure) as info:
            ro.collection("c").insert([{"t": T}])
        assert info.value.code == 10107
    with pytest.raises(tscoll.OperationFailure):
        tscoll.open(tmp_path / "nothing", create=False)
