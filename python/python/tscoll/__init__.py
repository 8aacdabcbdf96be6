"""tscoll: MongoDB-style time-series collections as an embedded store, with Arrow in and out.

>>> import tscoll
>>> with tscoll.open("/tmp/weather-db") as db:                    # doctest: +SKIP
...     coll = db.create_collection("weather", time_field="time", meta_field="station")
...     coll.insert(pyarrow_table)
...     df = pyarrow.table(coll.find({"station": "Seattle"})).to_pandas()

``open`` returns a ``Database``; its collections (``Collection``) take Arrow data (pyarrow,
pandas, polars, arro3: anything with the Arrow PyCapsule interface) or lists of dicts, and
return query results as ``arro3.core.Table``s, which pyarrow, pandas and polars read
without a copy. Errors are the exceptions of ``tscoll.errors``, named as pymongo's.
"""

from __future__ import annotations

from . import errors
from ._tscoll import (
    HAS_SQL,
    Collection,
    Database,
    DeleteResult,
    InsertResult,
    UpdateResult,
    __version__,
)
from ._tscoll import open as _open
from .errors import (
    BulkWriteError,
    InvalidDocument,
    InvalidOperation,
    OperationFailure,
    TscollError,
)

__all__ = [
    "open",
    "Database",
    "Collection",
    "InsertResult",
    "DeleteResult",
    "UpdateResult",
    "errors",
    "TscollError",
    "OperationFailure",
    "BulkWriteError",
    "InvalidOperation",
    "InvalidDocument",
    "HAS_SQL",
    "__version__",
]


def open(path, **options) -> Database:  # noqa: A001 (the module's entry point, as sqlite3.connect)
    """Opens (or creates) the tscoll database in directory ``path``.

    Options (keywords; the engine's defaults when absent): ``create`` (default True:
    create a database when the directory holds none), ``read_only`` (default False),
    ``cache_size_bytes`` (the block cache), ``sort_memory_bytes`` (memory a sort holds
    before spilling to temporary files).

    The returned ``Database`` is a context manager that closes it on exit. Raises
    ``OperationFailure`` when the directory is locked by another process, holds no
    database while ``create`` is False, or cannot be read.
    """
    return _open(path, **options)
