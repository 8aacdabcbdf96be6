"""Round trips: a pyarrow Table, a pandas DataFrame and a polars DataFrame holding every
column type, inserted and found again, value by value (types: docs/arrow.md)."""

from __future__ import annotations

import datetime as dt
import decimal

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import tscoll

UTC = dt.timezone.utc
N = 4
T0 = 1_700_000_000_000  # ms
TIMES_MS = [T0 + i * 1000 for i in range(N)]


def ms(i: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(TIMES_MS[i] / 1000, tz=UTC)


def found(coll, **kwargs) -> pa.Table:
    """The collection's rows in time order, as a pyarrow Table."""
    return pa.table(coll.find(sort=[("t", 1)], **kwargs))


def base(**columns) -> pa.Table:
    """A table with the time column ``t``, the meta column ``m`` and ``columns``."""
    return pa.table({
        "t": pa.array(TIMES_MS, pa.timestamp("ms")),
        "m": ["a", "a", "b", "b"],
        **columns,
    })


# (name, input array, the values find returns) for each column type the engine takes.
CASES = [
    ("i8", pa.array([1, -2, None, 127], pa.int8()), [1, -2, None, 127]),
    ("i16", pa.array([1, -300, None, 32767], pa.int16()), [1, -300, None, 32767]),
    ("i32", pa.array([1, -70000, None, 2**31 - 1], pa.int32()), [1, -70000, None, 2**31 - 1]),
    ("i64", pa.array([1, -(2**40), None, 2**62], pa.int64()), [1, -(2**40), None, 2**62]),
    ("u8", pa.array([0, 255, None, 7], pa.uint8()), [0, 255, None, 7]),
    ("u16", pa.array([0, 65535, None, 7], pa.uint16()), [0, 65535, None, 7]),
    ("u32", pa.array([0, 2**32 - 1, None, 7], pa.uint32()), [0, 2**32 - 1, None, 7]),
    ("u64", pa.array([0, 2**63 - 1, None, 7], pa.uint64()), [0, 2**63 - 1, None, 7]),
    ("f32", pa.array([0.5, -1.25, None, 3.0], pa.float32()), [0.5, -1.25, None, 3.0]),
    ("f64", pa.array([0.1, -1e300, None, float("inf")], pa.float64()),
     [0.1, -1e300, None, float("inf")]),
    ("b", pa.array([True, False, None, True]), [True, False, None, True]),
    ("s", pa.array(["x", "", None, "é✓"]), ["x", "", None, "é✓"]),
    ("ls", pa.array(["x", "yy", None, "z"], pa.large_string()), ["x", "yy", None, "z"]),
    ("ts_s", pa.array([0, 1, None, 2], pa.timestamp("s")),
     [dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC), None,
      dt.datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC)]),
    ("ts_us", pa.array([1_500, 2_000_999, None, 0], pa.timestamp("us")),
     [dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
      dt.datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC), None, dt.datetime(1970, 1, 1, tzinfo=UTC)]),
    ("ts_ns_tz", pa.array([1_000_000, 2_999_999, None, 0], pa.timestamp("ns", tz="Europe/Paris")),
     [dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
      dt.datetime(1970, 1, 1, 0, 0, 0, 2000, tzinfo=UTC), None,
      dt.datetime(1970, 1, 1, tzinfo=UTC)]),
    ("ts_ms_tz", pa.array([5, 6, None, 7], pa.timestamp("ms", tz="UTC")),
     [dt.datetime(1970, 1, 1, 0, 0, 0, 5000, tzinfo=UTC),
      dt.datetime(1970, 1, 1, 0, 0, 0, 6000, tzinfo=UTC), None,
      dt.datetime(1970, 1, 1, 0, 0, 0, 7000, tzinfo=UTC)]),
    ("d64", pa.array([0, 86_400_000, None, 5], pa.date64()),
     [dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(1970, 1, 2, tzinfo=UTC), None,
      dt.datetime(1970, 1, 1, 0, 0, 0, 5000, tzinfo=UTC)]),
    ("st", pa.array([{"x": 1, "y": "a"}, {"x": 2, "y": "b"}, {"x": 3, "y": "c"},
                     {"x": 4, "y": "d"}], pa.struct([("x", pa.int32()), ("y", pa.string())])),
     # A sub-document field comes back as relaxed Extended JSON text (docs/arrow.md).
     ['{"x":1,"y":"a"}', '{"x":2,"y":"b"}', '{"x":3,"y":"c"}', '{"x":4,"y":"d"}']),
]

# Dictionary, view, binary, Date32, decimal and list columns.
MORE_CASES = [
    ("dict", pa.array(["x", "y", None, "x"]).dictionary_encode(), ["x", "y", None, "x"]),
    ("sv", pa.array(["x", "y", None, "z"], pa.string_view()), ["x", "y", None, "z"]),
    ("bin", pa.array([b"\x00\x01", b"", None, b"z"], pa.binary()), [b"\x00\x01", b"", None, b"z"]),
    ("lbin", pa.array([b"\x00", b"", None, b"z"], pa.large_binary()), [b"\x00", b"", None, b"z"]),
    ("d32", pa.array([dt.date(2024, 1, 1), dt.date(1969, 12, 31), None, dt.date(2000, 2, 29)],
                     pa.date32()),
     [dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(1969, 12, 31, tzinfo=UTC), None,
      dt.datetime(2000, 2, 29, tzinfo=UTC)]),
    # Stored as Decimal128, read back as the nearest double (docs/arrow.md).
    ("dec", pa.array([decimal.Decimal("1.50"), decimal.Decimal("-2.25"), None,
                      decimal.Decimal("0.00")], pa.decimal128(10, 2)), [1.5, -2.25, None, 0.0]),
    # An array field comes back as relaxed Extended JSON text, as a sub-document does; the
    # text keeps each value's type (an int64 that int32 could hold is a $numberLong).
    ("lst", pa.array([[1, 2], [], None, [3]], pa.list_(pa.int64())),
     ['[{"$numberLong":"1"},{"$numberLong":"2"}]', "[]", None, '[{"$numberLong":"3"}]']),
]


@pytest.mark.parametrize("name,array,expected", CASES, ids=[c[0] for c in CASES])
def test_pyarrow_column_round_trip(db, name, array, expected):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    assert coll.insert(base(**{name: array})).inserted_count == N
    table = found(coll)
    assert table.column("t").to_pylist() == [ms(i) for i in range(N)]
    assert table.column("m").to_pylist() == ["a", "a", "b", "b"]
    assert table.column(name).to_pylist() == expected


@pytest.mark.parametrize("name,array,expected", MORE_CASES, ids=[c[0] for c in MORE_CASES])
def test_pyarrow_more_types_round_trip(db, name, array, expected):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    assert coll.insert(base(**{name: array})).inserted_count == N
    assert found(coll).column(name).to_pylist() == expected


def test_pyarrow_table_of_every_type_at_once(db):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    table = base(**{name: array for name, array, _ in CASES + MORE_CASES})
    # Several batches: the insert reads the stream batch by batch.
    table = pa.Table.from_batches(table.to_batches(max_chunksize=3))
    assert len(table.to_batches()) == 2
    assert coll.insert(table).inserted_count == N
    out = found(coll)
    for name, _, expected in CASES + MORE_CASES:
        assert out.column(name).to_pylist() == expected, name
    types = {f.name: f.type for f in out.schema}
    assert (types["i8"], types["u32"], types["u64"], types["f32"]) == (
        pa.int32(), pa.int64(), pa.int64(), pa.float64())
    assert types["dict"] == types["sv"] == types["ls"] == pa.string()
    assert types["d32"] == types["ts_ns_tz"] == pa.timestamp("ms", tz="UTC")
    assert (types["bin"], types["dec"]) == (pa.binary(), pa.float64())
    # A RecordBatch and an arro3 table are Arrow inputs too.
    coll.insert(base(i32=pa.array([9, 9, 9, 9], pa.int32())).to_batches()[0])
    from arro3.core import Table
    coll.insert(Table.from_arrow(base(i32=pa.array([8, 8, 8, 8], pa.int32()))))
    assert coll.count({"i32": 9}) == N
    assert coll.count({"i32": 8}) == N


def test_map_column_is_refused_naming_it(db):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    maps = pa.array([[("k", 1)], [], None, [("j", 2)]], pa.map_(pa.string(), pa.int64()))
    with pytest.raises(tscoll.OperationFailure) as info:
        coll.insert(base(attrs=maps))
    assert "attrs" in str(info.value)
    assert info.value.code == 2
    assert coll.count() == 0


def test_pandas_round_trip(db):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    frame = pd.DataFrame({
        "t": pd.to_datetime(TIMES_MS, unit="ms"),
        "m": ["a", "a", "b", "b"],
        "i8": pd.array([1, -2, 3, 4], dtype="int8"),
        "i16": pd.array([1, -300, 3, 4], dtype="int16"),
        "i32": pd.array([1, 2, None, 4], dtype="Int32"),
        "i64": pd.array([2**40, 2, 3, 4], dtype="int64"),
        "u16": pd.array([1, 65535, 3, 4], dtype="uint16"),
        "f32": pd.array([0.5, 1.5, 2.5, None], dtype="float32"),
        "f64": [0.1, 0.2, None, 0.4],
        "flag": [True, False, True, False],
        "name": ["x", "y", None, "z"],
        "ts_tz": pd.to_datetime(TIMES_MS, unit="ms", utc=True).tz_convert("America/New_York"),
    })
    assert coll.insert(frame).inserted_count == N
    out = found(coll).to_pandas()
    assert list(out["t"]) == [pd.Timestamp(ms(i)) for i in range(N)]
    assert list(out["m"]) == ["a", "a", "b", "b"]
    assert list(out["i8"]) == [1, -2, 3, 4]
    assert list(out["i16"]) == [1, -300, 3, 4]
    assert out["i32"].tolist()[:2] == [1, 2] and pd.isna(out["i32"].iloc[2])
    assert list(out["i64"]) == [2**40, 2, 3, 4]
    assert list(out["u16"]) == [1, 65535, 3, 4]
    assert out["f32"].tolist()[:3] == [0.5, 1.5, 2.5] and pd.isna(out["f32"].iloc[3])
    assert out["f64"].tolist()[:2] == [0.1, 0.2] and pd.isna(out["f64"].iloc[2])
    assert list(out["flag"]) == [True, False, True, False]
    assert out["name"].tolist()[:2] == ["x", "y"] and pd.isna(out["name"].iloc[2])
    assert [t.value // 1_000_000 for t in out["ts_tz"]] == TIMES_MS


def test_pandas_categorical_round_trip(db):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    frame = pd.DataFrame({
        "t": pd.to_datetime(TIMES_MS, unit="ms"),
        "m": ["a", "a", "b", "b"],
        "kind": pd.Categorical(["hot", "cold", "hot", None]),
    })
    assert coll.insert(frame).inserted_count == N
    assert found(coll).column("kind").to_pylist() == ["hot", "cold", "hot", None]


def test_polars_round_trip(db):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    frame = pl.DataFrame({
        "t": pl.Series(TIMES_MS).cast(pl.Datetime("ms")),
        "m": ["a", "a", "b", "b"],
        "i8": pl.Series([1, -2, 3, 4], dtype=pl.Int8),
        "u32": pl.Series([1, 2**32 - 1, None, 4], dtype=pl.UInt32),
        "i64": pl.Series([1, 2, 3, 2**50], dtype=pl.Int64),
        "f64": [0.5, None, 1.5, 2.5],
        "flag": [True, None, False, True],
        "us_tz": pl.Series(TIMES_MS).cast(pl.Datetime("ms"))
        .dt.cast_time_unit("us").dt.replace_time_zone("UTC").dt.convert_time_zone("Asia/Tokyo"),
        "ns": pl.Series(TIMES_MS).cast(pl.Datetime("ms")).dt.cast_time_unit("ns"),
    })
    # polars hands its strings over as string views.
    assert coll.insert(frame).inserted_count == N
    out = pl.DataFrame(coll.find(sort={"t": 1}))
    assert out["i8"].to_list() == [1, -2, 3, 4]
    assert out["u32"].to_list() == [1, 2**32 - 1, None, 4]
    assert out["i64"].to_list() == [1, 2, 3, 2**50]
    assert out["f64"].to_list() == [0.5, None, 1.5, 2.5]
    assert out["flag"].to_list() == [True, None, False, True]
    assert [t.timestamp() * 1000 for t in out["us_tz"].to_list()] == TIMES_MS
    assert [t.replace(tzinfo=UTC).timestamp() * 1000 for t in out["ns"].to_list()] == TIMES_MS


def test_polars_views_dates_decimals_lists_structs(db):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    frame = pl.DataFrame({
        "t": pl.Series(TIMES_MS).cast(pl.Datetime("ms")),
        "m": ["a", "a", "b", "b"],
        "s": ["x", None, "y", "z"],
        "cat": pl.Series(["hot", "cold", None, "hot"], dtype=pl.Categorical),
        "day": [dt.date(2024, 1, 1), None, dt.date(2024, 1, 3), dt.date(2024, 1, 4)],
        "dec": pl.Series([decimal.Decimal("1.5"), None, decimal.Decimal("2.5"),
                          decimal.Decimal("0")], dtype=pl.Decimal(10, 2)),
        "bin": [b"\x00", b"a", None, b""],
        "lst": [[1, 2], [], None, [3]],
        "st": [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}, {"x": 3, "y": "c"}, {"x": 4, "y": "d"}],
    })
    assert coll.insert(frame).inserted_count == N
    out = pl.DataFrame(coll.find(sort={"t": 1}))
    assert out["s"].to_list() == ["x", None, "y", "z"]
    assert out["cat"].cast(pl.String).to_list() == ["hot", "cold", None, "hot"]
    assert out["lst"].to_list() == ['[{"$numberLong":"1"},{"$numberLong":"2"}]', "[]", None, '[{"$numberLong":"3"}]']
    assert out["bin"].to_list() == [b"\x00", b"a", None, b""]
    assert out["st"].to_list()[0] == '{"x":{"$numberLong":"1"},"y":"a"}'


def test_dicts_round_trip(db):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    naive = dt.datetime(2024, 5, 1, 12, 0, 0, 999_999)
    aware = dt.datetime(2024, 5, 1, 14, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    docs = [
        {"t": naive, "m": {"site": "x"}, "small": 5, "big": 2**40, "f": 1.5, "s": "a",
         "raw": b"\x01\x02", "flag": True, "none": None, "arr": [1, 2], "sub": {"k": "v"}},
        {"t": aware, "m": {"site": "x"}, "day": dt.date(2024, 1, 2)},
    ]
    assert coll.insert(docs).inserted_count == 2
    table = found(coll)
    assert table.column("t").to_pylist() == [
        dt.datetime(2024, 5, 1, 12, 0, 0, 999_000, tzinfo=UTC),
        dt.datetime(2024, 5, 1, 12, 0, 1, tzinfo=UTC),
    ]
    assert table.schema.field("small").type == pa.int32()
    assert table.schema.field("big").type == pa.int64()
    assert table.column("big").to_pylist() == [2**40, None]
    assert table.column("raw").to_pylist() == [b"\x01\x02", None]
    assert table.column("day").to_pylist() == [None, dt.datetime(2024, 1, 2, tzinfo=UTC)]
    assert coll.count({"t": {"$gte": dt.datetime(2024, 5, 1, 12, 0, 1)}}) == 1
    assert coll.count({"m.site": "x", "arr": 2}) == 1


def test_time_and_meta_columns_named_otherwise(db):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    table = pa.table({
        "when": pa.array(TIMES_MS, pa.timestamp("ms")),
        "host": ["h1", "h1", "h2", "h2"],
        "rack": ["r1", "r1", "r1", "r1"],
        "v": [1.0, 2.0, 3.0, 4.0],
    })
    assert coll.insert(table, time_column="when", meta_columns=["host", "rack"]).inserted_count == N
    out = found(coll)
    assert out.column("m").to_pylist()[2] == {"host": "h2", "rack": "r1"}
    assert coll.count({"m.host": "h1"}) == 2
    with pytest.raises(tscoll.OperationFailure, match="nope") as info:
        coll.insert(table, time_column="nope")
    assert info.value.code == 2
