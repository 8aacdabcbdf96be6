//! Unsigned LEB128 varints (7 bits per byte, least-significant group first, high bit =
//! "more bytes follow"), at most 10 bytes for a `u64`; signed values zigzag-mapped first. The
//! codec's formats use them, and so may other formats of the project (the engine's
//! write-ahead log): one implementation.

use crate::error::{Error, Result};

/// Appends `v` as a varint.
#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zigzag-mapped as a varint.
#[inline]
pub fn put_signed(out: &mut Vec<u8>, v: i64) {
    put(out, crate::zigzag::encode(v));
}

/// Bytes [`put`] writes for `v`.
#[inline]
pub fn len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Bytes [`put_signed`] writes for `v`.
#[inline]
pub fn len_signed(v: i64) -> usize {
    len(crate::zigzag::encode(v))
}

/// Reads a varint from the front of `bytes` and advances `bytes` past it.
///
/// # Errors
/// [`Error::Truncated`] when `bytes` ends inside the varint; [`Error::Corruption`] when it is
/// longer than 10 bytes or its value does not fit in 64 bits.
pub fn take(bytes: &mut &[u8]) -> Result<u64> {
    let mut v = 0u64;
    for i in 0..10u32 {
        let Some((&b, tail)) = bytes.split_first() else {
            return Err(Error::Truncated {
                needed: 1,
                available: 0,
            });
        };
        *bytes = tail;
        if i == 9 && b > 1 {
            return Err(Error::Corruption("varint overflows 64 bits".to_owned()));
        }
        v |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Error::Corruption("varint longer than 10 bytes".to_owned()))
}

/// Reads a zigzag-mapped varint ([`put_signed`]) from the front of `bytes`.
///
/// # Errors
/// As [`take`].
pub fn take_signed(bytes: &mut &[u8]) -> Result<i64> {
    take(bytes).map(crate::zigzag::decode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::Reader;

    #[test]
    fn round_trip_and_lengths() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put(&mut out, v);
            assert_eq!(out.len(), len(v), "{v}");
            let mut r = Reader::new(&out);
            assert_eq!(r.varint().unwrap(), v);
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn take_reads_what_put_wrote_and_advances() {
        let mut out = Vec::new();
        put(&mut out, 300);
        put_signed(&mut out, -5);
        put(&mut out, u64::MAX);
        let mut bytes = &out[..];
        assert_eq!(take(&mut bytes).unwrap(), 300);
        assert_eq!(take_signed(&mut bytes).unwrap(), -5);
        assert_eq!(take(&mut bytes).unwrap(), u64::MAX);
        assert!(bytes.is_empty());
        assert!(take(&mut &[0x80][..]).is_err());
        assert!(take(&mut &[0xFF; 10][..]).is_err());
    }

    #[test]
    fn overflow_and_truncation_fail() {
        let mut r = Reader::new(&[0xFF; 10]);
        assert!(r.varint().is_err());
        let mut r = Reader::new(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02]);
        assert!(r.varint().is_err());
        let mut r = Reader::new(&[0x80]);
        assert!(matches!(r.varint(), Err(crate::Error::Truncated { .. })));
    }
}
