//! BSON → Python values, for the few documents returned as Python objects (a collection's
//! stats, an upserted `_id`): numbers, strings, booleans, `None`, dicts, lists, dates as
//! aware `datetime`s in UTC, binData as `bytes`, an objectId as its hex string; any other
//! type as its relaxed Extended JSON text.

use bson::{Bson, Document};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// A document as a `dict`, keys in document order.
///
/// # Errors
/// A Python failure building it (memory).
pub(crate) fn document<'py>(py: Python<'py>, doc: &Document) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (k, v) in doc {
        dict.set_item(k.as_str(), value(py, v)?)?;
    }
    Ok(dict)
}

/// One BSON value as a Python object.
///
/// # Errors
/// As [`document`].
pub(crate) fn value<'py>(py: Python<'py>, v: &Bson) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Bson::Null | Bson::Undefined => py.None().into_bound(py),
        Bson::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Bson::Int32(n) => n.into_pyobject(py)?.into_any(),
        Bson::Int64(n) => n.into_pyobject(py)?.into_any(),
        Bson::Double(f) => f.into_pyobject(py)?.into_any(),
        Bson::String(s) => s.into_pyobject(py)?.into_any(),
        Bson::Document(d) => document(py, d)?.into_any(),
        Bson::Array(a) => {
            let list = PyList::empty(py);
            for item in a {
                list.append(value(py, item)?)?;
            }
            list.into_any()
        }
        Bson::DateTime(dt) => {
            let datetime = py.import("datetime")?;
            let utc = datetime.getattr("timezone")?.getattr("utc")?;
            let epoch = datetime
                .getattr("datetime")?
                .call1((1970, 1, 1, 0, 0, 0, 0, utc))?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("milliseconds", dt.timestamp_millis())?;
            let delta = datetime.getattr("timedelta")?.call((), Some(&kwargs))?;
            epoch.call_method1("__add__", (delta,))?
        }
        Bson::Binary(b) => PyBytes::new(py, &b.bytes).into_any(),
        Bson::ObjectId(id) => id.to_hex().into_pyobject(py)?.into_any(),
        other => other
            .clone()
            .into_relaxed_extjson()
            .to_string()
            .into_pyobject(py)?
            .into_any(),
    })
}
