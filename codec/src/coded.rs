//! Entropy-coded int sections ([`IntEncoding::Coded`], format version 3 and later).
//!
//! Frame-of-reference bit-packing spends the same width on every residual of a block; when
//! residuals come from a small, skewed alphabet (the deltas of a random walk are mostly −3..3,
//! and 0 far more often than ±3) an entropy coder gets close to the distribution's entropy
//! instead. Each residual `r` is mapped to an unsigned `u` (`r = base + g·v`, with `v = u`,
//! or `v` = zigzag⁻¹(`u`) for signed residuals), `u` is split into a *token* and raw bits
//! (hybrid integer coding, as in JPEG XL): values below `2^E` are their own token, larger
//! ones become a token for their bit length and top `M` bits below the leading one, plus the
//! remaining low bits verbatim. Tokens are coded with static-frequency rANS
//! ([`crate::rans`], 1, 2 or 4 interleaved states) from a table of quantized log-frequencies
//! stored up front; the raw bits follow as one bit-packed run.
//!
//! The encoder builds a histogram of fine tokens once and prices a few `(E, M)` splits and
//! state counts from it (tokens at their cost under the stored model, raw bits, the exact
//! table size, the states' bytes), adding the extra time the section takes to decode, priced
//! in bytes: entropy decoding is slower than unpacking, so a section is coded only where that
//! pays. The decoder undoes the delta transform as it goes. Byte layout: `docs/format.md`.

use std::cell::Cell;

use crate::bitstream::{BitReader, BitWriter, eg0_len};
use crate::format::IntEncoding;
use crate::ints::gcd;
use crate::rans;
use crate::reader::Reader;
use crate::varint;
use crate::zigzag;
use crate::{Error, Result};

/// Largest split exponent `E` (values below `2^E` are their own token).
pub(crate) const MAX_SPLIT: u32 = 7;

/// Largest number `M` of bits below the leading one kept in a token.
pub(crate) const MAX_MSB: u32 = 3;

/// Largest quantized log-weight `q` of a token.
pub(crate) const MAX_Q: u8 = 47;

/// Header-byte flags after the order (bits 0–1).
const FLAG_OFFSET: u8 = 1 << 2;
const FLAG_BASE: u8 = 1 << 3;
const FLAG_DIVISOR: u8 = 1 << 4;
/// Bits 5–6: log2 of the number of interleaved rANS states (3 is corrupt).
const STATES_SHIFT: u32 = 5;
const FLAG_RESERVED: u8 = 0b1000_0000;

/// What decoding a Coded section costs beyond a bit-packed one, in nanoseconds (measured with
/// `tscoll bench codec` on this repository's reference machine): a fixed part, a part per
/// token (reading the table) and per slot of the decoding table (building it), a part per
/// value by the number of interleaved states (a value's step waits on the previous step of
/// its state: more states, more steps in flight), and a part per value with raw bits.
const NS_FIXED: f64 = 50.0;
const NS_PER_TOKEN: f64 = 8.0;
const NS_PER_SLOT: f64 = 0.3;
const NS_PER_VALUE: [f64; 3] = [3.0, 1.0, 0.55];
/// A value with raw bits: more than the bit read itself, priced so that sections whose every
/// value carries raw bits are coded only where they save much (irregular event times), and
/// pooled decoding of the shared data sets stays about 2 GB/s (docs/BENCHMARKS.md, "Raw bits
/// beyond escapes").
const NS_PER_RAW_VALUE: f64 = 6.0;

/// Bytes a Coded section must save per extra nanosecond of decoding to be chosen: 1/25, the
/// rate at which a 360-value section of deltas of TSBS's random walks is coded with a margin.
const BYTES_PER_NS: f64 = 0.04;

/// Extra decoding nanoseconds of a Coded section of `n` values, `raw` of them with raw bits,
/// with `tokens` tokens, coded with `2^log_states` states.
fn decode_ns(n: usize, raw: u64, tokens: usize, log_states: usize) -> f64 {
    let slots = 1u64 << precision(n, tokens);
    NS_FIXED
        + tokens as f64 * NS_PER_TOKEN
        + slots as f64 * NS_PER_SLOT
        + n as f64 * NS_PER_VALUE.get(log_states).copied().unwrap_or(0.6)
        + raw as f64 * NS_PER_RAW_VALUE
}

/// The rANS precision of a section of `n` residuals whose table has `used` tokens: frequencies
/// add up to `2^p`, `p` = the bit length of `n` (or of `used`, if larger), at most
/// [`rans::MAX_PRECISION`].
fn precision(n: usize, used: usize) -> u32 {
    let bits = |v: usize| usize::BITS - v.leading_zeros();
    (bits(n) - 1).min(rans::MAX_PRECISION).max(bits(used))
}

/// The token alphabet of a split `(E, M)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Split {
    e: u32,
    m: u32,
}

impl Split {
    /// Number of tokens: `2^E` direct ones, then `2^M` per bit length `E … 63`.
    fn tokens(self) -> usize {
        (1usize << self.e) + ((64 - self.e as usize) << self.m)
    }

    /// `(token, raw bit count)` of `u`.
    #[inline(always)]
    fn token(self, u: u64) -> (u32, u32) {
        if u < 1 << self.e {
            return (u as u32, 0);
        }
        let n = 63 - u.leading_zeros();
        let top = ((u >> (n - self.m)) as u32) & ((1 << self.m) - 1);
        ((1 << self.e) + ((n - self.e) << self.m) + top, n - self.m)
    }

    /// `(smallest value, raw bit count)` of token `t` (`t < self.tokens()`).
    fn base(self, t: u32) -> (u64, u32) {
        if t < 1 << self.e {
            return (u64::from(t), 0);
        }
        let k = t - (1 << self.e);
        let n = self.e + (k >> self.m);
        let top = u64::from(k & ((1 << self.m) - 1)) | (1 << self.m);
        (top << (n - self.m), n - self.m)
    }
}

/// The fine split the encoder's histogram uses; every candidate split is a coarsening of it.
const FINE: Split = Split { e: 8, m: 3 };
const FINE_TOKENS: usize = 256 + (56 << 3);

/// Weight of log-weight `q ≥ 1`: `2^((q − 1) / 2)`, scaled by 128 (`181 ≈ 128·√2`).
#[inline]
fn weight(q: u8) -> u64 {
    if q == 0 {
        return 0;
    }
    let h = u32::from(q - 1);
    (128 + 53 * u64::from(h & 1)) << (h >> 1)
}

/// The log-weight the encoder stores for a token seen `count ≥ 1` times:
/// `1 + round(2·log2 count)` (computed exactly on integers: `count²` rounded to the nearest
/// power of two in log scale).
fn q_of(count: u32) -> u8 {
    let sq = u64::from(count) * u64::from(count);
    let k = 63 - sq.leading_zeros();
    // Round up when sq ≥ 2^(k + 1/2), i.e. sq² ≥ 2^(2k + 1).
    let up = u128::from(sq) * u128::from(sq) >= 1u128 << (2 * k + 1);
    ((1 + k + u32::from(up)).min(u32::from(MAX_Q))) as u8
}

/// Frequencies adding up to `2^p` for the log-weights `q` (one per token), into `freq`: with
/// `w` the weights, `used` the tokens of nonzero weight and
/// `scale = ⌊(2^p − used)·2^32 / Σw⌋`, each used token gets `1 + ⌊w·scale / 2^32⌋`, and what
/// is left of `2^p` goes to the first token of largest weight.
fn normalize(q: &[u8], p: u32, freq: &mut Vec<u32>) -> Result<()> {
    freq.clear();
    let total = 1u64 << p;
    let used = q.iter().filter(|&&q| q > 0).count() as u64;
    if used == 0 || used > total {
        return Err(Error::Corruption(format!(
            "coded table of {used} tokens at precision {p}"
        )));
    }
    let sum: u64 = q.iter().map(|&q| weight(q)).sum();
    // w·scale ≤ (2^p − used)·2^32 < 2^44: no overflow.
    let scale = ((total - used) << 32) / sum;
    let mut given = 0u64;
    let (mut top, mut top_w) = (0usize, 0u64);
    for (t, &qt) in q.iter().enumerate() {
        let w = weight(qt);
        let f = if w == 0 { 0 } else { 1 + ((w * scale) >> 32) };
        if w > top_w {
            (top, top_w) = (t, w);
        }
        given += f;
        freq.push(f as u32);
    }
    if let Some(f) = freq.get_mut(top) {
        *f += (total - given) as u32;
    }
    Ok(())
}

/// Bits the token table takes (precision, split, token count, log-weights).
#[cfg(test)]
fn table_bits(q: &[u8]) -> usize {
    let mut bits = 3 + 2 + eg0_len(q.len().saturating_sub(1) as u64) as usize + 6;
    for w in q.windows(2) {
        if let [a, b] = *w {
            bits += eg0_len(zigzag::encode(i64::from(b) - i64::from(a))) as usize;
        }
    }
    bits
}

fn write_table(w: &mut BitWriter<'_>, split: Split, q: &[u8]) {
    w.put(u64::from(split.e), 3);
    w.put(u64::from(split.m), 2);
    w.put_eg0(q.len().saturating_sub(1) as u64);
    let mut prev = q.first().copied().unwrap_or(0);
    w.put(u64::from(prev), 6);
    for &qt in q.iter().skip(1) {
        w.put_eg0(zigzag::encode(i64::from(qt) - i64::from(prev)));
        prev = qt;
    }
}

/// Reads a token table: its split, the log-weights into `q`.
fn read_table(r: &mut BitReader<'_>, q: &mut Vec<u8>) -> Result<Split> {
    let e = r.get(3) as u32;
    let m = r.get(2) as u32;
    if m > e {
        return Err(Error::Corruption(format!("coded token split {e}/{m}")));
    }
    let split = Split { e, m };
    let t = r.get_eg0(20)? + 1;
    if t > split.tokens() as u64 {
        return Err(Error::Corruption(format!("{t} coded tokens")));
    }
    q.clear();
    let mut prev = r.get(6) as i64;
    q.push(prev as u8);
    for _ in 1..t {
        let d = zigzag::decode(r.get_eg0(20)?);
        prev = prev.wrapping_add(d);
        q.push(prev as u8);
        if !(0..=i64::from(MAX_Q)).contains(&prev) {
            return Err(Error::Corruption(format!("coded log-weight {prev}")));
        }
    }
    if q.first().is_some_and(|&q0| q0 > MAX_Q) {
        return Err(Error::Corruption("coded log-weight".to_owned()));
    }
    Ok(split)
}

/// `x / d` for an `x` that is a multiple of `d > 0`, by a shift and a multiplication with the
/// inverse of `d`'s odd part modulo 2^64 (correct for negative `x` in two's complement too).
#[derive(Clone, Copy)]
struct ExactDiv {
    shift: u32,
    inverse: u64,
}

impl ExactDiv {
    fn new(d: u64) -> ExactDiv {
        let shift = d.trailing_zeros();
        let odd = d >> shift;
        let mut inverse = odd;
        for _ in 0..5 {
            inverse = inverse.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inverse)));
        }
        ExactDiv { shift, inverse }
    }

    #[inline(always)]
    fn unsigned(self, x: u64) -> u64 {
        (x >> self.shift).wrapping_mul(self.inverse)
    }

    #[inline(always)]
    fn signed(self, x: i64) -> i64 {
        (x >> self.shift).wrapping_mul(self.inverse as i64)
    }
}

/// Encoder scratch memory, kept per thread.
#[derive(Default)]
struct EncScratch {
    /// Two interleaved fine-token histograms, all zeros between uses ([`histogram`]).
    hist: Vec<u32>,
    /// `(fine token, count)` of the nonzero bins of `hist`.
    bins: Vec<(u32, u32)>,
    q: Vec<u8>,
    raw: Vec<u8>,
    u: Vec<u64>,
    tokens: Vec<u16>,
    words: [Vec<u16>; rans::MAX_STATES],
    freq: Vec<u32>,
    syms: Vec<rans::EncSymbol>,
}

thread_local! {
    static ENC_SCRATCH: Cell<EncScratch> = Cell::new(EncScratch::default());
    static DEC_SCRATCH: Cell<Option<DecScratch>> = const { Cell::new(None) };
}

/// Largest scratch (elements) kept between calls, by the encoder and the decoder.
const KEEP_SCRATCH: usize = 1 << 16;

fn with_enc<T>(f: impl FnOnce(&mut EncScratch) -> T) -> T {
    let mut s = ENC_SCRATCH.with(Cell::take);
    let out = f(&mut s);
    if s.u.capacity() <= KEEP_SCRATCH {
        ENC_SCRATCH.with(|c| c.set(s));
    }
    out
}

/// Mapped values `u` of `res` into `s.u`.
fn map_values(res: &[i64], offset: bool, base: i64, g: u64, s: &mut EncScratch) {
    s.u.clear();
    s.u.reserve(res.len());
    let div = ExactDiv::new(g.max(1));
    if offset {
        s.u.extend(
            res.iter()
                .map(|&r| div.unsigned(r.wrapping_sub(base) as u64)),
        );
    } else {
        s.u.extend(
            res.iter()
                .map(|&r| zigzag::encode(div.signed(r.wrapping_sub(base)))),
        );
    }
}

/// The fine-token histogram of `s.u` into `s.bins`; returns the largest fine token seen.
/// `s.hist` is all zeros between calls (only the bins a call counted into are cleared again,
/// not the whole table).
fn histogram(s: &mut EncScratch) -> usize {
    if s.hist.len() != 2 * FINE_TOKENS {
        s.hist.clear();
        s.hist.resize(2 * FINE_TOKENS, 0);
    }
    // Two interleaved histograms, so runs of one token do not wait on their own increments.
    let (h0, h1) = s.hist.split_at_mut(FINE_TOKENS);
    let mut max_t = 0usize;
    let pairs = s.u.chunks_exact(2);
    let tail = pairs.remainder();
    for pair in pairs {
        if let [a, b] = *pair {
            let (ta, tb) = (FINE.token(a).0 as usize, FINE.token(b).0 as usize);
            max_t = max_t.max(ta.max(tb));
            if let (Some(x), Some(y)) = (h0.get_mut(ta), h1.get_mut(tb)) {
                *x += 1;
                *y += 1;
            }
        }
    }
    for &u in tail {
        let t = FINE.token(u).0 as usize;
        max_t = max_t.max(t);
        if let Some(x) = h0.get_mut(t) {
            *x += 1;
        }
    }
    s.bins.clear();
    for (t, (x, y)) in h0.iter_mut().zip(h1.iter_mut()).enumerate().take(max_t + 1) {
        let count = *x + *y;
        *x = 0;
        *y = 0;
        if count > 0 {
            s.bins.push((t as u32, count));
        }
    }
    max_t
}

/// The coarse token and raw bit count of fine token `ft` under `split`.
#[inline]
fn coarsen(split: Split, ft: u32) -> (u32, u32) {
    if ft < 256 {
        return split.token(u64::from(ft));
    }
    let k = ft - 256;
    let len = FINE.e + (k >> FINE.m);
    let mm = (k & ((1 << FINE.m) - 1)) >> (FINE.m - split.m);
    (
        (1 << split.e) + ((len - split.e) << split.m) + mm,
        len - split.m,
    )
}

/// Calls `f(token, count)` for every token of `split` that occurs, in increasing order
/// (fine tokens map to coarse ones in order, so runs of the nonzero fine bins merge); returns
/// the raw bits of all values and the number of values with raw bits.
#[inline]
fn coarse_counts(split: Split, bins: &[(u32, u32)], mut f: impl FnMut(u32, u32)) -> (u64, u64) {
    let mut raw_bits = 0u64;
    let mut raw_values = 0u64;
    let mut cur: Option<(u32, u32)> = None;
    for &(ft, c) in bins {
        let (t, raw) = coarsen(split, ft);
        raw_bits += u64::from(raw) * u64::from(c);
        if raw > 0 {
            raw_values += u64::from(c);
        }
        cur = match cur {
            Some((ct, cc)) if ct == t => Some((t, cc + c)),
            Some((ct, cc)) => {
                f(ct, cc);
                Some((t, c))
            }
            None => Some((t, c)),
        };
    }
    if let Some((ct, cc)) = cur {
        f(ct, cc);
    }
    (raw_bits, raw_values)
}

/// Estimated bits of the residuals under `split`: tokens priced under the stored model (a
/// token of log-weight `q` costs `log2(Σw) − log2 w(q) ≈ log2(Σw / 128) − (q − 1)/2` bits),
/// raw bits and the table, whose log-weight differences are counted exactly (a gap of absent
/// tokens costs one bit each). Also returns the number of values with raw bits and the
/// number of tokens.
fn price(split: Split, n: usize, bins: &[(u32, u32)]) -> (f64, u64, usize) {
    let mut sum_w = 0u64;
    let mut half_bits = 0u64;
    let mut table = 3 + 2 + 6;
    let mut prev: Option<(u32, u8)> = None;
    let (raw_bits, raw_values) = coarse_counts(split, bins, |t, c| {
        let q = q_of(c);
        sum_w += weight(q);
        half_bits += u64::from(c) * u64::from(q - 1);
        let (pt, pq) = prev.unwrap_or((0, 0));
        let zz = |d: i64| eg0_len(zigzag::encode(d)) as usize;
        table += match prev {
            // The first token: q_0 is the 6 bits already counted if t = 0.
            None if t == 0 => 0,
            None => (t as usize - 1) + zz(i64::from(q)),
            Some(_) if t == pt + 1 => zz(i64::from(q) - i64::from(pq)),
            Some(_) => zz(-i64::from(pq)) + (t - pt - 2) as usize + zz(i64::from(q)),
        };
        prev = Some((t, q));
    });
    let top = prev.map_or(0, |(t, _)| t);
    table += eg0_len(u64::from(top)) as usize;
    if top >= 1 << split.e {
        // The raw bits' length.
        table += 8;
    }
    let bits = n as f64 * ((sum_w as f64).log2() - 7.0) - half_bits as f64 / 2.0;
    (
        bits + raw_bits as f64 + table as f64,
        raw_values,
        top as usize + 1,
    )
}

/// The Coded section of `seq` (the sequence after the delta transform of `order`: heads, then
/// residuals whose minimum is `min` and whose differences from it have the common divisor
/// `g_min`), if it is worth it: its estimated size without the code byte and the heads, plus
/// its extra decoding time priced at [`bytes_per_ns`], must be below `packed`, the bytes of
/// the packed section after its heads. Returns that estimate, and appends the section to `out` if given. The estimate
/// (tokens priced under the stored model, raw bits, table, fixed fields) is within a few bytes
/// of the exact size, and deterministic.
pub(crate) fn encode_if_smaller(
    seq: &[i64],
    order: u8,
    min: i64,
    g_min: u64,
    packed: usize,
    out: Option<&mut Vec<u8>>,
) -> Option<usize> {
    let k = usize::from(order).min(seq.len());
    let (heads, res) = seq.split_at(k);
    let n = res.len();
    if n == 0 || g_min == 0 {
        return None;
    }
    // Values from their minimum; deltas signed around zero.
    let offset = order == 0;
    let (base, g) = if offset {
        (min, g_min)
    } else {
        (0, gcd(g_min, min.unsigned_abs()))
    };
    with_enc(|s| {
        map_values(res, offset, base, g, s);
        let max_fine = histogram(s);
        // Splits beyond the largest value's bit length all price the same.
        let max_u = if max_fine < 256 {
            max_fine as u64
        } else {
            u64::MAX
        };
        let e_all = 64 - max_u.leading_zeros();
        let fixed =
            1 + if base != 0 {
                varint::len_signed(base)
            } else {
                0
            } + if g > 1 { varint::len(g) } else { 0 };
        // (score, estimated bytes, split, states) of the best candidate: every value its own
        // token, when few enough; else 1, 2, 4 or 8 tokens per bit length, values below twice
        // that being their own tokens (their other bits raw); each with 1, 2 or 4 states.
        let mut best: Option<(f64, usize, Split, usize)> = None;
        let mut consider = |split: Split| {
            let (bits, raw_values, tokens) = price(split, n, &s.bins);
            for log_states in 0..3 {
                let states = 1usize << log_states;
                // States beyond the first also store a word count, mostly 1 or 2 bytes.
                let est = fixed + 5 * states - 1 + (bits / 8.0).ceil() as usize;
                let score =
                    est as f64 + BYTES_PER_NS * decode_ns(n, raw_values, tokens, log_states);
                if best.is_none_or(|(b, ..)| score < b) {
                    best = Some((score, est, split, states));
                }
            }
        };
        if e_all <= MAX_SPLIT {
            consider(Split { e: e_all, m: 0 });
        }
        for m in 0..=MAX_MSB {
            if m + 1 < e_all {
                consider(Split { e: m + 1, m });
            }
        }
        let (score, est, split, states) = best?;
        if score >= packed as f64 {
            return None;
        }
        let Some(out) = out else {
            return Some(est);
        };
        // The chosen split's log-weights.
        let mut q = std::mem::take(&mut s.q);
        q.clear();
        let mut used = 0;
        coarse_counts(split, &s.bins, |t, c| {
            q.resize(t as usize, 0);
            q.push(q_of(c));
            used += 1;
        });
        let p = precision(n, used);

        out.push(IntEncoding::Coded.to_code());
        let mut header = order;
        if offset {
            header |= FLAG_OFFSET;
        }
        if base != 0 {
            header |= FLAG_BASE;
        }
        if g > 1 {
            header |= FLAG_DIVISOR;
        }
        header |= (states.trailing_zeros() as u8) << STATES_SHIFT;
        out.push(header);
        for &h in heads {
            varint::put_signed(out, h);
        }
        if base != 0 {
            varint::put_signed(out, base);
        }
        if g > 1 {
            varint::put(out, g);
        }
        let mut w = BitWriter::new(out);
        write_table(&mut w, split, &q);
        w.finish();
        s.tokens.clear();
        s.tokens.reserve(n);
        if q.len() > 1 << split.e {
            s.raw.clear();
            let mut w = BitWriter::new(&mut s.raw);
            for &u in &s.u {
                let (t, nb) = split.token(u);
                s.tokens.push(t as u16);
                w.put(u, nb);
            }
            w.finish();
            varint::put(out, s.raw.len() as u64);
            out.extend_from_slice(&s.raw);
        } else {
            s.tokens.extend(s.u.iter().map(|&u| u as u16));
        }
        // A table of the encoder's always normalizes.
        let _ = normalize(&q, p, &mut s.freq);
        rans::enc_symbols(&s.freq, p, &mut s.syms);
        match states {
            1 => rans::encode::<1>(&s.tokens, &s.syms, out, &mut s.words),
            2 => rans::encode::<2>(&s.tokens, &s.syms, out, &mut s.words),
            _ => rans::encode::<4>(&s.tokens, &s.syms, out, &mut s.words),
        }
        s.q = q;
        Some(est)
    })
}

/// Decoder scratch memory, kept per thread.
struct DecScratch {
    q: Vec<u8>,
    freq: Vec<u32>,
    table: Box<rans::Table>,
    /// Value of each direct token; for split tokens, their smallest `u`.
    direct: Box<[i64; rans::MAX_SYMBOLS]>,
    /// Raw bit count of each token.
    raw_bits: Box<[u8; rans::MAX_SYMBOLS]>,
    /// The raw bits, padded with zeros.
    raw: Vec<u8>,
}

impl Default for DecScratch {
    fn default() -> Self {
        DecScratch {
            q: Vec::new(),
            freq: Vec::new(),
            table: Box::new([0; rans::TABLE_LEN]),
            direct: Box::new([0; rans::MAX_SYMBOLS]),
            raw_bits: Box::new([0; rans::MAX_SYMBOLS]),
            raw: Vec::new(),
        }
    }
}

/// The little-endian `u64` at byte `at` of `src` (0 when it runs past the end).
#[inline(always)]
fn word_at(src: &[u8], at: usize) -> u64 {
    match src.get(at..at + 8) {
        Some(&[a, b, c, d, e, f, g, h]) => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => 0,
    }
}

/// Undoes the delta transform value by value, as residuals are decoded (see
/// [`crate::delta`]): order 0 keeps residuals, order 1 sums them from the first value, order 2
/// sums them from the first delta, then sums those from the first value.
#[derive(Clone, Copy)]
struct Undelta<const ORDER: u8> {
    value: i64,
    delta: i64,
}

impl<const ORDER: u8> Undelta<ORDER> {
    #[inline(always)]
    fn next(&mut self, r: i64) -> i64 {
        match ORDER {
            0 => r,
            1 => {
                self.value = self.value.wrapping_add(r);
                self.value
            }
            _ => {
                self.delta = self.delta.wrapping_add(r);
                self.value = self.value.wrapping_add(self.delta);
                self.value
            }
        }
    }
}

/// Decodes the tokens of `out` with `states` states, storing `undo.next(residual(token))`.
#[inline(always)]
fn run<const ORDER: u8>(
    stream: &[u8],
    table: &rans::Table,
    p: u32,
    states: usize,
    out: &mut [i64],
    mut undo: Undelta<ORDER>,
    mut residual: impl FnMut(u32) -> i64,
) -> Result<usize> {
    let map = |t: u32| undo.next(residual(t));
    match states {
        1 => rans::decode::<1>(stream, table, p, out, map),
        2 => rans::decode::<2>(stream, table, p, out, map),
        _ => rans::decode::<4>(stream, table, p, out, map),
    }
}

/// [`run`] for the section's delta order; `heads` are the heads as stored (order 2: the first
/// value and the first delta), and become the first values.
#[inline(always)]
#[expect(
    clippy::too_many_arguments,
    reason = "the decoder's state, passed once"
)]
fn run_order(
    stream: &[u8],
    table: &rans::Table,
    p: u32,
    states: usize,
    out: &mut [i64],
    order: u8,
    heads: &mut [i64],
    residual: impl FnMut(u32) -> i64,
) -> Result<usize> {
    let first = heads.first().copied().unwrap_or(0);
    match (order, heads) {
        (0, _) => {
            let undo = Undelta::<0> { value: 0, delta: 0 };
            run(stream, table, p, states, out, undo, residual)
        }
        (1, _) => {
            let undo = Undelta::<1> {
                value: first,
                delta: 0,
            };
            run(stream, table, p, states, out, undo, residual)
        }
        (_, heads) => {
            let delta = heads.get(1).copied().unwrap_or(0);
            let value = first.wrapping_add(delta);
            if let Some(h) = heads.get_mut(1) {
                *h = value;
            }
            let undo = Undelta::<2> { value, delta };
            run(stream, table, p, states, out, undo, residual)
        }
    }
}

/// The residual of a split token: its smallest `u` (`base_u[t]`) plus its `nbits[t]` raw bits
/// read at bit `pos` of `raw` (zero-padded by at least 8 bytes), mapped to `base + g·v`.
#[inline(always)]
#[expect(
    clippy::indexing_slicing,
    reason = "a masked token indexes arrays of MAX_SYMBOLS slots"
)]
fn raw_residual<const OFFSET: bool>(
    t: u32,
    pos: &mut usize,
    raw: &[u8],
    base_u: &[i64; rans::MAX_SYMBOLS],
    nbits: &[u8; rans::MAX_SYMBOLS],
    base: i64,
    g: u64,
) -> i64 {
    let t = t as usize & (rans::MAX_SYMBOLS - 1);
    let nb = u32::from(nbits[t]);
    let mut bits = word_at(raw, *pos >> 3) >> (*pos & 7);
    if nb > 56 {
        let at = *pos + 32;
        bits = (bits & 0xFFFF_FFFF) | ((word_at(raw, at >> 3) >> (at & 7)) << 32);
    }
    let bits = bits & (u64::MAX >> 1 >> (63 - nb));
    *pos += nb as usize;
    let u = (base_u[t] as u64) | bits;
    let v = if OFFSET { u } else { zigzag::decode(u) as u64 };
    base.wrapping_add(g.wrapping_mul(v) as i64)
}

/// Reads the header byte of a Coded section: `(order, flags)`.
pub(crate) fn read_header(r: &mut Reader<'_>) -> Result<(u8, u8)> {
    let h = r.u8()?;
    let order = h & 3;
    if order > 2 || h & FLAG_RESERVED != 0 || (h >> STATES_SHIFT) & 3 == 3 {
        return Err(Error::Corruption(format!("coded int header {h:#04x}")));
    }
    Ok((order, h))
}

/// Decodes the residuals of a Coded section (after its heads) into `out` (one per slot), with
/// the delta transform of `order` undone from `heads`: `out` gets the section's values.
///
/// # Errors
/// [`Error::Truncated`] or [`Error::Corruption`] for bad input.
pub(crate) fn decode_residuals(
    r: &mut Reader<'_>,
    flags: u8,
    order: u8,
    heads: &mut [i64],
    out: &mut [i64],
) -> Result<()> {
    let base = if flags & FLAG_BASE != 0 {
        r.varint_signed()?
    } else {
        0
    };
    let g = if flags & FLAG_DIVISOR != 0 {
        match r.varint()? {
            0 => return Err(Error::Corruption("coded divisor 0".to_owned())),
            g => g,
        }
    } else {
        1
    };
    let offset = flags & FLAG_OFFSET != 0;
    let mut s = DEC_SCRATCH.with(Cell::take).unwrap_or_default();
    let states = 1 << ((flags >> STATES_SHIFT) & 3);
    let result = decode_body(r, base, g, offset, states, (order, heads), out, &mut s);
    if s.raw.capacity() <= KEEP_SCRATCH {
        DEC_SCRATCH.with(|c| c.set(Some(s)));
    }
    result
}

#[inline(always)]
fn value_of(u: u64, offset: bool, base: i64, g: u64) -> i64 {
    let v = if offset { u } else { zigzag::decode(u) as u64 };
    base.wrapping_add(g.wrapping_mul(v) as i64)
}

#[expect(clippy::too_many_arguments, reason = "the section's fields, read once")]
fn decode_body(
    r: &mut Reader<'_>,
    base: i64,
    g: u64,
    offset: bool,
    states: usize,
    (order, heads): (u8, &mut [i64]),
    out: &mut [i64],
    s: &mut DecScratch,
) -> Result<()> {
    let src = r.peek_rest();
    let mut br = BitReader::new(src);
    let split = read_table(&mut br, &mut s.q)?;
    let p = precision(out.len(), s.q.iter().filter(|&&q| q > 0).count());
    r.bytes(br.used().div_ceil(8))?;
    normalize(&s.q, p, &mut s.freq)?;
    let has_raw = s.q.len() > 1 << split.e;
    let raw = if has_raw {
        let len = r.varint_at_most(r.remaining(), "coded raw bits length")?;
        r.bytes(len)?
    } else {
        &[]
    };
    rans::build_table(&s.freq, p, &mut s.table);
    let stream = r.peek_rest();
    let used = if has_raw {
        // Tokens first, then their values with the raw bits.
        for (t, (d, nb)) in s
            .direct
            .iter_mut()
            .zip(s.raw_bits.iter_mut())
            .enumerate()
            .take(s.q.len())
        {
            let (b, n) = split.base(t as u32);
            (*d, *nb) = (b as i64, n as u8);
        }
        s.raw.clear();
        s.raw.extend_from_slice(raw);
        s.raw.resize(raw.len() + 16, 0);
        let (padded, base_u, nbits) = (s.raw.as_slice(), &*s.direct, &*s.raw_bits);
        let mut pos = 0usize;
        let used = if offset {
            let residual = |t| raw_residual::<true>(t, &mut pos, padded, base_u, nbits, base, g);
            run_order(stream, &s.table, p, states, out, order, heads, residual)?
        } else {
            let residual = |t| raw_residual::<false>(t, &mut pos, padded, base_u, nbits, base, g);
            run_order(stream, &s.table, p, states, out, order, heads, residual)?
        };
        if pos.div_ceil(8) != raw.len() {
            return Err(Error::Corruption(format!(
                "coded raw bits: {pos} bits in {} bytes",
                raw.len()
            )));
        }
        used
    } else {
        for (d, u) in s.direct.iter_mut().zip(0..s.q.len() as u64) {
            *d = value_of(u, offset, base, g);
        }
        let direct = &*s.direct;
        #[expect(
            clippy::indexing_slicing,
            reason = "a masked token indexes an array of MAX_SYMBOLS slots"
        )]
        let residual = |t: u32| direct[t as usize & (rans::MAX_SYMBOLS - 1)];
        run_order(stream, &s.table, p, states, out, order, heads, residual)?
    };
    r.bytes(used)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_invert() {
        for e in 0..=MAX_SPLIT {
            for m in 0..=e.min(MAX_MSB) {
                let split = Split { e, m };
                let mut prev = 0;
                for (i, u) in (0..5000u64)
                    .chain((0..64).flat_map(|b| [(1u64 << b) - 1, 1u64 << b, (1u64 << b) + 1]))
                    .chain([u64::MAX, u64::MAX - 1])
                    .enumerate()
                {
                    let (t, nb) = split.token(u);
                    assert!((t as usize) < split.tokens(), "{e}/{m} {u}");
                    let (b, nb2) = split.base(t);
                    assert_eq!(nb, nb2);
                    assert!(u >= b && u - b < 1u64 << nb, "{e}/{m} {u}");
                    if i < 5000 {
                        assert!(prev <= t, "tokens grow with u");
                        prev = t;
                    }
                }
                assert_eq!(split.token(u64::MAX).0 as usize, split.tokens() - 1);
            }
        }
        assert_eq!(FINE.tokens(), FINE_TOKENS);
    }

    #[test]
    fn normalization_adds_up() {
        let mut freq = Vec::new();
        for p in 0..=rans::MAX_PRECISION {
            for q in [
                &[1u8][..],
                &[47, 0, 1],
                &[3; 9],
                &[20, 19, 19, 15, 15, 8, 8, 1, 1],
            ] {
                let used = q.iter().filter(|&&x| x > 0).count();
                let r = normalize(q, p, &mut freq);
                if used > 1 << p {
                    assert!(r.is_err());
                    continue;
                }
                r.unwrap();
                assert_eq!(freq.iter().map(|&f| u64::from(f)).sum::<u64>(), 1 << p);
                for (&f, &qt) in freq.iter().zip(q) {
                    assert_eq!(f > 0, qt > 0);
                }
            }
        }
        assert!(normalize(&[0, 0], 4, &mut freq).is_err());
    }

    #[test]
    fn table_round_trips() {
        for q in [
            vec![5u8],
            vec![15, 14, 14, 10, 10, 4, 4, 1, 1],
            vec![47, 0, 0, 1, 47],
        ] {
            let split = Split { e: 7, m: 3 };
            let mut out = Vec::new();
            let mut w = BitWriter::new(&mut out);
            write_table(&mut w, split, &q);
            w.finish();
            assert_eq!(out.len(), table_bits(&q).div_ceil(8));
            let mut back = Vec::new();
            let mut r = BitReader::new(&out);
            assert_eq!(read_table(&mut r, &mut back).unwrap(), split);
            assert_eq!(back, q);
        }
    }

    #[test]
    fn walk_deltas_cost_little_more_than_their_entropy() {
        let mut x = 3u64;
        let mut next = || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        for (n, slack) in [(360usize, 0.4), (1000, 0.25)] {
            let (mut bytes, mut entropy) = (0, 0.0);
            for _ in 0..20 {
                // A walk moved by N(0, 1) steps in [0, 100], truncated (TSBS cpu-only).
                let mut v = 100.0 * next();
                let vals: Vec<i64> = (0..n)
                    .map(|_| {
                        let (a, b) = (next(), next());
                        v = (v + (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos())
                            .clamp(0.0, 100.0);
                        v as i64
                    })
                    .collect();
                let res: Vec<i64> = vals.windows(2).map(|w| w[1] - w[0]).collect();
                let mut h = std::collections::HashMap::new();
                for &r in &res {
                    *h.entry(r).or_insert(0usize) += 1;
                }
                let m = res.len() as f64;
                entropy += h
                    .values()
                    .map(|&c| -(c as f64) * (c as f64 / m).log2())
                    .sum::<f64>();
                let mut seq = vec![vals[0]];
                seq.extend(&res);
                let mut out = Vec::new();
                let min = *res.iter().min().unwrap();
                assert!(encode_if_smaller(&seq, 1, min, 1, usize::MAX, Some(&mut out)).is_some());
                bytes += out.len();
            }
            let per_value = bytes as f64 * 8.0 / (20 * n) as f64;
            let entropy = entropy / (20 * n) as f64;
            assert!(per_value < entropy + slack, "{n}: {per_value} vs {entropy}");
        }
    }
}
