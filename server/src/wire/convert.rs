//! Raw BSON to [`Document`], in one pass: each value is converted where it lies, nested
//! documents and arrays too (bson's own conversion copies each nested document into a
//! buffer of its own before converting it). The caller has checked the nesting first, with
//! no recursion (`check_depth`): the conversion recurses once per level, and checks the
//! limit again on the way.

use bson::{Bson, Document, JavaScriptCodeWithScope, RawArray, RawBsonRef, RawDocument};

use super::{MAX_BSON_DEPTH, WireError};

/// `raw` as a [`Document`].
///
/// # Errors
/// [`WireError::BadDocument`] for bytes that are not BSON (an element of an unknown type, a
/// string that is not UTF-8, a length past its end); [`WireError::DocumentTooDeep`] when
/// documents and arrays nest more than [`MAX_BSON_DEPTH`] levels below `raw`.
pub(crate) fn to_document(raw: &RawDocument, what: &'static str) -> Result<Document, WireError> {
    document(raw, 0, what)
}

fn bad(what: &'static str) -> impl Fn(bson::error::Error) -> WireError {
    move |e| WireError::BadDocument {
        what,
        message: e.to_string(),
    }
}

/// A document `depth` levels below the top one.
fn document(raw: &RawDocument, depth: usize, what: &'static str) -> Result<Document, WireError> {
    raw.into_iter()
        .map(|element| {
            let (key, value) = element.map_err(bad(what))?;
            Ok((key.as_str().to_owned(), self::value(value, depth, what)?))
        })
        .collect()
}

fn array(raw: &RawArray, depth: usize, what: &'static str) -> Result<Vec<Bson>, WireError> {
    raw.into_iter()
        .map(|v| value(v.map_err(bad(what))?, depth, what))
        .collect()
}

/// The value of an element of a document `depth` levels below the top one.
fn value(v: RawBsonRef<'_>, depth: usize, what: &'static str) -> Result<Bson, WireError> {
    let nested = || {
        if depth >= MAX_BSON_DEPTH {
            Err(WireError::DocumentTooDeep {
                what,
                limit: MAX_BSON_DEPTH,
            })
        } else {
            Ok(depth + 1)
        }
    };
    Ok(match v {
        RawBsonRef::Double(x) => Bson::Double(x),
        RawBsonRef::String(s) => Bson::String(s.to_owned()),
        RawBsonRef::Int32(n) => Bson::Int32(n),
        RawBsonRef::Int64(n) => Bson::Int64(n),
        RawBsonRef::Boolean(b) => Bson::Boolean(b),
        RawBsonRef::DateTime(t) => Bson::DateTime(t),
        RawBsonRef::ObjectId(id) => Bson::ObjectId(id),
        RawBsonRef::Null => Bson::Null,
        RawBsonRef::Document(d) => Bson::Document(document(d, nested()?, what)?),
        RawBsonRef::Array(a) => Bson::Array(array(a, nested()?, what)?),
        RawBsonRef::JavaScriptCodeWithScope(c) => {
            Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code: c.code.to_owned(),
                scope: document(c.scope, nested()?, what)?,
            })
        }
        // The rest hold no documents: bson's own conversion copies nothing nested.
        other => Bson::try_from(other).map_err(bad(what))?,
    })
}
