//! Bounds-checked little-endian byte reader used by every decoder: each read either returns
//! the bytes it promises or [`Error::Truncated`], and never panics.

use crate::{Error, Result};

/// A cursor over a byte slice.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    version: u8,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`, of data in this build's format version.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self::with_version(buf, crate::FORMAT_VERSION)
    }

    /// A reader at the start of `buf`, of data written in format `version` (encodings newer
    /// than it are corrupt).
    pub(crate) fn with_version(buf: &'a [u8], version: u8) -> Self {
        Reader { buf, version }
    }

    /// Format version of the data.
    pub(crate) fn version(&self) -> u8 {
        self.version
    }

    /// The unread bytes, without consuming them.
    pub(crate) fn peek_rest(&self) -> &'a [u8] {
        self.buf
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// The unread bytes, consuming them.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }

    /// Fails unless every byte was read.
    pub(crate) fn finish(&self, what: &str) -> Result<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(Error::Corruption(format!(
                "{} trailing bytes after {what}",
                self.buf.len()
            )))
        }
    }

    /// Reads `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.buf.len() {
            return Err(Error::Truncated {
                needed: n,
                available: self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// Reads `N` bytes into an array.
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    /// Reads one byte.
    pub(crate) fn u8(&mut self) -> Result<u8> {
        let [b] = self.array::<1>()?;
        Ok(b)
    }

    /// Reads an unsigned LEB128 varint (at most 10 bytes, no bits beyond 64).
    pub(crate) fn varint(&mut self) -> Result<u64> {
        crate::varint::take(&mut self.buf)
    }

    /// Reads a zigzag varint.
    pub(crate) fn varint_signed(&mut self) -> Result<i64> {
        Ok(crate::zigzag::decode(self.varint()?))
    }

    /// Reads a varint that must be at most `max` (a count or a length); `what` names it in the
    /// error.
    pub(crate) fn varint_at_most(&mut self, max: usize, what: &str) -> Result<usize> {
        let v = self.varint()?;
        match usize::try_from(v) {
            Ok(v) if v <= max => Ok(v),
            _ => Err(Error::Corruption(format!(
                "{what} {v} exceeds the limit {max}"
            ))),
        }
    }
}
