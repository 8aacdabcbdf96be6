//! The Arrow type of a result column: the BSON types a field holds, mapped to one Arrow type
//! (docs/arrow.md lists the mapping of every BSON type and the widenings).
//!
//! The kinds form a small lattice: a column's kind is the join of the kinds of its values
//! ([`Kind::join`]): int32 with int64 is `Int64`, an integer with a double is `Float64`,
//! null with anything is that thing, and any other mix is `Json` (each value as its relaxed
//! Extended JSON text). A result's kinds come from control records before any row is
//! decoded (`control.min`/`control.max` bound the type classes a field holds, the bucket
//! sums tell int32, int64 and double apart), so a schema is known before the first batch.

use std::collections::HashMap;

use arrow_schema::{DataType, Field, TimeUnit};
use tscoll_catalog::FieldSums;
use tscoll_codec::tag;

/// Field metadata key marking a `Utf8` column whose values are relaxed Extended JSON texts
/// (value `"json"`); a `Utf8` column without it holds the strings as they are.
pub const ENCODING_KEY: &str = "tscoll.encoding";

/// The time zone of every timestamp column (`Timestamp(Millisecond, "UTC")`).
pub(crate) const UTC: &str = "UTC";

/// What one result column holds, and how each BSON value becomes an Arrow value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// Only nulls (null, undefined, missing): `Null`.
    Null,
    /// int32: `Int32`.
    Int32,
    /// int32 and int64: `Int64`.
    Int64,
    /// Numbers with a double or a Decimal128 among them: `Float64` (int64 beyond 2^53 and
    /// Decimal128 rounded to the nearest double).
    Float64,
    /// Booleans: `Boolean`.
    Boolean,
    /// Dates: `Timestamp(Millisecond, "UTC")`.
    Date,
    /// BSON timestamps: `UInt64` (seconds in the high 32 bits, increment in the low ones).
    Timestamp,
    /// Strings and symbols: `Utf8`.
    String,
    /// Binary data: `Binary` (the subtype is not kept).
    Binary,
    /// ObjectIds: `FixedSizeBinary(12)`.
    ObjectId,
    /// Anything else (documents, arrays, regular expressions, code, MinKey, MaxKey) and any
    /// mix of type classes: `Utf8` of relaxed Extended JSON, marked by [`ENCODING_KEY`].
    Json,
}

/// The class of a BSON type code in BSON's canonical order (SPEC §10: types compare by
/// class first), and the kind of its values when alone.
fn class(code: u8) -> (u8, Kind) {
    match code {
        tag::MISSING | tag::NULL | tag::UNDEFINED => (1, Kind::Null),
        tag::INT32 => (2, Kind::Int32),
        tag::INT64 => (2, Kind::Int64),
        tag::DOUBLE | tag::DECIMAL128 => (2, Kind::Float64),
        tag::STRING | tag::SYMBOL => (3, Kind::String),
        tag::BINARY => (4, Kind::Binary),
        tag::OBJECT_ID => (5, Kind::ObjectId),
        tag::BOOLEAN => (6, Kind::Boolean),
        tag::DATETIME => (7, Kind::Date),
        tag::TIMESTAMP => (8, Kind::Timestamp),
        // Documents, arrays, MinKey, MaxKey, regular expressions, code, pointers.
        other => (100u8.saturating_add(other), Kind::Json),
    }
}

impl Kind {
    /// The kind of a value of BSON type `code` ([`tag`]).
    pub(crate) fn of_type(code: u8) -> Kind {
        class(code).1
    }

    /// The kind of the values of one bucket's field, from the types of `control.min.<f>`
    /// and `control.max.<f>` (every value of the field lies between them in BSON order, so
    /// both in one class means every value is in it) and the field's sums (`None`: unknown,
    /// e.g. a Decimal128 among the values), which tell the numbers apart.
    pub(crate) fn of_control(min_type: u8, max_type: u8, sums: Option<&FieldSums>) -> Kind {
        let (lo, lo_kind) = class(min_type);
        let (hi, hi_kind) = class(max_type);
        let numbers = sums.map(|s| s.count);
        let (class, kind) = match (lo_kind, hi_kind) {
            _ if lo == hi => (lo, lo_kind.join(hi_kind)),
            // Nulls sort before every other class but MinKey, then numbers, then strings:
            // between a null and a number there are only nulls and numbers, between a null
            // and a string also numbers, which the sums count.
            (Kind::Null, _) if hi == 2 => (hi, hi_kind),
            (Kind::Null, Kind::String) if numbers == Some(0) => (hi, hi_kind),
            _ => return Kind::Json,
        };
        if class != 2 {
            return kind;
        }
        match sums {
            Some(s) if s.doubles => Kind::Float64,
            Some(s) if s.longs => Kind::Int64,
            Some(_) => Kind::Int32,
            None => Kind::Float64,
        }
    }

    /// The kind of a column holding values of both kinds.
    #[must_use]
    pub(crate) fn join(self, other: Kind) -> Kind {
        use Kind::{Float64, Int32, Int64, Json, Null};
        match (self, other) {
            (a, b) if a == b => a,
            (Null, k) | (k, Null) => k,
            (Int32 | Int64, Int32 | Int64) => Int64,
            (Int32 | Int64 | Float64, Int32 | Int64 | Float64) => Float64,
            _ => Json,
        }
    }

    /// The Arrow type of the column.
    pub(crate) fn data_type(self) -> DataType {
        match self {
            Kind::Null => DataType::Null,
            Kind::Int32 => DataType::Int32,
            Kind::Int64 => DataType::Int64,
            Kind::Float64 => DataType::Float64,
            Kind::Boolean => DataType::Boolean,
            Kind::Date => DataType::Timestamp(TimeUnit::Millisecond, Some(UTC.into())),
            Kind::Timestamp => DataType::UInt64,
            Kind::String | Kind::Json => DataType::Utf8,
            Kind::Binary => DataType::Binary,
            Kind::ObjectId => DataType::FixedSizeBinary(12),
        }
    }

    /// A nullable Arrow field of this kind named `name`, marked where its Arrow type alone
    /// does not say what its values are (JSON texts, ObjectIds, BSON timestamps), so that
    /// `insert_record_batch` reads them back as the same BSON values.
    pub(crate) fn field(self, name: &str) -> Field {
        let field = Field::new(name, self.data_type(), true);
        let mark = |key: &str, value: &str| HashMap::from([(key.to_owned(), value.to_owned())]);
        match self {
            Kind::Json => field.with_metadata(mark(ENCODING_KEY, "json")),
            Kind::ObjectId => field.with_metadata(mark(crate::arrow::BSON_TYPE_KEY, "objectId")),
            Kind::Timestamp => field.with_metadata(mark(crate::arrow::BSON_TYPE_KEY, "timestamp")),
            _ => field,
        }
    }

    /// The kind an Arrow field of a schema holds (the inverse of [`Kind::field`]); `None`
    /// for a type no kind maps to.
    pub(crate) fn of_field(field: &Field) -> Option<Kind> {
        Some(match field.data_type() {
            DataType::Null => Kind::Null,
            DataType::Int32 => Kind::Int32,
            DataType::Int64 => Kind::Int64,
            DataType::Float64 => Kind::Float64,
            DataType::Boolean => Kind::Boolean,
            DataType::Timestamp(TimeUnit::Millisecond, _) => Kind::Date,
            DataType::UInt64 => Kind::Timestamp,
            DataType::Utf8
                if field.metadata().get(ENCODING_KEY).map(String::as_str) == Some("json") =>
            {
                Kind::Json
            }
            DataType::Utf8 => Kind::String,
            DataType::Binary => Kind::Binary,
            DataType::FixedSizeBinary(12) => Kind::ObjectId,
            _ => return None,
        })
    }

    /// Whether a value of type `code` goes into a column of this kind (a null always does).
    pub(crate) fn accepts(self, code: u8) -> bool {
        let k = Kind::of_type(code);
        k == Kind::Null || self == Kind::Json || self.join(k) == self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(longs: bool, doubles: bool) -> FieldSums {
        FieldSums {
            longs,
            doubles,
            ..FieldSums::default()
        }
    }

    #[test]
    fn control_bounds_give_the_class_and_sums_the_number_type() {
        let s = sums(false, false);
        assert_eq!(
            Kind::of_control(tag::INT32, tag::INT32, Some(&s)),
            Kind::Int32
        );
        assert_eq!(
            Kind::of_control(tag::INT32, tag::INT32, Some(&sums(true, false))),
            Kind::Int64
        );
        assert_eq!(
            Kind::of_control(tag::INT32, tag::INT64, Some(&sums(true, true))),
            Kind::Float64
        );
        // A Decimal128 among the numbers: no sums.
        assert_eq!(
            Kind::of_control(tag::INT32, tag::INT32, None),
            Kind::Float64
        );
        assert_eq!(Kind::of_control(tag::NULL, tag::STRING, None), Kind::Json);
        // Strings and nulls: the sums count no number between them.
        assert_eq!(
            Kind::of_control(tag::NULL, tag::STRING, Some(&s)),
            Kind::String
        );
        let counted = FieldSums { count: 2, ..s };
        assert_eq!(
            Kind::of_control(tag::NULL, tag::STRING, Some(&counted)),
            Kind::Json
        );
        assert_eq!(Kind::of_control(tag::NULL, tag::DATETIME, None), Kind::Json);
        assert_eq!(
            Kind::of_control(tag::NULL, tag::DOUBLE, Some(&sums(false, true))),
            Kind::Float64
        );
        assert_eq!(Kind::of_control(tag::NULL, tag::NULL, None), Kind::Null);
        assert_eq!(
            Kind::of_control(tag::STRING, tag::SYMBOL, None),
            Kind::String
        );
        assert_eq!(
            Kind::of_control(tag::MIN_KEY, tag::INT32, Some(&s)),
            Kind::Json
        );
        assert_eq!(
            Kind::of_control(tag::INT32, tag::BOOLEAN, Some(&s)),
            Kind::Json
        );
        assert_eq!(
            Kind::of_control(tag::DOCUMENT, tag::DOCUMENT, None),
            Kind::Json
        );
        assert_eq!(
            Kind::of_control(tag::DATETIME, tag::DATETIME, None),
            Kind::Date
        );
    }

    #[test]
    fn joins_widen_numbers_and_fall_back_to_json() {
        assert_eq!(Kind::Int32.join(Kind::Int64), Kind::Int64);
        assert_eq!(Kind::Int64.join(Kind::Float64), Kind::Float64);
        assert_eq!(Kind::Null.join(Kind::String), Kind::String);
        assert_eq!(Kind::String.join(Kind::Int32), Kind::Json);
        assert_eq!(Kind::Date.join(Kind::Timestamp), Kind::Json);
        assert!(Kind::Float64.accepts(tag::INT64));
        assert!(!Kind::Int32.accepts(tag::INT64));
        assert!(Kind::Int32.accepts(tag::NULL));
        assert!(Kind::Json.accepts(tag::ARRAY));
        for k in [
            Kind::Null,
            Kind::Int32,
            Kind::Int64,
            Kind::Float64,
            Kind::Boolean,
            Kind::Date,
            Kind::Timestamp,
            Kind::String,
            Kind::Binary,
            Kind::ObjectId,
            Kind::Json,
        ] {
            assert_eq!(Kind::of_field(&k.field("f")), Some(k), "{k:?}");
        }
    }
}
