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
