//! Classifying a column chunk into a [`ColumnKind`].

use std::collections::{HashMap, HashSet};

use tscoll_codec::{Column, Lane, tag};

use super::kind::ColumnKind;

/// Largest number of fraction digits looked at.
const MAX_DECIMALS: usize = 10;

/// Largest distance in ulps from a short decimal for a double to count as "noisy".
const NOISE_ULPS: u64 = 16;

/// Share of the floats of a chunk a class needs to decide the kind (a rare outlier does not
/// turn a column of short decimals into "full precision").
const CLASS_SHARE: f64 = 0.02;

/// Share of the intervals equal to the most common one for timestamps to be "regular".
const REGULAR_SHARE: f64 = 0.95;

/// Distinct values (as a share of the values) below which strings are "tags".
const TAG_SHARE: f64 = 0.125;

const POW10: [f64; MAX_DECIMALS + 1] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

/// The class of a chunk, or `None` when it is not measured: no values, values of lanes that
/// do not mix (numbers and strings), or other types (documents, arrays, ObjectIds, ...).
/// `is_time` marks the time field.
#[must_use]
pub fn classify(column: &Column, is_time: bool) -> Option<ColumnKind> {
    let (mut ints, mut floats, mut strings, mut other) = (0usize, 0usize, 0usize, 0usize);
    for &t in column.types() {
        match Lane::of(t) {
            Some(Lane::Int) => ints += 1,
            Some(Lane::Float) => floats += 1,
            Some(Lane::Bytes) if t == tag::STRING => strings += 1,
            Some(Lane::Empty) if t == tag::MISSING || t == tag::NULL => {}
            _ => other += 1,
        }
    }
    if other > 0 || ints + floats + strings == 0 {
        return None;
    }
    if strings > 0 {
        return (ints + floats == 0).then(|| strings_kind(column, strings));
    }
    if is_time {
        return Some(time_kind(column.ints()));
    }
    if floats == 0 {
        return Some(ColumnKind::Integers);
    }
    Some(float_kind(column.floats()))
}

fn time_kind(times: &[i64]) -> ColumnKind {
    let mut counts: HashMap<i64, usize> = HashMap::new();
    for w in times.windows(2) {
        if let [a, b] = w {
            *counts.entry(b.wrapping_sub(*a)).or_default() += 1;
        }
    }
    let intervals = times.len().saturating_sub(1);
    let mode = counts.values().copied().max().unwrap_or(0);
    if intervals == 0 || mode as f64 >= REGULAR_SHARE * intervals as f64 {
        ColumnKind::TimestampsRegular
    } else {
        ColumnKind::TimestampsIrregular
    }
}

/// Class of one double: 0 = ≤ 4 decimals, 1 = 5–10 decimals, 2 = a short decimal plus
/// noise, 3 = full precision.
fn float_class(v: f64) -> usize {
    if !v.is_finite() {
        return 3;
    }
    let mut near = false;
    for (e, &p) in POW10.iter().enumerate() {
        let s = v * p;
        if s.abs() >= 9_007_199_254_740_992.0 {
            break;
        }
        let back = s.round() / p;
        if back.to_bits() == v.to_bits() {
            return usize::from(e > 4);
        }
        if (back.to_bits() ^ v.to_bits()) >> 63 == 0
            && back.to_bits().abs_diff(v.to_bits()) <= NOISE_ULPS
        {
            near = true;
        }
    }
    if near { 2 } else { 3 }
}

fn float_kind(floats: &[f64]) -> ColumnKind {
    let mut counts = [0usize; 4];
    for &v in floats {
        if let Some(c) = counts.get_mut(float_class(v)) {
            *c += 1;
        }
    }
    let threshold = (CLASS_SHARE * floats.len() as f64).max(1.0);
    let class = (0..4)
        .rev()
        .find(|&c| counts.get(c).is_some_and(|&n| n as f64 >= threshold))
        .unwrap_or(0);
    match class {
        0 => ColumnKind::FloatsDec4,
        1 => ColumnKind::FloatsDec5To10,
        2 => ColumnKind::FloatsNoisy,
        _ => ColumnKind::FloatsFull,
    }
}

fn strings_kind(column: &Column, strings: usize) -> ColumnKind {
    let bytes = column.bytes();
    let mut start = 0usize;
    let mut distinct = HashSet::new();
    for &end in column.ends() {
        let end = end as usize;
        distinct.insert(bytes.get(start..end).unwrap_or_default());
        start = end;
    }
    if (distinct.len() as f64) <= TAG_SHARE * strings as f64 || distinct.len() <= 16 {
        ColumnKind::StringsTags
    } else {
        ColumnKind::StringsText
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(values: &[f64]) -> Column {
        let mut c = Column::new();
        values.iter().for_each(|&v| c.push_float(v));
        c
    }

    #[test]
    fn float_classes() {
        assert_eq!(float_class(12.5), 0);
        assert_eq!(float_class(-0.0001), 0);
        assert_eq!(float_class(95.1925585), 1);
        assert_eq!(float_class(1.732_000_000_000_000_2), 2);
        assert_eq!(float_class(0.1 + 0.2), 2);
        assert_eq!(float_class(std::f64::consts::PI), 3);
        assert_eq!(float_class(f64::NAN), 3);
    }

    #[test]
    fn kinds_of_columns() {
        let mut c = floats(&(0..100).map(|i| f64::from(i) / 10.0).collect::<Vec<_>>());
        assert_eq!(classify(&c, false), Some(ColumnKind::FloatsDec4));
        c.push_float(std::f64::consts::E);
        assert_eq!(
            classify(&c, false),
            Some(ColumnKind::FloatsDec4),
            "one outlier"
        );
        for _ in 0..5 {
            c.push_float(std::f64::consts::E);
        }
        assert_eq!(classify(&c, false), Some(ColumnKind::FloatsFull));
        c.push_bytes(tag::STRING, b"x");
        assert_eq!(classify(&c, false), None, "numbers and strings");

        let mut t = Column::new();
        (0..100).for_each(|i| t.push_int(tag::DATETIME, 60_000 * i));
        assert_eq!(classify(&t, true), Some(ColumnKind::TimestampsRegular));
        (0..10).for_each(|i| t.push_int(tag::DATETIME, 7_000_000 + 7 * i * i));
        assert_eq!(classify(&t, true), Some(ColumnKind::TimestampsIrregular));
        assert_eq!(classify(&t, false), Some(ColumnKind::Integers));

        let mut s = Column::new();
        (0..100).for_each(|i| s.push_bytes(tag::STRING, if i % 2 == 0 { b"N" } else { b"S" }));
        assert_eq!(classify(&s, false), Some(ColumnKind::StringsTags));
        let mut s = Column::new();
        (0..100).for_each(|i| s.push_bytes(tag::STRING, format!("event {i}").as_bytes()));
        assert_eq!(classify(&s, false), Some(ColumnKind::StringsText));
        let mut m = Column::new();
        m.push_missing_n(3);
        assert_eq!(classify(&m, false), None);
    }
}
