//! MongoDB's wire protocol: the messages, their framing and their encoding.
//!
//! Every message is a 16-byte [`MsgHeader`] (little-endian `int32`s: `messageLength`,
//! `requestID`, `responseTo`, `opCode`) and a body that depends on the opcode:
//!
//! - [`OpMsg`] (OP_MSG, 2013): flag bits, one body document (section kind 0), any number of
//!   document sequences (section kind 1), and an optional CRC-32C checksum;
//! - [`OpQuery`] (OP_QUERY, 2004): the legacy query, which drivers and mongosh still use for
//!   the first `hello` / `isMaster` of a connection, on `admin.$cmd`;
//! - [`OpReply`] (OP_REPLY, 1): the legacy answer to an OP_QUERY;
//! - OP_COMPRESSED (2012): recognized ([`Message::Compressed`]) but not decompressed.
//!
//! A reader takes the first 4 bytes of a message to [`frame_length`], which refuses lengths
//! below the header or above the limit before anything is read, reads that many bytes, and
//! hands them to [`decode`]. Decoding never panics, never allocates more than its input and
//! refuses documents nested deeper than [`MAX_BSON_DEPTH`] before building them.

mod convert;
mod error;
mod header;
mod op_msg;
mod op_query;
mod op_reply;

pub use error::WireError;
pub use header::{
    HEADER_BYTES, MsgHeader, OP_COMPRESSED, OP_MSG, OP_QUERY, OP_REPLY, frame_length,
    frame_length_limited,
};
pub use op_msg::{CHECKSUM_PRESENT, DocumentSequence, EXHAUST_ALLOWED, MORE_TO_COME, OpMsg};
pub use op_query::OpQuery;
pub use op_reply::OpReply;

use bson::Document;

/// The largest message accepted by default, in bytes: MongoDB's `maxMessageSizeBytes`.
pub const MAX_MESSAGE_BYTES: usize = 48_000_000;

/// The largest BSON document, in bytes: MongoDB's `maxBsonObjectSize` (16 MiB).
pub const MAX_BSON_OBJECT_BYTES: usize = 16 * 1024 * 1024;

/// The largest command body (an OP_MSG's kind-0 section, an OP_QUERY's query), in bytes:
/// [`MAX_BSON_OBJECT_BYTES`] and the 16 KiB MongoDB allows a command beyond it
/// (`BSONObjMaxInternalSize`), so that a command can carry a document of the largest size.
pub const MAX_COMMAND_BYTES: usize = MAX_BSON_OBJECT_BYTES + 16 * 1024;

/// The deepest nesting of documents and arrays (and code-with-scope scopes) in a message's
/// document, in levels below the document itself: MongoDB's default `maxBSONDepth`. A deeper
/// document is refused ([`WireError::DocumentTooDeep`]).
pub const MAX_BSON_DEPTH: usize = 200;

/// A decoded message's body.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// An OP_MSG.
    Msg(OpMsg),
    /// A legacy OP_QUERY.
    Query(OpQuery),
    /// An OP_COMPRESSED, recognized but not decompressed: the caller answers with an error.
    Compressed {
        /// The opcode of the message inside.
        original_op_code: i32,
        /// The size of the message inside once decompressed, in bytes, header excluded.
        uncompressed_size: i32,
        /// The compressor: 0 noop, 1 snappy, 2 zlib, 3 zstd.
        compressor_id: u8,
    },
}

/// Decodes one whole message: `bytes` is exactly one message, header included.
///
/// # Errors
/// [`WireError::TooShort`] if `bytes` is shorter than a header;
/// [`WireError::LengthBelowHeader`] or [`WireError::TooLarge`] if the header's length is below
/// 16 bytes or above `max_message_bytes`; [`WireError::LengthMismatch`] if it is not the length
/// of `bytes`; [`WireError::UnknownOpCode`] for an opcode other than OP_MSG, OP_QUERY and
/// OP_COMPRESSED (an OP_REPLY is an answer, not a request: see [`OpReply::decode`]); and the
/// errors of [`OpQuery::decode_body`]. For an OP_MSG: [`WireError::UnknownRequiredFlags`] for
/// flag bits 2–15; [`WireError::BadChecksum`] for a flagged checksum that does not match;
/// [`WireError::BadSectionKind`], [`WireError::MissingBody`], [`WireError::DuplicateBody`],
/// [`WireError::BadSequenceSize`] for its sections; [`WireError::UnterminatedCString`] or
/// [`WireError::BadCString`] for a sequence identifier; [`WireError::DocumentOverrun`],
/// [`WireError::DocumentTooLarge`], [`WireError::DocumentTooDeep`] or
/// [`WireError::BadDocument`] for a document; [`WireError::TooShort`] for a cut field.
pub fn decode(bytes: &[u8], max_message_bytes: usize) -> Result<(MsgHeader, Message), WireError> {
    let header = MsgHeader::decode(bytes)?;
    let length = header::check_length(header.message_length, max_message_bytes)?;
    if length != bytes.len() {
        return Err(WireError::LengthMismatch {
            header: i64::from(header.message_length),
            actual: bytes.len(),
        });
    }
    let message = match header.op_code {
        OP_MSG => Message::Msg(OpMsg::decode_checked(bytes)?),
        OP_QUERY => Message::Query(OpQuery::decode_body(&bytes[HEADER_BYTES..])?),
        OP_COMPRESSED => {
            let mut r = Reader::new(&bytes[HEADER_BYTES..]);
            let original_op_code = r.i32("OP_COMPRESSED")?;
            let uncompressed_size = r.i32("OP_COMPRESSED")?;
            let compressor_id = r.u8("OP_COMPRESSED")?;
            Message::Compressed {
                original_op_code,
                uncompressed_size,
                compressor_id,
            }
        }
        other => return Err(WireError::UnknownOpCode(other)),
    };
    Ok((header, message))
}

/// A cursor over a message's bytes; every read checks the bytes left.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(WireError::TooShort {
                what,
                needed: n,
                available: self.remaining(),
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, WireError> {
        let b = self.take(4, what)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, WireError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_le_bytes(a))
    }

    /// A NUL-terminated UTF-8 string; the NUL is consumed, not returned.
    pub(crate) fn cstring(&mut self, what: &'static str) -> Result<String, WireError> {
        let rest = &self.bytes[self.pos..];
        let Some(nul) = rest.iter().position(|&b| b == 0) else {
            return Err(WireError::UnterminatedCString(what));
        };
        let s = std::str::from_utf8(&rest[..nul]).map_err(|_| WireError::BadCString(what))?;
        self.pos += nul + 1;
        Ok(s.to_owned())
    }

    /// One BSON document of at most `limit` bytes, its length checked against the bytes left
    /// and the limit before it is parsed, and its nesting against [`MAX_BSON_DEPTH`] before it
    /// is converted.
    pub(crate) fn document(
        &mut self,
        what: &'static str,
        limit: usize,
    ) -> Result<Document, WireError> {
        let available = self.remaining();
        let length = Reader::new(&self.bytes[self.pos..]).i32(what)?;
        let fits = usize::try_from(length).is_ok_and(|l| (5..=available).contains(&l));
        if !fits {
            return Err(WireError::DocumentOverrun {
                what,
                length,
                available,
            });
        }
        let length = length as usize;
        if length > limit {
            return Err(WireError::DocumentTooLarge {
                what,
                length,
                limit,
            });
        }
        let bytes = self.take(length, what)?;
        let bad = |e: bson::error::Error| WireError::BadDocument {
            what,
            message: e.to_string(),
        };
        let raw = bson::RawDocument::from_bytes(bytes).map_err(bad)?;
        check_depth(raw, what)?;
        convert::to_document(raw, what)
    }
}

/// Refuses a document nesting documents and arrays more than [`MAX_BSON_DEPTH`] levels deep,
/// before it is converted: converting, comparing and dropping a [`Document`] recurse once
/// per level, so a message of a few kilobytes nested deeply enough would overflow a thread's
/// stack (and abort the process). The walk keeps its own stack of at most
/// `MAX_BSON_DEPTH + 1` iterators.
fn check_depth(doc: &bson::RawDocument, what: &'static str) -> Result<(), WireError> {
    use bson::spec::ElementType;
    let bad = |e: bson::error::Error| WireError::BadDocument {
        what,
        message: e.to_string(),
    };
    let mut open = vec![doc.iter_elements()];
    while let Some(elements) = open.last_mut() {
        let Some(element) = elements.next() else {
            open.pop();
            continue;
        };
        let element = element.map_err(bad)?;
        if !matches!(
            element.element_type(),
            ElementType::EmbeddedDocument
                | ElementType::Array
                | ElementType::JavaScriptCodeWithScope
        ) {
            continue;
        }
        let inner = match element.value().map_err(bad)? {
            bson::RawBsonRef::Document(d) => d.iter_elements(),
            bson::RawBsonRef::Array(a) => a.iter_elements(),
            bson::RawBsonRef::JavaScriptCodeWithScope(c) => c.scope.iter_elements(),
            _ => continue,
        };
        // `open` holds the top-level document and the levels above `inner`.
        if open.len() > MAX_BSON_DEPTH {
            return Err(WireError::DocumentTooDeep {
                what,
                limit: MAX_BSON_DEPTH,
            });
        }
        open.push(inner);
    }
    Ok(())
}

/// Appends `doc`'s BSON bytes to `out`.
///
/// # Errors
/// [`WireError::Unencodable`] when `doc` cannot be serialized (a key holding a NUL byte).
pub(crate) fn write_document(doc: &Document, out: &mut Vec<u8>) -> Result<(), WireError> {
    doc.to_writer(&mut *out)
        .map_err(|e| WireError::Unencodable {
            what: "a document",
            message: e.to_string(),
        })
}

/// Appends `s` and its terminating NUL to `out`.
///
/// # Errors
/// [`WireError::Unencodable`] when `s` holds a NUL byte.
pub(crate) fn write_cstring(s: &str, out: &mut Vec<u8>) -> Result<(), WireError> {
    if s.contains('\0') {
        return Err(WireError::Unencodable {
            what: "a C string",
            message: format!("{s:?} holds a NUL byte"),
        });
    }
    out.extend_from_slice(s.as_bytes());
    out.push(0);
    Ok(())
}

#[cfg(test)]
mod tests;
