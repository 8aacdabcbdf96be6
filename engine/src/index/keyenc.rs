//! Order-preserving encoding of BSON values for the keys of secondary indexes (SPEC §13,
//! `docs/keys.md` "Secondary indexes").
//!
//! An encoded value is a **tag byte** (the canonical type rank, SPEC, shifted by 3)
//! followed by a payload whose bytes sort like the values of that rank sort in
//! [`tscoll_catalog::value::compare`]:
//!
//! | rank | payload |
//! |---|---|
//! | numbers (int32, int64, double, decimal128) | the value as a double, 8 bytes in sortable form (NaN lowest), then a 2-byte correction `int64 − double(int64)` so int64 values beyond 2^53 stay exact |
//! | string, symbol | UTF-8 bytes, `00` escaped as `00 ff`, ended by `00 00` |
//! | object, array, code with scope | raw BSON bytes, escaped and ended as strings: equality only, no meaningful order |
//! | binary | length (u32 BE), subtype, bytes |
//! | ObjectId | 12 bytes |
//! | bool | `00` / `01` |
//! | date | ms since the epoch, sign bit flipped, BE (as `docs/keys.md` times) |
//! | timestamp | seconds (u32 BE), increment (u32 BE) |
//! | regex | pattern and options, each escaped and ended as strings |
//! | code | as a string |
//! | MinKey, undefined, null, DBPointer, MaxKey | nothing (every value of the rank is equal) |
//!
//! Two more tags sort before every value: [`UNKNOWN`] (a bucket whose `control.min`/`max` of
//! the field cannot bound its values: mixed types, arrays, objects; always scanned) and
//! [`ABSENT`] (no value at the path).
//!
//! Every encoding is **prefix-free** (no encoding is a proper prefix of another), so a value
//! followed by more key bytes still sorts by the value first, and inverting every byte (the
//! descending form) exactly reverses the order. Encodings longer than [`MAX_COMPONENT`] bytes
//! are cut there; the cut is monotone (it never reverses two values), and scans apply the same
//! cut to their bounds, so they still find every entry (and filter the extra ones).

use bson::Bson;
use tscoll_catalog::value::canonical_rank;

use crate::storage::keys::time_bytes;

/// Tag of a component whose bucket-level bounds are unknown (mixed types, arrays or objects in
/// `control.min`/`control.max`, SPEC ): scans of measurement fields always read these.
pub(crate) const UNKNOWN: u8 = 0x00;

/// Tag of a component with no value (the path is missing).
pub(crate) const ABSENT: u8 = 0x01;

/// Longest encoding of one value in a key (fjall keys are limited to 64 KiB; a compound index
/// has at most 32 fields, each of at most 2 components).
pub(crate) const MAX_COMPONENT: usize = 512;

/// Tag byte of canonical rank `rank` (-1 ..= 127 → 2 ..= 130).
#[must_use]
pub(crate) fn tag_of_rank(rank: i32) -> u8 {
    u8::try_from(rank + 3).unwrap_or(u8::MAX)
}

/// Tag byte of a value.
#[must_use]
pub(crate) fn tag_of(v: &Bson) -> u8 {
    tag_of_rank(canonical_rank(v))
}

/// The double a number is compared as (catalog `compare`), and the exact correction of an
/// int64 that the double cannot hold.
fn number_image(v: &Bson) -> Option<(f64, i16)> {
    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        reason = "the double image is corrected exactly below"
    )]
    match v {
        Bson::Double(d) => Some((if *d == 0.0 { 0.0 } else { *d }, 0)),
        Bson::Int32(i) => Some((f64::from(*i), 0)),
        Bson::Int64(i) => {
            let f = *i as f64;
            // |i − round(i)| ≤ 512 for every int64; f is integral and within i128.
            let correction = i128::from(*i) - f as i128;
            Some((f, correction as i16))
        }
        Bson::Decimal128(d) => Some((d.to_string().parse::<f64>().unwrap_or(f64::NAN), 0)),
        _ => None,
    }
}

/// A double as 8 bytes that sort like the value; every NaN is `0…0`, below −∞.
fn sortable_f64(f: f64) -> [u8; 8] {
    if f.is_nan() {
        return [0; 8];
    }
    let bits = f.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    };
    ordered.to_be_bytes()
}

/// Appends `bytes` escaped (`00` → `00 ff`) and terminated (`00 00`).
fn push_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// Appends the full encoding of `v` (not cut).
fn encode_full(v: &Bson, out: &mut Vec<u8>) {
    out.push(tag_of(v));
    if let Some((f, correction)) = number_image(v) {
        out.extend_from_slice(&sortable_f64(f));
        out.extend_from_slice(&((correction.cast_unsigned()) ^ 0x8000).to_be_bytes());
        return;
    }
    match v {
        Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => {
            push_escaped(s.as_bytes(), out);
        }
        Bson::Document(d) => {
            let mut raw = Vec::new();
            // Writing a Document into a Vec cannot fail.
            let _ = d.to_writer(&mut raw);
            push_escaped(&raw, out);
        }
        Bson::Array(_) | Bson::JavaScriptCodeWithScope(_) => {
            push_escaped(&tscoll_catalog::value::raw_value_bytes(v), out);
        }
        Bson::Binary(b) => {
            out.extend_from_slice(
                &u32::try_from(b.bytes.len())
                    .unwrap_or(u32::MAX)
                    .to_be_bytes(),
            );
            out.push(u8::from(b.subtype));
            out.extend_from_slice(&b.bytes);
        }
        Bson::ObjectId(o) => out.extend_from_slice(&o.bytes()),
        Bson::Boolean(b) => out.push(u8::from(*b)),
        Bson::DateTime(t) => out.extend_from_slice(&time_bytes(t.timestamp_millis())),
        Bson::Timestamp(t) => {
            out.extend_from_slice(&t.time.to_be_bytes());
            out.extend_from_slice(&t.increment.to_be_bytes());
        }
        Bson::RegularExpression(r) => {
            push_escaped(r.pattern.as_str().as_bytes(), out);
            push_escaped(r.options.as_str().as_bytes(), out);
        }
        // MinKey, MaxKey, undefined, null, DBPointer: the tag says it all.
        _ => {}
    }
}

/// Appends the key encoding of `v`, cut to [`MAX_COMPONENT`] bytes; inverted (every byte
/// complemented) for a descending component.
pub(crate) fn encode(v: &Bson, descending: bool, out: &mut Vec<u8>) {
    let start = out.len();
    encode_full(v, out);
    out.truncate(start + MAX_COMPONENT);
    if descending {
        invert(&mut out[start..]);
    }
}

/// Complements every byte (ascending ↔ descending order).
pub(crate) fn invert(bytes: &mut [u8]) {
    for b in bytes {
        *b = !*b;
    }
}

/// The scan bound of an operand (ascending form): a byte string `b` such that every value
/// `x` with `compare(x, v) ≥ 0` encodes to bytes `≥ b`, and every `x` with `compare(x, v) ≤ 0`
/// encodes to bytes `≤ b` or starting with `b`. For numbers it is the tag and the double alone
/// (so int64 values that compare equal to `v` through their double are inside); otherwise
/// the cut encoding.
#[must_use]
pub(crate) fn bound(v: &Bson) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    if let Some((f, _)) = number_image(v) {
        out.push(tag_of(v));
        out.extend_from_slice(&sortable_f64(f));
        return out;
    }
    encode(v, false, &mut out);
    out
}

/// Whether an operand's rank has a meaningful encoded order (so range scans can use it):
/// not objects, arrays, code with scope or DBPointers.
#[must_use]
pub(crate) fn ordered(v: &Bson) -> bool {
    !matches!(
        v,
        Bson::Document(_) | Bson::Array(_) | Bson::JavaScriptCodeWithScope(_) | Bson::DbPointer(_)
    )
}

/// The smallest byte string greater than every string starting with `prefix`; `None` when
/// there is none (`prefix` is all `ff` or empty).
#[must_use]
pub(crate) fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(&last) = out.last() {
        if last == 0xff {
            out.pop();
        } else {
            if let Some(l) = out.last_mut() {
                *l += 1;
            }
            return Some(out);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use bson::spec::BinarySubtype;
    use bson::{Binary, DateTime, Decimal128, Timestamp, oid::ObjectId};
    use proptest::prelude::*;
    use tscoll_catalog::value::compare;

    use super::*;

    fn enc(v: &Bson) -> Vec<u8> {
        let mut out = Vec::new();
        encode(v, false, &mut out);
        out
    }

    /// Whether catalog `compare` is exact for the pair (it compares an int64 with a double
    /// through the double, which loses precision beyond 2^53).
    fn exact_pair(a: &Bson, b: &Bson) -> bool {
        let big = |v: &Bson| matches!(v, Bson::Int64(i) if i.unsigned_abs() > (1 << 53));
        let float = |v: &Bson| matches!(v, Bson::Double(_) | Bson::Decimal128(_));
        !((big(a) && float(b)) || (big(b) && float(a)))
    }

    fn number() -> impl Strategy<Value = Bson> {
        prop_oneof![
            any::<i32>().prop_map(Bson::Int32),
            any::<i64>().prop_map(Bson::Int64),
            (-(1i64 << 53)..(1i64 << 53)).prop_map(Bson::Int64),
            any::<f64>().prop_map(Bson::Double),
            (-1000i32..1000).prop_map(|i| Bson::Double(f64::from(i) / 4.0)),
            (-1000i32..1000).prop_map(Bson::Int32),
            Just(Bson::Double(f64::INFINITY)),
            Just(Bson::Double(f64::NEG_INFINITY)),
            Just(Bson::Double(-0.0)),
            Just(Bson::Int64(i64::MAX)),
            Just(Bson::Int64(i64::MIN)),
        ]
    }

    fn same_rank_pair() -> impl Strategy<Value = (Bson, Bson)> {
        prop_oneof![
            (number(), number()),
            (".{0,6}", ".{0,6}").prop_map(|(a, b)| (Bson::String(a), Bson::String(b))),
            ("[a\\x00b]{0,5}", "[a\\x00b]{0,5}")
                .prop_map(|(a, b)| (Bson::String(a), Bson::Symbol(b))),
            (any::<i64>(), any::<i64>()).prop_map(|(a, b)| (
                Bson::DateTime(DateTime::from_millis(a)),
                Bson::DateTime(DateTime::from_millis(b))
            )),
            (any::<[u8; 12]>(), any::<[u8; 12]>()).prop_map(|(a, b)| (
                Bson::ObjectId(ObjectId::from_bytes(a)),
                Bson::ObjectId(ObjectId::from_bytes(b))
            )),
            (any::<bool>(), any::<bool>()).prop_map(|(a, b)| (Bson::Boolean(a), Bson::Boolean(b))),
            (
                proptest::collection::vec(any::<u8>(), 0..4),
                proptest::collection::vec(any::<u8>(), 0..4)
            )
                .prop_map(|(a, b)| (
                    Bson::Binary(Binary {
                        subtype: BinarySubtype::Generic,
                        bytes: a
                    }),
                    Bson::Binary(Binary {
                        subtype: BinarySubtype::Generic,
                        bytes: b
                    })
                )),
            (any::<(u32, u32)>(), any::<(u32, u32)>()).prop_map(|(a, b)| (
                Bson::Timestamp(Timestamp {
                    time: a.0,
                    increment: a.1
                }),
                Bson::Timestamp(Timestamp {
                    time: b.0,
                    increment: b.1
                })
            )),
        ]
    }

    proptest! {
        /// Encoded bytes sort as `compare` sorts values of one rank (where `compare` is exact).
        #[test]
        fn encoding_order_is_compare_order((a, b) in same_rank_pair()) {
            prop_assume!(exact_pair(&a, &b));
            prop_assert_eq!(enc(&a).cmp(&enc(&b)), compare(&a, &b), "{:?} {:?}", a, b);
        }

        /// Descending encodings sort in the reverse order.
        #[test]
        fn descending_encoding_reverses((a, b) in same_rank_pair()) {
            prop_assume!(exact_pair(&a, &b));
            let (mut x, mut y) = (Vec::new(), Vec::new());
            encode(&a, true, &mut x);
            encode(&b, true, &mut y);
            prop_assert_eq!(x.cmp(&y), compare(&a, &b).reverse());
        }

        /// The scan bound of an operand holds every value it must (see [`bound`]), numbers of
        /// every type included.
        #[test]
        fn bounds_enclose_values((x, v) in same_rank_pair()) {
            let (e, b) = (enc(&x), bound(&v));
            match compare(&x, &v) {
                Ordering::Less => prop_assert!(e < b || e.starts_with(&b)),
                Ordering::Greater => prop_assert!(e >= b),
                Ordering::Equal => prop_assert!(e.starts_with(&b)),
            }
        }

        /// No encoding is a proper prefix of another one of a different value.
        #[test]
        fn prefix_free((a, b) in same_rank_pair()) {
            let (x, y) = (enc(&a), enc(&b));
            if x != y {
                prop_assert!(!x.starts_with(&y) && !y.starts_with(&x));
            }
        }
    }

    #[test]
    fn ranks_sort_by_tag() {
        let values = [
            Bson::MinKey,
            Bson::Undefined,
            Bson::Null,
            Bson::Double(f64::NAN),
            Bson::Double(f64::NEG_INFINITY),
            Bson::Int64(-5),
            Bson::Int32(0),
            Bson::Decimal128("1.5".parse::<Decimal128>().expect("decimal")),
            Bson::Int64(i64::MAX),
            Bson::String(String::new()),
            Bson::String("a".into()),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![1],
            }),
            Bson::ObjectId(ObjectId::from_bytes([0; 12])),
            Bson::Boolean(false),
            Bson::Boolean(true),
            Bson::DateTime(DateTime::from_millis(-1)),
            Bson::DateTime(DateTime::from_millis(0)),
            Bson::Timestamp(Timestamp {
                time: 1,
                increment: 0,
            }),
            Bson::MaxKey,
        ];
        for w in values.windows(2) {
            assert!(enc(&w[0]) < enc(&w[1]), "{:?} < {:?}", w[0], w[1]);
        }
        assert!([UNKNOWN] < [ABSENT] && [ABSENT] < [tag_of(&Bson::MinKey)]);
    }

    #[test]
    fn equal_numbers_of_every_type_encode_equal() {
        let five = [
            Bson::Int32(5),
            Bson::Int64(5),
            Bson::Double(5.0),
            Bson::Decimal128("5".parse::<Decimal128>().expect("decimal")),
        ];
        for v in &five {
            assert_eq!(enc(v), enc(&five[0]), "{v:?}");
        }
        assert_eq!(enc(&Bson::Double(-0.0)), enc(&Bson::Int32(0)));
        // int64 values a double cannot tell apart still sort exactly.
        let big = 1i64 << 60;
        assert!(enc(&Bson::Int64(big)) < enc(&Bson::Int64(big + 1)));
        assert!(enc(&Bson::Int64(big + 1)).starts_with(&bound(&Bson::Int64(big))));
    }

    #[test]
    fn long_values_are_cut() {
        let long = Bson::String("x".repeat(10_000));
        assert_eq!(enc(&long).len(), MAX_COMPONENT);
        let longer = Bson::String("x".repeat(20_000));
        assert!(enc(&long) <= enc(&longer));
    }

    #[test]
    fn successor_of_prefixes() {
        assert_eq!(successor(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(successor(&[1, 0xff]), Some(vec![2]));
        assert_eq!(successor(&[0xff, 0xff]), None);
        assert_eq!(successor(&[]), None);
    }
}
