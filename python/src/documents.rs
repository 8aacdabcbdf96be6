//! Documents → one Arrow record batch, for the results the engine returns as documents
//! (an aggregation pipeline's): a column per top-level field, in the order fields first
//! appear, each of the Arrow type docs/arrow.md maps its BSON type to when every value of
//! the field has one type (int32 → `Int32`; int32 and int64 → `Int64`; numbers with a
//! double → `Float64`; `Boolean`; `Utf8`; dates → `Timestamp(Millisecond, "UTC")`), else a
//! `Utf8` column of relaxed Extended JSON texts marked with `tscoll.encoding: json`.
//! A missing field or a null is a null.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMillisecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef, TimeUnit};
use bson::{Bson, Document};
use tscoll_engine::ENCODING_KEY;

/// The kind of one column: what its values have been so far.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// Only nulls so far.
    Null,
    Int32,
    Int64,
    Float64,
    Boolean,
    Utf8,
    Date,
    /// Mixed or nested types: JSON text.
    Json,
}

impl Kind {
    fn of(v: &Bson) -> Kind {
        match v {
            Bson::Null | Bson::Undefined => Kind::Null,
            Bson::Int32(_) => Kind::Int32,
            Bson::Int64(_) => Kind::Int64,
            Bson::Double(_) => Kind::Float64,
            Bson::Boolean(_) => Kind::Boolean,
            Bson::String(_) => Kind::Utf8,
            Bson::DateTime(_) => Kind::Date,
            _ => Kind::Json,
        }
    }

    /// The kind holding both.
    fn join(self, other: Kind) -> Kind {
        use Kind::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Null, b) => b,
            (a, Null) => a,
            (Int32, Int64) | (Int64, Int32) => Int64,
            (Int32 | Int64 | Float64, Int32 | Int64 | Float64) => Float64,
            _ => Json,
        }
    }

    fn field(self, name: &str) -> Field {
        let (data_type, json) = match self {
            Kind::Int32 => (DataType::Int32, false),
            Kind::Int64 => (DataType::Int64, false),
            Kind::Float64 => (DataType::Float64, false),
            Kind::Boolean => (DataType::Boolean, false),
            Kind::Date => (
                DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                false,
            ),
            Kind::Utf8 | Kind::Null => (DataType::Utf8, false),
            Kind::Json => (DataType::Utf8, true),
        };
        let field = Field::new(name, data_type, true);
        if json {
            field.with_metadata(HashMap::from([(
                ENCODING_KEY.to_owned(),
                "json".to_owned(),
            )]))
        } else {
            field
        }
    }
}

/// The documents as one record batch (see the module docs for the layout).
///
/// # Errors
/// None in practice: the columns are built to the schema's types and lengths.
pub(crate) fn to_record_batch(docs: &[Document]) -> Result<(SchemaRef, RecordBatch), ArrowError> {
    let mut names: Vec<&str> = Vec::new();
    let mut kinds: HashMap<&str, Kind> = HashMap::new();
    for doc in docs {
        for (k, v) in doc {
            let kind = Kind::of(v);
            match kinds.get_mut(k.as_str()) {
                Some(known) => *known = known.join(kind),
                None => {
                    names.push(k.as_str());
                    kinds.insert(k.as_str(), kind);
                }
            }
        }
    }
    let mut fields = Vec::with_capacity(names.len());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(names.len());
    for name in names {
        let kind = kinds.get(name).copied().unwrap_or(Kind::Json);
        fields.push(kind.field(name));
        columns.push(column(docs, name, kind));
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new_with_options(
        Arc::clone(&schema),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(docs.len())),
    )?;
    Ok((schema, batch))
}

/// Column `name` of kind `kind` over `docs`.
fn column(docs: &[Document], name: &str, kind: Kind) -> ArrayRef {
    let values = docs.iter().map(|d| d.get(name));
    match kind {
        Kind::Int32 => {
            let mut b = Int32Builder::with_capacity(docs.len());
            for v in values {
                b.append_option(match v {
                    Some(Bson::Int32(n)) => Some(*n),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        Kind::Int64 => {
            let mut b = Int64Builder::with_capacity(docs.len());
            for v in values {
                b.append_option(match v {
                    Some(Bson::Int32(n)) => Some(i64::from(*n)),
                    Some(Bson::Int64(n)) => Some(*n),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        Kind::Float64 => {
            let mut b = Float64Builder::with_capacity(docs.len());
            for v in values {
                b.append_option(match v {
                    Some(Bson::Int32(n)) => Some(f64::from(*n)),
                    #[expect(clippy::cast_precision_loss, reason = "as MongoDB's $toDouble")]
                    Some(Bson::Int64(n)) => Some(*n as f64),
                    Some(Bson::Double(f)) => Some(*f),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        Kind::Boolean => {
            let mut b = BooleanBuilder::with_capacity(docs.len());
            for v in values {
                b.append_option(match v {
                    Some(Bson::Boolean(x)) => Some(*x),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        Kind::Date => {
            let mut b = TimestampMillisecondBuilder::with_capacity(docs.len());
            for v in values {
                b.append_option(match v {
                    Some(Bson::DateTime(d)) => Some(d.timestamp_millis()),
                    _ => None,
                });
            }
            Arc::new(b.finish().with_timezone("UTC"))
        }
        Kind::Utf8 | Kind::Null => {
            let mut b = StringBuilder::with_capacity(docs.len(), 0);
            for v in values {
                b.append_option(match v {
                    Some(Bson::String(s)) => Some(s.as_str()),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        Kind::Json => {
            let mut b = StringBuilder::with_capacity(docs.len(), 0);
            for v in values {
                match v {
                    None | Some(Bson::Null | Bson::Undefined) => b.append_null(),
                    Some(v) => b.append_value(v.clone().into_relaxed_extjson().to_string()),
                }
            }
            Arc::new(b.finish())
        }
    }
}
