"""Type stubs of the package ``tscoll``."""

import os

from . import errors as errors
from ._tscoll import (
    HAS_SQL as HAS_SQL,
    Collection as Collection,
    Database as Database,
    DeleteResult as DeleteResult,
    InsertResult as InsertResult,
    UpdateResult as UpdateResult,
    __version__ as __version__,
)
from .errors import (
    BulkWriteError as BulkWriteError,
    InvalidDocument as InvalidDocument,
    InvalidOperation as InvalidOperation,
    OperationFailure as OperationFailure,
    TscollError as TscollError,
)

def open(
    path: str | os.PathLike[str],
    *,
    create: bool = ...,
    read_only: bool = ...,
    cache_size_bytes: int = ...,
    sort_memory_bytes: int = ...,
) -> Database:
    """Opens (or creates) the tscoll database in directory ``path``."""
