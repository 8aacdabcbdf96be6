//! Rollups: the measurements of a bucket summed up per window of a fixed length (the
//! resolution, ms; windows are `[k · resolution, (k + 1) · resolution)` from the epoch), as
//! MongoDB's schema-design advice for time series keeps a document per minute or hour with
//! pre-aggregated values. Per window: the number of measurements, the times of the first and
//! the last, and per top-level field whose values in the window are all numbers (int32,
//! int64, double): their count and sums (as [`FieldSums`]: integers exactly, doubles
//! compensated), minimum, maximum, and the values of the first and the last measurement.
//! A field with another value in the window (a string, a null, a Decimal128 …) is marked
//! [`FieldRollup::Other`]: a query that needs it reads the bucket instead.
//!
//! The engine keeps the windows of every stored bucket beside it (docs/keys.md, "Rollups"),
//! computed from all its rows whenever they change; queries add up the windows of many
//! buckets. Pure functions, no I/O.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use tscoll_codec::{Column, ValueRef, tag};

use crate::varint::{Reader, put_varint, unzigzag, zigzag};

use crate::sums::{Compensated, FieldSums, read_totals};

/// A number kept by a rollup, typed as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// An int32 value.
    Int32(i32),
    /// An int64 value.
    Int64(i64),
    /// A double value.
    Double(f64),
}

impl Number {
    fn of(v: ValueRef<'_>) -> Option<Number> {
        match v {
            ValueRef::Int(tag::INT32, i) => i32::try_from(i).ok().map(Number::Int32),
            ValueRef::Int(tag::INT64, i) => Some(Number::Int64(i)),
            ValueRef::Float(d) => Some(Number::Double(d)),
            _ => None,
        }
    }

    /// The value as BSON.
    #[must_use]
    pub fn to_bson(self) -> bson::Bson {
        match self {
            Number::Int32(i) => bson::Bson::Int32(i),
            Number::Int64(i) => bson::Bson::Int64(i),
            Number::Double(d) => bson::Bson::Double(d),
        }
    }

    fn type_code(self) -> u8 {
        match self {
            Number::Int32(_) => 1,
            Number::Int64(_) => 2,
            Number::Double(_) => 3,
        }
    }

    /// BSON order (SPEC ): numbers by value across types, NaN before every other
    /// number.
    fn compare(self, other: Number) -> Ordering {
        match (self, other) {
            (Number::Double(a), Number::Double(b)) => cmp_doubles(a, b),
            (Number::Double(a), b) => cmp_double_int(a, b.int()),
            (a, Number::Double(b)) => cmp_double_int(b, a.int()).reverse(),
            (a, b) => a.int().cmp(&b.int()),
        }
    }

    fn int(self) -> i64 {
        match self {
            Number::Int32(i) => i64::from(i),
            Number::Int64(i) => i,
            Number::Double(_) => 0,
        }
    }
}

fn cmp_doubles(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// A double against an integer, exactly (no rounding of the integer to a double).
fn cmp_double_int(d: f64, i: i64) -> Ordering {
    if d.is_nan() {
        return Ordering::Less;
    }
    // 2^63 as a double: every i64 lies in [-2^63, 2^63).
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if d >= TWO_63 {
        return Ordering::Greater;
    }
    if d < -TWO_63 {
        return Ordering::Less;
    }
    let t = d.trunc();
    #[expect(
        clippy::cast_possible_truncation,
        reason = "t is an integer in the i64 range"
    )]
    let ti = t as i64;
    match ti.cmp(&i) {
        Ordering::Equal => {
            if d > t {
                Ordering::Greater
            } else if d < t {
                Ordering::Less
            } else {
                Ordering::Equal
            }
        }
        o => o,
    }
}

/// One field over the measurements of a window that have it, all numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldWindow {
    /// Count and sums of the values (`m2` and `squares` are not kept: zero and `None`).
    pub sums: FieldSums,
    /// Smallest value (BSON order; on a tie the earlier row's).
    pub min: Number,
    /// Largest value (BSON order; on a tie the earlier row's).
    pub max: Number,
    /// The value of the window's first measurement; `None` when it lacks the field.
    pub first: Option<Number>,
    /// The value of the window's last measurement; `None` when it lacks the field.
    pub last: Option<Number>,
}

/// One field of a window.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldRollup {
    /// Every value is a number.
    Numbers(FieldWindow),
    /// Some value is not a number: nothing is kept.
    Other,
}

/// The rollup of one window of one bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowRollup {
    /// Window start (ms since the epoch, a multiple of the resolution).
    pub start: i64,
    /// Measurements in the window (at least one).
    pub count: u64,
    /// Time of the first measurement (the smallest; ms).
    pub first_time: i64,
    /// Time of the last measurement (the greatest; ms).
    pub last_time: i64,
    /// The top-level fields other than the time field that some measurement of the window
    /// has, in the bucket's column order.
    pub fields: Vec<(String, FieldRollup)>,
}

impl WindowRollup {
    /// The field `name`: `None` when no measurement of the window has it.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&FieldRollup> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }
}

/// Per window and field, while computing.
#[derive(Clone)]
struct FieldState {
    sums: FieldSums,
    min: Option<Number>,
    max: Option<Number>,
    first: Option<Number>,
    last: Option<Number>,
    other: bool,
}

impl FieldState {
    const EMPTY: FieldState = FieldState {
        sums: FieldSums {
            count: 0,
            ints: 0,
            floats: Compensated { sum: 0.0, err: 0.0 },
            longs: false,
            doubles: false,
            m2: 0.0,
            squares: None,
        },
        min: None,
        max: None,
        first: None,
        last: None,
        other: false,
    };
}

/// The windows of `resolution_ms` holding rows `0..rows` of a bucket's columns (the time
/// column `time_field` among them, as dates), in window order. Rows without a date in the
/// time column are left out.
///
/// # Panics
/// If `resolution_ms` is not positive.
#[must_use]
pub fn rollup_windows(
    rows: usize,
    columns: &[(String, Column)],
    time_field: &str,
    resolution_ms: i64,
) -> Vec<WindowRollup> {
    assert!(resolution_ms > 0, "a rollup resolution is positive");
    let Some((_, time)) = columns.iter().find(|(n, _)| n == time_field) else {
        return Vec::new();
    };
    // The window slot of each row (u32::MAX: no time), windows in order of appearance.
    let mut slots: Vec<u32> = Vec::with_capacity(rows);
    let mut by_start: BTreeMap<i64, u32> = BTreeMap::new();
    let mut windows: Vec<(WindowRollup, usize, usize)> = Vec::new(); // (window, first row, last row)
    let mut last: Option<(i64, u32)> = None;
    for (row, v) in time.iter().take(rows).enumerate() {
        let ValueRef::Int(tag::DATETIME, t) = v else {
            slots.push(u32::MAX);
            continue;
        };
        let start = t.div_euclid(resolution_ms) * resolution_ms;
        let slot = match last {
            Some((s, slot)) if s == start => slot,
            _ => {
                let next = u32::try_from(windows.len()).unwrap_or(u32::MAX);
                let slot = *by_start.entry(start).or_insert(next);
                if slot == next {
                    windows.push((
                        WindowRollup {
                            start,
                            count: 0,
                            first_time: t,
                            last_time: t,
                            fields: Vec::new(),
                        },
                        row,
                        row,
                    ));
                }
                last = Some((start, slot));
                slot
            }
        };
        slots.push(slot);
        let (w, first_row, last_row) = &mut windows[slot as usize];
        w.count += 1;
        if t < w.first_time {
            w.first_time = t;
            *first_row = row;
        }
        if t >= w.last_time {
            w.last_time = t;
            *last_row = row;
        }
    }
    let mut states = vec![FieldState::EMPTY; windows.len()];
    for (name, column) in columns {
        if name == time_field {
            continue;
        }
        states.fill(FieldState::EMPTY);
        let mut seen = vec![false; windows.len()];
        for (row, v) in column.iter().take(rows).enumerate() {
            let Some(&slot) = slots.get(row).filter(|s| **s != u32::MAX) else {
                continue;
            };
            if matches!(v, ValueRef::Missing) {
                continue;
            }
            let slot = slot as usize;
            seen[slot] = true;
            let s = &mut states[slot];
            let Some(n) = Number::of(v) else {
                s.other = true;
                continue;
            };
            if s.other {
                continue;
            }
            match n {
                Number::Int32(i) => s.sums.ints += i128::from(i),
                Number::Int64(i) => {
                    s.sums.ints += i128::from(i);
                    s.sums.longs = true;
                }
                Number::Double(d) => {
                    s.sums.floats.add(d);
                    s.sums.doubles = true;
                }
            }
            s.sums.count += 1;
            if s.min.is_none_or(|m| n.compare(m) == Ordering::Less) {
                s.min = Some(n);
            }
            if s.max.is_none_or(|m| n.compare(m) == Ordering::Greater) {
                s.max = Some(n);
            }
            let (_, first_row, last_row) = windows[slot];
            if row == first_row {
                s.first = Some(n);
            }
            if row == last_row {
                s.last = Some(n);
            }
        }
        for (slot, ((w, _, _), s)) in windows.iter_mut().zip(&states).enumerate() {
            if !seen[slot] {
                continue;
            }
            let field = match (s.other, s.min, s.max) {
                (false, Some(min), Some(max)) => FieldRollup::Numbers(FieldWindow {
                    sums: s.sums,
                    min,
                    max,
                    first: s.first,
                    last: s.last,
                }),
                _ => FieldRollup::Other,
            };
            w.fields.push((name.clone(), field));
        }
    }
    let mut out: Vec<WindowRollup> = windows.into_iter().map(|(w, _, _)| w).collect();
    out.sort_unstable_by_key(|w| w.start);
    out
}

/// Version byte of the encoding.
const VERSION: u8 = 1;
/// Flag bits of a field's entry (docs/format.md, "Rollup rows").
const OTHER: u8 = 1;
const INT32S: u8 = 2;
const INT64S: u8 = 4;
const DOUBLES: u8 = 8;
const OWN_COUNT: u8 = 16;
const FIRST: u8 = 32;
const LAST: u8 = 64;

impl WindowRollup {
    /// The stored form of the window (its start is in the key, not here).
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 24 * self.fields.len());
        out.push(VERSION);
        put_varint(&mut out, u128::from(self.count));
        put_varint(&mut out, u128::from(self.first_time.abs_diff(self.start)));
        put_varint(
            &mut out,
            u128::from(self.last_time.abs_diff(self.first_time)),
        );
        put_varint(&mut out, self.fields.len() as u128);
        for (name, field) in &self.fields {
            put_varint(&mut out, name.len() as u128);
            out.extend_from_slice(name.as_bytes());
            let FieldRollup::Numbers(f) = field else {
                out.push(OTHER);
                continue;
            };
            let values = [Some(f.min), Some(f.max), f.first, f.last];
            let mut flags = 0;
            for n in values.iter().flatten() {
                flags |= match n {
                    Number::Int32(_) => INT32S,
                    Number::Int64(_) => INT64S,
                    Number::Double(_) => DOUBLES,
                };
            }
            if f.sums.doubles {
                flags |= DOUBLES;
            }
            if f.sums.longs {
                flags |= INT64S;
            }
            if f.sums.ints != 0 && flags & (INT32S | INT64S) == 0 {
                flags |= INT32S;
            }
            if f.sums.count != self.count {
                flags |= OWN_COUNT;
            }
            if f.first.is_some() {
                flags |= FIRST;
            }
            if f.last.is_some() {
                flags |= LAST;
            }
            out.push(flags);
            if flags & OWN_COUNT != 0 {
                put_varint(&mut out, u128::from(f.sums.count));
            }
            if flags & (INT32S | INT64S) != 0 {
                put_varint(&mut out, zigzag(f.sums.ints));
            }
            if flags & DOUBLES != 0 {
                out.extend_from_slice(&f.sums.floats.sum.to_le_bytes());
                out.extend_from_slice(&f.sums.floats.err.to_le_bytes());
            }
            let single = (flags & (INT32S | INT64S | DOUBLES)).count_ones() == 1;
            for n in values.iter().flatten() {
                if !single {
                    out.push(n.type_code());
                }
                match *n {
                    Number::Int32(i) => put_varint(&mut out, zigzag(i128::from(i))),
                    Number::Int64(i) => put_varint(&mut out, zigzag(i128::from(i))),
                    Number::Double(d) => out.extend_from_slice(&d.to_le_bytes()),
                }
            }
        }
        out
    }

    /// Reads the stored form of the window starting at `start`.
    ///
    /// # Errors
    /// A message when the bytes are not a window's encoding.
    pub fn decode(start: i64, bytes: &[u8]) -> Result<WindowRollup, String> {
        let bad = |what: &str| format!("rollup row: {what}");
        let mut r = Reader::new(bytes, "rollup row");
        if r.byte()? != VERSION {
            return Err(bad("unknown version"));
        }
        let count = u64::try_from(r.varint()?).map_err(|_| bad("bad count"))?;
        let first_time = u64::try_from(r.varint()?)
            .ok()
            .and_then(|d| start.checked_add_unsigned(d))
            .ok_or_else(|| bad("bad first time"))?;
        let last_time = u64::try_from(r.varint()?)
            .ok()
            .and_then(|d| first_time.checked_add_unsigned(d))
            .ok_or_else(|| bad("bad last time"))?;
        let n = r.varint()?;
        // Each field takes at least two bytes.
        if n > r.left() as u128 / 2 {
            return Err(bad("more fields than bytes"));
        }
        let mut fields = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let len = usize::try_from(r.varint()?).map_err(|_| bad("bad name length"))?;
            let name = std::str::from_utf8(r.take(len)?)
                .map_err(|_| bad("a name is not UTF-8"))?
                .to_owned();
            let flags = r.byte()?;
            if flags == OTHER {
                fields.push((name, FieldRollup::Other));
                continue;
            }
            let types = flags & (INT32S | INT64S | DOUBLES);
            if flags & (OTHER | 128) != 0 || types == 0 {
                return Err(bad("bad flags"));
            }
            let field_count = if flags & OWN_COUNT != 0 {
                u64::try_from(r.varint()?).map_err(|_| bad("bad count"))?
            } else {
                count
            };
            let (ints, floats) =
                read_totals(&mut r, flags & (INT32S | INT64S) != 0, flags & DOUBLES != 0)?;
            let single = types.count_ones() == 1;
            let number = |r: &mut Reader<'_>| -> Result<Number, String> {
                let ty = if single {
                    match types {
                        INT32S => 1,
                        INT64S => 2,
                        _ => 3,
                    }
                } else {
                    r.byte()?
                };
                Ok(match ty {
                    1 => Number::Int32(
                        i32::try_from(unzigzag(r.varint()?)).map_err(|_| bad("bad int32"))?,
                    ),
                    2 => Number::Int64(
                        i64::try_from(unzigzag(r.varint()?)).map_err(|_| bad("bad int64"))?,
                    ),
                    3 => Number::Double(r.f64()?),
                    _ => return Err(bad("bad number type")),
                })
            };
            let min = number(&mut r)?;
            let max = number(&mut r)?;
            let first = if flags & FIRST != 0 {
                Some(number(&mut r)?)
            } else {
                None
            };
            let last = if flags & LAST != 0 {
                Some(number(&mut r)?)
            } else {
                None
            };
            fields.push((
                name,
                FieldRollup::Numbers(FieldWindow {
                    sums: FieldSums {
                        count: field_count,
                        ints,
                        floats,
                        longs: flags & INT64S != 0,
                        doubles: flags & DOUBLES != 0,
                        m2: 0.0,
                        squares: None,
                    },
                    min,
                    max,
                    first,
                    last,
                }),
            ));
        }
        if r.pos != bytes.len() {
            return Err(bad("bytes after the last field"));
        }
        Ok(WindowRollup {
            start,
            count,
            first_time,
            last_time,
            fields,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(values: &[Option<ValueRef<'_>>]) -> Column {
        let mut c = Column::new();
        for v in values {
            c.push(v.unwrap_or(ValueRef::Missing));
        }
        c
    }

    #[test]
    fn windows_count_sum_and_pick_first_and_last_by_time() {
        let t = |ms| Some(ValueRef::Int(tag::DATETIME, ms));
        let i = |v| Some(ValueRef::Int(tag::INT32, v));
        // Rows out of time order; window 0 = [0, 1000), window 1 = [1000, 2000).
        let columns = vec![
            (
                "t".to_owned(),
                column(&[t(1500), t(200), t(100), t(1999), t(100)]),
            ),
            ("v".to_owned(), column(&[i(5), i(7), None, i(-3), i(9)])),
            (
                "s".to_owned(),
                column(&[
                    None,
                    Some(ValueRef::Bytes(tag::STRING, b"x\0")),
                    None,
                    None,
                    None,
                ]),
            ),
        ];
        let w = rollup_windows(5, &columns, "t", 1000);
        assert_eq!(w.len(), 2);
        assert_eq!(
            (w[0].start, w[0].count, w[0].first_time, w[0].last_time),
            (0, 3, 100, 200)
        );
        let Some(FieldRollup::Numbers(v)) = w[0].field("v") else {
            panic!("v is numbers")
        };
        assert_eq!((v.sums.count, v.sums.ints), (2, 16));
        assert_eq!((v.min, v.max), (Number::Int32(7), Number::Int32(9)));
        // The first measurement (time 100, row 2) lacks v; the last (time 200) has 7.
        assert_eq!((v.first, v.last), (None, Some(Number::Int32(7))));
        assert_eq!(w[0].field("s"), Some(&FieldRollup::Other));
        assert_eq!(
            (w[1].start, w[1].count, w[1].first_time, w[1].last_time),
            (1000, 2, 1500, 1999)
        );
        assert_eq!(w[1].field("s"), None);
        for win in &w {
            assert_eq!(
                WindowRollup::decode(win.start, &win.encode()),
                Ok(win.clone())
            );
        }
    }

    #[test]
    fn doubles_and_integers_compare_exactly() {
        assert_eq!(
            Number::Double(f64::NAN).compare(Number::Int32(-5)),
            Ordering::Less
        );
        assert_eq!(
            Number::Double(2.5).compare(Number::Int64(2)),
            Ordering::Greater
        );
        assert_eq!(
            Number::Int64(3).compare(Number::Double(3.0)),
            Ordering::Equal
        );
        assert_eq!(
            Number::Int64(i64::MAX).compare(Number::Double(9_223_372_036_854_775_808.0)),
            Ordering::Less
        );
        assert_eq!(
            Number::Int32(-1).compare(Number::Double(-0.5)),
            Ordering::Less
        );
    }

    #[test]
    fn decoding_bad_bytes_returns_errors() {
        let columns = vec![
            (
                "t".to_owned(),
                column(&[Some(ValueRef::Int(tag::DATETIME, 5))]),
            ),
            ("v".to_owned(), column(&[Some(ValueRef::Float(1.5))])),
        ];
        let bytes = rollup_windows(1, &columns, "t", 60_000)[0].encode();
        for cut in 0..bytes.len() {
            assert!(
                WindowRollup::decode(0, &bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(WindowRollup::decode(0, &longer).is_err());
        assert!(WindowRollup::decode(i64::MAX, &bytes).is_err());
    }
}
