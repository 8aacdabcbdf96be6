//! Sparse int sections ([`IntEncoding::Sparse`], format version 5 and later): residuals that
//! all equal one common value but at a few positions, such as the deltas of a regular clock
//! with a few missed readings, or the deltas of a counter that rarely steps.
//!
//! After the delta transform, residual `j` is `g·(c + d_j)` (wrapping `i64`), where `d_j` is 0
//! except at the `p` exception positions, which are listed with their `d_j` as bit fields of
//! fixed widths: each position as its distance from the previous one, then its difference. A
//! clock with 4 gaps in 1000 readings takes about 25 bytes, where the packed blocks take a
//! width byte, an offset and (for a block with a gap) 16 bytes each; daily closes with their
//! weekends (every fifth delta 3 days instead of 1) take 5 bits a weekend.

use crate::bits;
use crate::bitstream::{BitReader, BitWriter};
use crate::format::IntEncoding;
use crate::ints::gcd;
use crate::reader::Reader;
use crate::varint;
use crate::zigzag;
use crate::{Error, Result};

/// Header bit of the difference width byte: the differences are zigzag-mapped (else every one
/// is positive and stored as it is).
const FLAG_ZIGZAG: u8 = 0x80;

/// The shape of a sparse section, found by [`plan`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Common divisor of the common residual and the exceptions (≥ 1).
    g: u64,
    /// The common residual divided by `g`.
    c: i64,
    /// Exceptions (≥ 1).
    p: usize,
    /// Bits of each position's distance from the previous one.
    skip_width: u32,
    /// Bits of each difference.
    width: u32,
    /// Whether the differences are zigzag-mapped.
    zigzag: bool,
    /// Bytes after the heads: divisor, common value, count, width byte and bit fields.
    pub(crate) size: usize,
}

/// Residuals sampled before counting the exceptions.
const PROBES: usize = 16;

/// Residuals counted between two checks of the exception budget (a branch-free pass each).
const COUNT_BLOCK: usize = 256;

/// `r / g` for a `g` known to divide `r`.
#[inline]
fn quotient(r: i64, g: u64) -> i64 {
    (i128::from(r) / i128::from(g)) as i64
}

/// The sparse layout of the residuals `res` if it takes fewer than `budget` bytes (after the
/// heads), else `None`. Three passes over `res` at most (count, divisor, widths); the count
/// stops as soon as the exceptions could not fit the budget.
pub(crate) fn plan(res: &[i64], budget: usize) -> Option<Plan> {
    let m = res.len();
    if m < 4 {
        return None;
    }
    // The common value, by a vote of three residuals spread over the section.
    let at = |i: usize| res.get(i).copied().unwrap_or_default();
    let (a, b, z) = (at(0), at(m / 2), at(m - 1));
    let c = if a == b || a == z {
        a
    } else if b == z {
        b
    } else {
        return None;
    };
    // Divisor, common value, count and the two width bytes take at least 5 bytes; a
    // difference takes at least a bit.
    let max_p = budget.saturating_sub(5).saturating_mul(8).min(m / 4);
    if max_p == 0 {
        return None;
    }
    // A sample of 16 residuals rejects a dense section before any full pass (at most a
    // quarter may differ: 12 of 16 is far out of line, even for exceptions at a period that
    // the sample's step aliases).
    let step = m / PROBES;
    if step > 0 && (0..PROBES).filter(|&i| at(i * step) != c).count() >= PROBES * 3 / 4 {
        return None;
    }
    let mut p = 0usize;
    for block in res.chunks(COUNT_BLOCK) {
        p += block.iter().filter(|&&r| r != c).count();
        if p > max_p {
            return None;
        }
    }
    if p == 0 {
        return None;
    }
    let g = res
        .iter()
        .filter(|&&r| r != c)
        .fold(c.unsigned_abs(), |g, &r| gcd(g, r.unsigned_abs()));
    let cq = quotient(c, g);
    let (mut any_negative, mut or_plain, mut or_zigzag) = (false, 0u64, 0u64);
    let (mut next, mut or_skip) = (0usize, 0u64);
    for (j, &r) in res.iter().enumerate().filter(|&(_, &r)| r != c) {
        or_skip |= (j - next) as u64;
        next = j + 1;
        let d = quotient(r, g).wrapping_sub(cq);
        any_negative |= d < 0;
        or_plain |= d as u64;
        or_zigzag |= zigzag::encode(d);
    }
    let (width, zigzag) = if any_negative {
        (bits::width_of(or_zigzag), true)
    } else {
        (bits::width_of(or_plain), false)
    };
    let skip_width = bits::width_of(or_skip);
    let size = varint::len(g)
        + varint::len_signed(cq)
        + varint::len(p as u64)
        + 2
        + (p * (skip_width + width) as usize).div_ceil(8);
    (size < budget).then_some(Plan {
        g,
        c: cq,
        p,
        skip_width,
        width,
        zigzag,
        size,
    })
}

/// Appends the sparse section of `seq` (the sequence after the delta transform of `order`),
/// whose residuals `plan` describes.
pub(crate) fn write(seq: &[i64], order: u8, plan: &Plan, out: &mut Vec<u8>) {
    out.push(IntEncoding::Sparse.to_code());
    out.push(order);
    let k = usize::from(order).min(seq.len());
    let (heads, res) = seq.split_at(k);
    for &h in heads {
        varint::put_signed(out, h);
    }
    varint::put(out, plan.g);
    varint::put_signed(out, plan.c);
    varint::put(out, plan.p as u64);
    out.push(plan.skip_width as u8);
    out.push(plan.width as u8 | if plan.zigzag { FLAG_ZIGZAG } else { 0 });
    let common = plan.c.wrapping_mul(plan.g as i64);
    let mut w = BitWriter::new(out);
    let mut next = 0usize;
    for (j, &r) in res.iter().enumerate() {
        if r != common {
            let d = quotient(r, plan.g).wrapping_sub(plan.c);
            w.put((j - next) as u64, plan.skip_width);
            next = j + 1;
            w.put(
                if plan.zigzag {
                    zigzag::encode(d)
                } else {
                    d as u64
                },
                plan.width,
            );
        }
    }
    w.finish();
}

/// Reads the `m` residuals of a sparse section (after its order byte and heads), appending
/// them to `out`.
///
/// # Errors
/// [`Error::Truncated`] or [`Error::Corruption`] for bad input: a zero divisor, an exception
/// count of 0 or above the residuals, a width above 64, a position past the residuals.
pub(crate) fn decode_residuals(r: &mut Reader<'_>, m: usize, out: &mut Vec<i64>) -> Result<()> {
    let g = r.varint()?;
    if g == 0 {
        return Err(Error::Corruption(
            "sparse section with divisor 0".to_owned(),
        ));
    }
    let c = r.varint_signed()?;
    let p = r.varint()?;
    if p == 0 || p > m as u64 {
        return Err(Error::Corruption(format!(
            "sparse section with {p} exceptions among {m} residuals"
        )));
    }
    let p = p as usize;
    let skip_width = u32::from(r.u8()?);
    let header = r.u8()?;
    let width = u32::from(header & !FLAG_ZIGZAG);
    if skip_width > 64 || width > 64 {
        return Err(Error::Corruption(format!(
            "bit widths {skip_width} and {width}"
        )));
    }
    let len = (p as u64 * u64::from(skip_width + width)).div_ceil(8);
    let src = r.bytes(usize::try_from(len).unwrap_or(usize::MAX))?;
    let g = g as i64;
    let start = out.len();
    out.resize(start + m, c.wrapping_mul(g));
    let res = out.get_mut(start..).unwrap_or_default();
    let mut br = BitReader::new(src);
    let mut next = 0u64;
    for _ in 0..p {
        let j = next.saturating_add(br.get(skip_width));
        if j >= m as u64 {
            return Err(Error::Corruption(format!(
                "sparse exception at {j} of {m} residuals"
            )));
        }
        next = j + 1;
        let u = br.get(width);
        let d = if header & FLAG_ZIGZAG != 0 {
            zigzag::decode(u)
        } else {
            u as i64
        };
        if let Some(slot) = res.get_mut(j as usize) {
            *slot = c.wrapping_add(d).wrapping_mul(g);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ints::{self, IntLayout};

    /// Encodes `values` as an int section (estimate, encode and encode_as agree), decodes it
    /// back and returns its size and layout.
    fn round_trip(values: &[i64]) -> (usize, IntLayout) {
        let mut scratch = Vec::new();
        let (est, layout) = ints::estimate(values, &mut scratch);
        let mut out = Vec::new();
        assert_eq!(ints::encode(values, &mut out, &mut scratch), layout);
        let mut again = Vec::new();
        ints::encode_as(values, layout, &mut again, &mut scratch);
        assert_eq!(again, out);
        if layout.encoding == IntEncoding::Sparse {
            assert_eq!(est, out.len(), "the estimate of a sparse section is exact");
        }
        let mut r = Reader::new(&out);
        let mut back = vec![7];
        ints::decode(&mut r, values.len(), &mut back).unwrap();
        assert_eq!(r.remaining(), 0);
        assert_eq!(back.get(1..), Some(values), "{layout:?}");
        (out.len(), layout)
    }

    fn sparse(order: u8) -> IntLayout {
        IntLayout {
            encoding: IntEncoding::Sparse,
            order,
        }
    }

    /// A 5-minute clock in ms with readings missed after the given positions.
    fn clock(n: usize, gaps: &[(usize, i64)]) -> Vec<i64> {
        let mut t = 1_269_424_260_000i64;
        (0..n)
            .map(|i| {
                let v = t;
                t += 300_000 + gaps.iter().find(|g| g.0 == i).map_or(0, |g| g.1);
                v
            })
            .collect()
    }

    #[test]
    fn clock_with_gaps_lists_the_gaps() {
        let ts = clock(
            1000,
            &[(99, 25_560_000), (500, 11_400_000), (731, 5_400_000)],
        );
        let (len, layout) = round_trip(&ts);
        assert_eq!(layout, sparse(1));
        // Code, order, first time (6 bytes), divisor of 1 minute (3 bytes), common delta,
        // count, two widths, then 3 × (9 + 9) bits.
        assert_eq!(len, 22);
    }

    #[test]
    fn regular_weekdays_code_the_weekends_in_a_few_bits() {
        // Daily closes: every fifth delta spans a weekend.
        let day = 86_400_000i64;
        let mut t = 0i64;
        let ts: Vec<i64> = (0..1000)
            .map(|i| {
                let v = t;
                t += if i % 5 == 4 { 3 * day } else { day };
                v
            })
            .collect();
        let (len, layout) = round_trip(&ts);
        assert_eq!(layout, sparse(1));
        // 200 weekends at 3 bits of distance and 2 bits of difference (2 days) each.
        assert!(len <= 140, "{len} bytes");
    }

    /// Plans, writes and reads back the residuals `res` as a sparse section of order 0.
    fn sparse_round_trip(res: &[i64]) {
        let plan = plan(res, usize::MAX).unwrap();
        let mut out = Vec::new();
        write(res, 0, &plan, &mut out);
        assert_eq!(out.len(), 2 + plan.size);
        let mut r = Reader::new(out.get(2..).unwrap());
        let mut back = Vec::new();
        decode_residuals(&mut r, res.len(), &mut back).unwrap();
        assert_eq!(r.remaining(), 0);
        assert_eq!(back, res);
    }

    #[test]
    fn negative_and_extreme_exceptions_round_trip() {
        let mut v = vec![5i64; 600];
        for (i, x) in [
            (1, i64::MIN),
            (3, i64::MAX),
            (77, -5),
            (301, 0),
            (598, i64::MIN + 1),
        ] {
            v[i] = x;
        }
        sparse_round_trip(&v);
        round_trip(&v);
        // A common value of 0 and exceptions at i64::MIN alone: the divisor is 2^63.
        let mut v = vec![0i64; 300];
        v[10] = i64::MIN;
        v[200] = i64::MIN;
        sparse_round_trip(&v);
        assert_eq!(round_trip(&v).1, sparse(0));
        // A common value of i64::MIN and exceptions at i64::MAX, the widest differences.
        let mut v = vec![i64::MIN; 300];
        v[1] = i64::MAX;
        v[298] = -1;
        sparse_round_trip(&v);
        // Steps of a counter: order 1 residuals of 1 with rare jumps backwards (resets).
        let mut c = 0i64;
        let v: Vec<i64> = (0..900)
            .map(|i| {
                c = if i % 301 == 300 { 0 } else { c + 1 };
                c
            })
            .collect();
        assert_eq!(round_trip(&v).1, sparse(1));
    }

    #[test]
    fn dense_or_undecided_sections_are_not_sparse() {
        // A third of the values differ: not sparse.
        let v: Vec<i64> = (0..999).map(|i| if i % 3 == 1 { i } else { 4 }).collect();
        assert!(plan(&v, usize::MAX).is_none());
        // The vote finds no common value.
        let v: Vec<i64> = (0..1000).collect();
        assert!(plan(&v, usize::MAX).is_none());
        // Too short to be worth listing.
        assert!(plan(&[1, 1, 2], usize::MAX).is_none());
        // Smaller than sparse: the budget refuses it.
        let mut v = vec![9i64; 200];
        v[50] = 10;
        let p = plan(&v, usize::MAX).unwrap();
        assert!(plan(&v, p.size).is_none());
        assert!(plan(&v, p.size + 1).is_some());
    }

    /// The sparse section of 10 residuals, 2 of them exceptions, with fields as given.
    fn section(g: u64, p: u64, skip_width: u8, width: u8, fields: &[u8]) -> Vec<u8> {
        let mut b = vec![IntEncoding::Sparse.to_code(), 0];
        varint::put(&mut b, g);
        varint::put_signed(&mut b, 3);
        varint::put(&mut b, p);
        b.push(skip_width);
        b.push(width);
        b.extend_from_slice(fields);
        b
    }

    fn decode10(blob: &[u8], version: u8) -> Result<Vec<i64>> {
        let mut out = Vec::new();
        let mut r = Reader::with_version(blob, version);
        ints::decode(&mut r, 10, &mut out)?;
        Ok(out)
    }

    #[test]
    fn bad_sections_are_errors() {
        // Exceptions after 2 and then 4 more (at 7), differences 1 and 2, 4 bits each.
        let good = section(2, 2, 4, 4, &[0x12, 0x24]);
        assert_eq!(
            decode10(&good, 5).unwrap(),
            vec![6, 6, 8, 6, 6, 6, 6, 10, 6, 6]
        );
        let corrupt = |b: &[u8], v: u8| matches!(decode10(b, v), Err(Error::Corruption(_)));
        assert!(corrupt(&good, 4), "Sparse in a version 4 blob");
        assert!(corrupt(&section(0, 2, 4, 4, &[0x12, 0x24]), 5), "divisor 0");
        assert!(corrupt(&section(2, 0, 4, 4, &[]), 5), "no exceptions");
        assert!(corrupt(&section(2, 11, 4, 4, &[0; 11]), 5), "more than m");
        assert!(corrupt(&section(2, 2, 65, 4, &[0; 20]), 5), "skip width");
        assert!(
            corrupt(&section(2, 2, 4, 65 | FLAG_ZIGZAG, &[0; 20]), 5),
            "width"
        );
        // The second exception at 2 + 1 + 8 = 11, past the 10 residuals.
        assert!(corrupt(&section(2, 2, 4, 4, &[0x12, 0x28]), 5), "position");
        assert!(matches!(
            decode10(&section(2, 2, 4, 4, &[0x12]), 5),
            Err(Error::Truncated { .. })
        ));
        let mut bad_order = good.clone();
        bad_order[1] = 3;
        assert!(corrupt(&bad_order, 5), "order");
    }
}
