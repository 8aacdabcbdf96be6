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

/// Size of the zero-padded scratch buffer one block is unpacked from: the largest packed
/// block plus 16 bytes so every 16-byte window read below stays inside it.
const BLOCK_BUF: usize = BLOCK_LEN * 8 + 16;

/// Unpacks `out.len()` (≤ [`BLOCK_LEN`]) values of `width` bits from `src`, which must be
/// exactly [`packed_len`]`(out.len(), width)` bytes.
///
/// # Errors
/// [`Error::Corruption`] if the width is over 64, the count over a block, or `src` has the
/// wrong length.
pub(crate) fn unpack_block(src: &[u8], width: u32, out: &mut [u64]) -> Result<()> {
    if width > 64 || out.len() > BLOCK_LEN || src.len() != packed_len(out.len(), width) {
        return Err(Error::Corruption("bad bit-packed block".to_owned()));
    }
    if width == 0 {
        out.fill(0);
        return Ok(());
    }
    let mut buf = [0u8; BLOCK_BUF];
    if let Some(dst) = buf.get_mut(..src.len()) {
        dst.copy_from_slice(src);
    }
    let w = width as usize;
    let mask = u64::MAX >> (64 - width);
    if width <= 56 {
        for (i, o) in out.iter_mut().enumerate() {
            let bit = i * w;
            let word = read_u64(&buf, bit >> 3);
            *o = (word >> (bit & 7)) & mask;
        }
    } else {
        for (i, o) in out.iter_mut().enumerate() {
            let bit = i * w;
            let word = read_u128(&buf, bit >> 3);
            *o = ((word >> (bit & 7)) as u64) & mask;
        }
    }
    Ok(())
}

#[inline(always)]
fn read_u64(buf: &[u8; BLOCK_BUF], at: usize) -> u64 {
    // `at ≤ BLOCK_LEN·64/8` so the window is always inside `buf`; `get` keeps it panic-free.
    let mut w = [0u8; 8];
    if let Some(s) = buf.get(at..at + 8) {
        w.copy_from_slice(s);
    }
    u64::from_le_bytes(w)
}

#[inline(always)]
fn read_u128(buf: &[u8; BLOCK_BUF], at: usize) -> u128 {
    let mut w = [0u8; 16];
    if let Some(s) = buf.get(at..at + 16) {
        w.copy_from_slice(s);
    }
    u128::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_every_width() {
        for width in 0..=64u32 {
            for count in [0usize, 1, 7, 8, 9, 63, 127, 128] {
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
                let mut back = vec![0u64; count];
                unpack_block(&out, width, &mut back).unwrap();
                assert_eq!(back, values, "width {width} count {count}");
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
        let mut out = [0u64; 4];
        assert!(unpack_block(&[0; 3], 7, &mut out).is_err());
        assert!(unpack_block(&[0; 4], 65, &mut out).is_err());
    }
}
