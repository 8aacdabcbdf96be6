//! Engine errors as the Python exceptions of `tscoll.errors`, named after pymongo's:
//! `OperationFailure` (with MongoDB's code and code name) for the engine's errors,
//! `BulkWriteError` for an insert that rejected rows, `InvalidOperation` for a closed
//! database, `InvalidDocument` for a Python value BSON has no type for.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tscoll_engine::{Error, WriteError};

/// pymongo's code of a `BulkWriteError`.
const BULK_WRITE_CODE: i32 = 65;

/// The exception class `name` of `tscoll.errors`.
fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("tscoll.errors")?.getattr(name)
}

/// Builds `tscoll.errors.<name>(message)` as a `PyErr`; a failure to build it (the module
/// missing) becomes that failure.
fn raise(py: Python<'_>, name: &str, message: &str) -> PyErr {
    let make = || -> PyResult<PyErr> {
        let instance = class(py, name)?.call1((message,))?;
        Ok(PyErr::from_value(instance))
    };
    make().unwrap_or_else(|e| e)
}

/// An `OperationFailure` of MongoDB's `code` and `code_name`: `details` is the error
/// document a server would reply (`ok`, `errmsg`, `code`, `codeName`).
fn operation_failure(py: Python<'_>, message: &str, code: i32, code_name: &str) -> PyErr {
    let make = || -> PyResult<PyErr> {
        let details = PyDict::new(py);
        details.set_item("ok", 0.0)?;
        details.set_item("errmsg", message)?;
        details.set_item("code", code)?;
        details.set_item("codeName", code_name)?;
        let instance = class(py, "OperationFailure")?.call1((message, code, details))?;
        Ok(PyErr::from_value(instance))
    };
    make().unwrap_or_else(|e| e)
}

/// The Python exception of an engine error: `BulkWriteError` for an ordered insert that
/// stopped at a rejected row; else `OperationFailure` with the error's code
/// (`InternalError`, 1, for storage, codec and I/O failures; `NotWritablePrimary`, 10107,
/// for a write to a read-only database, as tscoll's server replies).
pub(crate) fn engine_error(py: Python<'_>, e: &Error) -> PyErr {
    match e {
        Error::BulkWrite(result) => bulk_write_error(py, result.inserted, &result.errors),
        Error::ReadOnly => operation_failure(py, &e.to_string(), 10107, "NotWritablePrimary"),
        Error::Rejected { code, message } => {
            operation_failure(py, message, code.code(), &code.name())
        }
        _ => {
            let code = e.code();
            operation_failure(py, &e.to_string(), code.code(), &code.name())
        }
    }
}

/// Maps a `Result` of the engine to one of Python.
pub(crate) trait IntoPyResult<T> {
    /// The value, or the error as a Python exception ([`engine_error`]).
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for tscoll_engine::Result<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| engine_error(py, &e))
    }
}

/// A `BulkWriteError` with pymongo's details: `{"nInserted": n, "writeErrors": [{"index",
/// "code", "codeName", "errmsg"}, ...]}`, `index` being the row's position in the whole input.
pub(crate) fn bulk_write_error(py: Python<'_>, inserted: usize, errors: &[WriteError]) -> PyErr {
    let make = || -> PyResult<PyErr> {
        let list = PyList::empty(py);
        for e in errors {
            let item = PyDict::new(py);
            item.set_item("index", e.index)?;
            item.set_item("code", e.code.code())?;
            item.set_item("codeName", e.code.name())?;
            item.set_item("errmsg", &e.message)?;
            list.append(item)?;
        }
        let details = PyDict::new(py);
        details.set_item("nInserted", inserted)?;
        details.set_item("writeErrors", list)?;
        details.set_item("writeConcernErrors", PyList::empty(py))?;
        let message = match errors.first() {
            Some(first) => format!(
                "batch op errors occurred: {} row(s) rejected, the first at index {}: {}",
                errors.len(),
                first.index,
                first.message
            ),
            None => "batch op errors occurred".to_owned(),
        };
        let instance = class(py, "BulkWriteError")?.call1((message, BULK_WRITE_CODE, details))?;
        Ok(PyErr::from_value(instance))
    };
    make().unwrap_or_else(|e| e)
}

/// `InvalidOperation`: the database was closed.
pub(crate) fn closed(py: Python<'_>) -> PyErr {
    raise(
        py,
        "InvalidOperation",
        "the database is closed: open it again with tscoll.open(path)",
    )
}

/// `InvalidDocument`: a value BSON has no type for, or a malformed document.
pub(crate) fn invalid_document(py: Python<'_>, message: String) -> PyErr {
    raise(py, "InvalidDocument", &message)
}

/// A failure of the Arrow stream given to an insert, or of the SQL layer.
pub(crate) fn runtime(message: String) -> PyErr {
    PyRuntimeError::new_err(message)
}

/// `OperationFailure` (`BadValue`, 2) for a SQL query DataFusion refused or that failed.
#[cfg(feature = "sql")]
pub(crate) fn sql_error(py: Python<'_>, message: &str) -> PyErr {
    operation_failure(py, message, 2, "BadValue")
}
