//! An aggregation pipeline's result as Arrow record batches: the engine's documents laid
//! out by `documents::to_record_batch`, with the GIL released.

use pyo3::prelude::*;
use tscoll_engine::Collection;
use tscoll_engine::arrow::array::RecordBatch;
use tscoll_engine::arrow::schema::SchemaRef;

use crate::errors::{IntoPyResult, runtime};

/// Runs `pipeline` over `coll`: the schema and batches of its result.
///
/// # Errors
/// The engine's error as a Python exception.
pub(crate) fn run(
    py: Python<'_>,
    coll: &Collection,
    pipeline: &[bson::Document],
) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let docs = py.detach(|| coll.aggregate(pipeline)).py_err(py)?;
    let (schema, batch) = py
        .detach(|| crate::documents::to_record_batch(&docs))
        .map_err(|e| runtime(format!("laying out the pipeline's result: {e}")))?;
    Ok((schema, vec![batch]))
}
