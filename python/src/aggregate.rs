//! An aggregation pipeline's result as Arrow record batches: the engine's
//! `Collection::aggregate_arrow` (the schema inferred from the documents, docs/arrow.md
//! "Documents → Arrow"), with the GIL released.

use pyo3::prelude::*;
use tscoll_engine::Collection;
use tscoll_engine::arrow::array::RecordBatch;
use tscoll_engine::arrow::schema::SchemaRef;

use crate::errors::IntoPyResult;

/// Runs `pipeline` over `coll`: the schema and batches of its result.
///
/// # Errors
/// The engine's error as a Python exception.
pub(crate) fn run(
    py: Python<'_>,
    coll: &Collection,
    pipeline: &[bson::Document],
) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let result = py.detach(|| coll.aggregate_arrow(pipeline)).py_err(py)?;
    Ok((result.schema, result.batches))
}
