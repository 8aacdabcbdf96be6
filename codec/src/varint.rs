//! Unsigned LEB128 varints (7 bits per byte, least-significant group first, high bit =
//! "more bytes follow"), at most 10 bytes for a `u64`.

/// Appends `v` as a varint.
#[inline]
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zigzag-mapped as a varint.
#[inline]
pub(crate) fn put_signed(out: &mut Vec<u8>, v: i64) {
    put(out, crate::zigzag::encode(v));
}

/// Bytes [`put`] writes for `v`.
#[inline]
pub(crate) fn len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Bytes [`put_signed`] writes for `v`.
#[inline]
pub(crate) fn len_signed(v: i64) -> usize {
    len(crate::zigzag::encode(v))
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
    fn overflow_and_truncation_fail() {
        let mut r = Reader::new(&[0xFF; 10]);
        assert!(r.varint().is_err());
        let mut r = Reader::new(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02]);
        assert!(r.varint().is_err());
        let mut r = Reader::new(&[0x80]);
        assert!(matches!(r.varint(), Err(crate::Error::Truncated { .. })));
    }
}
