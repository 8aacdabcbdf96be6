//! The text of a value in a JSON column (a `Utf8` column marked `tscoll.encoding = json`):
//! relaxed Extended JSON that reads back to the same BSON value.
//!
//! It is the bson crate's relaxed form but for three values that form does not read back
//! exactly: an int64 that fits in 32 bits is `{"$numberLong":"N"}` (a plain number reads
//! back as an int32), a date outside the years 1970 to 9999 is
//! `{"$date":{"$numberLong":"MS"}}` (the bson crate clamps such a date before writing it as
//! text), and every NaN is `{"$numberDouble":"NaN"}` (a parser takes no `-NaN`).

use std::fmt::Write;

use bson::{Bson, Document};

/// The last millisecond relaxed Extended JSON writes as a date text:
/// 9999-12-31T23:59:59.999Z.
const LAST_TEXT_DATE_MS: i64 = 253_402_300_799_999;

/// `value` as the relaxed Extended JSON text of a JSON column (module docs); a document's
/// fields in their order.
pub(crate) fn json_text(value: &Bson) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Appends `value`'s text (module docs) to `out`.
fn write_value(out: &mut String, value: &Bson) {
    match value {
        Bson::Document(doc) => write_document(out, doc),
        Bson::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Bson::Int64(i) if i32::try_from(*i).is_ok() => {
            let _ = write!(out, r#"{{"$numberLong":"{i}"}}"#);
        }
        Bson::Double(d) if d.is_nan() => out.push_str(r#"{"$numberDouble":"NaN"}"#),
        Bson::DateTime(t) if !(0..=LAST_TEXT_DATE_MS).contains(&t.timestamp_millis()) => {
            let _ = write!(
                out,
                r#"{{"$date":{{"$numberLong":"{}"}}}}"#,
                t.timestamp_millis()
            );
        }
        Bson::JavaScriptCodeWithScope(code) => {
            out.push_str(r#"{"$code":"#);
            write_string(out, &code.code);
            out.push_str(r#","$scope":"#);
            write_document(out, &code.scope);
            out.push('}');
        }
        other => out.push_str(&other.clone().into_relaxed_extjson().to_string()),
    }
}

/// Appends a document's text, its fields in order.
fn write_document(out: &mut String, doc: &Document) {
    out.push('{');
    for (i, (key, value)) in doc.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(out, value);
    }
    out.push('}');
}

/// Appends `s` as a JSON string.
fn write_string(out: &mut String, s: &str) {
    out.push_str(&serde_json::Value::from(s).to_string());
}

#[cfg(test)]
mod tests {
    use bson::{DateTime, doc};

    use super::*;

    /// The text parsed back as Extended JSON.
    fn read(text: &str) -> Bson {
        let json: serde_json::Value = serde_json::from_str(text).expect("JSON");
        Bson::try_from(json).expect("Extended JSON")
    }

    #[test]
    fn values_the_relaxed_form_changes_read_back_exactly() {
        for value in [
            Bson::Int64(5),
            Bson::Int64(-1),
            Bson::Int64(1 << 40),
            Bson::Int32(5),
            Bson::Double(1.0),
            Bson::Double(-0.0),
            Bson::DateTime(DateTime::from_millis(-5)),
            Bson::DateTime(DateTime::from_millis(LAST_TEXT_DATE_MS + 1)),
            Bson::DateTime(DateTime::from_millis(i64::MAX)),
            Bson::DateTime(DateTime::from_millis(1_700_000_000_123)),
            Bson::Document(doc! { "a": { "b": [Bson::Int64(2), "x"] } }),
        ] {
            let text = json_text(&value);
            let back = read(&text);
            assert_eq!(back, value, "{text}");
            if let (Bson::Double(a), Bson::Double(b)) = (&back, &value) {
                assert_eq!(a.to_bits(), b.to_bits(), "{text}");
            }
        }
        assert_eq!(json_text(&Bson::Int64(5)), r#"{"$numberLong":"5"}"#);
        assert_eq!(json_text(&Bson::String("x".into())), r#""x""#);
        assert_eq!(
            json_text(&Bson::Document(doc! { "z": 1, "a": "\"" })),
            r#"{"z":1,"a":"\""}"#
        );
        let nan = read(&json_text(&Bson::Double(-f64::NAN)));
        assert!(matches!(nan, Bson::Double(d) if d.is_nan()));
    }
}
