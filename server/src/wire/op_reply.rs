//! OP_REPLY (opcode 1): the legacy answer to an OP_QUERY.
//!
//! After the header: `responseFlags` (`int32`), `cursorID` (`int64`), `startingFrom` and
//! `numberReturned` (`int32`s), and `numberReturned` BSON documents.

use bson::Document;

use super::header::{HEADER_BYTES, MsgHeader, OP_REPLY, check_length, patch_length};
use super::{MAX_COMMAND_BYTES, Reader, WireError, write_document};

/// An OP_REPLY.
#[derive(Debug, Clone, PartialEq)]
pub struct OpReply {
    /// The flag bits (bit 0 `CursorNotFound`, bit 1 `QueryFailure`, bit 3 `AwaitCapable`).
    pub response_flags: i32,
    /// The cursor to read more from; 0 when there is none (always, for a command's answer).
    pub cursor_id: i64,
    /// The position of the first document in the cursor.
    pub starting_from: i32,
    /// The documents (one, the command's answer, for a command).
    pub documents: Vec<Document>,
}

impl OpReply {
    /// An answer of one document, as a command's answer is.
    pub fn single(document: Document) -> Self {
        OpReply {
            response_flags: 0,
            cursor_id: 0,
            starting_from: 0,
            documents: vec![document],
        }
    }

    /// The whole message, header included; `response_to` is the OP_QUERY's `request_id`.
    ///
    /// # Errors
    /// [`WireError::Unencodable`] when a document cannot be serialized as BSON (a key
    /// holding a NUL byte) or a name holds a NUL byte.
    pub fn encode(&self, request_id: i32, response_to: i32) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::new();
        MsgHeader {
            message_length: 0,
            request_id,
            response_to,
            op_code: OP_REPLY,
        }
        .encode_into(&mut out);
        out.extend_from_slice(&self.response_flags.to_le_bytes());
        out.extend_from_slice(&self.cursor_id.to_le_bytes());
        out.extend_from_slice(&self.starting_from.to_le_bytes());
        let n = i32::try_from(self.documents.len()).unwrap_or(i32::MAX);
        out.extend_from_slice(&n.to_le_bytes());
        for doc in &self.documents {
            write_document(doc, &mut out)?;
        }
        patch_length(&mut out);
        Ok(out)
    }

    /// Decodes a whole OP_REPLY message (header included) of at most `max_message_bytes`.
    ///
    /// # Errors
    /// [`WireError::TooShort`], [`WireError::LengthBelowHeader`], [`WireError::TooLarge`] and
    /// [`WireError::LengthMismatch`] as [`decode`](super::decode);
    /// [`WireError::UnknownOpCode`] if the opcode is not OP_REPLY;
    /// [`WireError::DocumentOverrun`], [`WireError::DocumentTooLarge`],
    /// [`WireError::DocumentTooDeep`] or [`WireError::BadDocument`] for a document;
    /// [`WireError::TrailingBytes`] for bytes after `numberReturned` documents.
    pub fn decode(bytes: &[u8], max_message_bytes: usize) -> Result<(MsgHeader, Self), WireError> {
        let header = MsgHeader::decode(bytes)?;
        let length = check_length(header.message_length, max_message_bytes)?;
        if length != bytes.len() {
            return Err(WireError::LengthMismatch {
                header: i64::from(header.message_length),
                actual: bytes.len(),
            });
        }
        if header.op_code != OP_REPLY {
            return Err(WireError::UnknownOpCode(header.op_code));
        }
        let mut r = Reader::new(&bytes[HEADER_BYTES..]);
        let response_flags = r.i32("OP_REPLY responseFlags")?;
        let cursor_id = r.i64("OP_REPLY cursorID")?;
        let starting_from = r.i32("OP_REPLY startingFrom")?;
        let number_returned = r.i32("OP_REPLY numberReturned")?;
        // No allocation from the count: each document is at least 5 bytes of the input.
        let mut documents = Vec::new();
        for _ in 0..number_returned.max(0) {
            documents.push(r.document("OP_REPLY document", MAX_COMMAND_BYTES)?);
        }
        if r.remaining() > 0 {
            return Err(WireError::TrailingBytes(r.remaining()));
        }
        let reply = OpReply {
            response_flags,
            cursor_id,
            starting_from,
            documents,
        };
        Ok((header, reply))
    }
}
