//! The type stream: one BSON type code per row ([`crate::tag::MISSING`] = no value), which is
//! also the column's presence bitmap.
//!
//! * [`TypeEncoding::Const`]: every row has one type (the common case, including "all
//!   present") → one byte.
//! * [`TypeEncoding::Dict`]: the distinct codes, most frequent first, then the row indices as an
//!   int section (a block of one type costs 2 bytes; two types mixed cost 1 bit per row).
//! * [`TypeEncoding::Runs`]: `(code, run length)` pairs — a few sparse skips cost a few bytes.

use crate::column::Lane;
use crate::format::TypeEncoding;
use crate::ints;
use crate::reader::Reader;
use crate::varint;
use crate::{Error, Result};

fn check_code(code: u8) -> Result<u8> {
    match Lane::of(code) {
        Some(_) => Ok(code),
        None => Err(Error::Corruption(format!("unknown type code {code:#04x}"))),
    }
}

/// Appends the type stream of `types`; returns the encoding chosen.
pub(crate) fn encode(types: &[u8], out: &mut Vec<u8>, scratch: &mut Vec<i64>) -> TypeEncoding {
    let first = types.first().copied().unwrap_or(crate::tag::MISSING);
    if types.iter().all(|&t| t == first) {
        out.push(TypeEncoding::Const.to_code());
        out.push(first);
        return TypeEncoding::Const;
    }
    // Distinct codes by descending frequency, and the run count.
    let mut counts = [0u32; 256];
    let mut runs: Vec<(u8, u64)> = Vec::new();
    for &t in types {
        if let Some(c) = counts.get_mut(usize::from(t)) {
            *c += 1;
        }
        match runs.last_mut() {
            Some((code, len)) if *code == t => *len += 1,
            _ => runs.push((t, 1)),
        }
    }
    let runs_cost = 1
        + varint::len(runs.len() as u64)
        + runs.iter().map(|&(_, l)| 1 + varint::len(l)).sum::<usize>();

    let mut dict: Vec<u8> = (0..=255u8)
        .filter(|&c| counts.get(usize::from(c)).is_some_and(|&n| n > 0))
        .collect();
    dict.sort_by_key(|&c| std::cmp::Reverse(counts.get(usize::from(c)).copied().unwrap_or(0)));
    let mut index_of = [0u8; 256];
    for (i, &c) in dict.iter().enumerate() {
        if let Some(slot) = index_of.get_mut(usize::from(c)) {
            *slot = i as u8;
        }
    }
    let indices: Vec<i64> = types
        .iter()
        .map(|&t| i64::from(index_of.get(usize::from(t)).copied().unwrap_or(0)))
        .collect();
    let (idx_cost, idx_layout) = ints::estimate(&indices, scratch);
    let dict_cost = 2 + dict.len() + idx_cost;

    if runs_cost <= dict_cost {
        out.push(TypeEncoding::Runs.to_code());
        varint::put(out, runs.len() as u64);
        for (code, len) in runs {
            out.push(code);
            varint::put(out, len);
        }
        TypeEncoding::Runs
    } else {
        out.push(TypeEncoding::Dict.to_code());
        out.push(dict.len() as u8);
        out.extend_from_slice(&dict);
        ints::encode_as(&indices, idx_layout, out, scratch);
        TypeEncoding::Dict
    }
}

/// Rows per lane `[empty, int, float, bytes]`.
pub(crate) type LaneCounts = [usize; 4];

fn lane_slot(counts: &mut LaneCounts, code: u8) -> Option<&mut usize> {
    counts.get_mut(match Lane::of(code)? {
        Lane::Empty => 0,
        Lane::Int => 1,
        Lane::Float => 2,
        Lane::Bytes => 3,
    })
}

/// Dictionaries up to this size are counted with one vectorized pass per code.
const COUNT_PER_CODE_MAX: usize = 8;

/// How many of `codes` equal `code`: counted in byte lanes, 255 codes at a time, so the
/// comparison runs 16 codes an instruction even on baseline x86-64.
fn count_equal(codes: &[u8], code: u8) -> usize {
    codes
        .chunks(255)
        .map(|c| {
            let n = c
                .iter()
                .fold(0u8, |n, &t| n.wrapping_add(u8::from(t == code)));
            usize::from(n)
        })
        .sum()
}

/// Reads a type stream of `rows` codes into `out` (cleared first) and returns the rows of
/// each lane (known from the stream's structure, so the codes need no second pass).
///
/// # Errors
/// [`Error::Truncated`] or [`Error::Corruption`] for bad input (including unknown type codes).
pub(crate) fn decode(
    r: &mut Reader<'_>,
    rows: usize,
    out: &mut Vec<u8>,
    scratch: &mut Vec<i64>,
) -> Result<LaneCounts> {
    out.clear();
    let mut counts = [0usize; 4];
    match TypeEncoding::try_from_code(r.u8()?)? {
        TypeEncoding::Const => {
            let code = check_code(r.u8()?)?;
            out.resize(rows, code);
            if let Some(c) = lane_slot(&mut counts, code) {
                *c = rows;
            }
        }
        TypeEncoding::Dict => {
            let k = usize::from(r.u8()?);
            if k < 2 {
                return Err(Error::Corruption(
                    "type dictionary of fewer than 2 codes".to_owned(),
                ));
            }
            let dict = r.bytes(k)?;
            let mut seen = [false; 256];
            for &c in dict {
                check_code(c)?;
                // A repeated code would be counted twice below (the encoder never repeats one).
                match seen.get_mut(usize::from(c)) {
                    Some(s) if !*s => *s = true,
                    _ => {
                        return Err(Error::Corruption(format!(
                            "type code {c:#04x} repeats in the type dictionary"
                        )));
                    }
                }
            }
            scratch.clear();
            ints::decode(r, rows, scratch)?;
            // Every index must name an entry (a negative one is a huge `u64`). Their OR
            // bounds them all in one cheap pass (exact for 2 or 4 entries); else the largest.
            let any = scratch.iter().fold(0u64, |m, &i| m | i as u64);
            if any >= k as u64
                && let Some(bad) = scratch.iter().find(|&&i| i as u64 >= k as u64)
            {
                return Err(Error::Corruption(format!("type index {bad} out of range")));
            }
            let mut table = [0u8; 256];
            for (t, &c) in table.iter_mut().zip(dict) {
                *t = c;
            }
            out.extend(
                scratch
                    .iter()
                    .map(|&i| table.get(i as usize & 0xFF).copied().unwrap_or(0)),
            );
            if k <= COUNT_PER_CODE_MAX {
                for &code in dict {
                    let n = count_equal(out, code);
                    if let Some(c) = lane_slot(&mut counts, code) {
                        *c += n;
                    }
                }
            } else {
                counts = crate::column::lane_counts(out)
                    .ok_or_else(|| Error::Corruption("unknown type code".to_owned()))?;
            }
        }
        TypeEncoding::Runs => {
            let n_runs = r.varint_at_most(rows, "type run count")?;
            out.reserve(rows);
            for _ in 0..n_runs {
                let code = check_code(r.u8()?)?;
                let len = r.varint_at_most(rows - out.len(), "type run length")?;
                if len == 0 {
                    return Err(Error::Corruption("empty type run".to_owned()));
                }
                out.resize(out.len() + len, code);
                if let Some(c) = lane_slot(&mut counts, code) {
                    *c += len;
                }
            }
            if out.len() != rows {
                return Err(Error::Corruption(
                    "type runs do not cover the rows".to_owned(),
                ));
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tag;

    #[test]
    fn count_equal_counts_past_a_byte() {
        let codes: Vec<u8> = (0..2000u32).map(|i| (i % 3) as u8).collect();
        assert_eq!(count_equal(&codes, 0), 667);
        assert_eq!(count_equal(&codes, 2), 666);
        assert_eq!(count_equal(&[7; 600], 7), 600);
        assert_eq!(count_equal(&[], 7), 0);
    }

    #[test]
    fn dict_indices_out_of_range_are_corrupt() {
        for bad in [2i64, -1, 255, i64::MIN] {
            // Two codes, then an int section of 10 indices: all 0 but `bad` at row 7.
            let mut blob = vec![TypeEncoding::Dict.to_code(), 2, tag::INT32, tag::DOUBLE];
            let mut indices = vec![0i64; 10];
            indices[7] = bad;
            ints::encode(&indices, &mut blob, &mut Vec::new());
            let mut out = Vec::new();
            let got = decode(&mut Reader::new(&blob), 10, &mut out, &mut Vec::new());
            assert_eq!(
                got,
                Err(Error::Corruption(format!("type index {bad} out of range")))
            );
        }
    }

    fn round_trip(types: &[u8]) -> (usize, TypeEncoding) {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        let enc = encode(types, &mut out, &mut scratch);
        let mut r = Reader::new(&out);
        let mut back = Vec::new();
        let counts = decode(&mut r, types.len(), &mut back, &mut scratch).unwrap();
        assert_eq!(r.remaining(), 0);
        assert_eq!(back, types);
        assert_eq!(Some(counts), crate::column::lane_counts(types));
        (out.len(), enc)
    }

    #[test]
    fn constant_is_two_bytes() {
        assert_eq!(round_trip(&[tag::DOUBLE; 1000]), (2, TypeEncoding::Const));
        assert_eq!(round_trip(&[]), (2, TypeEncoding::Const));
    }

    #[test]
    fn sparse_skips_are_cheap() {
        let mut t = vec![tag::DOUBLE; 1000];
        for i in [3, 400, 401, 999] {
            t[i] = tag::MISSING;
        }
        let (len, _) = round_trip(&t);
        assert!(len < 24, "{len}");
    }

    #[test]
    fn mixed_two_types_cost_about_a_bit() {
        let t: Vec<u8> = (0..1000u32)
            .map(|i| {
                if (i * 7919) % 3 == 0 {
                    tag::INT32
                } else {
                    tag::DOUBLE
                }
            })
            .collect();
        let (len, enc) = round_trip(&t);
        assert_eq!(enc, TypeEncoding::Dict);
        assert!(len < 1000 / 8 + 30, "{len}");
    }

    #[test]
    fn many_codes_are_counted_per_lane() {
        let codes = [
            tag::MISSING,
            tag::DOUBLE,
            tag::STRING,
            tag::INT32,
            tag::INT64,
            tag::BOOLEAN,
            tag::DATETIME,
            tag::NULL,
            tag::OBJECT_ID,
            tag::DECIMAL128,
            tag::TIMESTAMP,
            tag::BINARY,
        ];
        let t: Vec<u8> = (0..1000usize)
            .map(|i| codes[(i * 7919 + i / 3) % codes.len()])
            .collect();
        let (_, enc) = round_trip(&t);
        assert_eq!(enc, TypeEncoding::Dict);
        let blocks: Vec<u8> = (0..1000usize).map(|i| codes[i / 100]).collect();
        let (_, enc) = round_trip(&blocks);
        assert_eq!(enc, TypeEncoding::Runs);
    }

    #[test]
    fn repeated_dictionary_codes_fail() {
        // Dict of [INT32, INT32], then a constant index section of 0s.
        let mut bytes = vec![TypeEncoding::Dict.to_code(), 2, tag::INT32, tag::INT32];
        ints::encode(&[0; 4], &mut bytes, &mut Vec::new());
        let err = decode(
            &mut Reader::new(&bytes),
            4,
            &mut Vec::new(),
            &mut Vec::new(),
        );
        assert!(matches!(err, Err(Error::Corruption(_))), "{err:?}");
    }

    #[test]
    fn bad_codes_fail() {
        let mut scratch = Vec::new();
        let mut out = Vec::new();
        assert!(decode(&mut Reader::new(&[0, 0x42]), 3, &mut out, &mut scratch).is_err());
        assert!(
            decode(
                &mut Reader::new(&[2, 1, 0x01, 2]),
                3,
                &mut out,
                &mut scratch
            )
            .is_err()
        );
    }
}
