//! Int sections: the machinery behind the int lane and every integer stream of the other
//! encodings (float digits, type indices, lengths, dictionary codes, ObjectId parts).
//!
//! A section of `n` values (the count is known from the context, never stored) is either
//! [`IntEncoding::Const`] or [`IntEncoding::Packed`]: delta of order 0, 1 or 2 (chosen by exact
//! size), then the residuals minus their minimum (frame of reference), divided by their common
//! divisor, and bit-packed in blocks of [`BLOCK_LEN`] values, each block with its own width and
//! minimum (a divisor of 0 means every residual equals the minimum: no blocks). A section of 0
//! values is empty (no bytes).

use crate::bits;
use crate::delta;
use crate::format::{BLOCK_LEN, IntEncoding};
use crate::reader::Reader;
use crate::varint;
use crate::{Error, Result};

/// What the encoder chose for one section (see [`crate::ColumnLayout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntLayout {
    /// The section's encoding.
    pub encoding: IntEncoding,
    /// Delta order (0 for [`IntEncoding::Const`]).
    pub order: u8,
}

/// Frame of a residual sequence: its minimum and common divisor.
#[derive(Clone, Copy, Debug)]
struct Frame {
    base: i64,
    gcd: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    if a == 0 {
        return b;
    }
    if b == 0 {
        return a;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
    }
}

fn frame_of(res: &[i64]) -> Frame {
    let base = res.iter().copied().min().unwrap_or(0);
    let mut g = 0u64;
    for &r in res {
        g = gcd(g, r.wrapping_sub(base) as u64);
        if g == 1 {
            break;
        }
    }
    // gcd 0: every residual equals the base (no blocks are written).
    Frame { base, gcd: g }
}

/// `(offset of the block minimum from the frame base, width)` of one block, both in units of
/// the frame's divisor.
#[inline]
fn block_shape(block: &[i64], frame: Frame) -> (u64, u32) {
    let mut lo = i64::MAX;
    let mut hi = i64::MIN;
    for &r in block {
        lo = lo.min(r);
        hi = hi.max(r);
    }
    let offset = lo.wrapping_sub(frame.base) as u64 / frame.gcd;
    let range = hi.wrapping_sub(lo) as u64 / frame.gcd;
    (offset, bits::width_of(range))
}

/// Bytes the residual part (frame + blocks) of a packed section takes.
fn residual_cost(res: &[i64]) -> usize {
    if res.is_empty() {
        return 0;
    }
    let frame = frame_of(res);
    let mut cost = varint::len_signed(frame.base) + varint::len(frame.gcd);
    if frame.gcd == 0 {
        return cost;
    }
    for block in res.chunks(BLOCK_LEN) {
        let (offset, width) = block_shape(block, frame);
        cost += 1 + varint::len(offset) + bits::packed_len(block.len(), width);
    }
    cost
}

fn heads_cost(v: &[i64], order: u8) -> usize {
    v.iter()
        .take(usize::from(order))
        .map(|&h| varint::len_signed(h))
        .sum()
}

/// Bytes [`encode`] would write for `values`, and its choice. `scratch` is reused memory.
pub(crate) fn estimate(values: &[i64], scratch: &mut Vec<i64>) -> (usize, IntLayout) {
    let Some(&first) = values.first() else {
        return (
            0,
            IntLayout {
                encoding: IntEncoding::Const,
                order: 0,
            },
        );
    };
    if values.iter().all(|&v| v == first) {
        return (
            1 + varint::len_signed(first),
            IntLayout {
                encoding: IntEncoding::Const,
                order: 0,
            },
        );
    }
    scratch.clear();
    scratch.extend_from_slice(values);
    let mut best = (usize::MAX, 0u8);
    for order in 0..=2u8 {
        if order > 0 {
            // One more difference pass on top of the previous order's sequence.
            delta::encode(
                scratch
                    .get_mut(usize::from(order) - 1..)
                    .unwrap_or_default(),
                1,
            );
        }
        let k = usize::from(order).min(scratch.len());
        let cost =
            2 + heads_cost(scratch, order) + residual_cost(scratch.get(k..).unwrap_or_default());
        if cost < best.0 {
            best = (cost, order);
        }
        if scratch.len() <= usize::from(order) + 1 {
            break;
        }
    }
    (
        best.0,
        IntLayout {
            encoding: IntEncoding::Packed,
            order: best.1,
        },
    )
}

/// Appends the int section of `values`, choosing the smallest encoding.
pub(crate) fn encode(values: &[i64], out: &mut Vec<u8>, scratch: &mut Vec<i64>) -> IntLayout {
    let (_, layout) = estimate(values, scratch);
    encode_as(values, layout, out, scratch);
    layout
}

/// Appends the int section of `values` in the given layout (from [`estimate`]).
pub(crate) fn encode_as(
    values: &[i64],
    layout: IntLayout,
    out: &mut Vec<u8>,
    scratch: &mut Vec<i64>,
) {
    let Some(&first) = values.first() else { return };
    match layout.encoding {
        IntEncoding::Const => {
            out.push(IntEncoding::Const.to_code());
            varint::put_signed(out, first);
        }
        IntEncoding::Packed => {
            out.push(IntEncoding::Packed.to_code());
            out.push(layout.order);
            scratch.clear();
            scratch.extend_from_slice(values);
            delta::encode(scratch, layout.order);
            let k = usize::from(layout.order).min(scratch.len());
            let (heads, res) = scratch.split_at(k);
            for &h in heads {
                varint::put_signed(out, h);
            }
            if res.is_empty() {
                return;
            }
            let frame = frame_of(res);
            varint::put_signed(out, frame.base);
            varint::put(out, frame.gcd);
            if frame.gcd == 0 {
                return;
            }
            let mut tmp = [0u64; BLOCK_LEN];
            for block in res.chunks(BLOCK_LEN) {
                let (offset, width) = block_shape(block, frame);
                out.push(width as u8);
                varint::put(out, offset);
                let lo = frame
                    .base
                    .wrapping_add(offset.wrapping_mul(frame.gcd) as i64);
                let tmp = tmp.get_mut(..block.len()).unwrap_or_default();
                if frame.gcd == 1 {
                    for (t, &r) in tmp.iter_mut().zip(block) {
                        *t = r.wrapping_sub(lo) as u64;
                    }
                } else {
                    for (t, &r) in tmp.iter_mut().zip(block) {
                        *t = r.wrapping_sub(lo) as u64 / frame.gcd;
                    }
                }
                bits::pack(tmp, width, out);
            }
        }
    }
}

/// Reads an int section of `n` values, appending them to `out`.
///
/// # Errors
/// [`Error::Truncated`] or [`Error::Corruption`] for bad input.
pub(crate) fn decode(r: &mut Reader<'_>, n: usize, out: &mut Vec<i64>) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let start = out.len();
    out.reserve(n);
    match IntEncoding::try_from_code(r.u8()?)? {
        IntEncoding::Const => {
            let v = r.varint_signed()?;
            out.resize(start + n, v);
        }
        IntEncoding::Packed => {
            let order = r.u8()?;
            if order > 2 {
                return Err(Error::Corruption(format!("delta order {order}")));
            }
            let k = usize::from(order).min(n);
            for _ in 0..k {
                out.push(r.varint_signed()?);
            }
            let m = n - k;
            if m > 0 {
                let base = r.varint_signed()?;
                let g = r.varint()?;
                if g == 0 {
                    // Every residual equals the base.
                    out.resize(start + n, base);
                }
                let mut tmp = [0u64; BLOCK_LEN];
                let mut left = if g == 0 { 0 } else { m };
                while left > 0 {
                    let count = left.min(BLOCK_LEN);
                    left -= count;
                    let width = u32::from(r.u8()?);
                    if width > 64 {
                        return Err(Error::Corruption(format!("bit width {width}")));
                    }
                    let offset = r.varint()?;
                    let src = r.bytes(bits::packed_len(count, width))?;
                    let tmp = tmp.get_mut(..count).unwrap_or_default();
                    bits::unpack_block(src, width, tmp)?;
                    let lo = base.wrapping_add(offset.wrapping_mul(g) as i64);
                    if g == 1 {
                        out.extend(tmp.iter().map(|&u| lo.wrapping_add(u as i64)));
                    } else {
                        out.extend(
                            tmp.iter()
                                .map(|&u| lo.wrapping_add(u.wrapping_mul(g) as i64)),
                        );
                    }
                }
            }
            delta::decode(out.get_mut(start..).unwrap_or_default(), order);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(values: &[i64]) -> (usize, IntLayout) {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        let (est, layout) = estimate(values, &mut scratch);
        let layout2 = encode(values, &mut out, &mut scratch);
        assert_eq!(layout, layout2);
        assert_eq!(est, out.len(), "estimate is exact");
        let mut r = Reader::new(&out);
        let mut back = Vec::new();
        decode(&mut r, values.len(), &mut back).unwrap();
        assert_eq!(r.remaining(), 0);
        assert_eq!(back, values);
        (out.len(), layout)
    }

    #[test]
    fn regular_timestamps_cost_almost_nothing() {
        let ts: Vec<i64> = (0..1000)
            .map(|i| 1_360_000_000_000 + 3_600_000 * i)
            .collect();
        let (len, layout) = round_trip(&ts);
        assert!(len < 20, "{len}");
        assert!(layout.order >= 1);
    }

    #[test]
    fn extremes_and_wrapping() {
        round_trip(&[i64::MIN, i64::MAX, 0, -1, i64::MIN, i64::MAX]);
        round_trip(&[i64::MAX; 3]);
        round_trip(&[5]);
        round_trip(&[5, 6]);
        round_trip(&[5, 6, 8]);
        round_trip(&[]);
        let v: Vec<i64> = (0..1000)
            .map(|i: i64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64))
            .collect();
        round_trip(&v);
    }

    #[test]
    fn common_divisor_is_removed() {
        let v: Vec<i64> = (0..256).map(|i| ((i * 7919) % 100) * 1000).collect();
        let (len, _) = round_trip(&v);
        // 7 bits per value plus small headers.
        assert!(len < 256 * 7 / 8 + 16, "{len}");
    }
}
