//! The errors of decoding a message.

use thiserror::Error;

/// Why bytes are not a valid wire-protocol message. Decoding never panics: every malformed
/// input is one of these.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// A message to send cannot be written: a document key, a collection name or a sequence
    /// identifier holds a NUL byte.
    #[error("cannot encode {what}: {message}")]
    Unencodable {
        /// What was being written.
        what: &'static str,
        /// Why.
        message: String,
    },
    /// Fewer bytes than a part of the message needs.
    #[error("message too short: {what} needs {needed} bytes, {available} left")]
    TooShort {
        /// The part being read (the header, a flag word, a section, …).
        what: &'static str,
        /// Bytes the part needs.
        needed: usize,
        /// Bytes left in the message.
        available: usize,
    },
    /// The header's `messageLength` is not the number of bytes given.
    #[error("message length mismatch: the header says {header} bytes, the message has {actual}")]
    LengthMismatch {
        /// The header's `messageLength`.
        header: i64,
        /// The bytes given.
        actual: usize,
    },
    /// The header's `messageLength` is below the 16 bytes of a header (or negative).
    #[error("message length {0} is below the 16-byte header")]
    LengthBelowHeader(i32),
    /// The message is larger than the limit.
    #[error("message of {length} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The message's length in bytes.
        length: usize,
        /// The largest length accepted, in bytes.
        limit: usize,
    },
    /// An opcode this layer does not know.
    #[error("unknown opcode {0}")]
    UnknownOpCode(i32),
    /// An OP_MSG section kind other than 0 (body) and 1 (document sequence).
    #[error("unknown OP_MSG section kind {0}")]
    BadSectionKind(u8),
    /// An OP_MSG without a kind-0 (body) section.
    #[error("OP_MSG has no body (kind 0) section")]
    MissingBody,
    /// An OP_MSG with more than one kind-0 (body) section.
    #[error("OP_MSG has more than one body (kind 0) section")]
    DuplicateBody,
    /// A kind-1 section whose size is below its own 4 bytes plus the identifier, or beyond
    /// the message.
    #[error("OP_MSG document sequence size {size} is invalid ({available} bytes left)")]
    BadSequenceSize {
        /// The section's size field.
        size: i32,
        /// Bytes left in the message after the section kind.
        available: usize,
    },
    /// The CRC-32C checksum does not match the message.
    #[error("OP_MSG checksum mismatch: the message says {expected:#010x}, computed {actual:#010x}")]
    BadChecksum {
        /// The checksum the message carries.
        expected: u32,
        /// The checksum of its bytes.
        actual: u32,
    },
    /// OP_MSG flag bits 2–15 are required bits this implementation does not know.
    #[error("OP_MSG sets unknown required flag bits {0:#06x}")]
    UnknownRequiredFlags(u32),
    /// A BSON document that does not parse.
    #[error("invalid BSON document in {what}: {message}")]
    BadDocument {
        /// Where the document is.
        what: &'static str,
        /// The BSON parser's message.
        message: String,
    },
    /// A BSON document whose length is below 5 bytes or runs past its section or message.
    #[error("BSON document in {what} of {length} bytes overruns its {available} bytes")]
    DocumentOverrun {
        /// Where the document is.
        what: &'static str,
        /// The document's length field.
        length: i32,
        /// Bytes left for it.
        available: usize,
    },
    /// A BSON document larger than the limit of its place.
    #[error("BSON document in {what} of {length} bytes exceeds the limit of {limit} bytes")]
    DocumentTooLarge {
        /// Where the document is.
        what: &'static str,
        /// The document's length in bytes.
        length: usize,
        /// The largest length accepted there, in bytes.
        limit: usize,
    },
    /// A BSON document nesting documents and arrays deeper than the limit
    /// ([`MAX_BSON_DEPTH`](super::MAX_BSON_DEPTH)).
    #[error("BSON document in {what} nests documents and arrays more than {limit} levels deep")]
    DocumentTooDeep {
        /// Where the document is.
        what: &'static str,
        /// The deepest nesting accepted, in levels below the document.
        limit: usize,
    },
    /// A C string (a collection name, a sequence identifier) without its terminating NUL.
    #[error("C string in {0} has no terminating NUL")]
    UnterminatedCString(&'static str),
    /// A C string that is not UTF-8.
    #[error("C string in {0} is not UTF-8")]
    BadCString(&'static str),
    /// Bytes left after the last part of a message that has a fixed shape.
    #[error("{0} trailing bytes after the message")]
    TrailingBytes(usize),
}
