//! Documents → Arrow in one call ([`documents_to_batches`]): the two passes of
//! [`super::DocumentShape`] and [`super::BatchBuilder`] over a list of documents, e.g. the
//! results of a pipeline ([`crate::Collection::aggregate_arrow`]).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bson::Document;

use super::{BatchBuilder, DocumentShape};
use crate::error::Result;

/// Documents as Arrow record batches of one schema, with what the mapping changed.
#[derive(Clone, Debug)]
pub struct ArrowBatches {
    /// The schema of every batch: one nullable column per top-level field, in the order
    /// first seen, of the Arrow type docs/arrow.md ("Documents → Arrow") maps its values to.
    /// No field (no document, or only empty ones) when there is no column.
    pub schema: SchemaRef,
    /// The rows, in the documents' order: batches of the rows asked for, the last one
    /// fewer; none when there is no document.
    pub batches: Vec<RecordBatch>,
    /// What the mapping changed, one note per field ([`DocumentShape::notes`]): `field 'v':
    /// int widened to double`, `field 's': string and int as JSON text`, ...
    pub notes: Vec<String>,
}

impl ArrowBatches {
    /// Rows in all the batches.
    #[must_use]
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// `docs` as Arrow record batches of `batch_rows` rows each (0 counts as 1), in one schema
/// found from all of them first (docs/arrow.md, "Documents → Arrow"): every list of
/// documents converts, a field whose values have no common Arrow type being a `Utf8`
/// column of relaxed Extended JSON texts marked `tscoll.encoding = json`.
///
/// ```
/// use bson::doc;
/// use tscoll_engine::arrow::documents_to_batches;
/// use tscoll_engine::arrow::array::Array;
/// use tscoll_engine::arrow::array::cast::AsArray;
/// use tscoll_engine::arrow::array::types::Float64Type;
///
/// let docs = [doc! { "v": 1, "tags": { "host": "a" } }, doc! { "v": 2.5 }];
/// let out = documents_to_batches(&docs, 8192)?;
/// assert_eq!(out.num_rows(), 2);
/// let v = out.batches[0].column(0).as_primitive::<Float64Type>();
/// assert_eq!((v.value(0), v.value(1)), (1.0, 2.5));
/// assert!(out.batches[0].column(1).is_null(1), "a missing document is a null struct");
/// assert_eq!(out.notes, ["field 'v': int widened to double"]);
/// # Ok::<(), tscoll_engine::Error>(())
/// ```
///
/// # Errors
/// [`crate::Error::Rejected`] (`BadValue`) when a batch would hold more than 2 GiB of
/// strings or bytes in one column (ask for fewer rows a batch).
pub fn documents_to_batches(docs: &[Document], batch_rows: usize) -> Result<ArrowBatches> {
    let mut shape = DocumentShape::new();
    docs.iter().for_each(|d| shape.add(d));
    let schema = shape.schema();
    let mut builder = BatchBuilder::new(SchemaRef::clone(&schema));
    let mut batches = Vec::with_capacity(docs.len().div_ceil(batch_rows.max(1)));
    for chunk in docs.chunks(batch_rows.max(1)) {
        for doc in chunk {
            builder.push(doc)?;
        }
        batches.push(builder.finish()?);
    }
    Ok(ArrowBatches {
        schema,
        batches,
        notes: shape.notes(),
    })
}

#[cfg(test)]
mod tests {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, TimestampMillisecondType, UInt32Type};
    use arrow_schema::DataType;
    use bson::oid::ObjectId;
    use bson::{Bson, DateTime, doc};

    use super::*;
    use crate::arrow::{ENCODING_KEY, NULLS_KEY};

    #[test]
    fn batches_hold_the_rows_asked_for_in_order() {
        let docs: Vec<Document> = (0..10).map(|i| doc! { "i": i }).collect();
        let out = documents_to_batches(&docs, 4).expect("converts");
        let sizes: Vec<usize> = out.batches.iter().map(RecordBatch::num_rows).collect();
        assert_eq!(sizes, [4, 4, 2]);
        let values: Vec<i32> = out
            .batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int32Type>().values().to_vec())
            .collect();
        assert_eq!(values, (0..10).collect::<Vec<_>>());
        // 0 rows a batch counts as 1.
        assert_eq!(
            documents_to_batches(&docs, 0)
                .expect("converts")
                .batches
                .len(),
            10
        );
    }

    #[test]
    fn no_document_is_a_schema_of_no_field() {
        let out = documents_to_batches(&[], 10).expect("converts");
        assert!(out.schema.fields().is_empty());
        assert!(out.batches.is_empty());
        // Empty documents: rows without a column.
        let out = documents_to_batches(&[doc! {}, doc! {}], 10).expect("converts");
        assert!(out.schema.fields().is_empty());
        assert_eq!(out.num_rows(), 2);
    }

    #[test]
    fn values_fill_their_columns() {
        let oid = ObjectId::from_bytes([7; 12]);
        let docs = [
            doc! {
                "t": DateTime::from_millis(-5), "l": 1, "o": oid, "n": null,
                "ts": bson::Timestamp { time: 4, increment: 5 },
                "d": { "a": 1, "b": [1, 2] }, "m": "x", "re": Bson::MinKey,
            },
            doc! {
                "t": DateTime::from_millis(7), "l": 2_i64, "n": null,
                "d": { "b": [] }, "m": { "k": 1_i64 }, "re": Bson::MaxKey,
            },
        ];
        let out = documents_to_batches(&docs, 100).expect("converts");
        let b = &out.batches[0];
        let t = b.column(0).as_primitive::<TimestampMillisecondType>();
        assert_eq!(t.values().to_vec(), [-5, 7]);
        let l = b.column(1).as_primitive::<Int64Type>();
        assert_eq!(l.values().to_vec(), [1, 2]);
        let o = b.column(2).as_fixed_size_binary();
        assert_eq!(o.value(0), [7; 12]);
        assert!(o.is_null(1));
        assert_eq!(b.column(3).data_type(), &DataType::Null);
        assert!(out.schema.field(3).metadata().contains_key(NULLS_KEY));
        let ts = b.column(4).as_struct();
        assert_eq!(ts.column(0).as_primitive::<UInt32Type>().value(0), 4);
        assert!(ts.is_null(1));
        let d = b.column(5).as_struct();
        assert!(d.column(0).is_null(1), "a field missing in a document");
        let list = d.column(1).as_list::<i32>();
        assert_eq!((list.value(0).len(), list.value(1).len()), (2, 0));
        for (i, texts) in [
            (6, ["\"x\"", r#"{"k":{"$numberLong":"1"}}"#]),
            (7, [r#"{"$minKey":1}"#, r#"{"$maxKey":1}"#]),
        ] {
            assert_eq!(out.schema.field(i).metadata()[ENCODING_KEY], "json");
            let s = b.column(i).as_string::<i32>();
            assert_eq!([s.value(0), s.value(1)], texts);
        }
    }

    #[test]
    fn a_document_the_schema_does_not_hold_is_refused_naming_the_field() {
        let mut shape = DocumentShape::new();
        shape.add(&doc! { "a": { "b": 1 } });
        let mut builder = BatchBuilder::new(shape.schema());
        let e = builder
            .push(&doc! { "a": { "b": "x" } })
            .expect_err("a string");
        assert!(e.to_string().contains("field 'a.b'"), "{e}");
        let mut builder = BatchBuilder::new(shape.schema());
        let e = builder.push(&doc! { "z": 1 }).expect_err("a new field");
        assert!(e.to_string().contains("field 'z'"), "{e}");
    }
}
