//! The codec's error type.

/// Why encoding or decoding failed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a valid blob or column (bad checksum, impossible lengths, unknown
    /// encoding tags, values out of range). The data is damaged; it cannot be decoded.
    #[error("corrupt bucket data: {0}")]
    Corruption(String),
    /// The bytes end before the structure they describe does.
    #[error("truncated bucket data: needed {needed} bytes, {available} available")]
    Truncated {
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes left in the input.
        available: usize,
    },
    /// The caller passed something the format cannot hold (e.g. columns of unequal length).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The blob was written by a newer format version than this build reads.
    #[error("unsupported bucket format version {0}: upgrade tscoll to read it")]
    UnsupportedVersion(u8),
}

/// Result alias of the codec.
pub type Result<T> = std::result::Result<T, Error>;
