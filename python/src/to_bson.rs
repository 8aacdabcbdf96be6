//! Python values → BSON, as pymongo encodes them: `dict` → document, `list`/`tuple` →
//! array, `int` → int32 when it fits, else int64 (`OverflowError` past 64 bits), `float`
//! → double, `bool`, `str`, `None` → null, `bytes` → binData (subtype 0), `datetime` → date
//! (an aware one converted to UTC; a naive one taken as UTC; milliseconds, rounded down as
//! pymongo does), `date` → date at midnight UTC, compiled `re` patterns → regex, a
//! pymongo `ObjectId` → objectId, integers of other types (`numpy.int64`) through
//! `__index__`. Anything else raises `tscoll.errors.InvalidDocument` naming the type.

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Document, Regex};
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple,
};

use crate::errors::invalid_document;

/// Deepest nesting taken: BSON's own limit is about 100 levels in MongoDB.
const MAX_DEPTH: usize = 100;

/// A Python mapping with `str` keys as a BSON document.
///
/// # Errors
/// `InvalidDocument` when `obj` is not a mapping, a key is not a `str` or a value has no
/// BSON type; `OverflowError` for an `int` past 64 bits.
pub(crate) fn to_document(obj: &Bound<'_, PyAny>) -> PyResult<Document> {
    document(obj, 0)
}

/// `None` or a mapping as a document (`None` → empty).
///
/// # Errors
/// As [`to_document`].
pub(crate) fn to_document_or_empty(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Document> {
    match obj {
        None => Ok(Document::new()),
        Some(o) if o.is_none() => Ok(Document::new()),
        Some(o) => to_document(o),
    }
}

/// A sequence of mappings (a pipeline, a list of measurements) as documents.
///
/// # Errors
/// `InvalidDocument` when `obj` is not a list or tuple, or as [`to_document`] for an item.
pub(crate) fn to_documents(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Document>> {
    let py = obj.py();
    if obj.is_instance_of::<PyDict>() || obj.is_instance_of::<PyString>() {
        return Err(invalid_document(
            py,
            format!("expected a list of dicts, got {}", type_name(obj)),
        ));
    }
    let mut docs = Vec::new();
    for item in obj.try_iter().map_err(|_| {
        invalid_document(
            py,
            format!("expected a list of dicts, got {}", type_name(obj)),
        )
    })? {
        docs.push(document(&item?, 0)?);
    }
    Ok(docs)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "an object".to_owned(), |n| n.to_string())
}

fn document(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Document> {
    let py = obj.py();
    if depth > MAX_DEPTH {
        return Err(invalid_document(
            py,
            format!("a document nested more than {MAX_DEPTH} levels deep"),
        ));
    }
    let mut doc = Document::new();
    if let Ok(dict) = obj.cast::<PyDict>() {
        for (k, v) in dict.iter() {
            doc.insert(key(&k)?, value(&v, depth + 1)?);
        }
        return Ok(doc);
    }
    if let Ok(mapping) = obj.cast::<PyMapping>() {
        for item in mapping.items()?.iter() {
            let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
            doc.insert(key(&k)?, value(&v, depth + 1)?);
        }
        return Ok(doc);
    }
    Err(invalid_document(
        py,
        format!("expected a dict, got {}", type_name(obj)),
    ))
}

fn key(k: &Bound<'_, PyAny>) -> PyResult<String> {
    match k.cast::<PyString>() {
        Ok(s) => Ok(s.to_str()?.to_owned()),
        Err(_) => Err(invalid_document(
            k.py(),
            format!(
                "documents must have only string keys, key was {} of type {}",
                k.repr().map_or_else(|_| "?".to_owned(), |r| r.to_string()),
                type_name(k)
            ),
        )),
    }
}

/// One Python value as BSON.
fn value(v: &Bound<'_, PyAny>, depth: usize) -> PyResult<Bson> {
    let py = v.py();
    if v.is_none() {
        return Ok(Bson::Null);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Bson::Boolean(b.is_true()));
    }
    if let Ok(i) = v.cast::<PyInt>() {
        return int(i.as_any());
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        return Ok(Bson::Double(f.value()));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Bson::String(s.to_str()?.to_owned()));
    }
    if v.is_instance_of::<PyDict>() {
        return Ok(Bson::Document(document(v, depth)?));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        if depth > MAX_DEPTH {
            return Err(invalid_document(
                py,
                format!("an array nested more than {MAX_DEPTH} levels deep"),
            ));
        }
        let mut array = Vec::new();
        for item in v.try_iter()? {
            array.push(value(&item?, depth + 1)?);
        }
        return Ok(Bson::Array(array));
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(binary(b.as_bytes().to_vec()));
    }
    if let Ok(b) = v.cast::<PyByteArray>() {
        return Ok(binary(b.to_vec()));
    }
    let datetime = py.import("datetime")?;
    if v.is_instance(&datetime.getattr("datetime")?)? {
        return Ok(Bson::DateTime(date_time(v)?));
    }
    if v.is_instance(&datetime.getattr("date")?)? {
        let midnight = datetime.getattr("datetime")?.call1((
            v.getattr("year")?,
            v.getattr("month")?,
            v.getattr("day")?,
        ))?;
        return Ok(Bson::DateTime(date_time(&midnight)?));
    }
    if v.is_instance(&py.import("re")?.getattr("Pattern")?)? {
        return regex(v);
    }
    if v.is_instance_of::<PyMapping>() {
        return Ok(Bson::Document(document(v, depth)?));
    }
    if let Some(id) = object_id(v)? {
        return Ok(Bson::ObjectId(id));
    }
    if v.hasattr("__index__")? {
        return int(&v.call_method0("__index__")?);
    }
    Err(invalid_document(
        py,
        format!(
            "cannot encode object: {}, of type: {}",
            v.repr().map_or_else(|_| "?".to_owned(), |r| r.to_string()),
            type_name(v)
        ),
    ))
}

/// An `int`: int32 when it fits, else int64.
fn int(i: &Bound<'_, PyAny>) -> PyResult<Bson> {
    if let Ok(n) = i.extract::<i32>() {
        return Ok(Bson::Int32(n));
    }
    match i.extract::<i64>() {
        Ok(n) => Ok(Bson::Int64(n)),
        Err(_) => Err(PyOverflowError::new_err(
            "BSON can only handle up to 8-byte ints",
        )),
    }
}

fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

/// A `datetime` as milliseconds since the epoch, UTC: an aware one through its offset, a
/// naive one as UTC; microseconds rounded down (towards the past), as pymongo does.
fn date_time(v: &Bound<'_, PyAny>) -> PyResult<DateTime> {
    let py = v.py();
    let datetime = py.import("datetime")?;
    let utc = datetime.getattr("timezone")?.getattr("utc")?;
    let aware = if v.getattr("tzinfo")?.is_none() || v.call_method0("utcoffset")?.is_none() {
        let kwargs = PyDict::new(py);
        kwargs.set_item("tzinfo", &utc)?;
        v.call_method("replace", (), Some(&kwargs))?
    } else {
        v.clone()
    };
    let epoch = datetime
        .getattr("datetime")?
        .call1((1970, 1, 1, 0, 0, 0, 0, &utc))?;
    let delta = aware.call_method1("__sub__", (epoch,))?;
    let days: i64 = delta.getattr("days")?.extract()?;
    let seconds: i64 = delta.getattr("seconds")?.extract()?;
    let micros: i64 = delta.getattr("microseconds")?.extract()?;
    // |days| <= 999_999_999 (timedelta's bound): the product fits in i64.
    let ms = days * 86_400_000 + seconds * 1000 + micros.div_euclid(1000);
    Ok(DateTime::from_millis(ms))
}

/// A compiled `re` pattern: its pattern and flags (`i`, `m`, `s`, `x`).
fn regex(v: &Bound<'_, PyAny>) -> PyResult<Bson> {
    let py = v.py();
    let re = py.import("re")?;
    let pattern: String = match v.getattr("pattern")?.extract::<String>() {
        Ok(p) => p,
        Err(_) => {
            return Err(invalid_document(
                py,
                "a bytes regular expression cannot be encoded: use a str pattern".to_owned(),
            ));
        }
    };
    let flags: i64 = v.getattr("flags")?.extract()?;
    let mut options = String::new();
    for (name, letter) in [
        ("IGNORECASE", 'i'),
        ("MULTILINE", 'm'),
        ("DOTALL", 's'),
        ("VERBOSE", 'x'),
    ] {
        let bit: i64 = re.getattr(name)?.extract()?;
        if flags & bit != 0 {
            options.push(letter);
        }
    }
    // The options in alphabetical order, as BSON stores them: `i`, `m`, `s`, `x` are.
    let nul = |_| invalid_document(py, "a regular expression holds a NUL character".to_owned());
    Ok(Bson::RegularExpression(Regex {
        pattern: pattern.try_into().map_err(nul)?,
        options: options.try_into().map_err(nul)?,
    }))
}

/// A pymongo (`bson`) `ObjectId`: an object of that class name with 12 `binary` bytes.
fn object_id(v: &Bound<'_, PyAny>) -> PyResult<Option<bson::oid::ObjectId>> {
    if type_name(v) != "ObjectId" || !v.hasattr("binary")? {
        return Ok(None);
    }
    let bytes: Vec<u8> = v.getattr("binary")?.extract()?;
    Ok(<[u8; 12]>::try_from(bytes.as_slice())
        .ok()
        .map(bson::oid::ObjectId::from_bytes))
}
