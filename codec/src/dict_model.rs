//! Adaptive context coding of dictionary indices ([`crate::BytesEncoding::DictCoded`]): tags
//! such as wind directions or status words repeat and follow each other, so each index is
//! range-coded ([`crate::range_coder`]) with a probability learned as the column goes, from
//! the index before it (order 1) blended with the overall frequencies (order 0).
//!
//! With `k` symbols, `c0[s]` the count of `s` so far (`n0` in all), `c1[p][s]` the count of `s`
//! after `p` (`t1[p]` in all; `p = k` before the first index) and `W = 8`, the next index is
//! coded with frequency `c1[p][s]·d0 + W·(2·c0[s] + 1)` out of `(t1[p] + W)·d0`, where
//! `d0 = 2·n0 + k`: the order-1 estimate with `W` pseudo-counts spread as the order-0 estimate
//! (counts + ½). Symbols are scanned in index order for the cumulative frequency. Then the
//! counts of `s` go up by one and `p = s`.

use crate::range_coder::{MAX_TOTAL, RangeDecoder, RangeEncoder};
use crate::{Error, Result};

/// Most dictionary entries the model codes.
pub(crate) const MAX_SYMBOLS: usize = 64;

/// Most indices one coded stream holds (keeps every total within [`MAX_TOTAL`]).
pub(crate) const MAX_VALUES: usize = 1 << 16;

/// Weight of the order-0 estimate, in pseudo-counts.
const W: u64 = 8;

struct Model {
    k: usize,
    c0: Vec<u64>,
    n0: u64,
    c1: Vec<u64>,
    t1: Vec<u64>,
    ctx: usize,
}

impl Model {
    fn new(k: usize) -> Model {
        Model {
            k,
            c0: vec![0; k],
            n0: 0,
            c1: vec![0; (k + 1) * k],
            t1: vec![0; k + 1],
            ctx: k,
        }
    }

    #[inline]
    fn d0(&self) -> u64 {
        2 * self.n0 + self.k as u64
    }

    #[inline]
    fn total(&self) -> u64 {
        (self.t1.get(self.ctx).copied().unwrap_or(0) + W) * self.d0()
    }

    /// Frequencies of the symbols in the current context, in index order.
    #[inline]
    fn freqs(&self) -> impl Iterator<Item = u64> + '_ {
        let d0 = self.d0();
        let row = self
            .c1
            .get(self.ctx * self.k..(self.ctx + 1) * self.k)
            .unwrap_or_default();
        row.iter()
            .zip(&self.c0)
            .map(move |(&c1, &c0)| c1 * d0 + W * (2 * c0 + 1))
    }

    fn update(&mut self, s: usize) {
        if let Some(c) = self.c0.get_mut(s) {
            *c += 1;
        }
        self.n0 += 1;
        if let Some(c) = self.c1.get_mut(self.ctx * self.k + s) {
            *c += 1;
        }
        if let Some(t) = self.t1.get_mut(self.ctx) {
            *t += 1;
        }
        self.ctx = s;
    }
}

/// Appends the coded stream of `indices` (each `< k`, `2 ≤ k ≤ MAX_SYMBOLS`, at most
/// [`MAX_VALUES`] of them).
pub(crate) fn encode(indices: &[i64], k: usize, out: &mut Vec<u8>) {
    debug_assert!((2..=MAX_SYMBOLS).contains(&k) && indices.len() <= MAX_VALUES);
    let mut model = Model::new(k);
    let mut enc = RangeEncoder::new(out);
    for &i in indices {
        let s = usize::try_from(i).unwrap_or(0).min(k - 1);
        let total = model.total();
        debug_assert!(total <= MAX_TOTAL);
        let (mut cum, mut freq) = (0u64, 0u64);
        for (j, f) in model.freqs().enumerate() {
            if j == s {
                freq = f;
                break;
            }
            cum += f;
        }
        enc.encode(cum, freq, total);
        model.update(s);
    }
    enc.finish();
}

/// Decodes `n` indices below `k` from `src` (a whole coded stream), appending them to `out`.
///
/// # Errors
/// [`Error::Corruption`] if `k` or `n` is out of the model's range, or the stream is not one
/// [`encode`] wrote for `n` indices.
pub(crate) fn decode(src: &[u8], n: usize, k: usize, out: &mut Vec<i64>) -> Result<()> {
    if !(2..=MAX_SYMBOLS).contains(&k) || n > MAX_VALUES {
        return Err(Error::Corruption(format!(
            "coded dictionary of {k} entries and {n} values"
        )));
    }
    let mut model = Model::new(k);
    let mut dec = RangeDecoder::new(src);
    out.reserve(n);
    for _ in 0..n {
        let v = dec.target(model.total())?;
        let (mut cum, mut found) = (0u64, None);
        for (j, f) in model.freqs().enumerate() {
            if v < cum + f {
                found = Some((j, f));
                break;
            }
            cum += f;
        }
        let Some((s, f)) = found else {
            return Err(Error::Corruption("coded index out of range".to_owned()));
        };
        dec.update(cum, f);
        model.update(s);
        out.push(s as i64);
    }
    if dec.consumed() != src.len() {
        return Err(Error::Corruption(format!(
            "coded dictionary stream of {} bytes, {} used",
            src.len(),
            dec.consumed()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(indices: &[i64], k: usize) -> usize {
        let mut out = Vec::new();
        encode(indices, k, &mut out);
        let mut back = Vec::new();
        decode(&out, indices.len(), k, &mut back).unwrap();
        assert_eq!(back, indices);
        out.len()
    }

    #[test]
    fn persistent_tags_cost_less_than_their_order0_entropy() {
        // 16 directions, each row staying, or turning by one point.
        let mut x = 1u64;
        let mut d = 0i64;
        let v: Vec<i64> = (0..1000)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                d = (d + [0, 0, 1, 15][(x >> 60) as usize % 4]) % 16;
                d
            })
            .collect();
        let bytes = round_trip(&v, 16);
        assert!(bytes * 8 < 1000 * 4 * 3 / 4, "{bytes} bytes");
    }

    #[test]
    fn edges() {
        round_trip(&[], 2);
        round_trip(&[1], 2);
        round_trip(&[0, 1, 0, 1], 2);
        let all: Vec<i64> = (0..MAX_VALUES as i64).map(|i| i % 64).collect();
        round_trip(&all, 64);
        let mut out = Vec::new();
        encode(&[0, 1], 2, &mut out);
        let mut back = Vec::new();
        // The count comes from the type stream. A stream read for fewer indices than it holds
        // is corrupt (bytes left over); one read for more still yields its own indices first.
        let long: Vec<i64> = (0..200).map(|i| i % 2).collect();
        let mut long_stream = Vec::new();
        encode(&long, 2, &mut long_stream);
        assert!(decode(&long_stream, 100, 2, &mut Vec::new()).is_err());
        if decode(&out, 3, 2, &mut back).is_ok() {
            assert_eq!(back[..2], [0, 1]);
        }
        assert!(decode(&out, 2, 65, &mut back).is_err());
        assert!(decode(&out, MAX_VALUES + 1, 2, &mut back).is_err());
        // Trailing bytes are corrupt.
        out.push(0);
        assert!(decode(&out, 2, 2, &mut Vec::new()).is_err());
    }
}
