//! LEB128 varints (at most 128 bits), zigzag integers and a reader of little-endian fields:
//! the building blocks of the bucket sums' and rollup rows' encodings (docs/format.md).

/// Appends `v` as a LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        #[expect(clippy::cast_possible_truncation, reason = "seven bits at a time")]
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    #[expect(clippy::cast_possible_truncation, reason = "below 0x80")]
    out.push(v as u8);
}

/// A signed integer as an unsigned one, small magnitudes small.
#[expect(clippy::cast_sign_loss, reason = "zigzag encoding")]
pub(crate) fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

/// Inverse of [`zigzag`].
#[expect(clippy::cast_possible_wrap, reason = "zigzag decoding")]
pub(crate) fn unzigzag(v: u128) -> i128 {
    ((v >> 1) as i128) ^ -((v & 1) as i128)
}

/// Reads an encoding front to back; every error names `what` is read.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader {
            bytes,
            pos: 0,
            what,
        }
    }

    /// Bytes not read yet.
    pub(crate) fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or_else(|| format!("{}: cut short", self.what))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    pub(crate) fn varint(&mut self) -> Result<u128, String> {
        // Most varints are one byte.
        if let Some(&b) = self.bytes.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u128::from(b));
        }
        let mut v = 0u128;
        for shift in (0..133).step_by(7) {
            let b = self.byte()?;
            if shift == 126 && b > 3 {
                break;
            }
            v |= u128::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(format!("{}: varint past 128 bits", self.what))
    }

    /// Steps over `n` varints (their last bytes are below 0x80).
    pub(crate) fn skip_varints(&mut self, mut n: usize) -> Result<(), String> {
        while n > 0 {
            let rest = &self.bytes[self.pos..];
            let Some(end) = rest.iter().position(|&b| b < 0x80) else {
                return Err(format!("{}: cut short", self.what));
            };
            self.pos += end + 1;
            n -= 1;
        }
        Ok(())
    }

    pub(crate) fn f64(&mut self) -> Result<f64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    }
}
