//! Bit-packing of unsigned integers of one width, least-significant bit first: value `i` of a
//! run occupies bits `i·w .. (i+1)·w` of the run, bit `k` being bit `k % 8` of byte `k / 8`.
//! A run of `n` values takes exactly `ceil(n·w / 8)` bytes; unused high bits of the last byte
//! are zero.

use crate::format::BLOCK_LEN;
use crate::{Error, Result};

/// Bytes a run of `count` values of `width` bits takes.
#[inline]
pub(crate) fn packed_len(count: usize, width: u32) -> usize {
    (count * width as usize).div_ceil(8)
}

/// Bits needed for `v` (0 for 0).
#[inline]
pub(crate) fn width_of(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Appends `values` packed at `width` bits each. Every value must be below `2^width`.
pub(crate) fn pack(values: &[u64], width: u32, out: &mut Vec<u8>) {
    debug_assert!(width <= 64);
    if width == 0 {
        return;
    }
    let start = out.len();
    let mut acc: u128 = 0;
    let mut n: u32 = 0;
    for &v in values {
        debug_assert!(width == 64 || v >> width == 0);
        acc |= u128::from(v) << n;
        n += width;
        if n >= 64 {
            out.extend_from_slice(&(acc as u64).to_le_bytes());
            acc >>= 64;
            n -= 64;
        }
    }
    let tail = n.div_ceil(8) as usize;
    out.extend_from_slice(acc.to_le_bytes().get(..tail).unwrap_or_default());
    debug_assert_eq!(out.len() - start, packed_len(values.len(), width));
}

/// Values of one group: `GROUP` values of `W` bits take exactly `W` 64-bit words.
const GROUP: usize = 64;

/// Frame of reference applied while unpacking: value `u` becomes `base + u·step` (wrapping).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    /// Added to every value.
    pub(crate) base: i64,
    /// Multiplies every value (1 for no common divisor).
    pub(crate) step: u64,
}

/// Maps an unpacked value to its output (a frame with or without a divisor, monomorphized so
/// the common `step == 1` case has no multiply).
trait Apply: Copy {
    fn apply(self, u: u64) -> i64;
}

/// `base + u`.
#[derive(Clone, Copy)]
struct AddBase(i64);

impl Apply for AddBase {
    #[inline(always)]
    fn apply(self, u: u64) -> i64 {
        self.0.wrapping_add(u as i64)
    }
}

impl Apply for Frame {
    #[inline(always)]
    fn apply(self, u: u64) -> i64 {
        self.base.wrapping_add(u.wrapping_mul(self.step) as i64)
    }
}

/// Unpacks whole groups of [`GROUP`] values of the constant width `W` (1..=64): each group's
/// `W` words are loaded once and every value's word and shift are compile-time constants.
/// `src` holds `8·W` bytes per group of `out`.
#[inline(always)]
fn unpack_groups<const W: usize, F: Apply>(src: &[u8], frame: F, out: &mut [i64]) {
    let mask = u64::MAX >> (64 - W);
    for (g, o) in src.chunks_exact(8 * W).zip(out.chunks_exact_mut(GROUP)) {
        let mut w = [0u64; W];
        for (x, c) in w.iter_mut().zip(g.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            *x = u64::from_le_bytes(b);
        }
        for (j, slot) in o.iter_mut().enumerate() {
            let bit = j * W;
            let shift = bit % 64;
            let lo = w.get(bit / 64).copied().unwrap_or(0) >> shift;
            let hi = if shift + W > 64 {
                w.get(bit / 64 + 1).copied().unwrap_or(0) << (64 - shift)
            } else {
                0
            };
            *slot = frame.apply((lo | hi) & mask);
        }
    }
}

/// [`unpack_groups`] for a width known at run time.
fn unpack_full_groups<F: Apply>(src: &[u8], width: u32, frame: F, out: &mut [i64]) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                $($w => unpack_groups::<$w, F>(src, frame, out),)*
                _ => {}
            }
        };
    }
    by_width!(
        1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
        33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
        62 63 64
    );
}

/// Unpacks `out.len()` (≤ [`BLOCK_LEN`]) values of `width` bits from `src`, which must be
/// exactly [`packed_len`]`(out.len(), width)` bytes, writing `frame.base + value·frame.step`.
///
/// # Errors
/// [`Error::Corruption`] if the width is over 64, the count over a block, or `src` has the
/// wrong length.
pub(crate) fn unpack_block(src: &[u8], width: u32, frame: Frame, out: &mut [i64]) -> Result<()> {
    if width > 64 || out.len() > BLOCK_LEN || src.len() != packed_len(out.len(), width) {
        return Err(Error::Corruption("bad bit-packed block".to_owned()));
    }
    if width == 0 {
        out.fill(frame.base);
        return Ok(());
    }
    // Whole groups first (every full block is two), then the rest value by value.
    let whole = out.len() / GROUP * GROUP;
    let (head, tail) = out.split_at_mut(whole);
    let head_bytes = whole / 8 * width as usize;
    let head_src = src.get(..head_bytes).unwrap_or_default();
    if frame.step == 1 {
        unpack_full_groups(head_src, width, AddBase(frame.base), head);
    } else {
        unpack_full_groups(head_src, width, frame, head);
    }
    let src = src.get(head_bytes..).unwrap_or_default();
    let w = width as usize;
    let mask = u64::MAX >> (64 - width);
    for (i, o) in tail.iter_mut().enumerate() {
        let bit = i * w;
        let v = if width <= 56 {
            read_u64(src, bit >> 3) >> (bit & 7)
        } else {
            (read_u128(src, bit >> 3) >> (bit & 7)) as u64
        };
        *o = frame.apply(v & mask);
    }
    Ok(())
}

/// The `N` bytes at byte `at` of `src`, bytes past its end read as zero.
#[inline(always)]
fn window<const N: usize>(src: &[u8], at: usize) -> [u8; N] {
    let mut w = [0u8; N];
    match src.get(at..at + N) {
        Some(s) => w.copy_from_slice(s),
        None => {
            let rest = src.get(at..).unwrap_or_default();
            if let Some(dst) = w.get_mut(..rest.len()) {
                dst.copy_from_slice(rest);
            }
        }
    }
    w
}

/// The little-endian `u64` at byte `at` of `src` (zero past its end).
#[inline(always)]
fn read_u64(src: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(window(src, at))
}

/// The little-endian `u128` at byte `at` of `src` (zero past its end).
#[inline(always)]
fn read_u128(src: &[u8], at: usize) -> u128 {
    u128::from_le_bytes(window(src, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_every_width() {
        for width in 0..=64u32 {
            for count in [0usize, 1, 7, 8, 9, 63, 64, 65, 127, 128] {
                let mask = if width == 0 {
                    0
                } else {
                    u64::MAX >> (64 - width)
                };
                let values: Vec<u64> = (0..count as u64)
                    .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask)
                    .collect();
                let mut out = Vec::new();
                pack(&values, width, &mut out);
                assert_eq!(out.len(), packed_len(count, width));
                let mut back = vec![0i64; count];
                let plain = Frame { base: 0, step: 1 };
                unpack_block(&out, width, plain, &mut back).unwrap();
                let back: Vec<u64> = back.iter().map(|&v| v as u64).collect();
                assert_eq!(back, values, "width {width} count {count}");
                // With a frame: base + value·step, wrapping.
                let frame = Frame {
                    base: -7,
                    step: 1000,
                };
                let mut framed = vec![0i64; count];
                unpack_block(&out, width, frame, &mut framed).unwrap();
                for (f, &v) in framed.iter().zip(&values) {
                    assert_eq!(*f, (-7i64).wrapping_add(v.wrapping_mul(1000) as i64));
                }
            }
        }
    }

    #[test]
    fn lsb_first_layout() {
        let mut out = Vec::new();
        pack(&[1, 2, 3], 3, &mut out);
        // 001 | 010 | 011 → bits 0..9 = 1,0,0, 0,1,0, 1,1,0 → 0b1101_0001, 0b0
        assert_eq!(out, vec![0b1101_0001, 0b0000_0000]);
    }

    #[test]
    fn bad_lengths_fail() {
        let mut out = [0i64; 4];
        let f = Frame { base: 0, step: 1 };
        assert!(unpack_block(&[0; 3], 7, f, &mut out).is_err());
        assert!(unpack_block(&[0; 4], 65, f, &mut out).is_err());
    }
}
