"""The GIL is released while the engine works: a Python thread keeps counting while a long
insert, find, aggregate or SQL query runs in another."""

from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import tscoll

ROWS = 200_000


class Counter(threading.Thread):
    """Counts in Python (each step needs the GIL) until stopped."""

    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stop = False

    def run(self):
        while not self.stop:
            self.count += 1


def counted(call):
    """Runs ``call`` while a Counter runs: its seconds and the counts made meanwhile."""
    counter = Counter()
    counter.start()
    time.sleep(0.05)
    before = counter.count
    start = time.perf_counter()
    call()
    elapsed = time.perf_counter() - start
    during = counter.count - before
    counter.stop = True
    counter.join()
    return elapsed, during


@pytest.fixture
def big_table():
    t = np.arange(ROWS, dtype=np.int64) * 1000
    return pa.table({
        "t": pa.array(t, pa.timestamp("ms")),
        "m": pa.array((np.arange(ROWS) % 50).astype(str)),
        "v": pa.array(np.sin(np.arange(ROWS, dtype=np.float64))),
    })


def test_gil_released_during_insert_and_queries(db, big_table):
    coll = db.create_collection("c", time_field="t", meta_field="m")
    calls = {
        "insert": lambda: coll.insert(big_table),
        "find": lambda: coll.find(),
        "aggregate": lambda: coll.aggregate([{"$group": {"_id": "$m", "s": {"$sum": "$v"}}}]),
    }
    if tscoll.HAS_SQL:
        calls["sql"] = lambda: db.sql("SELECT m, avg(v) FROM c GROUP BY m")
    for name, call in calls.items():
        elapsed, during = counted(call)
        # The counter's rate while the main thread only sleeps (releasing the GIL).
        idle_s, idle = counted(lambda: time.sleep(elapsed))
        # Held for the whole call, the GIL would let the counter move only at the call's
        # edges (a switch interval, 5 ms, at most); released, it counts on throughout.
        assert elapsed > 0.1, f"{name} too short to tell ({elapsed:.3f} s)"
        assert during / elapsed > 0.25 * idle / idle_s, (
            f"{name}: {during} counts in {elapsed:.3f} s, {idle} in {idle_s:.3f} s idle")
    assert coll.count() == ROWS
