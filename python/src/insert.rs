//! Inserts: a list of dicts through `insert_many`, an Arrow stream batch by batch through
//! `insert_record_batch_with`, each with the GIL released; the rejected rows of every batch
//! gathered with their positions in the whole input.

use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use tscoll_engine::arrow::RecordBatchOptions;
use tscoll_engine::{Collection, InsertOptions, InsertResult};

use crate::errors::{IntoPyResult, runtime};

/// Inserts documents (`insert_many`): what was stored and what was rejected, ordered or
/// not (an ordered insert's `Error::BulkWrite` taken back as its result).
///
/// # Errors
/// The engine's other errors as Python exceptions.
pub(crate) fn documents(
    py: Python<'_>,
    coll: &Collection,
    docs: &[bson::Document],
    ordered: bool,
) -> PyResult<InsertResult> {
    let options = InsertOptions {
        ordered,
        ..InsertOptions::default()
    };
    py.detach(|| {
        coll.insert_many(docs, &options)
            .or_else(tscoll_engine::Error::into_insert_result)
    })
    .py_err(py)
}

/// Inserts the batches of an Arrow input, its time and meta fields mapped by `mapping`,
/// reading the next batch (with the GIL: a stream may call back into Python) only after
/// the previous one is stored; with `ordered`, stops at the first rejected row (the
/// engine's `Error::BulkWrite` taken back as the batch's result).
///
/// # Errors
/// The stream fails (`RuntimeError`), or the engine's error as a Python exception (a
/// column of a type with no BSON form, a column of `mapping` missing: `BadValue`).
pub(crate) fn arrow(
    py: Python<'_>,
    coll: &Collection,
    data: AnyRecordBatch,
    ordered: bool,
    mapping: &RecordBatchOptions,
) -> PyResult<InsertResult> {
    let options = InsertOptions {
        ordered,
        ..InsertOptions::default()
    };
    let reader = data.into_reader()?;
    let mut total = InsertResult::default();
    let mut offset = 0usize;
    for batch in reader {
        let batch = batch.map_err(|e| runtime(format!("reading the Arrow input: {e}")))?;
        let rows = batch.num_rows();
        let result = py
            .detach(|| {
                coll.insert_record_batch_with(&batch, &options, mapping)
                    .or_else(tscoll_engine::Error::into_insert_result)
            })
            .py_err(py)?;
        total.inserted += result.inserted;
        let stop = ordered && !result.errors.is_empty();
        total.errors.extend(result.errors.into_iter().map(|mut e| {
            e.index += offset;
            e
        }));
        if stop {
            break;
        }
        offset += rows;
    }
    Ok(total)
}
