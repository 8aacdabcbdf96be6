//! Static-frequency rANS (range asymmetric numeral systems, after J. Duda and F. Giesen's
//! `rans_word`): the entropy coder behind [`crate::IntEncoding::Coded`].
//!
//! Symbols `s` have frequencies `f[s] ≥ 1` adding up to `2^p` (`p ≤` [`MAX_PRECISION`]) and
//! cumulative frequencies `c[s]`. A coder state `x` lives in `[2^16, 2^32)` between symbols.
//! The decoder takes a symbol from the low `p` bits of `x` (`slot = x mod 2^p`, the symbol
//! whose `[c, c + f)` holds `slot`), sets `x = f·⌊x / 2^p⌋ + slot − c`, then, if `x < 2^16`,
//! shifts in the next 16-bit word: `x = x·2^16 + word`. One table lookup and one multiply a
//! symbol, no division. The encoder runs the inverse backwards, from the last symbol to the
//! first, starting each state at `2^16`; the decoder ends with every state back at `2^16`.
//!
//! `S` = 1, 2 or [`MAX_STATES`] states are interleaved (symbol `i` uses state `i mod S`), each
//! with its own stream of words, so `S` symbols decode in parallel with no dependency between
//! their chains. Stream layout: the states' final values as `u32le` (state 0 first), the word
//! counts of states `0 … S−2` as varints, then each state's 16-bit words as `u16le` in the
//! order its decoder reads them, state 0's first; the last state's words end the stream.

use crate::reader::Reader;
use crate::varint;
use crate::{Error, Result};

/// Lowest value of a coder state between symbols (and its value at both ends of a stream).
pub(crate) const STATE_LOW: u32 = 1 << 16;

/// Largest precision `p`: frequencies add up to `2^p`.
pub(crate) const MAX_PRECISION: u32 = 11;

/// Most symbols of one alphabet.
pub(crate) const MAX_SYMBOLS: usize = 1 << 10;

/// Most interleaved states.
pub(crate) const MAX_STATES: usize = 4;

/// How the encoder codes one symbol: `x → ⌊x / f⌋·2^p + x mod f + c`, computed as
/// `x + c + q·(2^p − f)` with the quotient `q = ⌊x·m / 2^shift⌋` from the reciprocal
/// `m = ⌈2^shift / f⌉`, `shift = 32 + ⌈log2 f⌉` (exact for every `x < 2^32`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EncSymbol {
    x_max: u64,
    rcp: u64,
    shift: u32,
    bias: u32,
    cmpl: u32,
}

/// The encoder's table of `freq` (adding up to `2^p`), into `syms`.
pub(crate) fn enc_symbols(freq: &[u32], p: u32, syms: &mut Vec<EncSymbol>) {
    syms.clear();
    let mut cum = 0u32;
    for &f in freq {
        let f1 = f.max(1);
        let l = 32 - (f1 - 1).leading_zeros();
        let shift = 32 + l;
        syms.push(EncSymbol {
            x_max: u64::from(f1) << (32 - p),
            rcp: (1u64 << shift).div_ceil(u64::from(f1)),
            shift,
            bias: cum,
            cmpl: (1u32 << p).wrapping_sub(f1),
        });
        cum = cum.wrapping_add(f);
    }
}

/// Appends the coded stream of `symbols` (each with a nonzero frequency in `syms`, from
/// [`enc_symbols`]) with `S` (1, 2 or [`MAX_STATES`]) interleaved states. `words` is scratch
/// memory.
pub(crate) fn encode<const S: usize>(
    symbols: &[u16],
    syms: &[EncSymbol],
    out: &mut Vec<u8>,
    words: &mut [Vec<u16>; MAX_STATES],
) {
    debug_assert!(S.is_power_of_two() && S <= MAX_STATES);
    for w in words.iter_mut() {
        w.clear();
    }
    let mut x = [STATE_LOW; S];
    let put = |st: &mut u32, words: &mut Vec<u16>, s: u16| {
        let e = syms.get(usize::from(s)).copied().unwrap_or_default();
        // Renormalize so the state after coding stays below 2^32.
        if u64::from(*st) >= e.x_max {
            words.push(*st as u16);
            *st >>= 16;
        }
        let q = ((u128::from(*st) * u128::from(e.rcp)) >> e.shift) as u32;
        *st = st.wrapping_add(e.bias).wrapping_add(q.wrapping_mul(e.cmpl));
    };
    // Symbol i goes to state i mod S; symbols are coded from the last to the first.
    let whole = symbols.len() / S * S;
    let (body, tail) = symbols.split_at(whole);
    for ((st, w), &s) in x.iter_mut().zip(words.iter_mut()).zip(tail).rev() {
        put(st, w, s);
    }
    for group in body.rchunks_exact(S) {
        for ((st, w), &s) in x.iter_mut().zip(words.iter_mut()).zip(group).rev() {
            put(st, w, s);
        }
    }
    for st in &x {
        out.extend_from_slice(&st.to_le_bytes());
    }
    for w in words.iter().take(S - 1) {
        varint::put(out, w.len() as u64);
    }
    for w in words.iter().take(S) {
        out.reserve(2 * w.len());
        for &word in w.iter().rev() {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }
}

/// Bits of a decoding-table entry: frequency − 1 (bits 21–31), symbol (11–20), slot −
/// cumulative frequency (0–10).
const FREQ_SHIFT: u32 = 21;
const SYM_SHIFT: u32 = 11;
const LOW_MASK: u32 = (1 << 11) - 1;
const SYM_MASK: u32 = (1 << 10) - 1;

/// Slots of a decoding table (the largest precision's).
pub(crate) const TABLE_LEN: usize = 1 << MAX_PRECISION;

/// A decoding table: entry `slot` (of the first `2^p`) holds the symbol owning the slot, its
/// frequency − 1 and `slot −` its cumulative frequency.
pub(crate) type Table = [u32; TABLE_LEN];

/// Fills `table` with the `2^p` decoding entries of `freq` (which must add up to `2^p`, each
/// `≥ 1`, at most [`MAX_SYMBOLS`] of them).
pub(crate) fn build_table(freq: &[u32], p: u32, table: &mut Table) {
    debug_assert!(p <= MAX_PRECISION && freq.len() <= MAX_SYMBOLS);
    let mut at = 0usize;
    for (s, &f) in freq.iter().enumerate() {
        let head = ((s as u32) << SYM_SHIFT) | (f.wrapping_sub(1) << FREQ_SHIFT);
        let Some(run) = table.get_mut(at..at + f as usize) else {
            break;
        };
        for (j, e) in run.iter_mut().enumerate() {
            *e = head | j as u32;
        }
        at += f as usize;
    }
}

/// Decodes `out.len()` symbols from a stream written by [`encode`] with `S` states, storing
/// `map(symbol)` for each. `table` comes from [`build_table`] for precision `p`. Returns the
/// bytes of `src` the stream takes.
///
/// # Errors
/// [`Error::Truncated`] if the stream runs past `src`, [`Error::Corruption`] if a state is out
/// of range at either end or a state's words are not all used.
#[inline(always)]
pub(crate) fn decode<const S: usize>(
    src: &[u8],
    table: &Table,
    p: u32,
    out: &mut [i64],
    mut map: impl FnMut(u32) -> i64,
) -> Result<usize> {
    let mut r = Reader::new(src);
    let mut x = [0u32; S];
    for st in &mut x {
        *st = u32::from_le_bytes(r.array::<4>()?);
        if *st < STATE_LOW {
            return Err(Error::Corruption("rANS state out of range".to_owned()));
        }
    }
    // Each state's words: counted for all but the last, whose words end the stream.
    let mut counts = [0usize; S];
    for c in counts.iter_mut().take(S - 1) {
        *c = r.varint_at_most(r.remaining() / 2, "rANS word count")?;
    }
    let mut streams = [&[][..]; S];
    for (j, w) in streams.iter_mut().enumerate() {
        *w = if j + 1 < S {
            r.bytes(2 * counts.get(j).copied().unwrap_or(0))?
        } else {
            r.rest()
        };
    }
    let head = src.len() - streams.iter().map(|w| w.len()).sum::<usize>();
    let mask = ((1u32 << p) - 1) as usize;
    #[inline(always)]
    fn word(w: &[u8], pos: usize) -> u32 {
        match w.get(pos..pos + 2) {
            Some(&[a, b]) => u32::from(u16::from_le_bytes([a, b])),
            _ => 0,
        }
    }
    // One state's step: the next word is loaded ahead (zero past the end of its stream).
    #[inline(always)]
    #[expect(
        clippy::indexing_slicing,
        reason = "a masked slot indexes a table of TABLE_LEN entries"
    )]
    fn step(
        st: &mut u32,
        pos: &mut usize,
        w: &mut u32,
        stream: &[u8],
        table: &Table,
        mask: usize,
        p: u32,
    ) -> u32 {
        let e = table[(*st as usize & mask) & (TABLE_LEN - 1)];
        let q = *st >> p;
        let v = (e >> FREQ_SHIFT) * q + (q + (e & LOW_MASK));
        let refill = v < STATE_LOW;
        *st = if refill { (v << 16) | *w } else { v };
        *pos += 2 * usize::from(refill);
        *w = word(stream, *pos);
        (e >> SYM_SHIFT) & SYM_MASK
    }
    let mut pos = [0usize; S];
    let mut w = [0u32; S];
    for (w, stream) in w.iter_mut().zip(&streams) {
        *w = word(stream, 0);
    }
    let mut groups = out.chunks_exact_mut(S);
    for group in &mut groups {
        for ((((o, st), pos), w), stream) in group
            .iter_mut()
            .zip(x.iter_mut())
            .zip(pos.iter_mut())
            .zip(w.iter_mut())
            .zip(&streams)
        {
            *o = map(step(st, pos, w, stream, table, mask, p));
        }
    }
    for ((((o, st), pos), w), stream) in groups
        .into_remainder()
        .iter_mut()
        .zip(x.iter_mut())
        .zip(pos.iter_mut())
        .zip(w.iter_mut())
        .zip(&streams)
    {
        *o = map(step(st, pos, w, stream, table, mask, p));
    }
    let mut used = head;
    for (j, (&at, stream)) in pos.iter().zip(&streams).enumerate() {
        if at > stream.len() {
            return Err(Error::Truncated {
                needed: head + at,
                available: src.len(),
            });
        }
        if j + 1 < S && at != stream.len() {
            return Err(Error::Corruption("rANS words left over".to_owned()));
        }
        used += at;
    }
    if x.iter().any(|&st| st != STATE_LOW) {
        return Err(Error::Corruption("rANS stream does not end".to_owned()));
    }
    Ok(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cum_of(freq: &[u32]) -> Vec<u32> {
        freq.iter()
            .scan(0, |c, &f| {
                let s = *c;
                *c += f;
                Some(s)
            })
            .collect()
    }

    fn round_trip(symbols: &[u16], freq: &[u32], p: u32, states: usize) -> usize {
        let mut out = vec![0xAB];
        let mut words: [Vec<u16>; MAX_STATES] = Default::default();
        let mut syms = Vec::new();
        enc_symbols(freq, p, &mut syms);
        match states {
            1 => encode::<1>(symbols, &syms, &mut out, &mut words),
            2 => encode::<2>(symbols, &syms, &mut out, &mut words),
            _ => encode::<4>(symbols, &syms, &mut out, &mut words),
        }
        let mut table = [0; TABLE_LEN];
        build_table(freq, p, &mut table);
        let mut back = vec![0i64; symbols.len()];
        let used = match states {
            1 => decode::<1>(&out[1..], &table, p, &mut back, i64::from),
            2 => decode::<2>(&out[1..], &table, p, &mut back, i64::from),
            _ => decode::<4>(&out[1..], &table, p, &mut back, i64::from),
        }
        .unwrap();
        assert_eq!(used, out.len() - 1);
        let back: Vec<u16> = back.iter().map(|&s| s as u16).collect();
        assert_eq!(back, symbols);
        used
    }

    #[test]
    fn round_trips_close_to_the_entropy() {
        let freq = [700u32, 200, 100, 20, 3, 1];
        let total: u32 = freq.iter().sum();
        let p = 10;
        let mut freq = freq.to_vec();
        freq[0] += (1 << p) - total;
        let mut x = 5u64;
        let cum = cum_of(&freq);
        let symbols: Vec<u16> = (0..10_000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let t = ((x >> 33) % (1 << p)) as u32;
                (0..freq.len()).rfind(|&s| cum[s] <= t).unwrap() as u16
            })
            .collect();
        let entropy: f64 = symbols
            .iter()
            .map(|&s| f64::from(p) - f64::from(freq[usize::from(s)]).log2())
            .sum();
        for states in [1, 2, 4] {
            let bytes = round_trip(&symbols, &freq, p, states);
            assert!(
                (bytes * 8) as f64 <= entropy * 1.002 + 64.0 * states as f64,
                "{states}: {} vs {entropy}",
                bytes * 8
            );
        }
    }

    #[test]
    fn reciprocal_division_is_exact() {
        let mut syms = Vec::new();
        for p in [0, 1, 5, 11] {
            let freq: Vec<u32> = (1..=(1u32 << p)).collect();
            enc_symbols(&freq, p, &mut syms);
            for (e, &f) in syms.iter().zip(&freq) {
                for x in (0..200u32)
                    .chain((0..200).map(|i| u32::MAX - i))
                    .chain((1..32).map(|b| 1 << b))
                    .chain((0..2000).map(|i| i * 2_147_483 + 12_345))
                {
                    let q = ((u128::from(x) * u128::from(e.rcp)) >> e.shift) as u32;
                    assert_eq!(q, x / f, "{x} / {f}");
                }
            }
        }
    }

    #[test]
    fn edges() {
        for states in [1, 2, 4] {
            round_trip(&[], &[1 << 4], 4, states);
            round_trip(&[0; 100], &[1 << 4], 4, states);
            round_trip(&[0, 1, 1, 0, 1], &[1, 1], 1, states);
            let many: Vec<u16> = (0..5000).map(|i| (i % 1024) as u16).collect();
            round_trip(&many, &[2; 1024], 11, states);
            let freq: Vec<u32> = (0..1024).map(|i| if i == 3 { 1025 } else { 1 }).collect();
            let rare: Vec<u16> = (0..3000)
                .map(|i| if i % 97 == 0 { 1000 } else { 3 })
                .collect();
            round_trip(&rare, &freq, 11, states);
        }
    }

    #[test]
    fn garbage_never_panics() {
        let freq = [5u32, 3, 7, 1];
        let mut table = [0; TABLE_LEN];
        build_table(&freq, 4, &mut table);
        let mut out = [0i64; 100];
        for seed in 0..200u32 {
            let junk: Vec<u8> = (0..40u32)
                .map(|i| (i.wrapping_mul(seed).wrapping_add(seed * 7) >> 1) as u8)
                .collect();
            let _ = decode::<2>(&junk, &table, 4, &mut out, |s| {
                assert!(s < 4);
                0
            });
            let _ = decode::<1>(
                &junk[..(seed as usize % 40)],
                &table,
                4,
                &mut out[..30],
                |_| 0,
            );
        }
    }
}
