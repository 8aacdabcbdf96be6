//! Reading a command's fields with MongoDB's type rules: numbers of any width where a
//! number is asked for, booleans from numbers, and a `TypeMismatch` naming the field.

use bson::{Bson, Document};

use super::error::CommandError;

/// The string value of `field`, required.
pub(crate) fn string<'a>(cmd: &'a Document, field: &str) -> Result<&'a str, CommandError> {
    match cmd.get(field) {
        Some(Bson::String(s)) => Ok(s),
        Some(_) => Err(CommandError::type_mismatch(field, "string")),
        None => Err(CommandError::failed_to_parse(format!(
            "BSON field '{field}' is missing but a required field"
        ))),
    }
}

/// The collection a command names in its first field (`{find: "weather"}`).
pub(crate) fn collection<'a>(cmd: &'a Document, command: &str) -> Result<&'a str, CommandError> {
    match cmd.get(command) {
        Some(Bson::String(s)) if !s.is_empty() => Ok(s),
        Some(Bson::String(_)) => Err(CommandError::invalid_namespace(format!(
            "Invalid namespace specified for {command}: the collection name is empty"
        ))),
        _ => Err(CommandError::invalid_namespace(format!(
            "collection name has invalid type {}",
            cmd.get(command).map_or("missing".into(), type_name)
        ))),
    }
}

/// The document value of `field`, if given (null counts as not given).
pub(crate) fn opt_doc<'a>(
    cmd: &'a Document,
    field: &str,
) -> Result<Option<&'a Document>, CommandError> {
    match cmd.get(field) {
        Some(Bson::Document(d)) => Ok(Some(d)),
        None | Some(Bson::Null) => Ok(None),
        Some(_) => Err(CommandError::type_mismatch(field, "object")),
    }
}

/// A boolean option: a boolean or a number (non-zero is true), default `default`.
pub(crate) fn opt_bool(cmd: &Document, field: &str, default: bool) -> Result<bool, CommandError> {
    match cmd.get(field) {
        None | Some(Bson::Null) => Ok(default),
        Some(Bson::Boolean(b)) => Ok(*b),
        Some(Bson::Int32(n)) => Ok(*n != 0),
        Some(Bson::Int64(n)) => Ok(*n != 0),
        Some(Bson::Double(x)) => Ok(*x != 0.0),
        Some(_) => Err(CommandError::type_mismatch(field, "bool")),
    }
}

/// A whole-number option: an int32, an int64 or a double with no fraction.
pub(crate) fn opt_i64(cmd: &Document, field: &str) -> Result<Option<i64>, CommandError> {
    match cmd.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(v) => number(v)
            .map(Some)
            .ok_or_else(|| CommandError::type_mismatch(field, "a whole number")),
    }
}

/// A non-negative whole number option (`skip`, `limit`, `batchSize`).
pub(crate) fn opt_count(cmd: &Document, field: &str) -> Result<Option<u64>, CommandError> {
    match opt_i64(cmd, field)? {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n as u64)),
        Some(n) => Err(CommandError::bad_value(format!(
            "BSON field '{field}' value must be >= 0, actual value '{n}'"
        ))),
    }
}

/// A whole number, if `v` is one.
pub(crate) fn number(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        Bson::Double(x) if x.fract() == 0.0 && x.abs() < 9.2e18 => Some(*x as i64),
        _ => None,
    }
}

/// The array of documents of `field`, if given.
pub(crate) fn opt_doc_array(
    cmd: &Document,
    field: &str,
) -> Result<Option<Vec<Document>>, CommandError> {
    match cmd.get(field) {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Bson::Document(d) => Ok(d.clone()),
                _ => Err(CommandError::type_mismatch(
                    &format!("{field}.{i}"),
                    "object",
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(CommandError::type_mismatch(field, "array")),
    }
}

/// MongoDB's name of a value's type, for messages.
pub(crate) fn type_name(v: &Bson) -> String {
    format!("{:?}", v.element_type())
}
