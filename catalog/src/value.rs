//! BSON values in the catalog: canonical type order (SPEC ), element sizes for
//! the size estimate (SPEC §6.4), and conversion between `bson::Bson` and codec columns.

use std::cmp::Ordering;

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Decimal128, Document, Timestamp, oid::ObjectId};
use tscoll_codec::{Column, ValueRef, tag};

/// Canonical type rank of a value (SPEC ); lower sorts first.
#[must_use]
pub fn canonical_rank(v: &Bson) -> i32 {
    match v {
        Bson::MinKey => -1,
        Bson::Undefined => 0,
        Bson::Null => 5,
        Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_) => 10,
        Bson::String(_) | Bson::Symbol(_) => 15,
        Bson::Document(_) => 20,
        Bson::Array(_) => 25,
        Bson::Binary(_) => 30,
        Bson::ObjectId(_) => 35,
        Bson::Boolean(_) => 40,
        Bson::DateTime(_) => 45,
        Bson::Timestamp(_) => 47,
        Bson::RegularExpression(_) => 50,
        Bson::DbPointer(_) => 55,
        Bson::JavaScriptCode(_) => 60,
        Bson::JavaScriptCodeWithScope(_) => 65,
        Bson::MaxKey => 127,
    }
}

/// A number as `f64` for cross-type comparison (int64 beyond 2^53 loses precision only when
/// compared against a double).
fn number(v: &Bson) -> Option<f64> {
    #[expect(clippy::cast_precision_loss, reason = "numeric cross-type comparison")]
    match v {
        Bson::Double(d) => Some(*d),
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Decimal128(d) => d.to_string().parse::<f64>().ok(),
        _ => None,
    }
}

/// Two numbers in BSON order (SPEC ): by value across types, integers against doubles
/// exactly, NaN before every other number.
pub(crate) fn compare_numbers(a: &Bson, b: &Bson) -> Ordering {
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => x.cmp(y),
        (Bson::Int64(x), Bson::Int64(y)) => x.cmp(y),
        (Bson::Int32(x), Bson::Int64(y)) => i64::from(*x).cmp(y),
        (Bson::Int64(x), Bson::Int32(y)) => x.cmp(&i64::from(*y)),
        // An integer against a double, exactly (through f64 an int64 past 2^53 would equal
        // doubles it is not equal to, and the order would not be total).
        (Bson::Int32(_) | Bson::Int64(_), Bson::Double(y)) if !y.is_nan() => {
            int_cmp_double(int_of(a), *y)
        }
        (Bson::Double(x), Bson::Int32(_) | Bson::Int64(_)) if !x.is_nan() => {
            int_cmp_double(int_of(b), *x).reverse()
        }
        _ => {
            let (x, y) = (number(a).unwrap_or(f64::NAN), number(b).unwrap_or(f64::NAN));
            // MongoDB orders NaN before every other number.
            match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            }
        }
    }
}

fn int_of(v: &Bson) -> i64 {
    match v {
        Bson::Int32(i) => i64::from(*i),
        Bson::Int64(i) => *i,
        _ => 0,
    }
}

/// `x` against `y` (not NaN) exactly.
fn int_cmp_double(x: i64, y: f64) -> Ordering {
    // 2^63 as a double: every i64 is below it, and every double below it and at or above
    // -2^63 has an integer part that fits an i64.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if y >= TWO_63 {
        return Ordering::Less;
    }
    if y < -TWO_63 {
        return Ordering::Greater;
    }
    let floor = y.floor();
    #[expect(clippy::cast_possible_truncation, reason = "in range, checked above")]
    let whole = floor as i64;
    x.cmp(&whole).then(if y > floor {
        Ordering::Less
    } else {
        Ordering::Equal
    })
}

/// Compares two values in BSON order (SPEC ): canonical rank first, then value.
/// Strings compare by bytes (binary collation). Documents and arrays compare element-wise.
#[must_use]
pub fn compare(a: &Bson, b: &Bson) -> Ordering {
    let (ra, rb) = (canonical_rank(a), canonical_rank(b));
    if ra != rb {
        return ra.cmp(&rb);
    }
    match (a, b) {
        (
            Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_),
            Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_),
        ) => compare_numbers(a, b),
        (Bson::String(x) | Bson::Symbol(x), Bson::String(y) | Bson::Symbol(y)) => {
            x.as_bytes().cmp(y.as_bytes())
        }
        (Bson::Document(x), Bson::Document(y)) => compare_documents(x, y),
        (Bson::Array(x), Bson::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let o = compare(p, q);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Bson::Binary(x), Bson::Binary(y)) => x
            .bytes
            .len()
            .cmp(&y.bytes.len())
            .then(u8::from(x.subtype).cmp(&u8::from(y.subtype)))
            .then(x.bytes.cmp(&y.bytes)),
        (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.cmp(y),
        (Bson::Timestamp(x), Bson::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (Bson::RegularExpression(x), Bson::RegularExpression(y)) => x
            .pattern
            .as_str()
            .cmp(y.pattern.as_str())
            .then(x.options.as_str().cmp(y.options.as_str())),
        (Bson::JavaScriptCode(x), Bson::JavaScriptCode(y)) => x.cmp(y),
        (Bson::JavaScriptCodeWithScope(x), Bson::JavaScriptCodeWithScope(y)) => x
            .code
            .cmp(&y.code)
            .then_with(|| compare_documents(&x.scope, &y.scope)),
        _ => Ordering::Equal,
    }
}

fn compare_documents(x: &Document, y: &Document) -> Ordering {
    for ((ka, va), (kb, vb)) in x.iter().zip(y.iter()) {
        let o = canonical_rank(va)
            .cmp(&canonical_rank(vb))
            .then_with(|| ka.as_bytes().cmp(kb.as_bytes()))
            .then_with(|| compare(va, vb));
        if o != Ordering::Equal {
            return o;
        }
    }
    x.len().cmp(&y.len())
}

/// Size in bytes of the BSON value alone (no type byte, no name), as serialized.
#[must_use]
#[inline]
pub fn value_size(v: &Bson) -> u64 {
    match v {
        Bson::Double(_) | Bson::DateTime(_) | Bson::Timestamp(_) | Bson::Int64(_) => 8,
        Bson::Int32(_) => 4,
        Bson::String(s) | Bson::JavaScriptCode(s) | Bson::Symbol(s) => 4 + s.len() as u64 + 1,
        Bson::Document(d) => document_size(d),
        Bson::Array(a) => {
            let mut n = 5;
            for (i, e) in a.iter().enumerate() {
                n += 1 + decimal_digits(i as u64).max(1) + 1 + value_size(e);
            }
            n
        }
        Bson::Binary(b) => 4 + 1 + b.bytes.len() as u64,
        Bson::ObjectId(_) => 12,
        Bson::Boolean(_) => 1,
        Bson::RegularExpression(r) => {
            r.pattern.as_str().len() as u64 + r.options.as_str().len() as u64 + 2
        }
        Bson::JavaScriptCodeWithScope(c) => {
            4 + 4 + c.code.len() as u64 + 1 + document_size(&c.scope)
        }
        Bson::Decimal128(_) => 16,
        Bson::DbPointer(_) => {
            // namespace string + 12-byte id; the namespace is private in bson, so measure it.
            raw_payload(v).map_or(16, |p| p.len() as u64)
        }
        Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey => 0,
    }
}

/// Size in bytes of a serialized document.
#[must_use]
pub fn document_size(d: &Document) -> u64 {
    let mut n = 5;
    for (k, v) in d {
        n += 1 + k.len() as u64 + 1 + value_size(v);
    }
    n
}

/// Size of a whole BSON element: type byte + name + NUL + value (SPEC §6.4 `size(elem)`).
#[must_use]
#[inline]
pub fn element_size(name: &str, v: &Bson) -> u64 {
    1 + name.len() as u64 + 1 + value_size(v)
}

/// Number of decimal digits of `n`, with `digits(0) = 0` (SPEC §6.4).
#[must_use]
pub fn decimal_digits(mut n: u64) -> u64 {
    let mut d = 0;
    while n > 0 {
        d += 1;
        n /= 10;
    }
    d
}

/// The BSON type code of a value.
#[must_use]
pub fn type_code(v: &Bson) -> u8 {
    v.element_type() as u8
}

/// The serialized value bytes of any value (what follows type byte and name in an element).
#[must_use]
pub fn raw_value_bytes(v: &Bson) -> Vec<u8> {
    raw_payload(v).unwrap_or_default()
}

fn raw_payload(v: &Bson) -> Option<Vec<u8>> {
    let mut d = Document::new();
    d.insert("", v.clone());
    let bytes = d.to_vec().ok()?;
    // [i32 len][type][NUL name][payload...][NUL]
    bytes
        .get(6..bytes.len().checked_sub(1)?)
        .map(<[u8]>::to_vec)
}

/// Appends `v` to a column (one row).
///
/// # Panics
/// Never for values that came from a valid `bson::Document`.
pub fn push_value(col: &mut Column, v: &Bson, scratch: &mut Vec<u8>) {
    match v {
        Bson::Double(d) => col.push_float(*d),
        Bson::Int32(i) => col.push_int(tag::INT32, i64::from(*i)),
        Bson::Int64(i) => col.push_int(tag::INT64, *i),
        Bson::DateTime(t) => col.push_int(tag::DATETIME, t.timestamp_millis()),
        Bson::Boolean(b) => col.push_int(tag::BOOLEAN, i64::from(*b)),
        #[expect(clippy::cast_possible_wrap, reason = "timestamp kept as its u64 bits")]
        Bson::Timestamp(ts) => {
            col.push_int(
                tag::TIMESTAMP,
                ((u64::from(ts.time) << 32) | u64::from(ts.increment)) as i64,
            );
        }
        Bson::String(s) => col.push_bytes(tag::STRING, s.as_bytes()),
        Bson::Symbol(s) => col.push_bytes(tag::SYMBOL, s.as_bytes()),
        Bson::JavaScriptCode(s) => col.push_bytes(tag::JAVASCRIPT, s.as_bytes()),
        Bson::ObjectId(o) => col.push_bytes(tag::OBJECT_ID, &o.bytes()),
        Bson::Decimal128(d) => col.push_bytes(tag::DECIMAL128, &d.bytes()),
        Bson::Null => col.push_empty(tag::NULL),
        Bson::Undefined => col.push_empty(tag::UNDEFINED),
        Bson::MinKey => col.push_empty(tag::MIN_KEY),
        Bson::MaxKey => col.push_empty(tag::MAX_KEY),
        Bson::Document(d) => {
            scratch.clear();
            // Serializing a valid Document into a Vec cannot fail.
            if d.to_writer(&mut *scratch).is_ok() {
                col.push_bytes(tag::DOCUMENT, scratch);
            } else {
                col.push_empty(tag::NULL);
            }
        }
        other => match raw_payload(other) {
            Some(p) => col.push_bytes(type_code(other), &p),
            None => col.push_empty(tag::NULL),
        },
    }
}

/// Converts one row of a column back to a value; `None` for a skip.
///
/// # Errors
/// A message when the payload is not a valid value of its type (corrupt data).
pub fn to_bson(v: ValueRef<'_>) -> Result<Option<Bson>, String> {
    Ok(Some(match v {
        ValueRef::Missing => return Ok(None),
        ValueRef::Empty(t) => match t {
            tag::NULL => Bson::Null,
            tag::UNDEFINED => Bson::Undefined,
            tag::MIN_KEY => Bson::MinKey,
            tag::MAX_KEY => Bson::MaxKey,
            other => return Err(format!("type {other:#04x} has no empty form")),
        },
        ValueRef::Float(d) => Bson::Double(d),
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "lane layout"
        )]
        ValueRef::Int(t, i) => match t {
            tag::INT32 => {
                Bson::Int32(i32::try_from(i).map_err(|_| "int32 out of range".to_owned())?)
            }
            tag::INT64 => Bson::Int64(i),
            tag::DATETIME => Bson::DateTime(DateTime::from_millis(i)),
            tag::BOOLEAN => Bson::Boolean(i != 0),
            tag::TIMESTAMP => {
                let u = i as u64;
                Bson::Timestamp(Timestamp {
                    time: (u >> 32) as u32,
                    increment: u as u32,
                })
            }
            other => return Err(format!("type {other:#04x} is not an int-lane type")),
        },
        ValueRef::Bytes(t, p) => match t {
            tag::STRING => Bson::String(utf8(p)?),
            tag::SYMBOL => Bson::Symbol(utf8(p)?),
            tag::JAVASCRIPT => Bson::JavaScriptCode(utf8(p)?),
            tag::OBJECT_ID => Bson::ObjectId(ObjectId::from_bytes(
                p.try_into()
                    .map_err(|_| "ObjectId is not 12 bytes".to_owned())?,
            )),
            tag::DECIMAL128 => Bson::Decimal128(Decimal128::from_bytes(
                p.try_into()
                    .map_err(|_| "decimal128 is not 16 bytes".to_owned())?,
            )),
            tag::DOCUMENT => Bson::Document(
                Document::from_reader(p).map_err(|e| format!("embedded document: {e}"))?,
            ),
            other => from_raw_payload(other, p)?,
        },
    }))
}

fn utf8(p: &[u8]) -> Result<String, String> {
    String::from_utf8(p.to_vec()).map_err(|_| "string is not UTF-8".to_owned())
}

/// Rebuilds a value from its type code and serialized value bytes.
///
/// # Errors
/// A message when the bytes are not a valid value of that type.
pub fn from_type_and_payload(type_code: u8, payload: &[u8]) -> Result<Bson, String> {
    from_raw_payload(type_code, payload)
}

/// Rebuilds a value of any type from its serialized value bytes.
fn from_raw_payload(type_code: u8, payload: &[u8]) -> Result<Bson, String> {
    let len = i32::try_from(payload.len() + 7).map_err(|_| "value too large".to_owned())?;
    let mut buf = Vec::with_capacity(payload.len() + 7);
    buf.extend_from_slice(&len.to_le_bytes());
    buf.push(type_code);
    buf.push(0);
    buf.extend_from_slice(payload);
    buf.push(0);
    let doc = Document::from_reader(buf.as_slice())
        .map_err(|e| format!("value of type {type_code:#04x}: {e}"))?;
    doc.get("").cloned().ok_or_else(|| "empty value".to_owned())
}

/// Builds a generic binary value (used by tests).
#[doc(hidden)]
#[must_use]
pub fn binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(
        clippy::cast_precision_loss,
        reason = "the doubles nearest to 2^53 and ±2^63"
    )]
    fn integers_and_doubles_compare_exactly_and_in_a_total_order() {
        let big = 1_i64 << 53;
        let vals = [
            Bson::Int64(big + 1),
            Bson::Double(big as f64),
            Bson::Int64(big),
            Bson::Double(f64::NAN),
            Bson::Double(f64::INFINITY),
            Bson::Double(f64::NEG_INFINITY),
            Bson::Int64(i64::MAX),
            Bson::Int64(i64::MIN),
            Bson::Double(i64::MAX as f64),
            Bson::Double(i64::MIN as f64),
            Bson::Int32(1),
            Bson::Double(1.5),
            Bson::Double(-0.5),
            Bson::Int32(0),
        ];
        assert_eq!(compare(&vals[0], &vals[1]), Ordering::Greater);
        assert_eq!(compare(&vals[1], &vals[2]), Ordering::Equal);
        assert_eq!(compare(&Bson::Int32(1), &Bson::Double(1.5)), Ordering::Less);
        assert_eq!(
            compare(&Bson::Double(-0.5), &Bson::Int32(0)),
            Ordering::Less
        );
        assert_eq!(compare(&Bson::Int64(i64::MAX), &vals[8]), Ordering::Less);
        assert_eq!(compare(&Bson::Int64(i64::MIN), &vals[9]), Ordering::Equal);
        // Transitive: every triple agrees.
        for a in &vals {
            for b in &vals {
                for c in &vals {
                    if compare(a, b).is_le() && compare(b, c).is_le() {
                        assert!(compare(a, c).is_le(), "{a} <= {b} <= {c}");
                    }
                }
            }
        }
    }
    use bson::doc;

    #[test]
    fn every_type_round_trips_through_a_column() {
        let values = vec![
            Bson::Double(-0.0),
            Bson::Double(f64::NAN),
            Bson::Int32(-5),
            Bson::Int64(i64::MIN),
            Bson::String("héllo".into()),
            Bson::Document(doc! {"a": 1, "b": [1, "x"]}),
            Bson::Array(vec![Bson::Int32(1), Bson::Null]),
            binary(vec![1, 2, 3]),
            Bson::Undefined,
            Bson::ObjectId(ObjectId::new()),
            Bson::Boolean(true),
            Bson::DateTime(DateTime::from_millis(-1)),
            Bson::Null,
            Bson::RegularExpression(bson::Regex {
                pattern: "a.*".try_into().unwrap(),
                options: "i".try_into().unwrap(),
            }),
            Bson::JavaScriptCode("x".into()),
            Bson::Symbol("s".into()),
            Bson::Timestamp(Timestamp {
                time: 7,
                increment: 9,
            }),
            Bson::Decimal128(Decimal128::from_bytes([3; 16])),
            Bson::MinKey,
            Bson::MaxKey,
        ];
        let mut col = Column::new();
        let mut scratch = Vec::new();
        for v in &values {
            push_value(&mut col, v, &mut scratch);
            assert_eq!(value_size(v), raw_payload(v).unwrap().len() as u64, "{v:?}");
        }
        col.push_missing();
        let back: Vec<Option<Bson>> = col.iter().map(|r| to_bson(r).unwrap()).collect();
        assert_eq!(back.len(), values.len() + 1);
        for (a, b) in values.iter().zip(&back) {
            let b = b.as_ref().unwrap();
            match (a, b) {
                (Bson::Double(x), Bson::Double(y)) => assert_eq!(x.to_bits(), y.to_bits()),
                _ => assert_eq!(a, b),
            }
        }
        assert_eq!(back.last(), Some(&None));
    }

    #[test]
    fn r_4_3_4_numbers_compare_across_types() {
        assert_eq!(compare(&Bson::Int32(1), &Bson::Double(1.5)), Ordering::Less);
        assert_eq!(
            compare(&Bson::Int64(2), &Bson::Double(1.5)),
            Ordering::Greater
        );
        assert_eq!(compare(&Bson::Null, &Bson::Int32(0)), Ordering::Less);
        assert_eq!(
            compare(&Bson::String("a".into()), &Bson::Int32(9)),
            Ordering::Greater
        );
        assert_eq!(
            compare(&Bson::Double(f64::NAN), &Bson::Int32(-9)),
            Ordering::Less
        );
    }
}
