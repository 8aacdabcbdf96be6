//! control.min / control.max of one field, kept element-wise (SPEC §4.3), which also serves as
//! the field's schema (SPEC §5): a scalar node records the canonical type rank, object and array
//! nodes record their sub-paths.

use std::cmp::Ordering;

use bson::{Bson, Document};
use tscoll_codec::{Column, RowLanes, tag};

use crate::value::{canonical_rank, compare, to_bson, type_code};

/// Per-path minimum and maximum of one field.
#[derive(Clone, Debug, PartialEq)]
pub enum MinMax {
    /// A scalar path: its smallest and largest value so far (first writer wins on ties).
    Scalar(ScalarMinMax),
    /// An object path: one entry per sub-field, in first-appearance order.
    Object(Vec<(String, MinMax)>),
    /// An array path: one entry per position.
    Array(Vec<MinMax>),
}

/// A scalar path's `control.min` and `control.max` (SPEC §4.3, R-4.3.2) in BSON order, in as
/// few bytes as their type allows:
/// every open bucket holds one per field, so at many series their size is most of the
/// catalog's memory (a pair of `Bson` values takes 224 bytes, a pair of doubles 16). Values of
/// one numeric, date or ObjectId type stay unboxed (an `_id` field is ObjectIds); any other
/// type, or a mix of types, is boxed.
#[derive(Clone, Debug, PartialEq)]
pub enum ScalarMinMax {
    /// Doubles only.
    Double(f64, f64),
    /// int32 only.
    Int32(i32, i32),
    /// int64 only.
    Int64(i64, i64),
    /// Dates only (ms since the epoch).
    Date(i64, i64),
    /// ObjectIds only, as their 12 bytes (BSON orders ObjectIds by them).
    ObjectId([u8; 12], [u8; 12]),
    /// Any other values: `(min, max)`.
    Other(Box<(Bson, Bson)>),
}

impl ScalarMinMax {
    /// The min/max of a single scalar value.
    fn new(v: &Bson) -> Self {
        Self::pair(v, v)
    }

    /// `(min, max)` as they are, unboxed when both are of one type that can be.
    fn pair(min: &Bson, max: &Bson) -> Self {
        match (min, max) {
            (Bson::Double(a), Bson::Double(b)) => ScalarMinMax::Double(*a, *b),
            (Bson::Int32(a), Bson::Int32(b)) => ScalarMinMax::Int32(*a, *b),
            (Bson::Int64(a), Bson::Int64(b)) => ScalarMinMax::Int64(*a, *b),
            (Bson::DateTime(a), Bson::DateTime(b)) => {
                ScalarMinMax::Date(a.timestamp_millis(), b.timestamp_millis())
            }
            (Bson::ObjectId(a), Bson::ObjectId(b)) => ScalarMinMax::ObjectId(a.bytes(), b.bytes()),
            _ => ScalarMinMax::Other(Box::new((min.clone(), max.clone()))),
        }
    }

    /// The minimum.
    #[must_use]
    pub fn min(&self) -> Bson {
        self.end(true)
    }

    /// The maximum.
    #[must_use]
    pub fn max(&self) -> Bson {
        self.end(false)
    }

    /// The minimum (`lo`) or the maximum.
    fn end(&self, lo: bool) -> Bson {
        fn pick<T>(lo: bool, a: T, b: T) -> T {
            if lo { a } else { b }
        }
        match self {
            ScalarMinMax::Double(a, b) => Bson::Double(pick(lo, *a, *b)),
            ScalarMinMax::Int32(a, b) => Bson::Int32(pick(lo, *a, *b)),
            ScalarMinMax::Int64(a, b) => Bson::Int64(pick(lo, *a, *b)),
            ScalarMinMax::Date(a, b) => {
                Bson::DateTime(bson::DateTime::from_millis(pick(lo, *a, *b)))
            }
            ScalarMinMax::ObjectId(a, b) => {
                Bson::ObjectId(bson::oid::ObjectId::from_bytes(pick(lo, *a, *b)))
            }
            ScalarMinMax::Other(pair) => pick(lo, &pair.0, &pair.1).clone(),
        }
    }

    /// The BSON type code and canonical rank (SPEC) of the minimum, the type of the
    /// field's values when they are of one type.
    #[must_use]
    pub fn min_type(&self) -> (u8, i32) {
        match self {
            ScalarMinMax::Double(..) => (tag::DOUBLE, 10),
            ScalarMinMax::Int32(..) => (tscoll_codec::tag::INT32, 10),
            ScalarMinMax::Int64(..) => (tscoll_codec::tag::INT64, 10),
            ScalarMinMax::Date(..) => (tag::DATETIME, 45),
            ScalarMinMax::ObjectId(..) => (tag::OBJECT_ID, 35),
            ScalarMinMax::Other(pair) => (type_code(&pair.0), canonical_rank(&pair.0)),
        }
    }

    /// Calls `f` with the minimum, building no heap value.
    pub fn with_min<R>(&self, f: impl FnOnce(&Bson) -> R) -> R {
        match self {
            ScalarMinMax::Other(pair) => f(&pair.0),
            unboxed => f(&unboxed.min()),
        }
    }

    /// Replaces the minimum by `min` (the rounded min time of a new bucket, SPEC ).
    pub(crate) fn set_min(&mut self, min: &Bson) {
        *self = match (&*self, min) {
            (ScalarMinMax::Date(_, hi), Bson::DateTime(t)) => {
                ScalarMinMax::Date(t.timestamp_millis(), *hi)
            }
            _ => ScalarMinMax::Other(Box::new((min.clone(), self.max()))),
        };
    }

    /// Folds the scalar `v` in (SPEC; first writer wins on ties).
    fn update(&mut self, v: &Bson) {
        match (&mut *self, v) {
            (ScalarMinMax::Int32(lo, hi), Bson::Int32(x)) => {
                *lo = (*lo).min(*x);
                *hi = (*hi).max(*x);
            }
            (ScalarMinMax::Int64(lo, hi), Bson::Int64(x)) => {
                *lo = (*lo).min(*x);
                *hi = (*hi).max(*x);
            }
            (ScalarMinMax::Date(lo, hi), Bson::DateTime(x)) => {
                let x = x.timestamp_millis();
                *lo = (*lo).min(x);
                *hi = (*hi).max(x);
            }
            (ScalarMinMax::ObjectId(lo, hi), Bson::ObjectId(x)) => {
                let x = x.bytes();
                *lo = (*lo).min(x);
                *hi = (*hi).max(x);
            }
            (ScalarMinMax::Double(lo, hi), Bson::Double(x)) => {
                // BSON order (NaN first, -0.0 equal to 0.0), as for any other pair.
                if compare(v, &Bson::Double(*lo)) == Ordering::Less {
                    *lo = *x;
                }
                if compare(v, &Bson::Double(*hi)) == Ordering::Greater {
                    *hi = *x;
                }
            }
            (ScalarMinMax::Other(pair), v) => {
                let (min, max) = &mut **pair;
                // Same-type integers and dates compare directly.
                match (&mut *min, &mut *max, v) {
                    (Bson::Int32(lo), Bson::Int32(hi), Bson::Int32(x)) => {
                        *lo = (*lo).min(*x);
                        *hi = (*hi).max(*x);
                        return;
                    }
                    (Bson::Int64(lo), Bson::Int64(hi), Bson::Int64(x)) => {
                        *lo = (*lo).min(*x);
                        *hi = (*hi).max(*x);
                        return;
                    }
                    _ => {}
                }
                if compare(v, min) == Ordering::Less {
                    *min = v.clone();
                }
                if compare(v, max) == Ordering::Greater {
                    *max = v.clone();
                }
            }
            (unboxed, v) => {
                // Another type than the values so far: boxed from now on.
                let mut other = ScalarMinMax::Other(Box::new((unboxed.min(), unboxed.max())));
                other.update(v);
                *self = other;
            }
        }
    }

    /// Folds in rows of one type code `code` given as their lane values, as [`Self::update`]
    /// would fold each (BSON order, first writer wins on ties), without building a value.
    /// Returns `false`, folding nothing, unless the pair holds values of exactly that type.
    fn update_uniform(&mut self, code: u8, ints: &[i64], floats: &[f64]) -> bool {
        match (&mut *self, code) {
            (ScalarMinMax::Double(lo, hi), tag::DOUBLE) => {
                // MongoDB orders NaN before every other number; -0.0 equals 0.0.
                let lt = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
                    (false, false) => a < b,
                    (true, false) => true,
                    _ => false,
                };
                for &x in floats {
                    if lt(x, *lo) {
                        *lo = x;
                    }
                    if lt(*hi, x) {
                        *hi = x;
                    }
                }
            }
            (ScalarMinMax::Int32(lo, hi), tag::INT32) => {
                for &x in ints {
                    // An int32 lane value always fits.
                    let x = i32::try_from(x).unwrap_or_default();
                    *lo = (*lo).min(x);
                    *hi = (*hi).max(x);
                }
            }
            (ScalarMinMax::Int64(lo, hi), tag::INT64)
            | (ScalarMinMax::Date(lo, hi), tag::DATETIME) => {
                if let (Some(&a), Some(&b)) = (ints.iter().min(), ints.iter().max()) {
                    *lo = (*lo).min(a);
                    *hi = (*hi).max(b);
                }
            }
            _ => return false,
        }
        true
    }

    /// Folds in rows of type code `code` (ObjectIds or strings) given as the least and the
    /// greatest of their payloads (`lo`, `hi`: the ObjectId's 12 bytes, the string's UTF-8
    /// bytes; BSON orders both by these bytes, SPEC ), as [`Self::update`] would fold
    /// each value (first writer wins on ties). Returns `false`, folding nothing, unless both
    /// the min and the max are already values of exactly that type and the payloads are valid.
    fn update_uniform_bytes(&mut self, code: u8, lo: &[u8], hi: &[u8]) -> bool {
        if let ScalarMinMax::ObjectId(a, b) = self {
            let (true, Ok(lo), Ok(hi)) = (
                code == tag::OBJECT_ID,
                <[u8; 12]>::try_from(lo),
                <[u8; 12]>::try_from(hi),
            ) else {
                return false;
            };
            *a = (*a).min(lo);
            *b = (*b).max(hi);
            return true;
        }
        let ScalarMinMax::Other(pair) = self else {
            return false;
        };
        let (min, max) = &mut **pair;
        match (code, min, max) {
            (tag::OBJECT_ID, Bson::ObjectId(a), Bson::ObjectId(b)) => {
                let (Ok(lo), Ok(hi)) = (<[u8; 12]>::try_from(lo), <[u8; 12]>::try_from(hi)) else {
                    return false;
                };
                if lo < a.bytes() {
                    *a = bson::oid::ObjectId::from_bytes(lo);
                }
                if hi > b.bytes() {
                    *b = bson::oid::ObjectId::from_bytes(hi);
                }
            }
            (tag::STRING, Bson::String(a), Bson::String(b)) => {
                let (Ok(lo), Ok(hi)) = (std::str::from_utf8(lo), std::str::from_utf8(hi)) else {
                    return false;
                };
                if lo.as_bytes() < a.as_bytes() {
                    lo.clone_into(a);
                }
                if hi.as_bytes() > b.as_bytes() {
                    hi.clone_into(b);
                }
            }
            _ => return false,
        }
        true
    }

    /// Heap bytes held beside the value itself.
    fn heap_bytes(&self) -> usize {
        match self {
            ScalarMinMax::Other(pair) => {
                std::mem::size_of::<(Bson, Bson)>() + scalar_heap(&pair.0) + scalar_heap(&pair.1)
            }
            _ => 0,
        }
    }
}

/// Position of sub-field `name` in `fields`; the one after the previous match (`hint`) is
/// tried first, so a document listing its fields in the path's order is matched in one
/// comparison per field. A match moves `hint` past it.
fn sub_field(fields: &[(String, MinMax)], name: &str, hint: &mut usize) -> Option<usize> {
    let i = match fields.get(*hint) {
        Some((n, _)) if n == name => *hint,
        _ => fields.iter().position(|(n, _)| n == name)?,
    };
    *hint = i + 1;
    Some(i)
}

impl MinMax {
    /// The min/max of a single value.
    #[must_use]
    pub fn new(v: &Bson) -> Self {
        match v {
            Bson::Document(d) => {
                MinMax::Object(d.iter().map(|(k, v)| (k.clone(), MinMax::new(v))).collect())
            }
            Bson::Array(a) => MinMax::Array(a.iter().map(MinMax::new).collect()),
            other => MinMax::Scalar(ScalarMinMax::new(other)),
        }
    }

    /// Rebuilds from stored `control.min.f` and `control.max.f` (SPEC ).
    #[must_use]
    pub fn from_stored(min: &Bson, max: &Bson) -> Self {
        match (min, max) {
            (Bson::Document(a), Bson::Document(b)) => MinMax::Object(
                a.iter()
                    .map(|(k, va)| (k.clone(), MinMax::from_stored(va, b.get(k).unwrap_or(va))))
                    .collect(),
            ),
            (Bson::Array(a), Bson::Array(b)) => MinMax::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, va)| MinMax::from_stored(va, b.get(i).unwrap_or(va)))
                    .collect(),
            ),
            _ => MinMax::Scalar(ScalarMinMax::pair(min, max)),
        }
    }

    /// Whether `v` is schema-compatible with this path (SPEC ): same kind
    /// (object, array, or scalar of the same canonical rank) at every path present in both.
    #[must_use]
    pub fn compatible(&self, v: &Bson) -> bool {
        match (self, v) {
            (MinMax::Object(fields), Bson::Document(d)) => {
                let mut hint = 0;
                d.iter().all(|(k, sub)| {
                    sub_field(fields, k, &mut hint).is_none_or(|i| fields[i].1.compatible(sub))
                })
            }
            (MinMax::Array(items), Bson::Array(a)) => {
                items.iter().zip(a).all(|(node, sub)| node.compatible(sub))
            }
            (MinMax::Scalar(s), v) => {
                !matches!(v, Bson::Document(_) | Bson::Array(_))
                    && s.with_min(|min| {
                        std::mem::discriminant(min) == std::mem::discriminant(v)
                            || canonical_rank(min) == canonical_rank(v)
                    })
            }
            _ => false,
        }
    }

    /// Folds `v` in (SPEC ). A value of another kind than the path (only
    /// reachable for buckets the schema check did not guard) follows for scalars and is
    /// otherwise ignored.
    pub fn update(&mut self, v: &Bson) {
        match (self, v) {
            (MinMax::Object(fields), Bson::Document(d)) => {
                let mut hint = 0;
                for (k, sub) in d {
                    match sub_field(fields, k, &mut hint) {
                        Some(i) => fields[i].1.update(sub),
                        None => fields.push((k.clone(), MinMax::new(sub))),
                    }
                }
            }
            (MinMax::Array(items), Bson::Array(a)) => {
                for (i, sub) in a.iter().enumerate() {
                    match items.get_mut(i) {
                        Some(node) => node.update(sub),
                        None => items.push(MinMax::new(sub)),
                    }
                }
            }
            (MinMax::Scalar(s), v) if !matches!(v, Bson::Document(_) | Bson::Array(_)) => {
                s.update(v);
            }
            _ => {}
        }
    }

    /// Folds in rows of a column all of type `code`, given as their int and float lane
    /// values, as [`MinMax::update`] would fold each (SPEC ); returns
    /// `false`, folding nothing, when this is not a scalar path holding values of exactly
    /// that type (the caller then folds the values one by one).
    pub fn update_uniform(&mut self, code: u8, ints: &[i64], floats: &[f64]) -> bool {
        match self {
            MinMax::Scalar(s) => s.update_uniform(code, ints, floats),
            _ => false,
        }
    }

    /// Folds in rows of one type code `code`, ObjectIds or strings, given as the least and
    /// the greatest of their payload bytes, as [`MinMax::update`] would fold each (SPEC
    /// ); returns `false`, folding nothing, unless this scalar path already
    /// holds only values of exactly that type (the caller then folds the values otherwise).
    pub fn update_uniform_bytes(&mut self, code: u8, lo: &[u8], hi: &[u8]) -> bool {
        match self {
            MinMax::Scalar(s) => s.update_uniform_bytes(code, lo, hi),
            _ => false,
        }
    }

    /// Folds in the rows of `lanes` (rows of `column`, from [`Column::row_lanes`]) as
    /// [`MinMax::update`] folds their values one by one, in row order (SPEC ): a run of
    /// one type from its lanes or its least and greatest bytes, other rows from their least
    /// and greatest value in BSON order.
    pub(crate) fn update_rows(&mut self, column: &Column, lanes: &RowLanes<'_>) {
        let uniform = lanes
            .types
            .first()
            .copied()
            .filter(|&t| lanes.types.iter().all(|&u| u == t));
        let folded = uniform.is_some_and(|t| {
            self.update_uniform(t, lanes.ints, lanes.floats)
                || bytes_bounds(column, lanes, t)
                    .is_some_and(|(lo, hi)| self.update_uniform_bytes(t, lo, hi))
        });
        if !folded && let Some((lo, hi)) = range_bounds(column, lanes) {
            self.update(&lo);
            self.update(&hi);
        }
    }

    /// The `control.min` value of this path.
    #[must_use]
    pub fn min(&self) -> Bson {
        self.render(true)
    }

    /// The `control.max` value of this path.
    #[must_use]
    pub fn max(&self) -> Bson {
        self.render(false)
    }

    fn render(&self, min_side: bool) -> Bson {
        match self {
            MinMax::Scalar(s) => {
                if min_side {
                    s.min()
                } else {
                    s.max()
                }
            }
            MinMax::Object(fields) => {
                let mut d = Document::new();
                for (k, node) in fields {
                    d.insert(k.clone(), node.render(min_side));
                }
                Bson::Document(d)
            }
            MinMax::Array(items) => Bson::Array(items.iter().map(|n| n.render(min_side)).collect()),
        }
    }

    /// Approximate heap bytes held beside the value itself (SPEC ): a boxed scalar pair,
    /// sub-paths' slots and names, strings and binaries.
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        match self {
            MinMax::Scalar(s) => s.heap_bytes(),
            MinMax::Object(fields) => {
                fields.capacity() * std::mem::size_of::<(String, MinMax)>()
                    + fields
                        .iter()
                        .map(|(k, n)| k.capacity() + n.heap_bytes())
                        .sum::<usize>()
            }
            MinMax::Array(items) => {
                items.capacity() * std::mem::size_of::<MinMax>()
                    + items.iter().map(MinMax::heap_bytes).sum::<usize>()
            }
        }
    }
}

fn scalar_heap(v: &Bson) -> usize {
    match v {
        Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => s.len(),
        Bson::Binary(b) => b.bytes.len(),
        _ => 0,
    }
}

/// The least and the greatest payload of the rows of `lanes` (rows of `column`, every one of
/// type `code`, an ObjectId or a string), by their bytes, which is their BSON order (SPEC
/// ); `None` for another type or no rows.
fn bytes_bounds<'c>(
    column: &'c Column,
    lanes: &RowLanes<'_>,
    code: u8,
) -> Option<(&'c [u8], &'c [u8])> {
    if code != tag::OBJECT_ID && code != tag::STRING {
        return None;
    }
    let from = lanes.start;
    let ends = column.ends().get(from.bytes..from.bytes + lanes.bytes)?;
    let mut start = from
        .bytes
        .checked_sub(1)
        .and_then(|i| column.ends().get(i))
        .map_or(0, |&e| e as usize);
    // ObjectIds lie back to back, 12 bytes each: compared as big-endian integers, which is
    // the order of their bytes.
    let last = ends.last().map_or(start, |&e| e as usize);
    if code == tag::OBJECT_ID
        && let Some(all) = column.bytes().get(start..last)
        && all.len() == 12 * ends.len()
    {
        let key = |id: &[u8]| {
            let mut k = [0u8; 16];
            k[..12].copy_from_slice(id);
            u128::from_be_bytes(k)
        };
        let ids = all.chunks_exact(12);
        let lo = ids.clone().min_by_key(|id| key(id))?;
        let hi = ids.max_by_key(|id| key(id))?;
        return Some((lo, hi));
    }
    let mut payloads = ends.iter().map(|&end| {
        let p = column.bytes().get(start..end as usize).unwrap_or_default();
        start = end as usize;
        p
    });
    let first = payloads.next()?;
    let (mut lo, mut hi) = (first, first);
    for p in payloads {
        lo = lo.min(p);
        hi = hi.max(p);
    }
    Some((lo, hi))
}

/// The least and greatest value of the rows of `lanes` (rows of `column`) in BSON order
/// (SPEC ), `None` when they hold no value.
fn range_bounds(column: &Column, lanes: &RowLanes<'_>) -> Option<(Bson, Bson)> {
    let (types, ints, floats, from) = (lanes.types, lanes.ints, lanes.floats, lanes.start);
    let to = from.row + types.len();
    let first = *types.first()?;
    if types.iter().all(|&t| t == first) {
        match first {
            tag::MISSING => return None,
            tag::DOUBLE => {
                // MongoDB orders NaN before every other number.
                let lt = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
                    (false, false) => a < b,
                    (true, false) => true,
                    _ => false,
                };
                let (mut lo, mut hi) = (*floats.first()?, *floats.first()?);
                for &v in floats {
                    if lt(v, lo) {
                        lo = v;
                    }
                    if lt(hi, v) {
                        hi = v;
                    }
                }
                return Some((Bson::Double(lo), Bson::Double(hi)));
            }
            tag::INT32 | tag::INT64 | tag::DATETIME | tag::BOOLEAN => {
                let lo = *ints.iter().min()?;
                let hi = *ints.iter().max()?;
                let lo = to_bson(tscoll_codec::ValueRef::Int(first, lo)).ok()??;
                let hi = to_bson(tscoll_codec::ValueRef::Int(first, hi)).ok()??;
                return Some((lo, hi));
            }
            // ObjectIds order by their bytes, strings by their UTF-8 bytes (SPEC ):
            // only the least and the greatest become values.
            tag::OBJECT_ID | tag::STRING => {
                let (lo, hi) = bytes_bounds(column, lanes, first)?;
                let lo = to_bson(tscoll_codec::ValueRef::Bytes(first, lo)).ok()??;
                let hi = to_bson(tscoll_codec::ValueRef::Bytes(first, hi)).ok()??;
                return Some((lo, hi));
            }
            _ => {}
        }
    }
    let mut bounds: Option<MinMax> = None;
    for v in column.iter_from(from, to) {
        let Ok(Some(b)) = to_bson(v) else { continue };
        match &mut bounds {
            Some(m) => m.update(&b),
            None => bounds = Some(MinMax::new(&b)),
        }
    }
    bounds.map(|m| (m.min(), m.max()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn fold(values: &[Bson]) -> MinMax {
        let mut m = MinMax::new(&values[0]);
        for v in &values[1..] {
            m.update(v);
        }
        m
    }

    #[test]
    fn r_4_3_3_objects_and_arrays_elementwise() {
        let m = fold(&[
            Bson::Document(doc! {"x": 1, "y": 2}),
            Bson::Document(doc! {"x": 2, "y": 1}),
        ]);
        assert_eq!(m.min(), Bson::Document(doc! {"x": 1, "y": 1}));
        assert_eq!(m.max(), Bson::Document(doc! {"x": 2, "y": 2}));
        let b = fold(&[
            bson::bson!([{"x": 3, "y": 4}]),
            bson::bson!([{"x": 4, "y": 3}, 3, 1]),
        ]);
        assert_eq!(b.min(), bson::bson!([{"x": 3, "y": 3}, 3, 1]));
        assert_eq!(b.max(), bson::bson!([{"x": 4, "y": 4}, 3, 1]));
        let e = fold(&[
            Bson::Document(doc! {}),
            Bson::Document(doc! {"x": {"y": 1}}),
        ]);
        assert_eq!(e.min(), Bson::Document(doc! {"x": {"y": 1}}));
    }

    #[test]
    fn r_4_3_4_first_writer_wins_on_ties() {
        let m = fold(&[
            Bson::Double(1.5),
            Bson::Int64(2),
            Bson::Int32(1),
            Bson::Decimal128("2.5".parse().unwrap()),
            Bson::Double(0.5),
        ]);
        assert_eq!(m.min(), Bson::Double(0.5));
        assert_eq!(m.max(), Bson::Decimal128("2.5".parse().unwrap()));
        let t = fold(&[Bson::Int32(1), Bson::Double(1.0)]);
        assert_eq!(t.min(), Bson::Int32(1));
    }

    /// The unboxed pairs keep exactly what a pair of `Bson` values folded by [`compare`] keeps
    /// (first writer wins on ties, NaN and -0.0 included), through changes of type.
    #[test]
    fn unboxed_pairs_fold_as_bson_values_do() {
        use proptest::prelude::*;
        let scalar = prop_oneof![
            prop_oneof![
                Just(f64::NAN),
                Just(-0.0),
                Just(0.0),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                -3.0..3.0f64
            ]
            .prop_map(Bson::Double),
            (-3..3i32).prop_map(Bson::Int32),
            (-3..3i64).prop_map(Bson::Int64),
            (-3..3i64).prop_map(|t| Bson::DateTime(bson::DateTime::from_millis(t))),
            "[ab]".prop_map(Bson::String),
            (0..4u8).prop_map(|b| Bson::ObjectId(bson::oid::ObjectId::from_bytes([b; 12]))),
        ];
        // Runs of one type, so the unboxed pairs are exercised before a change of type.
        let values = proptest::collection::vec((scalar, 1..4usize), 1..12).prop_map(|runs| {
            runs.into_iter()
                .flat_map(|(v, n)| {
                    (0..n).map(move |i| match &v {
                        Bson::Double(x) => Bson::Double(*x + i as f64),
                        Bson::Int32(x) => Bson::Int32(*x - i as i32),
                        Bson::ObjectId(x) => {
                            let mut id = x.bytes();
                            id[11 - i % 12] ^= 0x80;
                            Bson::ObjectId(bson::oid::ObjectId::from_bytes(id))
                        }
                        other => other.clone(),
                    })
                })
                .collect::<Vec<Bson>>()
        });
        proptest!(|(values in values)| {
            let folded = fold(&values);
            let (mut min, mut max) = (values[0].clone(), values[0].clone());
            for v in &values[1..] {
                if compare(v, &min) == Ordering::Less {
                    min = v.clone();
                }
                if compare(v, &max) == Ordering::Greater {
                    max = v.clone();
                }
            }
            // Debug text tells -0.0 from 0.0 and types apart.
            prop_assert_eq!(format!("{:?}", folded.min()), format!("{min:?}"));
            prop_assert_eq!(format!("{:?}", folded.max()), format!("{max:?}"));
            // The minimum's type, read without building it.
            if let MinMax::Scalar(s) = &folded {
                prop_assert_eq!(s.min_type(), (type_code(&min), canonical_rank(&min)));
            }
        });
    }

    /// A run of one type folded from its lanes ([`MinMax::update_uniform`]) keeps exactly
    /// what folding its values one by one keeps (NaN, -0.0 and ties included), and refuses a
    /// run of another type, folding nothing.
    #[test]
    fn a_uniform_run_folds_as_its_values_do() {
        use proptest::prelude::*;
        // Few distinct values, so ties (and -0.0 against 0.0) are common.
        let double = || {
            prop_oneof![
                Just(f64::NAN),
                Just(-0.0),
                Just(0.0),
                Just(1.0),
                Just(-1.0),
                Just(f64::NEG_INFINITY)
            ]
        };
        // (type code of the values before, type code of the run, values before, the run).
        let code = prop_oneof![
            Just(tag::DOUBLE),
            Just(tag::INT32),
            Just(tag::INT64),
            Just(tag::DATETIME)
        ];
        let case = (
            code.clone(),
            code,
            proptest::collection::vec((double(), -2..2i64), 1..4),
            proptest::collection::vec((double(), -2..2i64), 0..8),
        );
        let value = |code: u8, f: f64, i: i64| match code {
            tag::DOUBLE => Bson::Double(f),
            tag::INT32 => Bson::Int32(i as i32),
            tag::INT64 => Bson::Int64(i),
            _ => Bson::DateTime(bson::DateTime::from_millis(i)),
        };
        proptest!(|((first_code, run_code, first, run) in case)| {
            let before: Vec<Bson> = first.iter().map(|&(f, i)| value(first_code, f, i)).collect();
            let mut by_values = fold(&before);
            let mut by_lanes = by_values.clone();
            let ints: Vec<i64> = run.iter().map(|&(_, i)| i).collect();
            let floats: Vec<f64> = run.iter().map(|&(f, _)| f).collect();
            let (ints, floats) = if run_code == tag::DOUBLE {
                (&[][..], &floats[..])
            } else {
                (&ints[..], &[][..])
            };
            let folded = by_lanes.update_uniform(run_code, ints, floats);
            prop_assert_eq!(folded, first_code == run_code);
            if folded {
                for &(f, i) in &run {
                    by_values.update(&value(run_code, f, i));
                }
            }
            // Debug text tells -0.0 from 0.0 and types apart.
            prop_assert_eq!(format!("{by_lanes:?}"), format!("{by_values:?}"));
        });
    }

    /// A run of ObjectIds or strings folded from its least and greatest payload
    /// ([`MinMax::update_uniform_bytes`]) keeps exactly what folding its values one by one
    /// keeps (ties included), and folds nothing over values of another type; folded as rows
    /// of a column ([`MinMax::update_rows`]) it keeps what its values keep.
    #[test]
    fn a_uniform_run_of_bytes_folds_as_its_values_do() {
        use proptest::prelude::*;
        // Few distinct payloads, so ties are common; the code of the values before and of
        // the run.
        let payload = || proptest::collection::vec(0..3u8, 12..=12);
        let code = prop_oneof![Just(tag::OBJECT_ID), Just(tag::STRING), Just(tag::INT32)];
        let case = (
            code.clone(),
            code,
            proptest::collection::vec(payload(), 1..4),
            proptest::collection::vec(payload(), 1..8),
        );
        let value = |code: u8, p: &[u8]| match code {
            tag::OBJECT_ID => Bson::ObjectId(bson::oid::ObjectId::from_bytes(
                <[u8; 12]>::try_from(p).unwrap_or_default(),
            )),
            tag::STRING => Bson::String(p.iter().map(|&b| char::from(b'a' + b)).collect()),
            _ => Bson::Int32(i32::from(p[0])),
        };
        let bytes = |v: &Bson| match v {
            Bson::ObjectId(o) => o.bytes().to_vec(),
            Bson::String(s) => s.as_bytes().to_vec(),
            _ => Vec::new(),
        };
        proptest!(|((first_code, run_code, first, run) in case)| {
            let before: Vec<Bson> = first.iter().map(|p| value(first_code, p)).collect();
            let mut by_values = fold(&before);
            let mut by_payloads = by_values.clone();
            let run: Vec<Bson> = run.iter().map(|p| value(run_code, p)).collect();
            let payloads: Vec<Vec<u8>> = run.iter().map(bytes).collect();
            let (lo, hi) = (payloads.iter().min().unwrap(), payloads.iter().max().unwrap());
            let folded = by_payloads.update_uniform_bytes(run_code, lo, hi);
            prop_assert_eq!(folded, first_code == run_code && run_code != tag::INT32);
            if folded {
                for v in &run {
                    by_values.update(v);
                }
            }
            prop_assert_eq!(format!("{by_payloads:?}"), format!("{by_values:?}"));
            // The run as rows of a column (`update_rows`, which finds the least and greatest
            // payload itself) folds as its values do, whatever the values before.
            let mut column = Column::new();
            for v in &run {
                match v {
                    Bson::Int32(i) => column.push_int(tag::INT32, i64::from(*i)),
                    v => column.push_bytes(run_code, &bytes(v)),
                }
            }
            let mut by_rows = fold(&before);
            by_rows.update_rows(&column, &column.row_lanes(column.row_start(0), run.len()));
            let mut all = fold(&before);
            for v in &run {
                all.update(v);
            }
            prop_assert_eq!(format!("{by_rows:?}"), format!("{all:?}"));
        });
    }

    #[test]
    fn one_typed_scalars_stay_unboxed() {
        assert_eq!(
            fold(&[Bson::Double(2.0), Bson::Double(-1.0)]),
            MinMax::Scalar(ScalarMinMax::Double(-1.0, 2.0))
        );
        assert!(matches!(
            fold(&[Bson::Double(2.0), Bson::Int32(1)]),
            MinMax::Scalar(ScalarMinMax::Other(_))
        ));
        let id = |b: u8| Bson::ObjectId(bson::oid::ObjectId::from_bytes([b; 12]));
        let ids = fold(&[id(5), id(2), id(9)]);
        assert_eq!(
            ids,
            MinMax::Scalar(ScalarMinMax::ObjectId([2; 12], [9; 12]))
        );
        assert_eq!((ids.min(), ids.max()), (id(2), id(9)));
        assert_eq!(ids.heap_bytes(), 0);
        assert!(std::mem::size_of::<MinMax>() <= 32);
    }

    #[test]
    fn r_5_2_schema_changes() {
        let m = MinMax::new(&Bson::String("a".into()));
        assert!(!m.compatible(&Bson::Int32(1)));
        assert!(m.compatible(&Bson::Symbol("b".into())));
        let n = MinMax::new(&Bson::Int32(1));
        assert!(n.compatible(&Bson::Double(2.0)));
        assert!(!n.compatible(&Bson::Null));
        assert!(!n.compatible(&Bson::Document(doc! {})));
        let o = MinMax::new(&Bson::Document(doc! {"a": 1, "b": 1}));
        assert!(o.compatible(&Bson::Document(doc! {"b": 1, "a": 1, "c": "new"})));
        assert!(!o.compatible(&Bson::Document(doc! {"a": "x"})));
        let a = MinMax::new(&bson::bson!([1, 2]));
        assert!(a.compatible(&bson::bson!([3])));
        assert!(a.compatible(&bson::bson!([3, 4, "longer"])));
        assert!(!a.compatible(&bson::bson!(["s"])));
    }
}
