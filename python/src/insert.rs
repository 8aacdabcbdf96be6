//! Inserts: a list of dicts through `insert_many`, an Arrow stream batch by batch through
//! `insert_record_batch`, each with the GIL released; the rejected rows of every batch
//! gathered with their positions in the whole input.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3_arrow::input::AnyRecordBatch;
use tscoll_engine::arrow::array::{Array, ArrayRef, RecordBatch, StructArray};
use tscoll_engine::arrow::schema::{Field, Schema};
use tscoll_engine::{Collection, InsertOptions, InsertResult};

use crate::database::bad_argument;
use crate::errors::{IntoPyResult, runtime};

/// Where the time and meta fields are in an Arrow input named otherwise.
pub(crate) struct Columns {
    /// The column holding the time field, when not named as it.
    pub(crate) time_column: Option<String>,
    /// Flat columns gathered into the meta field's document.
    pub(crate) meta_columns: Vec<String>,
}

/// Inserts documents (`insert_many`).
///
/// # Errors
/// The engine's error as a Python exception.
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
    py.detach(|| coll.insert_many(docs, &options)).py_err(py)
}

/// Inserts the batches of an Arrow input, reading the next batch (with the GIL: a stream
/// may call back into Python) only after the previous one is stored; with `ordered`,
/// stops after the first batch that had a rejected row.
///
/// # Errors
/// The stream fails (`RuntimeError`), a column of `columns` is missing (`ValueError`), or
/// the engine's error as a Python exception.
pub(crate) fn arrow(
    py: Python<'_>,
    coll: &Collection,
    data: AnyRecordBatch,
    ordered: bool,
    columns: &Columns,
) -> PyResult<InsertResult> {
    let options = InsertOptions {
        ordered,
        ..InsertOptions::default()
    };
    let spec = coll.spec();
    let reader = data.into_reader()?;
    let mut total = InsertResult::default();
    let mut offset = 0usize;
    for batch in reader {
        let batch = batch.map_err(|e| runtime(format!("reading the Arrow input: {e}")))?;
        let batch = shape(batch, &spec.time_field, spec.meta_field.as_deref(), columns)?;
        let rows = batch.num_rows();
        let result = py
            .detach(|| coll.insert_record_batch(&batch, &options))
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

/// The batch with the time column renamed to the time field and the meta columns gathered
/// into a struct column named as the meta field (no data copied).
fn shape(
    batch: RecordBatch,
    time_field: &str,
    meta_field: Option<&str>,
    columns: &Columns,
) -> PyResult<RecordBatch> {
    if columns.time_column.is_none() && columns.meta_columns.is_empty() {
        return Ok(batch);
    }
    let schema = batch.schema();
    let position = |name: &str, what: &str| {
        schema.index_of(name).map_err(|_| {
            bad_argument(format!(
                "{what} {name:?} is not a column of the input (columns: {})",
                schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    };
    let time_index = match &columns.time_column {
        Some(name) => {
            let i = position(name, "time_column")?;
            if name != time_field && schema.index_of(time_field).is_ok() {
                return Err(bad_argument(format!(
                    "time_column is {name:?}, but the input also has a column named as the \
                     time field {time_field:?}"
                )));
            }
            Some(i)
        }
        None => None,
    };
    let mut meta_indices = Vec::with_capacity(columns.meta_columns.len());
    for name in &columns.meta_columns {
        meta_indices.push(position(name, "meta column")?);
    }
    let meta_field = match (meta_field, meta_indices.is_empty()) {
        (_, true) => None,
        (Some(m), false) => {
            if schema.index_of(m).is_ok() && !columns.meta_columns.iter().any(|c| c == m) {
                return Err(bad_argument(format!(
                    "meta_columns are given, but the input also has a column named as the \
                     meta field {m:?}"
                )));
            }
            Some(m)
        }
        (None, false) => {
            return Err(bad_argument(
                "meta_columns are given, but the collection has no meta field",
            ));
        }
    };
    let mut fields: Vec<Arc<Field>> = Vec::with_capacity(schema.fields().len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        if meta_indices.contains(&i) {
            continue;
        }
        if Some(i) == time_index {
            fields.push(Arc::new(field.as_ref().clone().with_name(time_field)));
        } else {
            fields.push(Arc::clone(field));
        }
        arrays.push(Arc::clone(batch.column(i)));
    }
    if let Some(meta) = meta_field {
        let meta_fields: Vec<Arc<Field>> = meta_indices
            .iter()
            .map(|&i| Arc::clone(&schema.fields()[i]))
            .collect();
        let meta_arrays: Vec<ArrayRef> = meta_indices
            .iter()
            .map(|&i| Arc::clone(batch.column(i)))
            .collect();
        let array = StructArray::try_new(meta_fields.into(), meta_arrays, None)
            .map_err(|e| bad_argument(format!("gathering the meta columns: {e}")))?;
        fields.push(Arc::new(Field::new(meta, array.data_type().clone(), false)));
        arrays.push(Arc::new(array));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| bad_argument(format!("reshaping the input: {e}")))
}
