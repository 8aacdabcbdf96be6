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
use std::ops::Range;

use tscoll_codec::{Column, ValueRef, tag};

use xxhash_rust::xxh3::xxh3_64;

use crate::varint::{Reader, put_varint, unzigzag, zigzag};

use crate::sums::{Compensated, FieldSums};
use crate::value::compare_numbers;

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

    /// BSON order (SPEC ): numbers by value across types, exactly, NaN before every
    /// other number.
    fn compare(self, other: Number) -> Ordering {
        compare_numbers(&self.to_bson(), &other.to_bson())
    }

    fn int(self) -> i64 {
        match self {
            Number::Int32(i) => i64::from(i),
            Number::Int64(i) => i,
            Number::Double(_) => 0,
        }
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

/// A window's measurements, without their fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowHead {
    /// Window start (ms since the epoch, a multiple of the resolution).
    pub start: i64,
    /// Measurements in the window (at least one).
    pub count: u64,
    /// Time of the first measurement (the smallest; ms).
    pub first_time: i64,
    /// Time of the last measurement (the greatest; ms).
    pub last_time: i64,
}

/// The rollup of one window of one bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowRollup {
    /// Start, count and times.
    pub head: WindowHead,
    /// Per field of the bucket's rollup ([`BucketRollup::names`], same positions): `None`
    /// when no measurement of the window has it.
    pub fields: Vec<Option<FieldRollup>>,
}

/// The rollup of one bucket at one resolution: its windows, in window order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BucketRollup {
    /// The top-level fields other than the time field that some measurement of some window
    /// has, in the bucket's column order.
    pub names: Vec<String>,
    /// The windows holding measurements, by start.
    pub windows: Vec<WindowRollup>,
}

impl BucketRollup {
    /// The field `name` of window `w`: `None` when no measurement of the window has it.
    #[must_use]
    pub fn field(&self, w: usize, name: &str) -> Option<&FieldRollup> {
        let j = self.names.iter().position(|n| n == name)?;
        self.windows.get(w)?.fields.get(j)?.as_ref()
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

/// The rollup at `resolution_ms` of rows `0..rows` of a bucket's columns (the time column
/// `time_field` among them, as dates). Rows without a date in the time column are left out.
/// A bucket with a date whose window would start before the smallest date has none (no
/// window).
///
/// # Panics
/// If `resolution_ms` is not positive.
#[must_use]
pub fn bucket_rollup(
    rows: usize,
    columns: &[(String, Column)],
    time_field: &str,
    resolution_ms: i64,
) -> BucketRollup {
    assert!(resolution_ms > 0, "a rollup resolution is positive");
    let Some((_, time)) = columns.iter().find(|(n, _)| n == time_field) else {
        return BucketRollup::default();
    };
    // The window slot of each row (u32::MAX: no time), windows in order of appearance.
    let mut slots: Vec<u32> = Vec::with_capacity(rows);
    let mut by_start: BTreeMap<i64, u32> = BTreeMap::new();
    let mut windows: Vec<(WindowHead, usize, usize)> = Vec::new(); // (window, first row, last row)
    let mut last: Option<(i64, u32)> = None;
    for (row, v) in time.iter().take(rows).enumerate() {
        let ValueRef::Int(tag::DATETIME, t) = v else {
            slots.push(u32::MAX);
            continue;
        };
        let Some(start) = t.div_euclid(resolution_ms).checked_mul(resolution_ms) else {
            // A window starting before the first time there is (a date within one
            // resolution of the smallest): the bucket has no rollup; queries read it.
            return BucketRollup::default();
        };
        let slot = match last {
            Some((s, slot)) if s == start => slot,
            _ => {
                let next = u32::try_from(windows.len()).unwrap_or(u32::MAX);
                let slot = *by_start.entry(start).or_insert(next);
                if slot == next {
                    windows.push((
                        WindowHead {
                            start,
                            count: 0,
                            first_time: t,
                            last_time: t,
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
    let mut names = Vec::new();
    let mut fields: Vec<Vec<Option<FieldRollup>>> = vec![Vec::new(); windows.len()];
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
        if !seen.contains(&true) {
            continue;
        }
        names.push(name.clone());
        for (slot, s) in states.iter().enumerate() {
            let field = match (seen[slot], s.other, s.min, s.max) {
                (false, ..) => None,
                (true, false, Some(min), Some(max)) => Some(FieldRollup::Numbers(FieldWindow {
                    sums: s.sums,
                    min,
                    max,
                    first: s.first,
                    last: s.last,
                })),
                _ => Some(FieldRollup::Other),
            };
            fields[slot].push(field);
        }
    }
    let mut windows: Vec<WindowRollup> = windows
        .into_iter()
        .zip(fields)
        .map(|((head, _, _), fields)| WindowRollup { head, fields })
        .collect();
    windows.sort_unstable_by_key(|w| w.head.start);
    BucketRollup { names, windows }
}

/// Version of the encoding (the first byte's low seven bits).
const VERSION: u8 = 2;
/// The first byte's high bit: the field names are in a names row, not inline.
const NAMES_HASHED: u8 = 0x80;
/// A field's flags (docs/format.md, "Rollup rows"): 0, no measurement of the window has it;
/// OTHER alone, a value is not a number; else the types and what follows.
const ABSENT: u8 = 0;
const OTHER: u8 = 1;
const INT32S: u8 = 2;
const INT64S: u8 = 4;
const DOUBLES: u8 = 8;
const OWN_COUNT: u8 = 16;
const FIRST: u8 = 32;
const LAST: u8 = 64;
const ERR: u8 = 128;
const TYPES: u8 = INT32S | INT64S | DOUBLES;

/// The stored form of a list of field names (a names row, or inline in a bucket rollup):
/// `varint n`, then per name `varint length` and its UTF-8 bytes.
#[must_use]
pub fn encode_names(names: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + names.iter().map(|n| n.len() + 1).sum::<usize>());
    put_varint(&mut out, names.len() as u128);
    for name in names {
        put_varint(&mut out, name.len() as u128);
        out.extend_from_slice(name.as_bytes());
    }
    out
}

/// The hash that names the stored form of a list of field names ([`encode_names`]) in a
/// bucket rollup that does not carry them: the low 32 bits of xxh3-64. (Two lists under one
/// hash are told apart by whoever keeps the names rows: the second is written inline.)
#[must_use]
pub fn names_hash(encoded: &[u8]) -> u32 {
    #[expect(clippy::cast_possible_truncation, reason = "the low 32 bits")]
    let h = xxh3_64(encoded) as u32;
    h
}

/// Reads a list of field names written by [`encode_names`].
///
/// # Errors
/// A message when the bytes are not such a list.
pub fn decode_names(bytes: &[u8]) -> Result<Vec<String>, String> {
    let mut r = Reader::new(bytes, "rollup field names");
    let names = read_names(&mut r)?;
    if r.left() != 0 {
        return Err("rollup field names: bytes after the last name".to_owned());
    }
    Ok(names)
}

fn read_names(r: &mut Reader<'_>) -> Result<Vec<String>, String> {
    let n = r.varint()?;
    // Each name takes at least one byte.
    if n > r.left() as u128 {
        return Err(format!("{}: more names than bytes", r.what));
    }
    let mut names = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let len = usize::try_from(r.varint()?).map_err(|_| format!("{}: bad length", r.what))?;
        let name = std::str::from_utf8(r.take(len)?)
            .map_err(|_| format!("{}: a name is not UTF-8", r.what))?;
        names.push(name.to_owned());
    }
    Ok(names)
}

/// Where the field names of a stored bucket rollup are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RollupNames<'a> {
    /// In the rollup itself, as [`encode_names`] writes them (read with [`decode_names`]).
    Inline(&'a [u8]),
    /// In a names row: the [`names_hash`] of its stored form, and how many names it holds.
    Hashed(u32, usize),
}

fn put_number_raw(out: &mut Vec<u8>, n: Number) {
    match n {
        Number::Int32(i) => put_varint(out, zigzag(i128::from(i))),
        Number::Int64(i) => put_varint(out, zigzag(i128::from(i))),
        Number::Double(d) => out.extend_from_slice(&d.to_le_bytes()),
    }
}

impl Number {
    fn as_i128(self) -> i128 {
        i128::from(self.int())
    }
}

fn field_flags(f: &FieldWindow, window_count: u64) -> u8 {
    let mut flags = 0;
    for n in [Some(f.min), Some(f.max), f.first, f.last].iter().flatten() {
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
    if f.sums.count != window_count {
        flags |= OWN_COUNT;
    }
    if f.first.is_some() {
        flags |= FIRST;
    }
    if f.last.is_some() {
        flags |= LAST;
    }
    if flags & DOUBLES != 0 && f.sums.floats.err.to_bits() != 0 {
        flags |= ERR;
    }
    flags
}

/// The flags of a field's entry in a window of `window_count` measurements.
fn entry_flags(field: Option<&FieldRollup>, window_count: u64) -> u8 {
    match field {
        None => ABSENT,
        Some(FieldRollup::Other) => OTHER,
        Some(FieldRollup::Numbers(f)) => field_flags(f, window_count),
    }
}

/// Writes a field's entry but its flags (`flags`, from [`entry_flags`]).
fn put_entry(out: &mut Vec<u8>, field: Option<&FieldRollup>, flags: u8) {
    let Some(FieldRollup::Numbers(f)) = field else {
        return;
    };
    if flags & OWN_COUNT != 0 {
        put_varint(out, u128::from(f.sums.count));
    }
    let types = flags & TYPES;
    if types == INT32S || types == INT64S {
        // One integer type: every value is at least the minimum.
        let base = i128::from(f.sums.count) * f.min.as_i128();
        put_varint(out, zigzag(f.sums.ints - base));
    } else if flags & (INT32S | INT64S) != 0 {
        put_varint(out, zigzag(f.sums.ints));
    }
    if flags & DOUBLES != 0 {
        out.extend_from_slice(&f.sums.floats.sum.to_le_bytes());
        if flags & ERR != 0 {
            out.extend_from_slice(&f.sums.floats.err.to_le_bytes());
        }
    }
    let others = [Some(f.max), f.first, f.last];
    match types {
        INT32S | INT64S => {
            // One integer type: the minimum, then the others above it.
            let min = f.min.as_i128();
            put_varint(out, zigzag(min));
            for n in others.iter().flatten() {
                #[expect(clippy::cast_sign_loss, reason = "no number is below the minimum")]
                put_varint(out, (n.as_i128() - min) as u128);
            }
        }
        DOUBLES => {
            for n in std::iter::once(&Some(f.min)).chain(&others).flatten() {
                put_number_raw(out, *n);
            }
        }
        _ => {
            for n in std::iter::once(&Some(f.min)).chain(&others).flatten() {
                out.push(n.type_code());
                put_number_raw(out, *n);
            }
        }
    }
}

impl BucketRollup {
    /// The stored form of the rollup at resolution `res` (ms; every window start is a
    /// multiple of it): its names inline, or, with `hashed`, only the [`names_hash`] of
    /// their stored form, which the caller keeps in a names row.
    ///
    /// # Panics
    /// If a window's start is not a multiple of `res`, or a window has another number of
    /// fields than the names.
    #[must_use]
    pub fn encode(&self, res: i64, hashed: Option<u32>) -> Vec<u8> {
        let n = self.names.len();
        let mut out = Vec::with_capacity(16 + self.windows.len() * (8 + 8 * n));
        match hashed {
            Some(h) => {
                out.push(VERSION | NAMES_HASHED);
                out.extend_from_slice(&h.to_le_bytes());
                put_varint(&mut out, n as u128);
            }
            None => {
                out.push(VERSION);
                out.extend_from_slice(&encode_names(&self.names));
            }
        }
        put_varint(&mut out, self.windows.len() as u128);
        // Per window, its fields' flags and the most common of them (its default).
        let flags: Vec<Vec<u8>> = self
            .windows
            .iter()
            .map(|w| {
                assert_eq!(w.fields.len(), n, "one entry per field");
                w.fields
                    .iter()
                    .map(|f| entry_flags(f.as_ref(), w.head.count))
                    .collect()
            })
            .collect();
        let defaults: Vec<u8> = flags.iter().map(|f| most_common(f)).collect();
        let mut prev: Option<i64> = None;
        for (w, &default) in self.windows.iter().zip(&defaults) {
            let h = w.head;
            assert!(
                h.start % res == 0,
                "a window starts at a multiple of the resolution"
            );
            let k = h.start / res;
            match prev {
                None => put_varint(&mut out, zigzag(i128::from(k))),
                Some(p) => put_varint(&mut out, (i128::from(k) - i128::from(p) - 1).unsigned_abs()),
            }
            prev = Some(k);
            put_varint(&mut out, u128::from(h.count));
            put_varint(&mut out, u128::from(h.first_time.abs_diff(h.start)));
            // From the window's last millisecond back to the last measurement.
            let window_end = i128::from(h.start) + i128::from(res) - 1;
            put_varint(
                &mut out,
                (window_end - i128::from(h.last_time)).unsigned_abs(),
            );
            out.push(default);
        }
        // Fields whose entries carry their own flags (else each window's default).
        let own: Vec<bool> = (0..n)
            .map(|j| flags.iter().zip(&defaults).any(|(f, d)| f[j] != *d))
            .collect();
        for chunk in own.chunks(8) {
            out.push(
                chunk
                    .iter()
                    .enumerate()
                    .fold(0u8, |b, (i, &o)| b | (u8::from(o) << i)),
            );
        }
        for j in 0..n {
            for (w, f) in self.windows.iter().zip(&flags) {
                if own[j] {
                    out.push(f[j]);
                }
                put_entry(&mut out, w.fields[j].as_ref(), f[j]);
            }
        }
        out
    }

    /// Reads the stored form of a rollup at resolution `res`; `names` gives the names of a
    /// rollup that does not carry them (from their hash and count).
    ///
    /// # Errors
    /// A message when the bytes are not a rollup's encoding, or what `names` returns.
    pub fn decode(
        res: i64,
        bytes: &[u8],
        names: impl FnOnce(u32, usize) -> Result<Vec<String>, String>,
    ) -> Result<BucketRollup, String> {
        let mut layout = RollupLayout::default();
        let names = match layout.read(res, bytes)? {
            RollupNames::Inline(b) => decode_names(b)?,
            RollupNames::Hashed(h, n) => {
                let names = names(h, n)?;
                if names.len() != n {
                    return Err("rollup row: names row of another length".to_owned());
                }
                names
            }
        };
        let mut windows: Vec<WindowRollup> = layout
            .heads
            .iter()
            .map(|&head| WindowRollup {
                head,
                fields: Vec::with_capacity(names.len()),
            })
            .collect();
        let mut values = Vec::new();
        for j in 0..layout.fields() {
            layout.read_field(bytes, j, &mut values)?;
            for (w, v) in windows.iter_mut().zip(values.drain(..)) {
                w.fields.push(v);
            }
        }
        Ok(BucketRollup { names, windows })
    }
}

/// The most common value of a non-empty list (the smallest on a tie); 0 when empty.
fn most_common(values: &[u8]) -> u8 {
    let mut counts = [0u32; 256];
    for &v in values {
        counts[usize::from(v)] += 1;
    }
    let mut best = 0;
    for v in 0..256 {
        if counts[v] > counts[best] {
            best = v;
        }
    }
    #[expect(clippy::cast_possible_truncation, reason = "below 256")]
    let best = best as u8;
    best
}

/// Where the parts of a stored rollup are, read by [`RollupLayout::read`] so that a query
/// decodes only the fields it needs ([`RollupLayout::read_field`]). Reusable from rollup to
/// rollup.
#[derive(Clone, Debug, Default)]
pub struct RollupLayout {
    /// The windows, by start.
    pub heads: Vec<WindowHead>,
    /// Each window's default flags.
    defaults: Vec<u8>,
    /// Each field's entries: their byte range, and whether they carry their own flags.
    sections: Vec<(Range<usize>, bool)>,
}

impl RollupLayout {
    /// Reads the layout of the stored form of a rollup at resolution `res` (ms, positive):
    /// its windows, where each field's entries are, and where its names are.
    ///
    /// # Errors
    /// A message when the bytes are not a rollup's encoding.
    pub fn read<'a>(&mut self, res: i64, bytes: &'a [u8]) -> Result<RollupNames<'a>, String> {
        let bad = |what: &str| format!("rollup row: {what}");
        self.heads.clear();
        self.defaults.clear();
        self.sections.clear();
        let mut r = Reader::new(bytes, "rollup row");
        let first = r.byte()?;
        if first & !NAMES_HASHED != VERSION {
            return Err(bad("unknown version"));
        }
        let (names, fields) = if first & NAMES_HASHED != 0 {
            let h = u32::from_le_bytes(r.take(4)?.try_into().unwrap_or([0; 4]));
            let n = usize::try_from(r.varint()?).map_err(|_| bad("bad field count"))?;
            (RollupNames::Hashed(h, n), n)
        } else {
            let from = r.pos;
            let names = read_names(&mut r)?;
            (RollupNames::Inline(&bytes[from..r.pos]), names.len())
        };
        // A window head takes at least five bytes; a field at least one bit.
        let windows = r.varint()?;
        if windows > (r.left() / 5) as u128 || fields / 8 > r.left() {
            return Err(bad("more windows or fields than bytes"));
        }
        let mut prev: Option<i64> = None;
        for _ in 0..windows {
            let k = match prev {
                None => i64::try_from(unzigzag(r.varint()?)).ok(),
                Some(p) => i128::try_from(r.varint()?)
                    .ok()
                    .and_then(|d| i128::from(p).checked_add(d)?.checked_add(1))
                    .and_then(|k| i64::try_from(k).ok()),
            }
            .ok_or_else(|| bad("bad window"))?;
            prev = Some(k);
            let start = k.checked_mul(res).ok_or_else(|| bad("bad window"))?;
            let count = u64::try_from(r.varint()?).map_err(|_| bad("bad count"))?;
            let first_time = u64::try_from(r.varint()?)
                .ok()
                .and_then(|d| start.checked_add_unsigned(d))
                .ok_or_else(|| bad("bad first time"))?;
            let back = i128::try_from(r.varint()?).map_err(|_| bad("bad last time"))?;
            let last_time = (i128::from(start) + i128::from(res) - 1)
                .checked_sub(back)
                .and_then(|t| i64::try_from(t).ok())
                .filter(|&t| t >= first_time)
                .ok_or_else(|| bad("bad last time"))?;
            self.heads.push(WindowHead {
                start,
                count,
                first_time,
                last_time,
            });
            self.defaults.push(r.byte()?);
        }
        let own = r.take(fields.div_ceil(8))?;
        for j in 0..fields {
            let own_flags = own[j / 8] & (1 << (j % 8)) != 0;
            let from = r.pos;
            for &default in &self.defaults {
                let flags = if own_flags { r.byte()? } else { default };
                skip_entry(&mut r, flags)?;
            }
            self.sections.push((from..r.pos, own_flags));
        }
        if r.left() != 0 {
            return Err(bad("bytes after the last field"));
        }
        Ok(names)
    }

    /// The number of fields (of names).
    #[must_use]
    pub fn fields(&self) -> usize {
        self.sections.len()
    }

    /// Reads field `j` of the rollup whose layout this is (`bytes`, as given to
    /// [`RollupLayout::read`]) into `out`: per window, the field (`None` when the window
    /// lacks it). `out` is cleared first.
    ///
    /// # Errors
    /// A message when `j` is not a field, or the bytes are not the ones read.
    pub fn read_field(
        &self,
        bytes: &[u8],
        j: usize,
        out: &mut Vec<Option<FieldRollup>>,
    ) -> Result<(), String> {
        out.clear();
        let (range, own_flags) = self
            .sections
            .get(j)
            .ok_or_else(|| "rollup row: no such field".to_owned())?;
        let section = bytes
            .get(range.clone())
            .ok_or_else(|| "rollup row: cut short".to_owned())?;
        let mut r = Reader::new(section, "rollup row");
        for (head, &default) in self.heads.iter().zip(&self.defaults) {
            let flags = if *own_flags { r.byte()? } else { default };
            out.push(read_entry(&mut r, flags, head.count)?);
        }
        if r.left() != 0 {
            return Err("rollup row: bytes after a field's last window".to_owned());
        }
        Ok(())
    }
}

fn read_number(r: &mut Reader<'_>, ty: u8) -> Result<Number, String> {
    let bad = |what: &str| format!("rollup row: {what}");
    Ok(match ty {
        INT32S => {
            Number::Int32(i32::try_from(unzigzag(r.varint()?)).map_err(|_| bad("bad int32"))?)
        }
        INT64S => {
            Number::Int64(i64::try_from(unzigzag(r.varint()?)).map_err(|_| bad("bad int64"))?)
        }
        _ => Number::Double(r.f64()?),
    })
}

/// Steps over a field's entry but its flags (`flags`), checking only that its bytes are
/// there ([`read_entry`] checks the rest when the field is read).
fn skip_entry(r: &mut Reader<'_>, flags: u8) -> Result<(), String> {
    if flags == ABSENT || flags == OTHER {
        return Ok(());
    }
    let types = flags & TYPES;
    let values = 2 + usize::from(flags & FIRST != 0) + usize::from(flags & LAST != 0);
    let mut varints =
        usize::from(flags & OWN_COUNT != 0) + usize::from(flags & (INT32S | INT64S) != 0);
    let mut fixed = 0;
    if flags & DOUBLES != 0 {
        fixed += if flags & ERR != 0 { 16 } else { 8 };
    }
    match types {
        INT32S | INT64S => varints += values,
        DOUBLES => fixed += 8 * values,
        _ => {
            r.skip_varints(varints)?;
            r.take(fixed)?;
            for _ in 0..values {
                match r.byte()? {
                    1 | 2 => r.skip_varints(1)?,
                    _ => {
                        r.take(8)?;
                    }
                }
            }
            return Ok(());
        }
    }
    r.skip_varints(varints)?;
    r.take(fixed)?;
    Ok(())
}

/// Reads a field's entry but its flags (`flags`).
fn read_entry(
    r: &mut Reader<'_>,
    flags: u8,
    window_count: u64,
) -> Result<Option<FieldRollup>, String> {
    let bad = |what: &str| format!("rollup row: {what}");
    match flags {
        ABSENT => return Ok(None),
        OTHER => return Ok(Some(FieldRollup::Other)),
        _ => {}
    }
    let types = flags & TYPES;
    if flags & OTHER != 0 || types == 0 || (flags & ERR != 0 && flags & DOUBLES == 0) {
        return Err(bad("bad flags"));
    }
    let count = if flags & OWN_COUNT != 0 {
        u64::try_from(r.varint()?).map_err(|_| bad("bad count"))?
    } else {
        window_count
    };
    let one_int = types == INT32S || types == INT64S;
    let ints = if flags & (INT32S | INT64S) != 0 {
        unzigzag(r.varint()?)
    } else {
        0
    };
    let floats = if flags & DOUBLES != 0 {
        Compensated {
            sum: r.f64()?,
            err: if flags & ERR != 0 { r.f64()? } else { 0.0 },
        }
    } else {
        Compensated::default()
    };
    let n_values = 2 + usize::from(flags & FIRST != 0) + usize::from(flags & LAST != 0);
    let mut values = [Number::Int32(0); 4];
    match types {
        INT32S | INT64S => {
            let min = unzigzag(r.varint()?);
            for (i, v) in values.iter_mut().enumerate().take(n_values) {
                let n = if i == 0 {
                    min
                } else {
                    i128::try_from(r.varint()?)
                        .ok()
                        .and_then(|d| min.checked_add(d))
                        .ok_or_else(|| bad("bad number"))?
                };
                *v = if types == INT32S {
                    Number::Int32(i32::try_from(n).map_err(|_| bad("bad int32"))?)
                } else {
                    Number::Int64(i64::try_from(n).map_err(|_| bad("bad int64"))?)
                };
            }
        }
        DOUBLES => {
            for v in values.iter_mut().take(n_values) {
                *v = Number::Double(r.f64()?);
            }
        }
        _ => {
            for v in values.iter_mut().take(n_values) {
                let ty = match r.byte()? {
                    1 => INT32S,
                    2 => INT64S,
                    3 => DOUBLES,
                    _ => return Err(bad("bad number type")),
                };
                if types & ty == 0 {
                    return Err(bad("a number of a type not flagged"));
                }
                *v = read_number(r, ty)?;
            }
        }
    }
    let ints = if one_int {
        // Stored above `count` times the minimum.
        i128::from(count)
            .checked_mul(values[0].as_i128())
            .and_then(|base| base.checked_add(ints))
            .ok_or_else(|| bad("bad sum"))?
    } else {
        ints
    };
    let mut next = 2;
    let mut take = |present: bool| {
        present.then(|| {
            next += 1;
            values[next - 1]
        })
    };
    let first = take(flags & FIRST != 0);
    let last = take(flags & LAST != 0);
    let field = FieldWindow {
        sums: FieldSums {
            count,
            ints,
            floats,
            longs: flags & INT64S != 0,
            doubles: flags & DOUBLES != 0,
            m2: 0.0,
            squares: None,
        },
        min: values[0],
        max: values[1],
        first,
        last,
    };
    // Only the flags the encoder writes for these values (so a value read is one it could
    // have written, and writes back the same).
    if field_flags(&field, window_count) != flags {
        return Err(bad("flags that do not match the values"));
    }
    Ok(Some(FieldRollup::Numbers(field)))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn column(values: &[Option<ValueRef<'_>>]) -> Column {
        let mut c = Column::new();
        for v in values {
            c.push(v.unwrap_or(ValueRef::Missing));
        }
        c
    }

    fn no_names(_: u32, _: usize) -> Result<Vec<String>, String> {
        Err("no names row".to_owned())
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
            ("never".to_owned(), column(&[None, None, None, None, None])),
        ];
        let b = bucket_rollup(5, &columns, "t", 1000);
        assert_eq!(b.names, ["v", "s"]);
        let w = &b.windows;
        assert_eq!(w.len(), 2);
        assert_eq!(
            w[0].head,
            WindowHead {
                start: 0,
                count: 3,
                first_time: 100,
                last_time: 200
            }
        );
        let Some(FieldRollup::Numbers(v)) = b.field(0, "v") else {
            panic!("v is numbers")
        };
        assert_eq!((v.sums.count, v.sums.ints), (2, 16));
        assert_eq!((v.min, v.max), (Number::Int32(7), Number::Int32(9)));
        // The first measurement (time 100, row 2) lacks v; the last (time 200) has 7.
        assert_eq!((v.first, v.last), (None, Some(Number::Int32(7))));
        assert_eq!(b.field(0, "s"), Some(&FieldRollup::Other));
        assert_eq!(
            w[1].head,
            WindowHead {
                start: 1000,
                count: 2,
                first_time: 1500,
                last_time: 1999
            }
        );
        assert_eq!(b.field(1, "s"), None);
        assert_eq!(
            BucketRollup::decode(1000, &b.encode(1000, None), no_names),
            Ok(b.clone())
        );
        let names = encode_names(&b.names);
        let h = names_hash(&names);
        let hashed = b.encode(1000, Some(h));
        let lookup = |got: u32, n: usize| {
            assert_eq!((got, n), (h, 2));
            decode_names(&names)
        };
        assert_eq!(BucketRollup::decode(1000, &hashed, lookup), Ok(b.clone()));
        assert!(BucketRollup::decode(1000, &hashed, no_names).is_err());
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
    fn fields_are_read_one_section_at_a_time() {
        let t = |ms| Some(ValueRef::Int(tag::DATETIME, ms));
        let columns = vec![
            ("t".to_owned(), column(&[t(10), t(20), t(70)])),
            (
                "a".to_owned(),
                column(&[
                    Some(ValueRef::Float(1.5)),
                    None,
                    Some(ValueRef::Float(-2.0)),
                ]),
            ),
            (
                "b".to_owned(),
                column(&[
                    Some(ValueRef::Int(tag::INT64, 1 << 40)),
                    Some(ValueRef::Int(tag::INT32, -7)),
                    None,
                ]),
            ),
        ];
        let b = bucket_rollup(3, &columns, "t", 60);
        let bytes = b.encode(60, None);
        let mut layout = RollupLayout::default();
        let mut out = Vec::new();
        let names = layout.read(60, &bytes).expect("layout");
        assert_eq!(names, RollupNames::Inline(&encode_names(&b.names)));
        assert_eq!(
            layout.heads,
            b.windows.iter().map(|w| w.head).collect::<Vec<_>>()
        );
        assert_eq!(layout.fields(), 2);
        layout.read_field(&bytes, 1, &mut out).expect("b");
        assert_eq!(out, [b.windows[0].fields[1].clone(), None]);
        assert!(layout.read_field(&bytes, 2, &mut out).is_err());
        assert!(layout.read_field(&bytes[..3], 1, &mut out).is_err());
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
        let b = bucket_rollup(1, &columns, "t", 60_000);
        for bytes in [b.encode(60_000, None), b.encode(60_000, Some(7))] {
            let names = |_: u32, _: usize| Ok(vec!["v".to_owned()]);
            assert!(BucketRollup::decode(60_000, &bytes, names).is_ok());
            for cut in 0..bytes.len() {
                assert!(
                    BucketRollup::decode(60_000, &bytes[..cut], names).is_err(),
                    "cut at {cut}"
                );
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(BucketRollup::decode(60_000, &longer, names).is_err());
        }
        // Window 5 of a resolution of 1 ms read at a resolution that overflows.
        let b = bucket_rollup(1, &columns, "t", 1);
        let bytes = b.encode(1, None);
        assert!(BucketRollup::decode(1, &bytes, no_names).is_ok());
        assert!(BucketRollup::decode(i64::MAX, &bytes, no_names).is_err());
        assert!(decode_names(&[5, 1]).is_err());
        assert!(decode_names(&[1, 1, 0xff]).is_err());
    }

    fn number() -> impl Strategy<Value = Option<ValueRef<'static>>> {
        prop_oneof![
            Just(None),
            any::<i32>().prop_map(|i| Some(ValueRef::Int(tag::INT32, i64::from(i)))),
            (-100i32..100).prop_map(|i| Some(ValueRef::Int(tag::INT32, i64::from(i)))),
            any::<i64>().prop_map(|i| Some(ValueRef::Int(tag::INT64, i))),
            any::<f64>().prop_map(|d| Some(ValueRef::Float(d))),
            Just(Some(ValueRef::Bytes(tag::STRING, b"s\0"))),
        ]
    }

    proptest! {
        #[test]
        fn rollups_round_trip(
            rows in prop::collection::vec(
                (
                    prop_oneof![
                        4 => (-5_000i64..5_000).prop_map(Some),
                        1 => Just(None),
                        1 => prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(i64::MAX - 1)]
                            .prop_map(Some),
                    ],
                    number(),
                    number(),
                ),
                0..40,
            ),
            res in prop_oneof![Just(1i64), Just(7), Just(1000)],
            hashed in any::<bool>(),
        ) {
            let time = column(
                &rows.iter().map(|(t, _, _)| t.map(|t| ValueRef::Int(tag::DATETIME, t)))
                    .collect::<Vec<_>>(),
            );
            let a = column(&rows.iter().map(|(_, a, _)| *a).collect::<Vec<_>>());
            let b = column(&rows.iter().map(|(_, _, b)| *b).collect::<Vec<_>>());
            let columns = vec![("a".to_owned(), a), ("t".to_owned(), time), ("b".to_owned(), b)];
            let rollup = bucket_rollup(rows.len(), &columns, "t", res);
            let dated = rows.iter().filter(|(t, _, _)| t.is_some()).count() as u64;
            let unrolled = rows
                .iter()
                .filter_map(|(t, _, _)| *t)
                .any(|t| t.div_euclid(res).checked_mul(res).is_none());
            let counted = rollup.windows.iter().map(|w| w.head.count).sum::<u64>();
            prop_assert_eq!(counted, if unrolled { 0 } else { dated });
            let names = encode_names(&rollup.names);
            let h = names_hash(&names);
            let bytes = rollup.encode(res, hashed.then_some(h));
            let back = BucketRollup::decode(res, &bytes, |_, _| decode_names(&names));
            // NaN != NaN: compare the encodings of what came back.
            let back = back.map(|r| r.encode(res, hashed.then_some(h)));
            prop_assert_eq!(back, Ok(bytes));
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = BucketRollup::decode(60_000, &bytes, |_, n| Ok(vec!["x".to_owned(); n.min(4)]));
        }
    }
}
