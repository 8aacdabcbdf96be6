//! A carry-less range coder (after D. Subbotin) on 64-bit words: the entropy coder behind
//! [`crate::dict_model`]. Deterministic integer arithmetic, so encoder and decoder agree on
//! every platform.
//!
//! The coder keeps `low` and `range` (`range ≥ BOT` between symbols) and codes a symbol of
//! cumulative frequency `cum`, frequency `freq` out of `total ≤ MAX_TOTAL` as
//! `r = range / total; low += r·cum; range = r·freq`, then shifts out top bytes while they are
//! settled (or, when `range` fell below `BOT`, after clipping `range` so no carry can reach the
//! bytes already written). The stream ends with the 8 bytes of `low`.

use crate::{Error, Result};

const TOP: u64 = 1 << 56;
const BOT: u64 = 1 << 40;

/// Largest total frequency of one coding step.
pub(crate) const MAX_TOTAL: u64 = BOT;

/// Writes a range-coded stream.
pub(crate) struct RangeEncoder<'a> {
    low: u64,
    range: u64,
    out: &'a mut Vec<u8>,
}

impl<'a> RangeEncoder<'a> {
    /// An encoder appending to `out`.
    pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
        RangeEncoder {
            low: 0,
            range: u64::MAX,
            out,
        }
    }

    /// Codes the symbol `[cum, cum + freq)` of `[0, total)`; `0 < freq`, `cum + freq ≤ total ≤
    /// MAX_TOTAL`.
    pub(crate) fn encode(&mut self, cum: u64, freq: u64, total: u64) {
        debug_assert!(freq > 0 && cum + freq <= total && total <= MAX_TOTAL);
        let r = self.range / total;
        self.low = self.low.wrapping_add(r * cum);
        self.range = r * freq;
        loop {
            if (self.low ^ self.low.wrapping_add(self.range)) >= TOP {
                if self.range >= BOT {
                    break;
                }
                self.range = self.low.wrapping_neg() & (BOT - 1);
            }
            self.out.push((self.low >> 56) as u8);
            self.low <<= 8;
            self.range <<= 8;
        }
    }

    /// Flushes the stream: the 8 bytes of `low`, most significant first (the order the
    /// decoder shifts them in).
    pub(crate) fn finish(mut self) {
        for _ in 0..8 {
            self.out.push((self.low >> 56) as u8);
            self.low <<= 8;
        }
    }
}

/// Reads a range-coded stream; bytes past its end read as zero (a valid stream never needs
/// them, a corrupt one decodes to symbols the caller checks).
pub(crate) struct RangeDecoder<'a> {
    low: u64,
    range: u64,
    code: u64,
    r: u64,
    src: &'a [u8],
    pos: usize,
}

impl<'a> RangeDecoder<'a> {
    /// A decoder of `src`.
    pub(crate) fn new(src: &'a [u8]) -> Self {
        let mut d = RangeDecoder {
            low: 0,
            range: u64::MAX,
            code: 0,
            r: 1,
            src,
            pos: 0,
        };
        for _ in 0..8 {
            d.code = (d.code << 8) | u64::from(d.next_byte());
        }
        d
    }

    fn next_byte(&mut self) -> u8 {
        let b = self.src.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// The next symbol's position in `[0, total)`; follow with [`RangeDecoder::update`].
    ///
    /// # Errors
    /// [`Error::Corruption`] if the stream points outside `[0, total)`.
    pub(crate) fn target(&mut self, total: u64) -> Result<u64> {
        if total == 0 || total > MAX_TOTAL {
            return Err(Error::Corruption("range coder total".to_owned()));
        }
        // `range ≥ BOT ≥ total` between symbols, so `r ≥ 1`.
        self.r = (self.range / total).max(1);
        let v = self.code.wrapping_sub(self.low) / self.r;
        if v >= total {
            return Err(Error::Corruption(
                "range-coded symbol out of range".to_owned(),
            ));
        }
        Ok(v)
    }

    /// Consumes the symbol `[cum, cum + freq)` found from [`RangeDecoder::target`].
    pub(crate) fn update(&mut self, cum: u64, freq: u64) {
        self.low = self.low.wrapping_add(self.r.wrapping_mul(cum));
        self.range = self.r.wrapping_mul(freq);
        loop {
            if (self.low ^ self.low.wrapping_add(self.range)) >= TOP {
                if self.range >= BOT {
                    break;
                }
                self.range = self.low.wrapping_neg() & (BOT - 1);
            }
            self.code = (self.code << 8) | u64::from(self.next_byte());
            self.low <<= 8;
            self.range <<= 8;
            if self.range == 0 {
                // Only a corrupt stream (a zero frequency) gets here.
                self.range = BOT;
            }
        }
    }

    /// Bytes read so far (including the 8 of the final `low`).
    pub(crate) fn consumed(&self) -> usize {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skewed_and_uniform_symbols_round_trip() {
        // Symbols with frequencies 1, 2, 4, ..., 2^k of a total; a pseudo-random sequence.
        let freqs: Vec<u64> = (0..12).map(|i| 1u64 << i).collect();
        let total: u64 = freqs.iter().sum();
        let mut x = 7u64;
        let symbols: Vec<usize> = (0..5000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let t = (x >> 33) % total;
                let mut cum = 0;
                freqs
                    .iter()
                    .position(|&f| {
                        cum += f;
                        t < cum
                    })
                    .unwrap()
            })
            .collect();
        let cum_of = |s: usize| freqs[..s].iter().sum::<u64>();
        let mut out = Vec::new();
        let mut enc = RangeEncoder::new(&mut out);
        for &s in &symbols {
            enc.encode(cum_of(s), freqs[s], total);
        }
        enc.finish();
        // Close to the entropy of the distribution.
        let entropy: f64 = symbols
            .iter()
            .map(|&s| -((freqs[s] as f64) / total as f64).log2())
            .sum();
        assert!(
            (out.len() * 8) as f64 <= entropy + 128.0,
            "{} vs {entropy}",
            out.len() * 8
        );

        let mut dec = RangeDecoder::new(&out);
        for &s in &symbols {
            let v = dec.target(total).unwrap();
            let mut cum = 0;
            let got = freqs
                .iter()
                .position(|&f| {
                    cum += f;
                    v < cum
                })
                .unwrap();
            assert_eq!(got, s);
            dec.update(cum_of(got), freqs[got]);
        }
        assert!(dec.consumed() <= out.len());
    }

    #[test]
    fn large_totals_and_garbage_input() {
        let mut out = Vec::new();
        let mut enc = RangeEncoder::new(&mut out);
        for i in 0..1000u64 {
            enc.encode(i % 3, 1, MAX_TOTAL);
        }
        enc.finish();
        let mut dec = RangeDecoder::new(&out);
        for i in 0..1000u64 {
            assert_eq!(dec.target(MAX_TOTAL).unwrap(), i % 3);
            dec.update(i % 3, 1);
        }
        // Garbage never panics: every target is checked against the total.
        for seed in 0..50u8 {
            let junk: Vec<u8> = (0..40)
                .map(|i: u8| i.wrapping_mul(seed).wrapping_add(seed))
                .collect();
            let mut dec = RangeDecoder::new(&junk);
            for _ in 0..100 {
                match dec.target(1000) {
                    Ok(v) => dec.update(v, 1),
                    Err(_) => break,
                }
            }
        }
    }
}
