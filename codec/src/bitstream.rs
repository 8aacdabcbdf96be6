//! A stream of bit fields of any width (0 to 64 bits each), least-significant bit first: bit
//! `k` of the stream is bit `k mod 8` of byte `⌊k / 8⌋`, and the last byte is zero-padded. The
//! entropy coder's tables and raw bits and the sparse int sections' exceptions are written so.

use crate::{Error, Result};

/// LSB-first bit writer.
pub(crate) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    n: u32,
}

impl<'a> BitWriter<'a> {
    pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter { out, acc: 0, n: 0 }
    }

    /// Writes the low `n ≤ 64` bits of `v`.
    #[inline]
    pub(crate) fn put(&mut self, v: u64, n: u32) {
        if n == 0 {
            return;
        }
        let v = if n == 64 { v } else { v & ((1 << n) - 1) };
        self.acc |= v << self.n;
        if self.n + n >= 64 {
            self.out.extend_from_slice(&self.acc.to_le_bytes());
            let done = 64 - self.n;
            self.acc = if done == 64 { 0 } else { v >> done };
            self.n = self.n + n - 64;
        } else {
            self.n += n;
        }
    }

    /// Exp-Golomb of order 0 of `v` (`v + 1` in `2·⌊log2(v + 1)⌋ + 1` bits): as many zero bits
    /// as `v + 1` has bits after its leading one, a one bit, then those bits.
    pub(crate) fn put_eg0(&mut self, v: u64) {
        let x = v + 1;
        let k = 63 - x.leading_zeros();
        self.put(1 << k, k + 1);
        self.put(x, k);
    }

    /// Pads the last byte with zeros.
    pub(crate) fn finish(self) {
        let tail = self.n.div_ceil(8) as usize;
        self.out
            .extend_from_slice(self.acc.to_le_bytes().get(..tail).unwrap_or_default());
    }
}

/// Bits [`BitWriter::put_eg0`] writes for `v`.
#[inline]
pub(crate) fn eg0_len(v: u64) -> u32 {
    2 * (63 - (v + 1).leading_zeros()) + 1
}

/// LSB-first bit reader over a byte slice (bits past its end read as zero; the caller checks
/// [`BitReader::used`]).
pub(crate) struct BitReader<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(src: &'a [u8]) -> Self {
        BitReader { src, pos: 0 }
    }

    /// The next `n ≤ 64` bits.
    #[inline(always)]
    pub(crate) fn get(&mut self, n: u32) -> u64 {
        let v = if n <= 56 {
            let w = read_u64(self.src, self.pos >> 3) >> (self.pos & 7);
            w & ((1u64 << n) - 1)
        } else {
            let lo = (read_u64(self.src, self.pos >> 3) >> (self.pos & 7)) & 0xFFFF_FFFF;
            let at = self.pos + 32;
            let hi = (read_u64(self.src, at >> 3) >> (at & 7)) & ((1u64 << (n - 32)) - 1);
            lo | (hi << 32)
        };
        self.pos += n as usize;
        v
    }

    /// Reads an Exp-Golomb code of order 0 of at most `max_bits` bits after its leading one.
    pub(crate) fn get_eg0(&mut self, max_bits: u32) -> Result<u64> {
        let peek = read_u64(self.src, self.pos >> 3) >> (self.pos & 7);
        let k = peek.trailing_zeros();
        if k > max_bits {
            return Err(Error::Corruption("Exp-Golomb code too long".to_owned()));
        }
        self.pos += k as usize + 1;
        Ok(((1u64 << k) | self.get(k)) - 1)
    }

    /// Bits read so far.
    pub(crate) fn used(&self) -> usize {
        self.pos
    }
}

/// The little-endian `u64` at byte `at` of `src` (zero past its end).
#[inline(always)]
fn read_u64(src: &[u8], at: usize) -> u64 {
    match src.get(at..at + 8) {
        Some(&[a, b, c, d, e, f, g, h]) => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => read_u64_tail(src, at),
    }
}

/// [`read_u64`] near the end of `src`.
#[cold]
#[inline(never)]
fn read_u64_tail(src: &[u8], at: usize) -> u64 {
    (0..8).fold(0, |v, i| {
        v | u64::from(src.get(at + i).copied().unwrap_or(0)) << (8 * i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip() {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        let items: Vec<(u64, u32)> = (0..300u64)
            .map(|i| {
                let n = (i * 7 % 65) as u32;
                (i.wrapping_mul(0x9E37_79B9_7F4A_7C15), n)
            })
            .collect();
        for &(v, n) in &items {
            w.put(v, n);
            w.put_eg0(v % 1000);
        }
        w.finish();
        let mut r = BitReader::new(&out);
        for &(v, n) in &items {
            let mask = if n == 64 { u64::MAX } else { (1 << n) - 1 };
            assert_eq!(r.get(n), v & mask);
            assert_eq!(r.get_eg0(20).unwrap(), v % 1000);
        }
    }
}
