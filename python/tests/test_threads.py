"""The GIL is released while the engine works: a Python thread keeps running while a long
insert, find, aggregate or SQL query runs in another."""

from __future__ import annotations

import re
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import tscoll

ROWS = 200_000


class Ticker(threading.Thread):
    """Loops in Python (each step needs the GIL), keeping the longest pause between two
    steps since ``longest`` was last reset."""

    def __init__(self):
        super().__init__(daemon=True)
        self.longest = 0.0
        self.steps = 0
        self.stop = False

    def run(self):
        last = time.perf_counter()
        while not self.stop:
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            self.steps += 1
            last = now


def longest_pause(call):
    """Runs ``call`` while a Ticker runs: the call's seconds, and the Ticker's longest pause
    and steps during it."""
    ticker = Ticker()
    ticker.start()
    time.sleep(0.05)
    ticker.longest = 0.0
    steps = ticker.steps
    start = time.perf_counter()
    call()
    elapsed = time.perf_counter() - start
    steps = ticker.steps - steps
    # Let the Ticker take its next step, which records a pause that lasted to the end.
    time.sleep(0.05)
    ticker.stop = True
    ticker.join()
    return elapsed, ticker.longest, steps


def test_the_check_sees_a_call_that_holds_the_gil():
    # A regular expression's backtracking runs in C holding the GIL: the Ticker stalls
    # for the whole call.
    elapsed, longest, _ = longest_pause(lambda: re.match("(a|aa)*c", "a" * 29))
    assert elapsed > 0.05
    assert longest > 0.8 * elapsed


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
    coll.insert(big_table)
    calls = {
        "insert": lambda: coll.insert(big_table),
        "find": lambda: coll.find(),
        "aggregate": lambda: coll.aggregate([{"$group": {"_id": "$m", "s": {"$sum": "$v"}}}]),
    }
    if tscoll.HAS_SQL:
        calls["sql"] = lambda: db.sql(
            "SELECT m, sum(v * v), count(DISTINCT v) FROM c GROUP BY m")
    for name, call in calls.items():
        elapsed, longest, steps = longest_pause(call)
        # Held for the whole call, the GIL would stall the Ticker from the call's start to
        # its end; released, the Ticker pauses only for the switch interval (5 ms) and the
        # operating system's scheduling while the engine's threads take the cores.
        assert steps > 0, name
        assert longest < 0.5 * elapsed, f"{name}: paused {longest:.3f} s of {elapsed:.3f} s"
    assert coll.count() == 2 * ROWS
