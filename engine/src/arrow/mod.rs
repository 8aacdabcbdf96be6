//! The Arrow crates the engine links, at the versions its Arrow API speaks
//! ([`crate::Collection::find_arrow`], [`crate::Collection::insert_record_batch`], …): an embedder uses
//! these instead of guessing and pinning the same versions.
//!
//! ```
//! use std::sync::Arc;
//! use tscoll_engine::arrow::array::{Float64Array, RecordBatch, TimestampMillisecondArray};
//! use tscoll_engine::arrow::schema::{DataType, Field, Schema, TimeUnit};
//!
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("t", DataType::Timestamp(TimeUnit::Millisecond, None), false),
//!     Field::new("v", DataType::Float64, true),
//! ]));
//! let batch = RecordBatch::try_new(
//!     schema,
//!     vec![
//!         Arc::new(TimestampMillisecondArray::from(vec![0, 1000])),
//!         Arc::new(Float64Array::from(vec![1.5, 2.5])),
//!     ],
//! )?;
//! assert_eq!(batch.num_rows(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! It also holds the one mapping between Arrow and BSON values that every Arrow path of the
//! engine, the CLI and the SQL layer uses (docs/arrow.md), and documents → Arrow:
//! [`documents_to_batches`] (or its two passes, [`DocumentShape`] then [`BatchBuilder`]).
//!
//! | file | concept |
//! |---|---|
//! | `shape.rs` | the first pass of documents → Arrow: the schema of a list of documents |
//! | `build.rs` | the second pass: documents appended to the columns of that schema |
//! | `documents.rs` | both passes over a list of documents: [`ArrowBatches`] |
//! | `json.rs` | the text of a value in a JSON column |

mod build;
mod documents;
pub(crate) mod json;
mod shape;

pub use build::BatchBuilder;
pub use documents::{ArrowBatches, documents_to_batches};
pub use shape::DocumentShape;

/// `arrow-array`: arrays and record batches.
pub use arrow_array as array;
/// `arrow-buffer`: the buffers under the arrays.
pub use arrow_buffer as buffer;
/// `arrow-schema`: data types, fields and schemas.
pub use arrow_schema as schema;
/// `arrow-select`: take, filter and concatenation kernels.
pub use arrow_select as select;

/// Field metadata key naming the BSON type of a column whose Arrow type alone does not say
/// it: `objectId` (`FixedSizeBinary(12)`), `decimal128` (`FixedSizeBinary(16)`, the IEEE
/// 754-2008 BID bytes), `timestamp` (`Struct{t: UInt32, i: UInt32}` or `UInt64`),
/// `binary:N` (a binary subtype other than 0).
pub const BSON_TYPE_KEY: &str = "tscoll.bson_type";

/// Field metadata key present (value `null`) when a null in the column is a BSON null;
/// without it a null is a missing field.
pub const NULLS_KEY: &str = "tscoll.nulls";

pub use crate::query::ENCODING_KEY;

mod columns;
pub(crate) mod plain;
pub(crate) mod values;

pub use columns::RecordBatchOptions;

/// The rows of `batch` as documents, by the Arrow → BSON mapping every Arrow path of the
/// engine uses (docs/arrow.md, "Arrow → BSON"): each column a field, its null rows left out
/// (BSON null where the field is marked [`NULLS_KEY`]). What
/// [`crate::Collection::insert_record_batch`] stores for a row is this document, with an
/// `_id` where it has none.
///
/// ```
/// use std::sync::Arc;
/// use bson::doc;
/// use tscoll_engine::arrow::array::{DictionaryArray, Int64Array, RecordBatch};
/// use tscoll_engine::arrow::array::types::Int32Type;
///
/// let host: DictionaryArray<Int32Type> = vec!["a", "b", "a"].into_iter().collect();
/// let batch = RecordBatch::try_from_iter([
///     ("host", Arc::new(host) as _),
///     ("n", Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as _),
/// ])?;
/// let docs = tscoll_engine::arrow::documents_from_batch(&batch)?;
/// assert_eq!(docs, [doc! { "host": "a", "n": 1_i64 }, doc! { "host": "b" }, doc! { "host": "a", "n": 3_i64 }]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`crate::Error::Rejected`] (`BadValue`): a column of a type with no BSON form (`Map`,
/// `Union`, `Interval`, `RunEndEncoded`, at any depth), naming it; or the first value with
/// none (a `UInt64` past the int64 range, a decimal of more than 34 digits, a JSON-marked
/// text that is not Extended JSON), naming its row and field.
pub fn documents_from_batch(
    batch: &arrow_array::RecordBatch,
) -> crate::Result<Vec<bson::Document>> {
    values::documents(batch)
}
