//! Generated documents as Arrow record batches, for `tscoll bench ingest --columnar`: one
//! column per field of the first document (datetime → `Timestamp(ms)`, int32, int64,
//! double, string, and a sub-document of strings → `Struct` of `Utf8`).

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray, StructArray,
    TimestampMillisecondArray,
};
use arrow_schema::Field;
use bson::{Bson, Document};

/// The column of field `name` across `docs`, typed after its value in `first`.
fn column(name: &str, first: &Bson, docs: &[&Document]) -> Result<ArrayRef, String> {
    let values = || docs.iter().map(|d| d.get(name));
    Ok(match first {
        Bson::DateTime(_) => {
            Arc::new(TimestampMillisecondArray::from_iter(values().map(|v| {
                v.and_then(Bson::as_datetime).map(|t| t.timestamp_millis())
            })))
        }
        Bson::Int32(_) => Arc::new(Int32Array::from_iter(
            values().map(|v| v.and_then(Bson::as_i32)),
        )),
        Bson::Int64(_) => Arc::new(Int64Array::from_iter(
            values().map(|v| v.and_then(Bson::as_i64)),
        )),
        Bson::Double(_) => Arc::new(Float64Array::from_iter(
            values().map(|v| v.and_then(Bson::as_f64)),
        )),
        Bson::String(_) => Arc::new(StringArray::from_iter(
            values().map(|v| v.and_then(Bson::as_str)),
        )),
        Bson::Document(sub) => {
            let subs: Vec<&Document> = docs
                .iter()
                .map(|d| d.get_document(name))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("field {name}: {e}"))?;
            let children = sub
                .iter()
                .map(|(k, v)| {
                    let array = column(k, v, &subs)?;
                    let field = Field::new(k, array.data_type().clone(), true);
                    Ok((Arc::new(field), array))
                })
                .collect::<Result<Vec<_>, String>>()?;
            Arc::new(StructArray::from(children))
        }
        other => {
            return Err(format!(
                "field {name}: {:?} has no column type here",
                other.element_type()
            ));
        }
    })
}

/// `docs` as one record batch, its columns those of the first document.
///
/// # Errors
/// A field of a type listed in the module docs is missing or of another type where the
/// first document has it, or the first document has a field of another type.
pub(crate) fn record_batch(docs: &[Document]) -> Result<RecordBatch, String> {
    let Some(first) = docs.first() else {
        return Ok(RecordBatch::new_empty(Arc::new(
            arrow_schema::Schema::empty(),
        )));
    };
    let refs: Vec<&Document> = docs.iter().collect();
    let columns = first
        .iter()
        .map(|(name, v)| Ok((name.as_str(), column(name, v, &refs)?)))
        .collect::<Result<Vec<_>, String>>()?;
    RecordBatch::try_from_iter(columns).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{DateTime, doc};

    #[test]
    fn documents_become_typed_columns() {
        let docs = [
            doc! { "t": DateTime::from_millis(5), "tags": { "h": "a" }, "v": 1, "x": 0.5 },
            doc! { "t": DateTime::from_millis(6), "tags": { "h": "b" }, "v": 2, "x": 1.5 },
        ];
        let batch = record_batch(&docs).expect("batch");
        assert_eq!(batch.num_rows(), 2);
        let types: Vec<String> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| format!("{}:{}", f.name(), f.data_type()))
            .collect();
        assert_eq!(
            types,
            [
                "t:Timestamp(ms)",
                "tags:Struct(\"h\": Utf8)",
                "v:Int32",
                "x:Float64"
            ]
        );
    }
}
