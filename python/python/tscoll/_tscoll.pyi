"""Type stubs of the native module ``tscoll._tscoll`` (re-exported by ``tscoll``)."""

from __future__ import annotations

import os
from typing import Any, Literal, Mapping, Sequence

from arro3.core import Table

HAS_SQL: bool
"""Whether ``Database.sql`` is compiled in (the crate's ``sql`` feature)."""
__version__: str

_Filter = Mapping[str, Any]
_Sort = str | Sequence[tuple[str, int]] | Mapping[str, int]

def open(
    path: str | os.PathLike[str],
    *,
    create: bool = ...,
    read_only: bool = ...,
    cache_size_bytes: int = ...,
    sort_memory_bytes: int = ...,
) -> Database:
    """Opens (or creates) the database in directory ``path``."""

class InsertResult:
    """What an insert stored."""

    @property
    def inserted_count(self) -> int:
        """Rows (measurements) stored."""
    @property
    def acknowledged(self) -> bool:
        """Always True."""

class DeleteResult:
    """What ``delete_many`` removed."""

    @property
    def deleted_count(self) -> int:
        """Measurements deleted."""
    @property
    def acknowledged(self) -> bool:
        """Always True."""

class UpdateResult:
    """What ``update_many`` changed."""

    @property
    def matched_count(self) -> int:
        """Measurements the filter matched."""
    @property
    def modified_count(self) -> int:
        """Measurements the update changed."""
    @property
    def upserted_id(self) -> None:
        """Always None: ``update_many`` does not upsert."""
    @property
    def acknowledged(self) -> bool:
        """Always True."""

class Database:
    """An open tscoll database; a context manager that closes it on exit."""

    @property
    def path(self) -> str:
        """The database's directory."""
    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
    def create_collection(
        self,
        name: str,
        time_field: str,
        meta_field: str | None = None,
        granularity: Literal["seconds", "minutes", "hours"] | None = None,
        bucket_max_span_seconds: int | None = None,
        bucket_rounding_seconds: int | None = None,
        expire_after_seconds: int | None = None,
    ) -> Collection:
        """Creates a time-series collection, or returns the existing one of the same options."""
    def collection(self, name: str) -> Collection:
        """The collection ``name`` (``OperationFailure`` NamespaceNotFound when none)."""
    def __getitem__(self, name: str) -> Collection:
        """As ``collection(name)``."""
    def list_collections(self) -> list[str]:
        """The collections' names, sorted."""
    def drop_collection(self, name: str) -> bool:
        """Drops a collection and its data; True when it existed."""
    def close(self) -> None:
        """Stores what is in memory, makes it durable and releases the directory."""
    def sql(self, query: str) -> Table:
        """Runs a SQL query over the collections (when ``HAS_SQL``)."""
    def __enter__(self) -> Database: ...
    def __exit__(self, *args: object) -> bool: ...

class Collection:
    """A time-series collection of an open database."""

    @property
    def name(self) -> str:
        """The collection's name."""
    @property
    def time_field(self) -> str:
        """The time field."""
    @property
    def meta_field(self) -> str | None:
        """The meta field, or None."""
    def insert(
        self,
        data: Any,
        ordered: bool = True,
        time_column: str | None = None,
        meta_columns: Sequence[str] | None = None,
    ) -> InsertResult:
        """Inserts an Arrow object (PyCapsule interface) or a list of dicts."""
    def find(
        self,
        filter: _Filter | None = None,
        projection: _Filter | None = None,
        sort: _Sort | None = None,
        limit: int | None = None,
        skip: int | None = None,
    ) -> Table:
        """The matching measurements as an Arrow table."""
    def aggregate(self, pipeline: Sequence[_Filter]) -> Table:
        """An aggregation pipeline's result as an Arrow table."""
    def count(self, filter: _Filter | None = None) -> int:
        """The number of matching measurements."""
    def delete_many(self, filter: _Filter) -> DeleteResult:
        """Deletes every matching measurement."""
    def update_many(self, filter: _Filter, update: _Filter | Sequence[_Filter]) -> UpdateResult:
        """Updates every matching measurement (operators or a pipeline)."""
    def stats(self) -> dict[str, Any]:
        """The collection's statistics."""
