//! The float lane (doubles), bit-exact for every value including `-0.0`, infinities and NaN
//! payloads.
//!
//! * [`FloatEncoding::Alp`] (decimal-aware, after ALP): for an exponent `e`, a value `v` whose
//!   digits `d = round(v·10^e)` satisfy `|v·10^e| < 2^53` and `(d as f64) / 10^e == v`
//!   bit for bit is stored as the integer `d` (an int section, so deltas, frame of reference
//!   and bit-packing apply); every other value is an exception kept as raw bits.
//! * [`FloatEncoding::Xor`] / [`FloatEncoding::Bits`]: the raw bits, XORed with the previous
//!   value's bits or as they are, through an int section (for full-precision values).
//! * [`FloatEncoding::Plain`]: 8 bytes per value.
//!
//! The smallest candidate wins.

use crate::format::FloatEncoding;
use crate::ints;
use crate::reader::Reader;
use crate::varint;
use crate::{Error, Result};

/// Largest decimal exponent [`FloatEncoding::Alp`] may use (decoders accept up to 22, the
/// largest exact power of ten in `f64`).
const MAX_ENCODE_EXP: usize = 18;
const MAX_DECODE_EXP: u8 = 22;

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// 2^53: digits must stay below it in magnitude so `d as f64` is exact.
const MAX_DIGITS: f64 = 9_007_199_254_740_992.0;

/// Sampled values used to choose the exponent.
const SAMPLE: usize = 256;

/// What [`encode`] chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatLayout {
    /// The lane's encoding.
    pub encoding: FloatEncoding,
    /// Decimal exponent (for [`FloatEncoding::Alp`]).
    pub exponent: u8,
    /// Values kept as raw bits (for [`FloatEncoding::Alp`]).
    pub exceptions: usize,
}

#[inline]
fn digits_of(v: f64, p: f64) -> Option<i64> {
    let s = v * p;
    if !(s.abs() < MAX_DIGITS) {
        return None;
    }
    let d = s.round() as i64;
    ((d as f64) / p).to_bits().eq(&v.to_bits()).then_some(d)
}

/// Exponent for the decimal encoding, by estimated cost over a sample.
fn choose_exponent(values: &[f64]) -> usize {
    let step = (values.len() / SAMPLE).max(1);
    let mut hist = [0u32; MAX_ENCODE_EXP + 1];
    let mut sampled = 0u64;
    for &v in values.iter().step_by(step) {
        sampled += 1;
        if let Some(e) = POW10.iter().take(MAX_ENCODE_EXP + 1).position(|&p| digits_of(v, p).is_some())
            && let Some(h) = hist.get_mut(e)
        {
            *h += 1;
        }
    }
    // Cost in tenths of a bit: an exception ≈ 80 bits, each decimal digit ≈ 3.3 bits a value.
    let mut best = (u64::MAX, 0usize);
    let mut ok = 0u64;
    for (e, &h) in hist.iter().enumerate() {
        ok += u64::from(h);
        let cost = (sampled - ok) * 800 + sampled * 33 * e as u64;
        if cost < best.0 {
            best = (cost, e);
        }
    }
    best.1
}

/// Appends the float lane of `values`, choosing the smallest encoding.
pub(crate) fn encode(values: &[f64], out: &mut Vec<u8>, scratch: &mut Vec<i64>) -> FloatLayout {
    let n = values.len();
    let mut best_len = 1 + 8 * n;
    let mut best: Option<(Vec<u8>, FloatLayout)> = None;

    // Decimal candidate.
    let e = choose_exponent(values);
    let p = POW10.get(e).copied().unwrap_or(1.0);
    let mut digits = Vec::with_capacity(n);
    let mut exc_pos: Vec<i64> = Vec::new();
    let mut prev = 0i64;
    for (i, &v) in values.iter().enumerate() {
        match digits_of(v, p) {
            Some(d) => {
                digits.push(d);
                prev = d;
            }
            None => {
                digits.push(prev);
                exc_pos.push(i as i64);
            }
        }
    }
    let n_exc = exc_pos.len();
    if n_exc < n {
        let mut buf = Vec::with_capacity(n * 2 + 16);
        buf.push(FloatEncoding::Alp.to_code());
        buf.push(e as u8);
        ints::encode(&digits, &mut buf, scratch);
        varint::put(&mut buf, n_exc as u64);
        ints::encode(&exc_pos, &mut buf, scratch);
        for &i in &exc_pos {
            let bits = values.get(i as usize).map_or(0, |v| v.to_bits());
            buf.extend_from_slice(&bits.to_le_bytes());
        }
        if buf.len() < best_len {
            best_len = buf.len();
            let layout = FloatLayout { encoding: FloatEncoding::Alp, exponent: e as u8, exceptions: n_exc };
            best = Some((buf, layout));
        }
    }

    // Raw-bit candidates, for values that are not (mostly) short decimals.
    if n_exc * 16 > n {
        let raw: Vec<i64> = values.iter().map(|v| v.to_bits() as i64).collect();
        let mut prev = 0u64;
        let xored: Vec<i64> = values
            .iter()
            .map(|v| {
                let b = v.to_bits();
                let x = b ^ prev;
                prev = b;
                x as i64
            })
            .collect();
        for (encoding, lane) in [(FloatEncoding::Bits, &raw), (FloatEncoding::Xor, &xored)] {
            let (cost, layout) = ints::estimate(lane, scratch);
            if 1 + cost < best_len {
                let mut buf = Vec::with_capacity(1 + cost);
                buf.push(encoding.to_code());
                ints::encode_as(lane, layout, &mut buf, scratch);
                best_len = buf.len();
                best = Some((buf, FloatLayout { encoding, exponent: 0, exceptions: 0 }));
            }
        }
    }

    match best {
        Some((buf, layout)) => {
            out.extend_from_slice(&buf);
            layout
        }
        None => {
            out.push(FloatEncoding::Plain.to_code());
            for v in values {
                out.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            FloatLayout { encoding: FloatEncoding::Plain, exponent: 0, exceptions: 0 }
        }
    }
}

/// Reads a float lane of `n` values, appending them to `out`.
///
/// # Errors
/// [`Error::Truncated`] or [`Error::Corruption`] for bad input.
pub(crate) fn decode(
    r: &mut Reader<'_>,
    n: usize,
    out: &mut Vec<f64>,
    scratch: &mut Vec<i64>,
) -> Result<()> {
    let start = out.len();
    match FloatEncoding::try_from_code(r.u8()?)? {
        FloatEncoding::Plain => {
            let raw = r.bytes(n.checked_mul(8).ok_or_else(|| Error::Corruption("float count".to_owned()))?)?;
            out.extend(raw.chunks_exact(8).map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                f64::from_bits(u64::from_le_bytes(b))
            }));
        }
        FloatEncoding::Alp => {
            let e = r.u8()?;
            if e > MAX_DECODE_EXP {
                return Err(Error::Corruption(format!("decimal exponent {e}")));
            }
            let p = POW10.get(usize::from(e)).copied().unwrap_or(1.0);
            scratch.clear();
            ints::decode(r, n, scratch)?;
            out.extend(scratch.iter().map(|&d| (d as f64) / p));
            let n_exc = r.varint_at_most(n, "exception count")?;
            if n_exc > 0 {
                if n_exc.saturating_mul(8) > r.remaining() {
                    return Err(Error::Truncated { needed: n_exc * 8, available: r.remaining() });
                }
                scratch.clear();
                ints::decode(r, n_exc, scratch)?;
                let lane = out.get_mut(start..).unwrap_or_default();
                let mut next = 0u64;
                for &pos in scratch.iter() {
                    let pos = pos as u64;
                    if pos < next {
                        return Err(Error::Corruption("exception positions not increasing".to_owned()));
                    }
                    next = pos + 1;
                    let bits = r.u64_le()?;
                    match usize::try_from(pos).ok().and_then(|p| lane.get_mut(p)) {
                        Some(slot) => *slot = f64::from_bits(bits),
                        None => return Err(Error::Corruption("exception position out of range".to_owned())),
                    }
                }
            }
        }
        FloatEncoding::Xor => {
            scratch.clear();
            ints::decode(r, n, scratch)?;
            let mut prev = 0u64;
            out.extend(scratch.iter().map(|&x| {
                prev ^= x as u64;
                f64::from_bits(prev)
            }));
        }
        FloatEncoding::Bits => {
            scratch.clear();
            ints::decode(r, n, scratch)?;
            out.extend(scratch.iter().map(|&x| f64::from_bits(x as u64)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(values: &[f64]) -> (usize, FloatLayout) {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        let layout = encode(values, &mut out, &mut scratch);
        let mut r = Reader::new(&out);
        let mut back = Vec::new();
        decode(&mut r, values.len(), &mut back, &mut scratch).unwrap();
        assert_eq!(r.remaining(), 0);
        let a: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        let b: Vec<u64> = back.iter().map(|v| v.to_bits()).collect();
        assert_eq!(a, b);
        (out.len(), layout)
    }

    #[test]
    fn decimals_use_alp() {
        let v: Vec<f64> = (0..1000).map(|i| f64::from(i % 300 - 150) / 10.0).collect();
        let (len, layout) = round_trip(&v);
        assert_eq!(layout.encoding, FloatEncoding::Alp);
        assert_eq!(layout.exponent, 1);
        assert!(len < 1000 * 10 / 8, "{len}");
    }

    #[test]
    fn specials_are_exact() {
        let v = [
            0.0,
            -0.0,
            f64::NAN,
            f64::from_bits(0x7FF8_0000_0000_1234),
            f64::from_bits(0xFFF0_0000_0000_0001),
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            1.5,
            0.132,
            95.192_558_499_999_99,
        ];
        round_trip(&v);
        round_trip(&[]);
        round_trip(&[-0.0; 10]);
        round_trip(&[f64::NAN; 10]);
    }

    #[test]
    fn full_precision_noise() {
        let v: Vec<f64> = (0..500).map(|i| (f64::from(i) * 0.37).sin() * 1e3).collect();
        let (len, _) = round_trip(&v);
        assert!(len <= 1 + 8 * 500);
    }
}
