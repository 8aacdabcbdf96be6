//! The Arrow schema of a stream of measurements, found in a first pass over them: for each
//! field (at every depth) the one BSON type its values have, whether it is ever null or
//! missing, and the widenings a mixed numeric field needs (see [`super::parquet`] for the
//! mapping).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use bson::{Bson, Document};

/// Field metadata key naming the BSON type of a column whose Arrow type alone does not say
/// it: `objectId`, `decimal128`, `timestamp`, `binary:N` (a binary subtype other than 0).
pub(crate) const BSON_TYPE_KEY: &str = "tscoll.bson_type";
/// Field metadata key present (value `null`) when a null in the column is a BSON null;
/// without it a null is a missing field.
pub(crate) const NULLS_KEY: &str = "tscoll.nulls";

/// The type of a field's (non-null) values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Double,
    Int32,
    Int64,
    Bool,
    String,
    Date,
    ObjectId,
    /// Binary data of one subtype.
    Binary(u8),
    Decimal128,
    /// A BSON timestamp: a struct of `t` (seconds) and `i` (increment).
    Timestamp,
    Document(DocShape),
    /// An array; its elements' shape.
    Array(Box<Shape>),
}

impl Kind {
    /// The BSON type's name, as `$type` spells it.
    fn name(&self) -> &'static str {
        match self {
            Kind::Double => "double",
            Kind::Int32 => "int",
            Kind::Int64 => "long",
            Kind::Bool => "bool",
            Kind::String => "string",
            Kind::Date => "date",
            Kind::ObjectId => "objectId",
            Kind::Binary(_) => "binData",
            Kind::Decimal128 => "decimal",
            Kind::Timestamp => "timestamp",
            Kind::Document(_) => "object",
            Kind::Array(_) => "array",
        }
    }
}

/// What one field's values look like.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Shape {
    /// The type of its non-null values (`None`: only nulls seen).
    pub(crate) kind: Option<Kind>,
    /// Documents (or array elements) holding the field, null included.
    pub(crate) present: u64,
    /// Whether a value was null.
    pub(crate) nulls: bool,
    /// Numeric types widened into `kind` (e.g. `int` into `double`), for the notes.
    pub(crate) widened: Vec<&'static str>,
}

/// The fields of a document level, in the order first seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DocShape {
    /// Documents seen at this level.
    pub(crate) count: u64,
    pub(crate) names: Vec<String>,
    pub(crate) shapes: Vec<Shape>,
    index: HashMap<String, usize>,
}

impl DocShape {
    /// Adds one document; `path` is its place (empty at the top).
    ///
    /// # Errors
    /// A value of a type Parquet cannot carry, a field holding values of two types that do
    /// not widen, a binary field of two subtypes.
    pub(crate) fn add(&mut self, doc: &Document, path: &str) -> Result<(), String> {
        self.count += 1;
        for (name, value) in doc {
            let i = match self.index.get(name) {
                Some(&i) => i,
                None => {
                    self.index.insert(name.clone(), self.names.len());
                    self.names.push(name.clone());
                    self.shapes.push(Shape::default());
                    self.names.len() - 1
                }
            };
            self.shapes[i].add(value, &join(path, name))?;
        }
        Ok(())
    }

    /// The Arrow fields of this level.
    ///
    /// # Errors
    /// A document field whose documents were all empty (Parquet has no empty group).
    pub(crate) fn fields(&self, path: &str) -> Result<Fields, String> {
        self.names
            .iter()
            .zip(&self.shapes)
            .map(|(name, shape)| {
                let field_path = join(path, name);
                let missing = shape.present < self.count;
                shape.field(name, &field_path, missing)
            })
            .collect()
    }

    /// The Arrow schema of documents of this shape.
    ///
    /// # Errors
    /// As [`DocShape::fields`].
    pub(crate) fn schema(&self) -> Result<Schema, String> {
        Ok(Schema::new(self.fields("")?))
    }

    /// Notes on what the mapping changes, as `(change, field path)`: widened numeric fields,
    /// and fields both null and missing, whose nulls are written as missing values.
    pub(crate) fn notes(&self, path: &str, out: &mut Vec<(String, String)>) {
        for (name, shape) in self.names.iter().zip(&self.shapes) {
            let field_path = join(path, name);
            shape.notes(&field_path, out);
            if shape.nulls && shape.present < self.count {
                out.push((
                    "nulls as missing values (the field is missing elsewhere)".to_owned(),
                    field_path,
                ));
            }
        }
    }
}

/// The notes of [`DocShape::notes`] as one line, the fields of each change together:
/// `int values as double: 'a', 'b'; ...`; `None` without notes.
pub(crate) fn notes_line(notes: &[(String, String)]) -> Option<String> {
    let mut changes: Vec<(&str, Vec<&str>)> = Vec::new();
    for (change, path) in notes {
        match changes.iter_mut().find(|(c, _)| *c == change.as_str()) {
            Some((_, paths)) => paths.push(path.as_str()),
            None => changes.push((change.as_str(), vec![path.as_str()])),
        }
    }
    (!changes.is_empty()).then(|| {
        let parts: Vec<String> = changes
            .iter()
            .map(|(change, paths)| format!("{change}: '{}'", paths.join("', '")))
            .collect();
        format!("written to Parquet with {}", parts.join("; "))
    })
}

/// The dotted path of field `name` inside `path` (empty at the top).
pub(crate) fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

impl Shape {
    /// Adds one value of the field at `path`.
    ///
    /// # Errors
    /// As [`DocShape::add`].
    pub(crate) fn add(&mut self, value: &Bson, path: &str) -> Result<(), String> {
        self.present += 1;
        let kind = match value {
            Bson::Null => {
                self.nulls = true;
                return Ok(());
            }
            Bson::Double(_) => Kind::Double,
            Bson::Int32(_) => Kind::Int32,
            Bson::Int64(_) => Kind::Int64,
            Bson::Boolean(_) => Kind::Bool,
            Bson::String(_) => Kind::String,
            Bson::DateTime(_) => Kind::Date,
            Bson::ObjectId(_) => Kind::ObjectId,
            Bson::Binary(b) => Kind::Binary(u8::from(b.subtype)),
            Bson::Decimal128(_) => Kind::Decimal128,
            Bson::Timestamp(_) => Kind::Timestamp,
            Bson::Document(d) => {
                if !matches!(self.kind, Some(Kind::Document(_)) | None) {
                    return Err(self.mixed(path, "object"));
                }
                let Kind::Document(shape) = self
                    .kind
                    .get_or_insert_with(|| Kind::Document(DocShape::default()))
                else {
                    unreachable!("checked above")
                };
                return shape.add(d, path);
            }
            Bson::Array(items) => {
                if !matches!(self.kind, Some(Kind::Array(_)) | None) {
                    return Err(self.mixed(path, "array"));
                }
                let Kind::Array(element) =
                    self.kind.get_or_insert_with(|| Kind::Array(Box::default()))
                else {
                    unreachable!("checked above")
                };
                let element_path = format!("{path}[]");
                return items.iter().try_for_each(|v| element.add(v, &element_path));
            }
            other => {
                return Err(format!(
                    "field '{path}' holds a {:?} value, a BSON type Parquet has no type for \
                     (leave the field out with --projection)",
                    other.element_type()
                ));
            }
        };
        self.merge(kind, path)
    }

    /// Merges a scalar kind into the field's kind, widening numbers.
    fn merge(&mut self, kind: Kind, path: &str) -> Result<(), String> {
        let Some(current) = &self.kind else {
            self.kind = Some(kind);
            return Ok(());
        };
        if *current == kind {
            return Ok(());
        }
        let widened = match (current, &kind) {
            (Kind::Int64, Kind::Int32) | (Kind::Double, Kind::Int32 | Kind::Int64) => kind.name(),
            (Kind::Int32, Kind::Int64) | (Kind::Int32 | Kind::Int64, Kind::Double) => {
                let old = current.name();
                self.kind = Some(kind);
                old
            }
            _ => return Err(self.mixed(path, kind.name())),
        };
        if !self.widened.contains(&widened) {
            self.widened.push(widened);
        }
        Ok(())
    }

    fn mixed(&self, path: &str, other: &str) -> String {
        format!(
            "field '{path}' holds both {} and {other} values; a Parquet column has one type \
             (leave the field out with --projection)",
            self.kind.as_ref().map_or("null", Kind::name)
        )
    }

    /// The Arrow data type of the field's values and its metadata.
    fn data_type(&self, path: &str) -> Result<(DataType, Option<String>), String> {
        let Some(kind) = &self.kind else {
            return Ok((DataType::Null, None));
        };
        Ok(match kind {
            Kind::Double => (DataType::Float64, None),
            Kind::Int32 => (DataType::Int32, None),
            Kind::Int64 => (DataType::Int64, None),
            Kind::Bool => (DataType::Boolean, None),
            Kind::String => (DataType::Utf8, None),
            Kind::Date => (
                DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                None,
            ),
            Kind::ObjectId => (DataType::FixedSizeBinary(12), Some("objectId".into())),
            Kind::Binary(0) => (DataType::Binary, None),
            Kind::Binary(subtype) => (DataType::Binary, Some(format!("binary:{subtype}"))),
            Kind::Decimal128 => (DataType::FixedSizeBinary(16), Some("decimal128".into())),
            Kind::Timestamp => (
                DataType::Struct(Fields::from(vec![
                    Field::new("t", DataType::UInt32, false),
                    Field::new("i", DataType::UInt32, false),
                ])),
                Some("timestamp".into()),
            ),
            Kind::Document(shape) => {
                if shape.names.is_empty() {
                    return Err(format!(
                        "field '{path}' holds only empty documents, which Parquet cannot \
                         store (leave the field out with --projection)"
                    ));
                }
                (DataType::Struct(shape.fields(path)?), None)
            }
            Kind::Array(element) => {
                let item = element.field("item", &format!("{path}[]"), false)?;
                (DataType::List(Arc::new(item)), None)
            }
        })
    }

    /// The Arrow field `name` of this shape; `missing`: some documents lack it.
    fn field(&self, name: &str, path: &str, missing: bool) -> Result<Field, String> {
        let (data_type, bson_type) = self.data_type(path)?;
        let mut metadata = HashMap::new();
        if let Some(t) = bson_type {
            metadata.insert(BSON_TYPE_KEY.to_owned(), t);
        }
        // A null is a BSON null only when no document lacks the field (array elements are
        // never missing).
        if self.nulls && !missing {
            metadata.insert(NULLS_KEY.to_owned(), "null".to_owned());
        }
        Ok(Field::new(name, data_type, true).with_metadata(metadata))
    }

    /// Notes on the field at `path` and the fields inside it: numeric widenings (and, in
    /// documents, nulls written as missing values).
    fn notes(&self, path: &str, out: &mut Vec<(String, String)>) {
        if !self.widened.is_empty() {
            out.push((
                format!(
                    "{} values as {}",
                    self.widened.join(" and "),
                    self.kind.as_ref().map_or("?", Kind::name)
                ),
                path.to_owned(),
            ));
        }
        match &self.kind {
            Some(Kind::Document(shape)) => shape.notes(path, out),
            Some(Kind::Array(element)) => element.notes(&format!("{path}[]"), out),
            _ => {}
        }
    }
}
