//! `tscoll.Collection`: inserts from Arrow or dicts, queries into Arrow tables, deletes,
//! updates, counts and stats of one time-series collection. Every engine call runs with
//! the GIL released.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyMapping, PyString, PyTuple};
use pyo3_arrow::PyTable;
use pyo3_arrow::input::AnyRecordBatch;
use tscoll_engine::arrow::RecordBatchOptions;
use tscoll_engine::arrow::array::RecordBatch;
use tscoll_engine::arrow::schema::SchemaRef;
use tscoll_engine::{ArrowOptions, Collection, FindOptions, SortOrder, Update};

use crate::database::{Shared, bad_argument};
use crate::errors::{IntoPyResult, bulk_write_error};
use crate::insert;
use crate::results::{DeleteResult, InsertResult, UpdateResult};
use crate::to_bson::{to_document, to_document_or_empty, to_documents};

/// A time-series collection of an open database.
#[pyclass(name = "Collection", module = "tscoll._tscoll", frozen)]
pub(crate) struct PyCollection {
    shared: Arc<Shared>,
    coll: Collection,
}

impl PyCollection {
    pub(crate) fn new(shared: Arc<Shared>, coll: Collection) -> Self {
        PyCollection { shared, coll }
    }

    /// The engine's handle, checking that the database is still open.
    fn coll(&self, py: Python<'_>) -> PyResult<Collection> {
        self.shared.db(py)?;
        Ok(self.coll.clone())
    }
}

/// A table of `batches` (of `schema`) as an `arro3.core.Table`.
pub(crate) fn table(
    py: Python<'_>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'_, PyAny>> {
    PyTable::try_new(batches, schema)?.into_arro3(py)
}

#[pymethods]
impl PyCollection {
    /// The collection's name.
    #[getter]
    fn name(&self) -> &str {
        self.coll.name()
    }

    /// The time field (`timeField`).
    #[getter]
    fn time_field(&self) -> String {
        self.coll.spec().time_field
    }

    /// The meta field (`metaField`), or None.
    #[getter]
    fn meta_field(&self) -> Option<String> {
        self.coll.spec().meta_field
    }

    /// Inserts measurements and returns an `InsertResult`.
    ///
    /// `data` is an Arrow object (anything with `__arrow_c_stream__` or
    /// `__arrow_c_array__`: a pyarrow Table or RecordBatch, a pandas or polars DataFrame,
    /// an arro3 Table), read batch by batch without a copy, a row per measurement and a
    /// column per field (types: docs/arrow.md); or a list of dicts, one per measurement.
    /// `time_column` names the column holding the time field when it is named otherwise;
    /// `meta_columns` names flat columns gathered into the meta field's document.
    ///
    /// With `ordered` (default) the insert stops at the first rejected row, keeping those
    /// before it; otherwise every good row is stored. Raises `BulkWriteError` when any row
    /// was rejected (`details["nInserted"]`, `details["writeErrors"]`: index, code, errmsg),
    /// `OperationFailure` when the input as a whole is refused (a column of a type with no
    /// BSON form, such as a map, named in the message; no time column; a column of
    /// `time_column` or `meta_columns` missing) or storage fails.
    #[pyo3(signature = (data, ordered=true, time_column=None, meta_columns=None))]
    fn insert(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        ordered: bool,
        time_column: Option<String>,
        meta_columns: Option<Vec<String>>,
    ) -> PyResult<InsertResult> {
        let coll = self.coll(py)?;
        let mapping = RecordBatchOptions {
            time_column,
            meta_columns: meta_columns.unwrap_or_default(),
        };
        let outcome = if data.is_instance_of::<PyList>() || data.is_instance_of::<PyTuple>() {
            if mapping.time_column.is_some() || !mapping.meta_columns.is_empty() {
                return Err(bad_argument(
                    "time_column and meta_columns apply to Arrow input only",
                ));
            }
            let docs = to_documents(data)?;
            insert::documents(py, &coll, &docs, ordered)?
        } else {
            let arrow: AnyRecordBatch = data.extract().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "insert() takes an Arrow object (with __arrow_c_stream__ or \
                     __arrow_c_array__: pyarrow, pandas, polars, arro3) or a list of dicts, \
                     not {}",
                    data.get_type()
                        .name()
                        .map_or_else(|_| "this".to_owned(), |n| n.to_string())
                ))
            })?;
            insert::arrow(py, &coll, arrow, ordered, &mapping)?
        };
        if outcome.errors.is_empty() {
            Ok(InsertResult {
                inserted_count: outcome.inserted,
                acknowledged: true,
            })
        } else {
            Err(bulk_write_error(py, outcome.inserted, &outcome.errors))
        }
    }

    /// Finds the measurements matching `filter` (MongoDB's query language, docs/semantics.md)
    /// and returns them as an `arro3.core.Table` (time field, meta field, then the other
    /// fields; types: docs/arrow.md) — `pyarrow.table(...)`, `polars.from_arrow(...)` and
    /// `pandas` (through pyarrow) take it without a copy.
    ///
    /// `projection` is a MongoDB projection; `sort` as pymongo's: `[("time", -1)]` or
    /// `{"time": 1}` (the time field only, for Arrow results); `limit` (0 or None: all) and
    /// `skip` count rows.
    ///
    /// Raises `OperationFailure` (`BadValue`, 2) for an unsupported operator, projection
    /// or sort.
    #[pyo3(signature = (filter=None, projection=None, sort=None, limit=None, skip=None))]
    fn find<'py>(
        &self,
        py: Python<'py>,
        filter: Option<&Bound<'py, PyAny>>,
        projection: Option<&Bound<'py, PyAny>>,
        sort: Option<&Bound<'py, PyAny>>,
        limit: Option<usize>,
        skip: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let coll = self.coll(py)?;
        let filter = to_document_or_empty(filter)?;
        let projection = match projection {
            Some(p) if !p.is_none() => Some(to_document(p)?),
            _ => None,
        };
        let (sort, sort_by) = sort_spec(sort, &coll.spec().time_field)?;
        let options = FindOptions {
            projection,
            sort,
            sort_by,
            limit,
            skip: skip.unwrap_or(0),
        };
        let (schema, batches) = py
            .detach(|| -> tscoll_engine::Result<_> {
                let cursor = coll.find_arrow(&filter, &options, &ArrowOptions::default())?;
                let schema = cursor.schema();
                let batches = cursor.collect::<tscoll_engine::Result<Vec<_>>>()?;
                Ok((schema, batches))
            })
            .py_err(py)?;
        table(py, schema, batches)
    }

    /// Runs an aggregation pipeline (a list of stage dicts, MongoDB 8.0's stages:
    /// docs/semantics.md) and returns its documents as an `arro3.core.Table`, a column per
    /// top-level field.
    ///
    /// Raises `OperationFailure` with MongoDB's code for an unsupported or malformed stage
    /// or an expression that fails.
    fn aggregate<'py>(
        &self,
        py: Python<'py>,
        pipeline: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let coll = self.coll(py)?;
        let pipeline = to_documents(pipeline)?;
        let (schema, batches) = crate::aggregate::run(py, &coll, &pipeline)?;
        table(py, schema, batches)
    }

    /// The number of measurements matching `filter` (all when None).
    #[pyo3(signature = (filter=None))]
    fn count(&self, py: Python<'_>, filter: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        let coll = self.coll(py)?;
        let filter = to_document_or_empty(filter)?;
        py.detach(|| coll.count(&filter)).py_err(py)
    }

    /// Deletes every measurement matching `filter` (`{}` for all) and returns a
    /// `DeleteResult`.
    fn delete_many(&self, py: Python<'_>, filter: &Bound<'_, PyAny>) -> PyResult<DeleteResult> {
        let coll = self.coll(py)?;
        let filter = to_document(filter)?;
        let r = py.detach(|| coll.delete_many(&filter)).py_err(py)?;
        Ok(DeleteResult {
            deleted_count: r.deleted,
            acknowledged: true,
        })
    }

    /// Updates every measurement matching `filter` with `update`: update operators
    /// (`{"$set": {...}}`) or an update pipeline (a list of stages); returns an
    /// `UpdateResult`.
    ///
    /// Raises `OperationFailure` with MongoDB's code (`FailedToParse`, `TypeMismatch`,
    /// `ImmutableField`, ...); on error nothing changes.
    fn update_many(
        &self,
        py: Python<'_>,
        filter: &Bound<'_, PyAny>,
        update: &Bound<'_, PyAny>,
    ) -> PyResult<UpdateResult> {
        let coll = self.coll(py)?;
        let filter = to_document(filter)?;
        let update = if update.is_instance_of::<PyList>() || update.is_instance_of::<PyTuple>() {
            Update::Pipeline(to_documents(update)?)
        } else {
            Update::Document(to_document(update)?)
        };
        let r = py.detach(|| coll.update_many(&filter, update)).py_err(py)?;
        Ok(UpdateResult {
            matched_count: r.matched,
            modified_count: r.modified,
            upserted_id: None,
            acknowledged: true,
        })
    }

    /// The collection's statistics as a dict with MongoDB's camelCase keys
    /// (`bucketCount`, `avgBucketSize`, `numActiveBuckets`, ...) plus `measurementCount`,
    /// `storedBytes` and `uncompressedBytes`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let coll = self.coll(py)?;
        let stats = py.detach(|| coll.stats()).py_err(py)?;
        crate::to_py::document(py, &stats.to_document())
    }

    fn __repr__(&self) -> String {
        format!("Collection({:?})", self.coll.name())
    }
}

/// pymongo's sort forms: a key (ascending), a list of `(key, direction)` pairs or a
/// mapping of key to direction (1 or -1). A sort on the time field alone is the engine's
/// time sort; any other is a sort document (which `find`'s Arrow results refuse).
fn sort_spec(
    sort: Option<&Bound<'_, PyAny>>,
    time_field: &str,
) -> PyResult<(Option<SortOrder>, Option<bson::Document>)> {
    let Some(sort) = sort.filter(|s| !s.is_none()) else {
        return Ok((None, None));
    };
    let mut keys: Vec<(String, i32)> = Vec::new();
    if let Ok(key) = sort.cast::<PyString>() {
        keys.push((key.to_str()?.to_owned(), 1));
    } else if let Ok(mapping) = sort.cast::<PyMapping>() {
        for item in mapping.items()?.iter() {
            keys.push(item.extract()?);
        }
    } else {
        for item in sort.try_iter()? {
            let item = item?;
            match item.extract::<(String, i32)>() {
                Ok(pair) => keys.push(pair),
                Err(_) => keys.push((item.extract::<String>()?, 1)),
            }
        }
    }
    let mut doc = bson::Document::new();
    for (key, direction) in &keys {
        if *direction != 1 && *direction != -1 {
            return Err(bad_argument(format!(
                "the sort direction of {key:?} must be 1 or -1, not {direction}"
            )));
        }
        doc.insert(key.as_str(), *direction);
    }
    match keys.as_slice() {
        [(key, direction)] if key == time_field => Ok((
            Some(if *direction == 1 {
                SortOrder::Ascending
            } else {
                SortOrder::Descending
            }),
            None,
        )),
        [] => Ok((None, None)),
        _ => Ok((None, Some(doc))),
    }
}
