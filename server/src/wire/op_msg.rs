//! OP_MSG (opcode 2013): the message of every command.
//!
//! After the header: `flagBits` (`uint32`), sections, and a CRC-32C checksum (`uint32`) when
//! the `checksumPresent` bit is set. A section is a kind byte and then, for kind 0, one BSON
//! document (the command's body) or, for kind 1, a document sequence: its size in bytes
//! (`int32`, counting itself), an identifier (a C string naming the body's field it stands
//! for, such as `documents` for `insert`) and BSON documents filling the rest.

use bson::Document;

use super::header::{HEADER_BYTES, MsgHeader, OP_MSG, patch_length};
use super::{
    MAX_BSON_OBJECT_BYTES, MAX_COMMAND_BYTES, Reader, WireError, write_cstring, write_document,
};

/// Flag bit 0: the message ends with a CRC-32C checksum.
pub const CHECKSUM_PRESENT: u32 = 1;
/// Flag bit 1: the sender will send another message without waiting for an answer; the
/// receiver does not answer this one.
pub const MORE_TO_COME: u32 = 1 << 1;
/// Flag bit 16: the client accepts several answers to this request (exhaust cursors).
pub const EXHAUST_ALLOWED: u32 = 1 << 16;

/// The required flag bits (0–15): a receiver must refuse one it does not know.
const REQUIRED_BITS: u32 = 0xFFFF;
/// The required bits this implementation knows.
const KNOWN_REQUIRED: u32 = CHECKSUM_PRESENT | MORE_TO_COME;

/// A kind-1 section: documents standing for an array field of the body.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentSequence {
    /// The body's field the documents stand for (`documents`, `updates`, `deletes`, …).
    pub identifier: String,
    /// The documents, in order.
    pub documents: Vec<Document>,
}

/// An OP_MSG: flag bits, the body (kind-0 section) and document sequences (kind-1 sections).
#[derive(Debug, Clone, PartialEq)]
pub struct OpMsg {
    /// The flag bits ([`CHECKSUM_PRESENT`], [`MORE_TO_COME`], [`EXHAUST_ALLOWED`]; unknown
    /// optional bits 16–31 are kept as received). [`OpMsg::encode`] writes them with
    /// [`CHECKSUM_PRESENT`] set or cleared as asked.
    pub flags: u32,
    /// The command (kind-0 section).
    pub body: Document,
    /// The document sequences (kind-1 sections), in order.
    pub sequences: Vec<DocumentSequence>,
}

impl OpMsg {
    /// An OP_MSG with no flags and no document sequences.
    pub fn new(body: Document) -> Self {
        OpMsg {
            flags: 0,
            body,
            sequences: Vec::new(),
        }
    }

    /// Whether the `moreToCome` bit is set.
    pub fn more_to_come(&self) -> bool {
        self.flags & MORE_TO_COME != 0
    }

    /// Whether the `exhaustAllowed` bit is set.
    pub fn exhaust_allowed(&self) -> bool {
        self.flags & EXHAUST_ALLOWED != 0
    }

    /// The whole message, header included: the body as the first section, then each
    /// sequence, then, if `with_checksum`, the CRC-32C of everything before it.
    ///
    /// # Errors
    /// [`WireError::Unencodable`] when a document cannot be serialized as BSON (a key
    /// holding a NUL byte) or a name holds a NUL byte.
    pub fn encode(
        &self,
        request_id: i32,
        response_to: i32,
        with_checksum: bool,
    ) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::new();
        MsgHeader {
            message_length: 0,
            request_id,
            response_to,
            op_code: OP_MSG,
        }
        .encode_into(&mut out);
        let flags = if with_checksum {
            self.flags | CHECKSUM_PRESENT
        } else {
            self.flags & !CHECKSUM_PRESENT
        };
        out.extend_from_slice(&flags.to_le_bytes());
        out.push(0);
        write_document(&self.body, &mut out)?;
        for seq in &self.sequences {
            out.push(1);
            let start = out.len();
            out.extend_from_slice(&[0; 4]);
            write_cstring(&seq.identifier, &mut out)?;
            for doc in &seq.documents {
                write_document(doc, &mut out)?;
            }
            let size = i32::try_from(out.len() - start).unwrap_or(i32::MAX);
            out[start..start + 4].copy_from_slice(&size.to_le_bytes());
        }
        if with_checksum {
            out.extend_from_slice(&[0; 4]);
        }
        patch_length(&mut out);
        if with_checksum {
            let end = out.len() - 4;
            let crc = crc32c::crc32c(&out[..end]);
            out[end..].copy_from_slice(&crc.to_le_bytes());
        }
        Ok(out)
    }

    /// A reply whose body is already BSON (`body`, a whole document's bytes): the whole
    /// message, header included, with no flags, the body as its one section and no checksum.
    /// This is how a server sends a cursor's batch without building a [`Document`] of it.
    pub fn encode_raw_reply(body: &[u8], request_id: i32, response_to: i32) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + 5 + body.len());
        MsgHeader {
            message_length: 0,
            request_id,
            response_to,
            op_code: OP_MSG,
        }
        .encode_into(&mut out);
        out.extend_from_slice(&0u32.to_le_bytes());
        out.push(0);
        out.extend_from_slice(body);
        patch_length(&mut out);
        out
    }

    /// Decodes the OP_MSG `message` (header included), whose header's length and opcode the
    /// caller has checked.
    pub(crate) fn decode_checked(message: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(message.get(HEADER_BYTES..).unwrap_or_default());
        let flags = r.u32("OP_MSG flagBits")?;
        let unknown_required = flags & REQUIRED_BITS & !KNOWN_REQUIRED;
        if unknown_required != 0 {
            return Err(WireError::UnknownRequiredFlags(unknown_required));
        }
        let mut sections_end = message.len();
        if flags & CHECKSUM_PRESENT != 0 {
            if r.remaining() < 4 {
                return Err(WireError::TooShort {
                    what: "OP_MSG checksum",
                    needed: 4,
                    available: r.remaining(),
                });
            }
            sections_end -= 4;
            let c = &message[sections_end..];
            let expected = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            let actual = crc32c::crc32c(&message[..sections_end]);
            if expected != actual {
                return Err(WireError::BadChecksum { expected, actual });
            }
        }
        let sections = &message[HEADER_BYTES + 4..sections_end];
        let mut r = Reader::new(sections);
        let mut body = None;
        let mut sequences = Vec::new();
        while r.remaining() > 0 {
            match r.u8("OP_MSG section kind")? {
                0 => {
                    let doc = r.document("OP_MSG body", MAX_COMMAND_BYTES)?;
                    if body.replace(doc).is_some() {
                        return Err(WireError::DuplicateBody);
                    }
                }
                1 => {
                    let available = r.remaining();
                    let size = r.i32("OP_MSG document sequence size")?;
                    let len = usize::try_from(size)
                        .ok()
                        .filter(|&s| s >= 5 && s <= available);
                    let Some(len) = len else {
                        return Err(WireError::BadSequenceSize { size, available });
                    };
                    let mut s = Reader::new(r.take(len - 4, "OP_MSG document sequence")?);
                    let identifier = s.cstring("OP_MSG document sequence identifier")?;
                    let mut documents = Vec::new();
                    while s.remaining() > 0 {
                        documents
                            .push(s.document("OP_MSG document sequence", MAX_BSON_OBJECT_BYTES)?);
                    }
                    sequences.push(DocumentSequence {
                        identifier,
                        documents,
                    });
                }
                kind => return Err(WireError::BadSectionKind(kind)),
            }
        }
        let body = body.ok_or(WireError::MissingBody)?;
        Ok(OpMsg {
            flags,
            body,
            sequences,
        })
    }
}
