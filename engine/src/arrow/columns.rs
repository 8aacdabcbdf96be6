//! Which columns of a record batch are the time and meta fields when they are not named as
//! the collection's fields ([`RecordBatchOptions`]), and the batch reshaped accordingly: the
//! time column renamed, flat columns gathered into one struct column, the meta document. No
//! value is copied.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Schema};

use crate::CollectionSpec;
use crate::error::{Error, ErrorCode, Result};

/// How the columns of a record batch map to a collection's time and meta fields
/// ([`crate::Collection::insert_record_batch_with`]). The default maps nothing: the columns
/// are named as the collection's fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordBatchOptions {
    /// The column holding the time field, when it is named otherwise (stored under the
    /// collection's time field name).
    pub time_column: Option<String>,
    /// Flat columns whose values make the meta document, one field per column in this
    /// order, named as the column (a column named `<metaField>.<name>` gives field `name`).
    /// A null leaves its field out; a row whose columns are all null has the empty document
    /// as its meta value. Empty: the column named as the meta field, if any, is the meta.
    pub meta_columns: Vec<String>,
}

impl RecordBatchOptions {
    /// `batch` with its columns mapped for a collection of `spec`: the time column renamed
    /// to the time field, the meta columns gathered into a struct column named as the meta
    /// field, placed where the first of them was; `batch` itself when the options map
    /// nothing. No value is copied. (What
    /// [`crate::Collection::insert_record_batch_with`] inserts; applied to an empty batch
    /// of a schema, it checks the options against the schema.)
    ///
    /// # Errors
    /// `BadValue`: a named column is not in the batch or is named twice, the time column
    /// is given beside a column already named as the time field, or meta columns are given
    /// for a collection without a meta field or beside a column already named as the meta
    /// field.
    pub fn apply(&self, batch: &RecordBatch, spec: &CollectionSpec) -> Result<RecordBatch> {
        let time_field = spec.time_field.as_str();
        let meta_field = spec.meta_field.as_deref();
        let schema = batch.schema_ref();
        let position = |name: &str, option: &str| {
            schema
                .index_of(name)
                .map_err(|_| bad_value(format!("{option}: no column '{name}' in the batch")))
        };
        let time = self
            .time_column
            .as_deref()
            .filter(|c| *c != time_field)
            .map(|c| position(c, "time_column"))
            .transpose()?;
        if self.meta_columns.is_empty() && time.is_none() {
            return Ok(batch.clone());
        }
        if let Some(t) = time
            && schema.index_of(time_field).is_ok()
        {
            return Err(bad_value(format!(
                "time_column: the batch has a column '{time_field}' (the time field) already, \
                 beside '{}'",
                schema.field(t).name()
            )));
        }
        let meta = if self.meta_columns.is_empty() {
            None
        } else {
            let field = meta_field.ok_or_else(|| {
                bad_value("meta_columns given, but the collection has no meta field".to_owned())
            })?;
            if !self.meta_columns.iter().any(|c| c == field) && schema.index_of(field).is_ok() {
                return Err(bad_value(format!(
                    "meta_columns: the batch has a column '{field}' (the meta field) already"
                )));
            }
            let prefix = format!("{field}.");
            let mut columns: Vec<(usize, String)> = Vec::with_capacity(self.meta_columns.len());
            for name in &self.meta_columns {
                let i = position(name, "meta_columns")?;
                if columns.iter().any(|(j, _)| *j == i) || Some(i) == time {
                    return Err(bad_value(format!(
                        "meta_columns: column '{name}' named twice"
                    )));
                }
                let key = name.strip_prefix(&prefix).filter(|k| !k.is_empty());
                columns.push((i, key.unwrap_or(name).to_owned()));
            }
            Some((field, columns))
        };
        let first_meta = meta
            .as_ref()
            .and_then(|(_, c)| c.iter().map(|(i, _)| *i).min());
        let mut fields: Vec<Field> = Vec::with_capacity(schema.fields().len());
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        for (i, field) in schema.fields().iter().enumerate() {
            if let Some((name, columns)) = &meta {
                if Some(i) == first_meta {
                    let children: Vec<Field> = columns
                        .iter()
                        .map(|(j, key)| schema.field(*j).clone().with_name(key.clone()))
                        .collect();
                    let children = arrow_schema::Fields::from(children);
                    let values = columns
                        .iter()
                        .map(|(j, _)| Arc::clone(batch.column(*j)))
                        .collect();
                    let struct_array = StructArray::try_new(children.clone(), values, None)
                        .map_err(|e| bad_value(format!("meta_columns: {e}")))?;
                    fields.push(Field::new(*name, DataType::Struct(children), true));
                    arrays.push(Arc::new(struct_array));
                }
                if columns.iter().any(|(j, _)| *j == i) {
                    continue;
                }
            }
            let field = if Some(i) == time {
                field.as_ref().clone().with_name(time_field)
            } else {
                field.as_ref().clone()
            };
            fields.push(field);
            arrays.push(Arc::clone(batch.column(i)));
        }
        let schema = Schema::new_with_metadata(fields, schema.metadata().clone());
        RecordBatch::try_new(Arc::new(schema), arrays).map_err(|e| bad_value(e.to_string()))
    }
}

fn bad_value(message: String) -> Error {
    Error::Rejected {
        code: ErrorCode::BadValue,
        message,
    }
}
