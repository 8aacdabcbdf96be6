"""The exceptions of tscoll, named and shaped as pymongo's (``pymongo.errors``).

``TscollError`` is the base of all of them (pymongo's ``PyMongoError``).
``OperationFailure`` carries MongoDB's numeric ``code``, its ``code_name`` (also as
``codeName``) and the error document a server would reply (``details``).
``BulkWriteError`` is raised by an insert that rejected rows, ordered or not; its
``details`` are ``{"nInserted": n, "writeErrors": [{"index", "code", "codeName",
"errmsg"}, ...]}`` with ``index`` the row's position in the input.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = [
    "TscollError",
    "OperationFailure",
    "BulkWriteError",
    "InvalidOperation",
    "InvalidDocument",
]


class TscollError(Exception):
    """Base of every tscoll exception (pymongo's ``PyMongoError``)."""


class OperationFailure(TscollError):
    """The engine refused or failed an operation.

    ``code`` is MongoDB's numeric error code (e.g. 2 for BadValue), ``code_name`` its name
    (``codeName`` is an alias, as in the server's reply), ``details`` the error document.
    """

    def __init__(self, message: str, code: int | None = None,
                 details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self._message = message
        self._code = code
        self._details = dict(details) if details is not None else {}

    @property
    def code(self) -> int | None:
        """MongoDB's numeric error code."""
        return self._code

    @property
    def code_name(self) -> str | None:
        """MongoDB's name of the code, e.g. ``"BadValue"``."""
        return self._details.get("codeName")

    @property
    def codeName(self) -> str | None:  # noqa: N802 (MongoDB's spelling)
        """Alias of ``code_name``, as the server's reply spells it."""
        return self.code_name

    @property
    def details(self) -> dict[str, Any]:
        """The error document (``errmsg``, ``code``, ``codeName``; for a
        ``BulkWriteError``: ``nInserted`` and ``writeErrors``)."""
        return self._details

    def __str__(self) -> str:
        if self._code is None:
            return self._message
        return f"{self._message}, full error: {self._details!r}"


class BulkWriteError(OperationFailure):
    """An insert rejected rows (code 65, as pymongo's): ``details["nInserted"]`` rows were
    stored, ``details["writeErrors"]`` lists the rejected ones."""

    @property
    def code_name(self) -> str | None:
        return None


class InvalidOperation(TscollError):
    """An operation on a closed database."""


class InvalidDocument(TscollError, TypeError):
    """A Python value BSON has no type for, or a document that is not a ``dict`` with
    ``str`` keys."""
