//! The outcomes of writes, as pymongo's result objects name their attributes.

use pyo3::prelude::*;

/// What an insert stored (pymongo's `InsertManyResult`, without the ids).
#[pyclass(module = "tscoll._tscoll", frozen, get_all)]
#[derive(Clone, Debug)]
pub(crate) struct InsertResult {
    /// Rows (measurements) stored.
    pub(crate) inserted_count: usize,
    /// Always `True`: every write is acknowledged.
    pub(crate) acknowledged: bool,
}

#[pymethods]
impl InsertResult {
    fn __repr__(&self) -> String {
        format!("InsertResult(inserted_count={})", self.inserted_count)
    }
}

/// What a `delete_many` removed (pymongo's `DeleteResult`).
#[pyclass(module = "tscoll._tscoll", frozen, get_all)]
#[derive(Clone, Debug)]
pub(crate) struct DeleteResult {
    /// Measurements deleted.
    pub(crate) deleted_count: u64,
    /// Always `True`.
    pub(crate) acknowledged: bool,
}

#[pymethods]
impl DeleteResult {
    fn __repr__(&self) -> String {
        format!("DeleteResult(deleted_count={})", self.deleted_count)
    }
}

/// What an `update_many` changed (pymongo's `UpdateResult`).
#[pyclass(module = "tscoll._tscoll", frozen, get_all)]
#[derive(Debug)]
pub(crate) struct UpdateResult {
    /// Measurements the filter matched.
    pub(crate) matched_count: u64,
    /// Measurements the update changed.
    pub(crate) modified_count: u64,
    /// Always `None`: `update_many` does not upsert.
    pub(crate) upserted_id: Option<Py<PyAny>>,
    /// Always `True`.
    pub(crate) acknowledged: bool,
}

#[pymethods]
impl UpdateResult {
    fn __repr__(&self) -> String {
        format!(
            "UpdateResult(matched_count={}, modified_count={})",
            self.matched_count, self.modified_count
        )
    }
}
