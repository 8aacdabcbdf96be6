//! `tscoll.Database`: an open database directory, and `tscoll.open`.

use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use tscoll_engine::{Access, Database, DatabaseOptions, Granularity, TimeseriesOptions};

use crate::collection::PyCollection;
use crate::errors::{IntoPyResult, closed};

/// What a database and its collections share: the engine's handle until `close`.
pub(crate) struct Shared {
    /// `None` once closed.
    db: RwLock<Option<Database>>,
    /// The tokio runtime SQL queries run on, made by the first one.
    #[cfg(feature = "sql")]
    pub(crate) runtime: std::sync::OnceLock<tokio::runtime::Runtime>,
}

impl Shared {
    /// The engine's handle.
    ///
    /// # Errors
    /// `InvalidOperation` once the database is closed.
    pub(crate) fn db(&self, py: Python<'_>) -> PyResult<Database> {
        match self.db.read() {
            Ok(guard) => guard.clone().ok_or_else(|| closed(py)),
            Err(_) => Err(closed(py)),
        }
    }
}

/// An open tscoll database: a directory of time-series collections, open in one process
/// at a time. A context manager: `with tscoll.open(path) as db: ...` closes it on exit.
#[pyclass(name = "Database", module = "tscoll._tscoll", frozen)]
pub(crate) struct PyDatabase {
    shared: Arc<Shared>,
    path: String,
}

/// Opens (or creates) the database in directory `path`.
///
/// Keyword options (`DatabaseOptions`' defaults when absent): `create` (bool, default
/// True: create the database when the directory holds none), `read_only` (bool, default
/// False), `cache_size_bytes` (int: the catalog's and storage's block cache),
/// `sort_memory_bytes` (int: memory a sort holds before spilling to temporary files).
///
/// Raises `OperationFailure` when the directory is locked by another process, holds no
/// database and `create` is False, or cannot be read; `TypeError` for an unknown option.
#[pyfunction]
#[pyo3(signature = (path, **options))]
pub(crate) fn open(
    py: Python<'_>,
    path: std::path::PathBuf,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyDatabase> {
    let mut opts = DatabaseOptions::default();
    if let Some(options) = options {
        for (key, value) in options.iter() {
            let key: String = key.extract()?;
            match key.as_str() {
                "create" => opts.create = value.extract()?,
                "read_only" => {
                    if value.extract::<bool>()? {
                        opts.access = Access::ReadOnly;
                    }
                }
                "cache_size_bytes" => opts.catalog.cache_size_bytes = value.extract()?,
                "sort_memory_bytes" => opts.sort_memory_bytes = value.extract()?,
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "open() got an unexpected keyword argument '{other}' (options: create, \
                         read_only, cache_size_bytes, sort_memory_bytes)"
                    )));
                }
            }
        }
    }
    let shown = path.display().to_string();
    let db = py.detach(|| Database::open(&path, opts)).py_err(py)?;
    Ok(PyDatabase {
        shared: Arc::new(Shared {
            db: RwLock::new(Some(db)),
            #[cfg(feature = "sql")]
            runtime: std::sync::OnceLock::new(),
        }),
        path: shown,
    })
}

#[pymethods]
impl PyDatabase {
    /// The database's directory.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.db.read().map_or(true, |g| g.is_none())
    }

    /// Creates a time-series collection (MongoDB's `create` with `timeseries`), or returns
    /// the existing one of the same options.
    ///
    /// `granularity` is "seconds", "minutes" or "hours"; `bucket_max_span_seconds` and
    /// `bucket_rounding_seconds` go together (custom bucketing); `expire_after_seconds`
    /// removes buckets whose newest measurement is older.
    ///
    /// Raises `OperationFailure`: `NamespaceExists` (48) when a collection of that name has
    /// other options, `InvalidOptions` (72) or `BadValue` (2) for bad options,
    /// `InvalidNamespace` (73) for a bad name.
    #[pyo3(signature = (name, time_field, meta_field=None, granularity=None,
        bucket_max_span_seconds=None, bucket_rounding_seconds=None, expire_after_seconds=None))]
    #[expect(clippy::too_many_arguments, reason = "MongoDB's options, as keywords")]
    fn create_collection(
        &self,
        py: Python<'_>,
        name: &str,
        time_field: &str,
        meta_field: Option<&str>,
        granularity: Option<&str>,
        bucket_max_span_seconds: Option<i64>,
        bucket_rounding_seconds: Option<i64>,
        expire_after_seconds: Option<i64>,
    ) -> PyResult<PyCollection> {
        let db = self.shared.db(py)?;
        let mut options = TimeseriesOptions::new(time_field);
        options.meta_field = meta_field.map(str::to_owned);
        options.granularity = granularity.map(Granularity::parse).transpose().py_err(py)?;
        options.bucket_max_span_seconds = bucket_max_span_seconds;
        options.bucket_rounding_seconds = bucket_rounding_seconds;
        options.expire_after_seconds = expire_after_seconds;
        let coll = py
            .detach(|| db.create_collection(name, &options))
            .py_err(py)?;
        Ok(PyCollection::new(Arc::clone(&self.shared), coll))
    }

    /// The collection `name`.
    ///
    /// Raises `OperationFailure` `NamespaceNotFound` (26) when there is none.
    fn collection(&self, py: Python<'_>, name: &str) -> PyResult<PyCollection> {
        let db = self.shared.db(py)?;
        let coll = py.detach(|| db.collection(name)).py_err(py)?;
        Ok(PyCollection::new(Arc::clone(&self.shared), coll))
    }

    /// `db["name"]`: as `collection(name)`.
    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<PyCollection> {
        self.collection(py, name)
    }

    /// The names of the collections, sorted.
    fn list_collections(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let db = self.shared.db(py)?;
        let list = py.detach(|| db.list_collections()).py_err(py)?;
        Ok(list.into_iter().map(|(name, _)| name).collect())
    }

    /// Drops the collection `name` and its data; True when it existed.
    fn drop_collection(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let db = self.shared.db(py)?;
        py.detach(|| db.drop_collection(name)).py_err(py)
    }

    /// Stores what is held in memory, makes it durable and releases the directory. Later
    /// calls on the database or its collections raise `InvalidOperation`; closing twice
    /// does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = match self.shared.db.write() {
            Ok(mut guard) => guard.take(),
            Err(_) => None,
        };
        match taken {
            Some(db) => py.detach(move || db.close()).py_err(py),
            None => Ok(()),
        }
    }

    /// Runs a SQL query over the collections (each a table of its name: docs/sql.md) and
    /// returns its result as an `arro3.core.Table`.
    ///
    /// Raises `OperationFailure` (`BadValue`, 2) with DataFusion's message for a query it
    /// refuses or that fails.
    #[cfg(feature = "sql")]
    fn sql<'py>(&self, py: Python<'py>, query: &str) -> PyResult<Bound<'py, PyAny>> {
        let db = self.shared.db(py)?;
        crate::sql::run(py, &self.shared, &db, query)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("Database({:?})", self.path)
    }
}

/// `ValueError` for a bad argument of the binding's own (not the engine's).
pub(crate) fn bad_argument(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}
