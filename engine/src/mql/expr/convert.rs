//! Type conversions: `$toLong`, `$toDouble`, `$toDate`.

use bson::{Bson, DateTime};

use super::EvalError;
use crate::error::ErrorCode;

/// A conversion operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conversion {
    Long,
    Double,
    Date,
}

/// `$toLong`, `$toDouble`, `$toDate`.
///
/// # Errors
/// `ConversionFailure` for a value the conversion does not take.
pub(super) fn convert(to: Conversion, v: Option<&Bson>) -> std::result::Result<Bson, EvalError> {
    let fail = |m: String| EvalError::failed(ErrorCode::ConversionFailure, m);
    let v = match v {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Bson::Null),
        Some(v) => v,
    };
    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        reason = "MongoDB's conversions"
    )]
    let out = match (to, v) {
        (Conversion::Long, Bson::Int32(n)) => Bson::Int64(i64::from(*n)),
        (Conversion::Long, Bson::Int64(n)) => Bson::Int64(*n),
        (Conversion::Long, Bson::Double(d)) if d.is_finite() && d.abs() < 9.2e18 => {
            Bson::Int64(d.trunc() as i64)
        }
        (Conversion::Long, Bson::Boolean(b)) => Bson::Int64(i64::from(*b)),
        (Conversion::Long, Bson::DateTime(t)) => Bson::Int64(t.timestamp_millis()),
        (Conversion::Long, Bson::String(s)) => Bson::Int64(
            s.trim()
                .parse()
                .map_err(|_| fail(format!("$toLong cannot convert '{s}'")))?,
        ),
        (Conversion::Double, Bson::Int32(n)) => Bson::Double(f64::from(*n)),
        (Conversion::Double, Bson::Int64(n)) => Bson::Double(*n as f64),
        (Conversion::Double, Bson::Double(d)) => Bson::Double(*d),
        (Conversion::Double, Bson::Boolean(b)) => Bson::Double(f64::from(u8::from(*b))),
        (Conversion::Double, Bson::DateTime(t)) => Bson::Double(t.timestamp_millis() as f64),
        (Conversion::Double, Bson::String(s)) => Bson::Double(
            s.trim()
                .parse()
                .map_err(|_| fail(format!("$toDouble cannot convert '{s}'")))?,
        ),
        (Conversion::Date, Bson::DateTime(t)) => Bson::DateTime(*t),
        (Conversion::Date, Bson::Int64(n)) => Bson::DateTime(DateTime::from_millis(*n)),
        (Conversion::Date, Bson::Double(d)) if d.is_finite() && d.abs() < 9.2e18 => {
            Bson::DateTime(DateTime::from_millis(d.trunc() as i64))
        }
        (Conversion::Date, Bson::String(s)) => Bson::DateTime(
            DateTime::parse_rfc3339_str(s)
                .map_err(|_| fail(format!("$toDate cannot convert '{s}'")))?,
        ),
        (_, other) => return Err(fail(format!("cannot convert {other} with {to:?}"))),
    };
    Ok(out)
}
