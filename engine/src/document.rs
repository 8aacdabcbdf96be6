//! Values BSON can store. A `bson::Document` built in Rust can hold bytes that BSON cannot
//! encode and read back: field names are C strings in BSON (`e_name` is a `cstring` in the BSON
//! spec), ended by a NUL byte, so a NUL inside one cuts it short and the bytes after it are read
//! as the next element. Every document that reaches storage or is compared with stored values
//! passes through here first: measurements (one at a time, so a bad one is rejected alone),
//! filters, projections, updates, index specifications and collMod commands.
//!
//! The other C strings of BSON, a regular expression's pattern and options, are
//! `bson::raw::CString`s, which cannot hold a NUL; strings, binary data and every other BSON
//! type are length-prefixed and round-trip whatever bytes they hold; invalid UTF-8 cannot occur
//! in a Rust `String`. So field names are the one gap, checked at every depth: inside
//! documents, arrays and the scope of JavaScript code.

use std::fmt;

use bson::{Bson, Document};

use crate::error::{Error, ErrorCode, Result};

/// What cannot be stored, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unstorable {
    /// Field names from the document's top level down to the offending element.
    path: Vec<String>,
}

impl fmt::Display for Unstorable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The path is printed with NUL (and other control characters) escaped, so the message
        // itself stays printable.
        let path = self
            .path
            .iter()
            .rev()
            .cloned()
            .collect::<Vec<_>>()
            .join(".");
        let path = path.escape_debug();
        write!(
            f,
            "field name \"{path}\" contains a NUL byte, which BSON does not allow in field names"
        )
    }
}

/// Whether `name` holds a NUL byte. Field names are short (a measurement's are checked one
/// by one, most under 24 bytes), where a byte-at-a-time search costs several instructions
/// per byte: this tests 8 bytes at once (a word has a zero byte when subtracting 1 from each
/// byte borrows into a byte whose top bit was clear), the last word overlapping the one
/// before it.
#[inline]
pub(crate) fn has_nul(name: &str) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let b = name.as_bytes();
    if b.len() < 8 {
        return b.contains(&0);
    }
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[at..at + 8]);
        let w = u64::from_le_bytes(w);
        w.wrapping_sub(ONES) & !w & HIGHS != 0
    };
    let mut at = 0;
    while at + 8 <= b.len() {
        if word(at) {
            return true;
        }
        at += 8;
    }
    at < b.len() && word(b.len() - 8)
}

/// Checks one element (a field name and its value) at any depth.
///
/// # Errors
/// The first field name, depth first, that BSON cannot store.
pub(crate) fn check_element(name: &str, value: &Bson) -> std::result::Result<(), Unstorable> {
    check_element_of(name, value, false)
}

/// As [`check_element`]; with `name_checked`, `name` is known to hold no NUL byte (it was
/// checked before) and only the value is checked.
///
/// # Errors
/// As [`check_element`].
pub(crate) fn check_element_of(
    name: &str,
    value: &Bson,
    name_checked: bool,
) -> std::result::Result<(), Unstorable> {
    if !name_checked && has_nul(name) {
        return Err(Unstorable {
            path: vec![name.to_owned()],
        });
    }
    check_value(value).map_err(|mut e| {
        e.path.push(name.to_owned());
        e
    })
}

/// Checks every element of a document at any depth.
///
/// # Errors
/// As [`check_element`].
pub(crate) fn check_document(doc: &Document) -> std::result::Result<(), Unstorable> {
    doc.iter().try_for_each(|(k, v)| check_element(k, v))
}

/// Checks a value: the elements of documents and arrays, and the scope of JavaScript code.
fn check_value(value: &Bson) -> std::result::Result<(), Unstorable> {
    match value {
        Bson::Document(d) => check_document(d),
        Bson::Array(items) => items.iter().enumerate().try_for_each(|(i, v)| {
            check_value(v).map_err(|mut e| {
                e.path.push(i.to_string());
                e
            })
        }),
        Bson::JavaScriptCodeWithScope(code) => check_document(&code.scope),
        _ => Ok(()),
    }
}

/// Rejects a caller's document (filter, projection, update, index key or option) that BSON
/// cannot store, naming what it is: `BadValue`.
///
/// # Errors
/// `BadValue` with the offending path, e.g. `filter: field name "a\0b" contains a NUL byte …`.
pub(crate) fn require_storable(what: &str, doc: &Document) -> Result<()> {
    check_document(doc).map_err(|e| Error::rejected(ErrorCode::BadValue, format!("{what}: {e}")))
}

/// Rejects a caller's name (index name, field path) holding a NUL byte: `BadValue`.
///
/// # Errors
/// `BadValue` naming the option.
pub(crate) fn require_nul_free(what: &str, name: &str) -> Result<()> {
    if has_nul(name) {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            format!("{what} \"{}\" contains a NUL byte", name.escape_debug()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bson::{JavaScriptCodeWithScope, Regex, doc};

    use super::*;

    #[test]
    fn has_nul_finds_a_nul_at_every_position_of_names_of_every_length() {
        for len in 0..40 {
            let clean = "x".repeat(len);
            assert!(!has_nul(&clean), "{len}");
            // Bytes with the top bit set or 0x01 next to each other must not look like a NUL.
            let tricky: String = (0..len)
                .map(|i| if i % 2 == 0 { '\u{1}' } else { 'é' })
                .collect();
            assert!(!has_nul(&tricky), "{tricky:?}");
            for at in 0..len {
                let mut b = clean.clone().into_bytes();
                b[at] = 0;
                let name = String::from_utf8(b).expect("ascii");
                assert!(has_nul(&name), "{len} {at}");
            }
        }
    }

    #[test]
    fn ordinary_documents_pass() {
        let d = doc! {
            "a": 1, "b": { "c": [1, { "d.e": "x\0y" }] }, "$f": "", "": 2,
            "r": Regex { pattern: "^a".try_into().unwrap(), options: "i".try_into().unwrap() },
        };
        assert_eq!(check_document(&d), Ok(()));
    }

    #[test]
    fn a_nul_in_a_field_name_is_found_at_any_depth() {
        let top = doc! { "v": 3, "a\0b": 1 };
        let e = check_document(&top).unwrap_err();
        assert_eq!(e.path, ["a\0b"]);
        assert!(e.to_string().contains(r#""a\0b""#), "{e}");

        let nested = doc! { "meta": { "tags": [ { "ok": 1 }, { "x\0": 2 } ] } };
        let e = check_document(&nested).unwrap_err();
        assert_eq!(e.to_string().split('"').nth(1), Some(r"meta.tags.1.x\0"));
    }

    #[test]
    fn a_regex_cannot_hold_a_nul_in_the_first_place() {
        assert!(bson::raw::CString::try_from("a\0b").is_err());
        assert!(bson::raw::CString::try_from("i\0").is_err());
    }

    #[test]
    fn a_nul_inside_an_array_element_is_found() {
        let d = doc! { "x": [ 1, { "a\0": 2 } ] };
        assert_eq!(check_document(&d).unwrap_err().path, ["a\0", "1", "x"]);
    }

    #[test]
    fn a_nul_in_a_code_scope_is_found() {
        let d =
            doc! { "c": JavaScriptCodeWithScope { code: "f()".into(), scope: doc! { "\0": 1 } } };
        assert_eq!(check_document(&d).unwrap_err().path, ["\0", "c"]);
    }

    #[test]
    fn every_rejected_document_really_fails_to_round_trip_through_bson() {
        // The check is exactly what BSON needs: each rejected shape does not read back equal.
        for d in [doc! { "a\0b": 1, "w": 4 }, doc! { "m": { "k\0": 1 } }] {
            assert!(check_document(&d).is_err());
            let mut bytes = Vec::new();
            let back = d
                .to_writer(&mut bytes)
                .ok()
                .and_then(|()| Document::from_reader(&mut bytes.as_slice()).ok());
            assert_ne!(back.as_ref(), Some(&d), "{d:?} round-tripped");
        }
    }
}
