//! Sum statistics of a bucket's fields, kept beside `control.min`/`control.max` so that
//! `$sum`, `$avg`, `$count` of a field and `$stdDevPop`/`$stdDevSamp` over whole buckets are
//! answered without decoding them (docs/format.md, "Bucket sums").
//!
//! Per top-level field, over its int32, int64 and double values (a field holding a
//! Decimal128 has no sums: such buckets are decoded): the number of values, the sum of the
//! integers exactly (128 bits), the sum of the doubles compensated (Neumaier), whether some
//! value is an int64 and some a double (the type of MongoDB's `$sum`), and the sum of squared
//! deviations from the mean (`M2`, Welford's, merged with Chan's formula) for the standard
//! deviations. Only committed rows are counted: the sums of a stored part are those of
//! the rows its `control.count` counts. This goes beyond MongoDB's control (SPEC
//! answers only counts, minima and maxima from control; docs/semantics.md).

use tscoll_codec::{Column, Lane, tag};

use crate::varint::{Reader, put_varint, unzigzag, zigzag};

/// A double sum with its running compensation (Neumaier's variant of Kahan summation): the
/// sum of many doubles with about the error of adding them in exact arithmetic and
/// rounding once.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Compensated {
    /// The running sum.
    pub sum: f64,
    /// The rounding error lost from `sum` so far.
    pub err: f64,
}

impl Compensated {
    /// Adds `x`.
    pub fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if t.is_finite() {
            if self.sum.abs() >= x.abs() {
                self.err += (self.sum - t) + x;
            } else {
                self.err += (x - t) + self.sum;
            }
        }
        self.sum = t;
    }

    /// Adds another compensated sum.
    pub fn merge(&mut self, other: Compensated) {
        self.add(other.sum);
        self.err += other.err;
    }

    /// The sum, rounded once.
    #[must_use]
    pub fn value(self) -> f64 {
        if self.sum.is_finite() {
            self.sum + self.err
        } else {
            self.sum
        }
    }
}

/// The sum statistics of one field over some rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldSums {
    /// Numeric values (int32, int64, double).
    pub count: u64,
    /// Sum of the int32 and int64 values, exact.
    pub ints: i128,
    /// Sum of the double values.
    pub floats: Compensated,
    /// Whether some value is an int64.
    pub longs: bool,
    /// Whether some value is a double.
    pub doubles: bool,
    /// Sum of the squared deviations of the values (as doubles) from their mean.
    pub m2: f64,
    /// Sum of the squares of the values, exact, while every value is an integer and it
    /// fits in 128 bits (stored instead of `m2` when `m2` follows from it exactly).
    pub squares: Option<u128>,
}

impl Default for FieldSums {
    fn default() -> Self {
        FieldSums {
            count: 0,
            ints: 0,
            floats: Compensated::default(),
            longs: false,
            doubles: false,
            m2: 0.0,
            squares: Some(0),
        }
    }
}

impl FieldSums {
    /// The sum of the values as a double: the integer sum rounded once, plus the doubles.
    #[must_use]
    #[expect(clippy::cast_precision_loss, reason = "a sum is a double")]
    pub fn sum(&self) -> f64 {
        let mut total = self.floats;
        total.add(self.ints as f64);
        total.value()
    }

    /// The mean of the values; `None` without values.
    #[must_use]
    #[expect(clippy::cast_precision_loss, reason = "a mean is a double")]
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum() / self.count as f64)
    }

    /// Adds the statistics of other rows (Chan et al.'s pairwise update of `m2`).
    #[expect(clippy::cast_precision_loss, reason = "counts as doubles")]
    pub fn merge(&mut self, other: &FieldSums) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *other;
            return;
        }
        let (na, nb) = (self.count as f64, other.count as f64);
        let delta = other.mean().unwrap_or(0.0) - self.mean().unwrap_or(0.0);
        self.m2 += other.m2 + delta * delta * na * nb / (na + nb);
        self.count += other.count;
        self.ints += other.ints;
        self.floats.merge(other.floats);
        self.longs |= other.longs;
        self.doubles |= other.doubles;
        self.squares = self
            .squares
            .zip(other.squares)
            .and_then(|(a, b)| a.checked_add(b));
    }

    /// `m2` computed exactly from the integer sums, `(n·Σx² − (Σx)²) / n`, rounded once;
    /// `None` when a value is a double or a product passes 128 bits.
    #[must_use]
    #[expect(clippy::cast_precision_loss, reason = "a deviation is a double")]
    pub fn exact_m2(&self) -> Option<f64> {
        if self.doubles || self.count == 0 {
            return None;
        }
        let n = u128::from(self.count);
        let scaled = n.checked_mul(self.squares?)?;
        let sum = self.ints.unsigned_abs();
        let num = scaled.checked_sub(sum.checked_mul(sum)?)?;
        Some(num as f64 / n as f64)
    }

    /// The statistics of rows `from..to` of `column`; `None` when one of them is a
    /// Decimal128 (not summed here).
    #[must_use]
    pub fn of_rows(column: &Column, from: usize, to: usize) -> Option<FieldSums> {
        // The lanes of the rows, walked by type code (no value is built).
        let (types, ints, floats) = column.lanes_of_rows(from, to.min(column.len()));
        // Rows all int32 or all int64 (the usual integer field) are summed exactly, with `m2`
        // from the exact sums: no per-value division.
        if let Some(&first) = types.first()
            && types.iter().all(|&t| t == first)
        {
            match first {
                tag::INT32 | tag::INT64 => {
                    if let Some(s) = Self::of_ints(ints, first == tag::INT64) {
                        return Some(s);
                    }
                }
                // Rows of one type that is not a number (dates, ObjectIds, strings): none
                // is summed.
                tag::DOUBLE | tag::DECIMAL128 => {}
                _ => return Some(FieldSums::default()),
            }
        }
        Self::of_lanes(types, ints, floats)
    }

    /// The statistics of `values`, every one an int32 (`longs` false) or an int64: `m2` is
    /// [`FieldSums::exact_m2`]; `None` when a product passes 128 bits (the general walk
    /// then gives `m2` by Welford's update).
    fn of_ints(values: &[i64], longs: bool) -> Option<FieldSums> {
        let (mut ints, mut squares) = (0i128, 0u128);
        for &v in values {
            ints += i128::from(v);
            squares = squares.checked_add(u128::from(v.unsigned_abs()).pow(2))?;
        }
        let mut s = FieldSums {
            count: values.len() as u64,
            ints,
            longs,
            squares: Some(squares),
            ..FieldSums::default()
        };
        s.m2 = if s.count == 0 { 0.0 } else { s.exact_m2()? };
        Some(s)
    }

    /// The statistics of rows given by their type codes and lanes, walked value by value.
    fn of_lanes(types: &[u8], ints: &[i64], floats: &[f64]) -> Option<FieldSums> {
        let mut s = FieldSums::default();
        if types.contains(&tag::DECIMAL128) {
            return None;
        }
        let (mut ints, mut floats) = (ints.iter(), floats.iter());
        // Welford's running mean over the values as doubles, for m2.
        let mut mean = 0.0;
        for &ty in types {
            #[expect(clippy::cast_precision_loss, reason = "deviations are doubles")]
            let x = match Lane::of(ty) {
                Some(Lane::Int) => {
                    let Some(&i) = ints.next() else { break };
                    if ty != tag::INT32 && ty != tag::INT64 {
                        continue;
                    }
                    s.ints += i128::from(i);
                    s.longs |= ty == tag::INT64;
                    let square = i128::from(i) * i128::from(i);
                    s.squares = s.squares.and_then(|q| q.checked_add(square.unsigned_abs()));
                    i as f64
                }
                Some(Lane::Float) => {
                    let Some(&d) = floats.next() else { break };
                    s.floats.add(d);
                    s.doubles = true;
                    s.squares = None;
                    d
                }
                _ => continue,
            };
            s.count += 1;
            #[expect(clippy::cast_precision_loss, reason = "counts as doubles")]
            let n = s.count as f64;
            let delta = x - mean;
            mean += delta / n;
            s.m2 += delta * (x - mean);
        }
        Some(s)
    }
}

/// The sum statistics of a bucket: entry `i` is the bucket's field `i` (in the order of
/// `control.min`); a field past the end has no numeric value; `None` marks a field with a
/// Decimal128 value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BucketSums {
    /// Per field, in column order.
    pub fields: Vec<Option<FieldSums>>,
}

/// Version byte of the encoding.
const VERSION: u8 = 1;
/// Flag bits of a field's entry.
const UNKNOWN: u8 = 1;
const LONGS: u8 = 2;
const DOUBLES: u8 = 4;
const INTS: u8 = 8;
/// The field's count is not the bucket's `control.count` (it is stored).
const OWN_COUNT: u8 = 16;
const M2: u8 = 32;
/// The field has values (an entry of 0 has none).
const VALUES: u8 = 64;
/// The exact sum of squares stands for `m2` (every value an integer).
const SQUARES: u8 = 128;

impl BucketSums {
    /// Adds the statistics of rows `from..to` of the bucket's columns (column `i` is field
    /// `i`).
    pub fn add_rows(&mut self, columns: &[Column], from: usize, to: usize) {
        if self.fields.len() < columns.len() {
            self.fields
                .resize(columns.len(), Some(FieldSums::default()));
        }
        for (slot, column) in self.fields.iter_mut().zip(columns) {
            if let Some(s) = slot {
                match FieldSums::of_rows(column, from, to) {
                    Some(part) => s.merge(&part),
                    None => *slot = None,
                }
            }
        }
    }

    /// The statistics of field `i`: `None` when it has a Decimal128; no values past the end.
    #[must_use]
    pub fn field(&self, i: usize) -> Option<FieldSums> {
        self.fields
            .get(i)
            .copied()
            .unwrap_or(Some(FieldSums::default()))
    }

    /// The stored form (docs/format.md, "Bucket sums"); `count` is the bucket's
    /// `control.count`, which most fields' counts equal and need not repeat.
    #[must_use]
    pub fn encode(&self, count: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(2 + 12 * self.fields.len());
        out.push(VERSION);
        put_varint(&mut out, self.fields.len() as u128);
        for f in &self.fields {
            let Some(f) = f else {
                out.push(UNKNOWN);
                continue;
            };
            let mut flags = VALUES;
            if f.longs {
                flags |= LONGS;
            }
            if f.doubles {
                flags |= DOUBLES;
            }
            if f.ints != 0 {
                flags |= INTS;
            }
            if f.count != count && f.count != 0 {
                flags |= OWN_COUNT;
            }
            let squares = f.squares.filter(|_| f.exact_m2().is_some());
            if squares.is_some() {
                flags |= SQUARES;
            } else if f.m2 != 0.0 {
                flags |= M2;
            }
            if f.count == 0 {
                out.push(0);
                continue;
            }
            out.push(flags);
            if flags & OWN_COUNT != 0 {
                put_varint(&mut out, u128::from(f.count));
            }
            if flags & INTS != 0 {
                put_varint(&mut out, zigzag(f.ints));
            }
            if flags & DOUBLES != 0 {
                out.extend_from_slice(&f.floats.sum.to_le_bytes());
                out.extend_from_slice(&f.floats.err.to_le_bytes());
            }
            if let Some(q) = squares {
                put_varint(&mut out, q);
            } else if flags & M2 != 0 {
                out.extend_from_slice(&f.m2.to_le_bytes());
            }
        }
        out
    }

    /// Reads the stored form; `count` is the bucket's `control.count`.
    ///
    /// # Errors
    /// A message when the bytes are not an encoding of sums.
    pub fn decode(bytes: &[u8], count: u64) -> Result<BucketSums, String> {
        let mut r = Reader::new(bytes, "bucket sums");
        if r.byte()? != VERSION {
            return Err("bucket sums: unknown version".to_owned());
        }
        let n = r.varint()?;
        // Each field takes at least one byte: a count past the bytes left is corrupt.
        if n > r.left() as u128 {
            return Err("bucket sums: more fields than bytes".to_owned());
        }
        let mut fields = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let flags = r.byte()?;
            if flags & UNKNOWN != 0 {
                fields.push(None);
                continue;
            }
            if flags == 0 {
                fields.push(Some(FieldSums::default()));
                continue;
            }
            if flags & VALUES == 0 || (flags & SQUARES != 0 && flags & (M2 | DOUBLES) != 0) {
                return Err("bucket sums: bad flags".to_owned());
            }
            let count = if flags & OWN_COUNT != 0 {
                u64::try_from(r.varint()?).map_err(|_| "bucket sums: bad count".to_owned())?
            } else {
                count
            };
            let (ints, floats) = read_totals(&mut r, flags & INTS != 0, flags & DOUBLES != 0)?;
            let (m2, squares) = if flags & SQUARES != 0 {
                (0.0, Some(r.varint()?))
            } else if flags & M2 != 0 {
                (r.f64()?, None)
            } else {
                (0.0, None)
            };
            let mut field = FieldSums {
                count,
                ints,
                floats,
                longs: flags & LONGS != 0,
                doubles: flags & DOUBLES != 0,
                m2,
                squares,
            };
            if squares.is_some() {
                field.m2 = field
                    .exact_m2()
                    .ok_or_else(|| "bucket sums: squares past 128 bits".to_owned())?;
            }
            fields.push(Some(field));
        }
        if r.pos != bytes.len() {
            return Err("bucket sums: bytes after the last field".to_owned());
        }
        Ok(BucketSums { fields })
    }
}

/// Reads the exact integer sum (a zigzag varint) when `ints`, then the compensated double sum
/// (two f64 LE) when `doubles`; zero where absent.
pub(crate) fn read_totals(
    r: &mut Reader<'_>,
    ints: bool,
    doubles: bool,
) -> Result<(i128, Compensated), String> {
    let int_sum = if ints { unzigzag(r.varint()?) } else { 0 };
    let floats = if doubles {
        Compensated {
            sum: r.f64()?,
            err: r.f64()?,
        }
    } else {
        Compensated::default()
    };
    Ok((int_sum, floats))
}

#[cfg(test)]
mod tests {
    use bson::Bson;
    use proptest::prelude::*;

    use super::*;

    fn column(values: &[Bson]) -> Column {
        let mut c = Column::new();
        for v in values {
            match v {
                Bson::Int32(i) => c.push_int(tag::INT32, i64::from(*i)),
                Bson::Int64(i) => c.push_int(tag::INT64, *i),
                Bson::Double(d) => c.push_float(*d),
                Bson::String(s) => c.push_bytes(tag::STRING, s.as_bytes()),
                _ => c.push_missing(),
            }
        }
        c
    }

    fn value() -> impl Strategy<Value = Bson> {
        prop_oneof![
            any::<i32>().prop_map(Bson::Int32),
            any::<i64>().prop_map(Bson::Int64),
            (-1e6f64..1e6).prop_map(Bson::Double),
            Just(Bson::String("x".into())),
            Just(Bson::Null),
        ]
    }

    proptest! {
        /// Sums of rows split anywhere and merged equal the sums of all rows: integers
        /// exactly, doubles and m2 to rounding.
        #[test]
        fn split_and_merged_sums_match_the_naive_ones(
            values in proptest::collection::vec(value(), 0..60),
            cut in 0usize..60,
        ) {
            let c = column(&values);
            let cut = cut.min(values.len());
            let mut merged = FieldSums::of_rows(&c, 0, cut).unwrap();
            merged.merge(&FieldSums::of_rows(&c, cut, values.len()).unwrap());
            let nums: Vec<f64> = values.iter().filter_map(|v| match v {
                Bson::Int32(i) => Some(f64::from(*i)),
                #[expect(clippy::cast_precision_loss, reason = "test")]
                Bson::Int64(i) => Some(*i as f64),
                Bson::Double(d) => Some(*d),
                _ => None,
            }).collect();
            let ints: i128 = values.iter().filter_map(|v| match v {
                Bson::Int32(i) => Some(i128::from(*i)),
                Bson::Int64(i) => Some(i128::from(*i)),
                _ => None,
            }).sum();
            prop_assert_eq!(merged.count, nums.len() as u64);
            prop_assert_eq!(merged.ints, ints);
            let doubles: f64 = values.iter().filter_map(|v| v.as_f64()).sum();
            prop_assert!((merged.floats.value() - doubles).abs() <= 1e-6 * (1.0 + doubles.abs()));
            #[expect(clippy::cast_precision_loss, reason = "test")]
            let mean = nums.iter().sum::<f64>() / nums.len().max(1) as f64;
            let m2: f64 = nums.iter().map(|x| (x - mean) * (x - mean)).sum();
            prop_assert!((merged.m2 - m2).abs() <= 1e-9 * (1.0 + m2.abs()), "{} vs {}", merged.m2, m2);
            if let Some(exact) = merged.exact_m2() {
                prop_assert!((exact - m2).abs() <= 1e-9 * (1.0 + m2.abs()), "{} vs {}", exact, m2);
            }
            let bucket = BucketSums { fields: vec![Some(merged), None, Some(FieldSums::default())] };
            for count in [merged.count, merged.count + 1] {
                let bytes = bucket.encode(count);
                let back = BucketSums::decode(&bytes, count).unwrap();
                // The stored form is a fixed point; what it keeps reads back exactly.
                prop_assert_eq!(back.encode(count), bytes);
                let (a, b) = (back.fields[0].unwrap(), merged);
                prop_assert_eq!((a.count, a.ints, a.floats, a.longs, a.doubles), (b.count, b.ints, b.floats, b.longs, b.doubles));
                prop_assert!((a.m2 - b.m2).abs() <= 1e-9 * (1.0 + b.m2.abs()));
                prop_assert_eq!(&back.fields[1..], &bucket.fields[1..]);
            }
        }

        /// A run of int32s, of int64s or of strings (summed without the value-by-value walk)
        /// has the statistics the walk gives: counts and integer sums exactly, `m2` to
        /// rounding; int64 runs near the limits take the walk (their squares pass 128 bits).
        #[test]
        fn integer_runs_sum_as_the_walk_does(
            small in proptest::collection::vec(any::<i32>(), 0..60),
            large in proptest::collection::vec(prop_oneof![any::<i64>(), -1000i64..1000], 0..60),
        ) {
            let runs = [
                column(&small.iter().map(|&v| Bson::Int32(v)).collect::<Vec<_>>()),
                column(&large.iter().map(|&v| Bson::Int64(v)).collect::<Vec<_>>()),
                column(&vec![Bson::String("x".into()); small.len()]),
            ];
            for c in &runs {
                let fast = FieldSums::of_rows(c, 0, c.len()).unwrap();
                let (types, ints, floats) = c.lanes_of_rows(0, c.len());
                let walk = FieldSums::of_lanes(types, ints, floats).unwrap();
                prop_assert_eq!(
                    (fast.count, fast.ints, fast.longs, fast.doubles, fast.squares, fast.floats),
                    (walk.count, walk.ints, walk.longs, walk.doubles, walk.squares, walk.floats)
                );
                prop_assert!((fast.m2 - walk.m2).abs() <= 1e-9 * (1.0 + walk.m2.abs()), "{} vs {}", fast.m2, walk.m2);
            }
        }

        /// Any bytes decode to sums or an error, never a panic.
        #[test]
        fn any_bytes_decode_or_fail(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = BucketSums::decode(&bytes, 7);
        }
    }

    #[test]
    fn compensated_sums_keep_what_plain_sums_lose() {
        let mut c = Compensated::default();
        for x in [1e16, 1.0, -1e16, 1.0] {
            c.add(x);
        }
        assert_eq!(c.value(), 2.0);
        let mut inf = Compensated::default();
        inf.add(f64::INFINITY);
        inf.add(1.0);
        assert_eq!(inf.value(), f64::INFINITY);
    }

    #[test]
    fn a_field_of_zeros_keeps_its_count() {
        let mut c = Column::new();
        c.push_int(tag::INT32, 0);
        let zero = FieldSums::of_rows(&c, 0, 1).unwrap();
        assert_eq!(zero.count, 1);
        let sums = BucketSums {
            fields: vec![Some(FieldSums::default()), Some(zero)],
        };
        for count in [1, 2] {
            assert_eq!(
                BucketSums::decode(&sums.encode(count), count).unwrap(),
                sums
            );
        }
    }

    #[test]
    fn a_decimal_leaves_the_field_without_sums() {
        let mut c = Column::new();
        c.push_int(tag::INT32, 1);
        c.push_bytes(tag::DECIMAL128, &[0; 16]);
        assert_eq!(FieldSums::of_rows(&c, 0, 2), None);
        assert!(FieldSums::of_rows(&c, 0, 1).is_some());
    }
}
