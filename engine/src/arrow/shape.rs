//! The Arrow schema of a list of documents, found in a first pass over them
//! ([`DocumentShape`]): for each field, at every depth, the one BSON type its values have,
//! whether it is ever null or missing, and the widenings a field of numbers needs; a field
//! no Arrow type holds as it is becomes a JSON column (docs/arrow.md, "Documents → Arrow").

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use bson::{Bson, Document};

use super::{BSON_TYPE_KEY, ENCODING_KEY, NULLS_KEY};

/// The type of a field's non-null values.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
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
    /// Values no other kind holds (a regular expression, JavaScript, a symbol, a
    /// DBPointer, undefined, MinKey, MaxKey), values of two kinds that do not widen into
    /// one, or documents that are all empty: each value's relaxed Extended JSON text.
    Json,
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
            Kind::Json => "other",
        }
    }
}

/// What one field's values look like.
#[derive(Debug, Clone, Default, PartialEq)]
struct Shape {
    /// The type of its non-null values (`None`: only nulls seen).
    kind: Option<Kind>,
    /// Documents (or array elements) holding the field, null included.
    present: u64,
    /// Whether a value was null.
    nulls: bool,
    /// Numeric types widened into `kind` (e.g. `int` into `double`), for the notes.
    widened: Vec<&'static str>,
    /// The types of the values that made the field a JSON column, for the notes.
    mixed: Vec<&'static str>,
}

/// The fields of one document level, in the order first seen.
#[derive(Debug, Clone, Default, PartialEq)]
struct DocShape {
    /// Documents seen at this level.
    count: u64,
    names: Vec<String>,
    shapes: Vec<Shape>,
    index: HashMap<String, usize>,
}

/// The first pass of documents → Arrow: the schema that holds every document
/// [`DocumentShape::add`] was given, each field typed from the BSON types of its values
/// (docs/arrow.md, "Documents → Arrow"). [`super::BatchBuilder`] then fills batches of it;
/// [`super::documents_to_batches`] does both.
///
/// ```
/// use bson::doc;
/// use tscoll_engine::arrow::DocumentShape;
/// use tscoll_engine::arrow::schema::DataType;
///
/// let mut shape = DocumentShape::new();
/// shape.add(&doc! { "v": 1, "s": "a" });
/// shape.add(&doc! { "v": 2.5, "s": 3 });
/// let schema = shape.schema();
/// assert_eq!(schema.field(0).data_type(), &DataType::Float64);
/// assert_eq!(schema.field(1).metadata()["tscoll.encoding"], "json");
/// assert_eq!(shape.notes(), ["field 'v': int widened to double", "field 's': string and int as JSON text"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct DocumentShape {
    top: DocShape,
}

impl DocumentShape {
    /// The shape of no document: its schema has no field.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one document's fields (at every depth) to the shape.
    pub fn add(&mut self, doc: &Document) {
        self.top.add(doc);
    }

    /// Documents added.
    #[must_use]
    pub fn documents(&self) -> u64 {
        self.top.count
    }

    /// The schema of the documents added: one nullable field per top-level field, in the
    /// order first seen, of the Arrow type docs/arrow.md maps its values to, with the
    /// `tscoll.bson_type`, `tscoll.nulls` and `tscoll.encoding` marks.
    #[must_use]
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(self.top.fields()))
    }

    /// What the schema changes, one note per field (dotted path, `[]` for array elements)
    /// in schema order: `field 'v': int widened to double`, `field 'x': string and int as
    /// JSON text`, `field 'n': nulls written as missing values (the field is missing
    /// elsewhere)`.
    #[must_use]
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.top.notes("", &mut out);
        out
    }
}

impl DocShape {
    /// Adds one document.
    fn add(&mut self, doc: &Document) {
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
            self.shapes[i].add(value);
        }
    }

    /// The Arrow fields of this level.
    fn fields(&self) -> Fields {
        self.names
            .iter()
            .zip(&self.shapes)
            .map(|(name, shape)| shape.field(name, shape.present < self.count))
            .collect()
    }

    /// Notes on what the mapping changes (see [`DocumentShape::notes`]).
    fn notes(&self, path: &str, out: &mut Vec<String>) {
        for (name, shape) in self.names.iter().zip(&self.shapes) {
            let field_path = join(path, name);
            shape.notes(&field_path, out);
            if shape.nulls && shape.present < self.count {
                out.push(format!(
                    "field '{field_path}': nulls written as missing values (the field is \
                     missing elsewhere)"
                ));
            }
        }
    }
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
    /// Adds one value of the field.
    fn add(&mut self, value: &Bson) {
        self.present += 1;
        let kind = match value {
            Bson::Null => {
                self.nulls = true;
                return;
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
                match &mut self.kind {
                    None => {
                        let mut shape = DocShape::default();
                        shape.add(d);
                        self.kind = Some(Kind::Document(shape));
                    }
                    Some(Kind::Document(shape)) => shape.add(d),
                    Some(Kind::Json) => self.also("object"),
                    Some(_) => self.make_json("object"),
                }
                return;
            }
            Bson::Array(items) => {
                match &mut self.kind {
                    None => {
                        let mut element = Shape::default();
                        items.iter().for_each(|v| element.add(v));
                        self.kind = Some(Kind::Array(Box::new(element)));
                    }
                    Some(Kind::Array(element)) => items.iter().for_each(|v| element.add(v)),
                    Some(Kind::Json) => self.also("array"),
                    Some(_) => self.make_json("array"),
                }
                return;
            }
            // Regular expressions, JavaScript, symbols, DBPointers, undefined, MinKey,
            // MaxKey: no Arrow type of their own.
            other => {
                match self.kind {
                    None => {
                        self.kind = Some(Kind::Json);
                        self.mixed.push(type_name(other));
                    }
                    Some(Kind::Json) => self.also(type_name(other)),
                    Some(_) => self.make_json(type_name(other)),
                }
                return;
            }
        };
        self.merge(kind);
    }

    /// Merges a scalar kind into the field's kind, widening numbers.
    fn merge(&mut self, kind: Kind) {
        let Some(current) = &self.kind else {
            self.kind = Some(kind);
            return;
        };
        if *current == Kind::Json {
            return self.also(kind.name());
        }
        if *current == kind {
            return;
        }
        let widened = match (current, &kind) {
            (Kind::Int64, Kind::Int32) | (Kind::Double, Kind::Int32 | Kind::Int64) => kind.name(),
            (Kind::Int32, Kind::Int64) | (Kind::Int32 | Kind::Int64, Kind::Double) => {
                let old = current.name();
                self.kind = Some(kind);
                old
            }
            _ => return self.make_json(kind.name()),
        };
        if !self.widened.contains(&widened) {
            self.widened.push(widened);
        }
    }

    /// Notes that the JSON column also holds values of type `name`.
    fn also(&mut self, name: &'static str) {
        if !self.mixed.contains(&name) {
            self.mixed.push(name);
        }
    }

    /// Makes the field a JSON column: it holds values of its kind and of type `other`.
    fn make_json(&mut self, other: &'static str) {
        let current = self.kind.as_ref().map_or("null", Kind::name);
        self.mixed.push(current);
        self.mixed.append(&mut self.widened);
        if !self.mixed.contains(&other) {
            self.mixed.push(other);
        }
        self.kind = Some(Kind::Json);
    }

    /// The Arrow data type of the field's values and its `tscoll.bson_type` mark.
    fn data_type(&self) -> (DataType, Option<String>) {
        let Some(kind) = &self.kind else {
            return (DataType::Null, None);
        };
        match kind {
            Kind::Double => (DataType::Float64, None),
            Kind::Int32 => (DataType::Int32, None),
            Kind::Int64 => (DataType::Int64, None),
            Kind::Bool => (DataType::Boolean, None),
            Kind::String | Kind::Json => (DataType::Utf8, None),
            Kind::Date => (
                DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                None,
            ),
            Kind::ObjectId => (DataType::FixedSizeBinary(12), Some("objectId".into())),
            Kind::Binary(0) => (DataType::Binary, None),
            Kind::Binary(subtype) => (DataType::Binary, Some(format!("binary:{subtype}"))),
            Kind::Decimal128 => (DataType::FixedSizeBinary(16), Some("decimal128".into())),
            Kind::Timestamp => (timestamp_type(), Some("timestamp".into())),
            // A document field whose documents are all empty is JSON (a struct of no
            // field cannot be stored in Parquet).
            Kind::Document(shape) => (DataType::Struct(shape.fields()), None),
            Kind::Array(element) => {
                let item = element.field("item", false);
                (DataType::List(Arc::new(item)), None)
            }
        }
    }

    /// Whether the field is a JSON column.
    fn is_json(&self) -> bool {
        match &self.kind {
            Some(Kind::Json) => true,
            Some(Kind::Document(shape)) => shape.names.is_empty(),
            _ => false,
        }
    }

    /// The Arrow field `name` of this shape; `missing`: some documents lack it.
    fn field(&self, name: &str, missing: bool) -> Field {
        let mut metadata = HashMap::new();
        let data_type = if self.is_json() {
            metadata.insert(ENCODING_KEY.to_owned(), "json".to_owned());
            DataType::Utf8
        } else {
            let (data_type, bson_type) = self.data_type();
            if let Some(t) = bson_type {
                metadata.insert(BSON_TYPE_KEY.to_owned(), t);
            }
            data_type
        };
        // A null is a BSON null only when no document lacks the field (array elements are
        // never missing).
        if self.nulls && !missing {
            metadata.insert(NULLS_KEY.to_owned(), "null".to_owned());
        }
        Field::new(name, data_type, true).with_metadata(metadata)
    }

    /// Notes on the field at `path` and the fields inside it.
    fn notes(&self, path: &str, out: &mut Vec<String>) {
        if !self.widened.is_empty() {
            out.push(format!(
                "field '{path}': {} widened to {}",
                self.widened.join(" and "),
                self.kind.as_ref().map_or("?", Kind::name)
            ));
        }
        if !self.mixed.is_empty() {
            out.push(format!(
                "field '{path}': {} as JSON text",
                self.mixed.join(" and ")
            ));
        }
        match &self.kind {
            Some(Kind::Document(shape)) if shape.names.is_empty() => {
                out.push(format!("field '{path}': empty documents as JSON text"));
            }
            Some(Kind::Document(shape)) => shape.notes(path, out),
            Some(Kind::Array(element)) => element.notes(&format!("{path}[]"), out),
            _ => {}
        }
    }
}

/// The name of the type of a value with no Arrow type of its own, as `$type` spells it.
fn type_name(value: &Bson) -> &'static str {
    match value {
        Bson::RegularExpression(_) => "regex",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::Symbol(_) => "symbol",
        Bson::DbPointer(_) => "dbPointer",
        Bson::Undefined => "undefined",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
        _ => "other",
    }
}

/// The Arrow type of a BSON timestamp: `Struct{t: UInt32, i: UInt32}`.
pub(crate) fn timestamp_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("t", DataType::UInt32, false),
        Field::new("i", DataType::UInt32, false),
    ]))
}

#[cfg(test)]
mod tests {
    use bson::doc;
    use bson::oid::ObjectId;
    use bson::spec::BinarySubtype;

    use super::*;

    fn shape(docs: &[Document]) -> DocumentShape {
        let mut s = DocumentShape::new();
        docs.iter().for_each(|d| s.add(d));
        s
    }

    fn marks(field: &Field) -> Vec<(&str, &str)> {
        let mut m: Vec<_> = field
            .metadata()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        m.sort_unstable();
        m
    }

    #[test]
    fn each_bson_type_has_its_arrow_type_and_mark() {
        let s = shape(&[doc! {
            "d": 1.5, "i": 1, "l": 2_i64, "b": true, "s": "x",
            "t": bson::DateTime::from_millis(5), "o": ObjectId::new(),
            "bin": bson::Binary { subtype: BinarySubtype::Generic, bytes: vec![1] },
            "uuid": bson::Binary { subtype: BinarySubtype::Uuid, bytes: vec![0; 16] },
            "dec": bson::Decimal128::from_bytes([0; 16]),
            "ts": bson::Timestamp { time: 1, increment: 2 },
            "doc": { "a": 1 }, "arr": [1, 2], "n": null,
        }]);
        let schema = s.schema();
        let types: Vec<(&str, DataType)> = schema
            .fields()
            .iter()
            .map(|f| (f.name().as_str(), f.data_type().clone()))
            .collect();
        let utc = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
        assert_eq!(
            types,
            [
                ("d", DataType::Float64),
                ("i", DataType::Int32),
                ("l", DataType::Int64),
                ("b", DataType::Boolean),
                ("s", DataType::Utf8),
                ("t", utc),
                ("o", DataType::FixedSizeBinary(12)),
                ("bin", DataType::Binary),
                ("uuid", DataType::Binary),
                ("dec", DataType::FixedSizeBinary(16)),
                ("ts", timestamp_type()),
                (
                    "doc",
                    DataType::Struct(Fields::from(vec![Field::new("a", DataType::Int32, true)]))
                ),
                (
                    "arr",
                    DataType::List(Arc::new(Field::new("item", DataType::Int32, true)))
                ),
                ("n", DataType::Null),
            ]
        );
        assert_eq!(marks(schema.field(6)), [(BSON_TYPE_KEY, "objectId")]);
        assert_eq!(marks(schema.field(7)), []);
        assert_eq!(marks(schema.field(8)), [(BSON_TYPE_KEY, "binary:4")]);
        assert_eq!(marks(schema.field(9)), [(BSON_TYPE_KEY, "decimal128")]);
        assert_eq!(marks(schema.field(10)), [(BSON_TYPE_KEY, "timestamp")]);
        assert_eq!(marks(schema.field(13)), [(NULLS_KEY, "null")]);
        assert!(s.notes().is_empty());
    }

    #[test]
    fn numbers_widen_with_a_note_and_other_mixes_become_json() {
        let s = shape(&[
            doc! { "v": 1, "n": 1, "m": "a", "x": null, "deep": { "k": [1, "a"] }, "e": {} },
            doc! { "v": 2.5, "n": 3_i64, "m": 1, "deep": { "k": [] }, "e": {} },
        ]);
        let schema = s.schema();
        assert_eq!(schema.field(0).data_type(), &DataType::Float64);
        assert_eq!(schema.field(1).data_type(), &DataType::Int64);
        for i in [2, 5] {
            assert_eq!(schema.field(i).data_type(), &DataType::Utf8);
            assert_eq!(marks(schema.field(i)), [(ENCODING_KEY, "json")]);
        }
        // Null in one document, missing in the other: no null mark.
        assert_eq!(marks(schema.field(3)), []);
        let DataType::Struct(deep) = schema.field(4).data_type() else {
            panic!("a struct: {schema:?}")
        };
        let DataType::List(item) = deep[0].data_type() else {
            panic!("a list: {deep:?}")
        };
        assert_eq!(marks(item), [(ENCODING_KEY, "json")]);
        assert_eq!(
            s.notes(),
            [
                "field 'v': int widened to double",
                "field 'n': int widened to long",
                "field 'm': string and int as JSON text",
                "field 'x': nulls written as missing values (the field is missing elsewhere)",
                "field 'deep.k[]': int and string as JSON text",
                "field 'e': empty documents as JSON text",
            ]
        );
    }

    #[test]
    fn a_field_turned_json_stays_json_and_names_every_type() {
        let s = shape(&[
            doc! { "a": 1 },
            doc! { "a": 2.5 },
            doc! { "a": { "x": 1 } },
            doc! { "a": [1] },
            doc! { "a": bson::Bson::MinKey },
        ]);
        assert_eq!(
            marks(s.schema().field(0)),
            [(ENCODING_KEY, "json")],
            "{:?}",
            s.schema()
        );
        assert_eq!(
            s.notes(),
            ["field 'a': double and int and object and array and minKey as JSON text"]
        );
        // A value of no Arrow type of its own, alone.
        let s = shape(&[
            doc! { "r": bson::Regex { pattern: "x".try_into().expect("pattern"), options: "".try_into().expect("options") } },
        ]);
        assert_eq!(marks(s.schema().field(0)), [(ENCODING_KEY, "json")]);
        assert_eq!(s.notes(), ["field 'r': regex as JSON text"]);
    }

    #[test]
    fn no_document_has_no_field() {
        let s = DocumentShape::new();
        assert_eq!(s.schema().fields().len(), 0);
        assert_eq!(s.documents(), 0);
    }
}
