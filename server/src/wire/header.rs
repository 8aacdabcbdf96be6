//! The 16-byte header every message starts with, and the opcodes.

use super::Reader;
use super::WireError;

/// The header's size in bytes.
pub const HEADER_BYTES: usize = 16;

/// OP_REPLY: the answer to an OP_QUERY (legacy).
pub const OP_REPLY: i32 = 1;
/// OP_QUERY: a query or command (legacy; drivers still open connections with it).
pub const OP_QUERY: i32 = 2004;
/// OP_COMPRESSED: another message, compressed.
pub const OP_COMPRESSED: i32 = 2012;
/// OP_MSG: the message of every command since MongoDB 3.6.
pub const OP_MSG: i32 = 2013;

/// A message's header: four little-endian `int32`s, 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgHeader {
    /// The whole message's length in bytes, this header included.
    pub message_length: i32,
    /// The sender's identifier of this message.
    pub request_id: i32,
    /// In an answer, the `request_id` of the message it answers; 0 otherwise.
    pub response_to: i32,
    /// The kind of message ([`OP_MSG`], [`OP_QUERY`], …).
    pub op_code: i32,
}

impl MsgHeader {
    /// Reads a header from the first 16 bytes of `bytes`.
    ///
    /// # Errors
    /// [`WireError::TooShort`] if `bytes` has fewer than 16 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(bytes);
        Ok(MsgHeader {
            message_length: r.i32("header")?,
            request_id: r.i32("header")?,
            response_to: r.i32("header")?,
            op_code: r.i32("header")?,
        })
    }

    /// Appends the header's 16 bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.message_length.to_le_bytes());
        out.extend_from_slice(&self.request_id.to_le_bytes());
        out.extend_from_slice(&self.response_to.to_le_bytes());
        out.extend_from_slice(&self.op_code.to_le_bytes());
    }
}

/// The length in bytes of the message whose first 4 bytes are `first4` (its `messageLength`),
/// so a reader knows how many bytes to read, checked before any is read: at least the
/// 16-byte header, at most [`MAX_MESSAGE_BYTES`](super::MAX_MESSAGE_BYTES).
///
/// # Errors
/// As [`frame_length_limited`].
pub fn frame_length(first4: &[u8]) -> Result<usize, WireError> {
    frame_length_limited(first4, super::MAX_MESSAGE_BYTES)
}

/// [`frame_length`] with a limit of `max_message_bytes` bytes.
///
/// # Errors
/// [`WireError::TooShort`] if `first4` has fewer than 4 bytes; [`WireError::LengthBelowHeader`]
/// if the length is below 16 (or negative); [`WireError::TooLarge`] if it exceeds
/// `max_message_bytes`.
pub fn frame_length_limited(first4: &[u8], max_message_bytes: usize) -> Result<usize, WireError> {
    let length = Reader::new(first4).i32("messageLength")?;
    check_length(length, max_message_bytes)
}

/// `length` as a `usize` if it is a valid message length under `max_message_bytes`.
pub(crate) fn check_length(length: i32, max_message_bytes: usize) -> Result<usize, WireError> {
    let Ok(len) = usize::try_from(length) else {
        return Err(WireError::LengthBelowHeader(length));
    };
    if len < HEADER_BYTES {
        return Err(WireError::LengthBelowHeader(length));
    }
    if len > max_message_bytes {
        return Err(WireError::TooLarge {
            length: len,
            limit: max_message_bytes,
        });
    }
    Ok(len)
}

/// Writes the message's length into the first 4 bytes of `message`.
pub(crate) fn patch_length(message: &mut [u8]) {
    let len = i32::try_from(message.len()).unwrap_or(i32::MAX);
    message[..4].copy_from_slice(&len.to_le_bytes());
}
