//! The bytes of plans sent to other processes: BSON documents, with Arrow schemas as Arrow
//! IPC streams of no batch.

use std::io::Cursor;

use bson::{Bson, Document};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::error::{DataFusionError, Result};

/// `schema` as the bytes of an Arrow IPC stream of no batch, as a BSON binary (generic
/// subtype): how plans, and a cluster's workers describing their collections, send a schema.
///
/// # Errors
/// An Arrow error when the schema cannot be written.
pub fn schema_bytes(schema: &SchemaRef) -> Result<bson::Binary> {
    let mut w = StreamWriter::try_new(Vec::new(), schema)?;
    w.finish()?;
    Ok(bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes: w.into_inner()?,
    })
}

/// The schema [`schema_bytes`] wrote.
///
/// # Errors
/// An Arrow error when `bytes` are not an Arrow IPC stream.
pub fn schema_from_bytes(bytes: &[u8]) -> Result<SchemaRef> {
    let r = StreamReader::try_new(Cursor::new(bytes), None)?;
    Ok(r.schema())
}

/// `d` as BSON bytes.
pub(crate) fn document_bytes(d: &Document) -> Result<Vec<u8>> {
    d.to_vec()
        .map_err(|e| DataFusionError::Internal(format!("a plan as BSON: {e}")))
}

/// The error of bytes that are not the plan they should be.
pub(crate) fn bad(what: &str, reason: &str) -> DataFusionError {
    DataFusionError::Internal(format!(
        "a {what} sent by another process cannot be read: {reason}"
    ))
}

/// The non-negative integer `key` of `d`.
pub(crate) fn get_usize(d: &Document, key: &str) -> Result<usize> {
    match d.get(key) {
        Some(Bson::Int64(n)) => {
            usize::try_from(*n).map_err(|e| bad("plan", &format!("{key}: {e}")))
        }
        Some(Bson::Int32(n)) => {
            usize::try_from(*n).map_err(|e| bad("plan", &format!("{key}: {e}")))
        }
        _ => Err(bad("plan", &format!("no integer {key}"))),
    }
}

/// The array of non-negative integers `key` of `d`.
pub(crate) fn get_usizes(d: &Document, key: &str) -> Result<Vec<usize>> {
    let a = d
        .get_array(key)
        .map_err(|e| bad("plan", &format!("{key}: {e}")))?;
    a.iter()
        .map(|v| match v {
            Bson::Int64(n) => usize::try_from(*n).map_err(|e| bad("plan", &e.to_string())),
            Bson::Int32(n) => usize::try_from(*n).map_err(|e| bad("plan", &e.to_string())),
            _ => Err(bad("plan", &format!("{key} holds a non-integer"))),
        })
        .collect()
}
