//! OP_QUERY (opcode 2004): the legacy query, which drivers and mongosh still send for the
//! first `hello` / `isMaster` of a connection, on `admin.$cmd`.
//!
//! After the header: `flags` (`int32`), `fullCollectionName` (C string), `numberToSkip` and
//! `numberToReturn` (`int32`s), the query (a BSON document) and, optionally, a document
//! selecting the fields to return.

use bson::Document;

use super::header::{MsgHeader, OP_QUERY, patch_length};
use super::{
    MAX_BSON_OBJECT_BYTES, MAX_COMMAND_BYTES, Reader, WireError, write_cstring, write_document,
};

/// An OP_QUERY.
#[derive(Debug, Clone, PartialEq)]
pub struct OpQuery {
    /// The flag bits (bit 2 `SlaveOk`, bit 5 `Exhaust`, …), kept as received.
    pub flags: i32,
    /// `database.collection`; `admin.$cmd` (or `db.$cmd`) for a command.
    pub full_collection_name: String,
    /// Documents to skip.
    pub number_to_skip: i32,
    /// Documents to return (`-1` for a command).
    pub number_to_return: i32,
    /// The query, or the command on a `$cmd` collection.
    pub query: Document,
    /// The fields to return, if given.
    pub return_fields_selector: Option<Document>,
}

impl OpQuery {
    /// Decodes an OP_QUERY's body: the bytes after the 16-byte header.
    ///
    /// # Errors
    /// [`WireError::TooShort`] if a field is cut; [`WireError::UnterminatedCString`] or
    /// [`WireError::BadCString`] for the collection name; [`WireError::DocumentOverrun`],
    /// [`WireError::DocumentTooLarge`], [`WireError::DocumentTooDeep`] or
    /// [`WireError::BadDocument`] for a document; [`WireError::TrailingBytes`] for bytes after
    /// the field selector.
    pub fn decode_body(body: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(body);
        let flags = r.i32("OP_QUERY flags")?;
        let full_collection_name = r.cstring("OP_QUERY fullCollectionName")?;
        let number_to_skip = r.i32("OP_QUERY numberToSkip")?;
        let number_to_return = r.i32("OP_QUERY numberToReturn")?;
        let query = r.document("OP_QUERY query", MAX_COMMAND_BYTES)?;
        let return_fields_selector = if r.remaining() > 0 {
            Some(r.document("OP_QUERY returnFieldsSelector", MAX_BSON_OBJECT_BYTES)?)
        } else {
            None
        };
        if r.remaining() > 0 {
            return Err(WireError::TrailingBytes(r.remaining()));
        }
        Ok(OpQuery {
            flags,
            full_collection_name,
            number_to_skip,
            number_to_return,
            query,
            return_fields_selector,
        })
    }

    /// The whole message, header included (`responseTo` 0).
    ///
    /// # Errors
    /// [`WireError::Unencodable`] when a document cannot be serialized as BSON (a key
    /// holding a NUL byte) or a name holds a NUL byte.
    pub fn encode(&self, request_id: i32) -> Result<Vec<u8>, WireError> {
        let mut out = Vec::new();
        MsgHeader {
            message_length: 0,
            request_id,
            response_to: 0,
            op_code: OP_QUERY,
        }
        .encode_into(&mut out);
        out.extend_from_slice(&self.flags.to_le_bytes());
        write_cstring(&self.full_collection_name, &mut out)?;
        out.extend_from_slice(&self.number_to_skip.to_le_bytes());
        out.extend_from_slice(&self.number_to_return.to_le_bytes());
        write_document(&self.query, &mut out)?;
        if let Some(fields) = &self.return_fields_selector {
            write_document(fields, &mut out)?;
        }
        patch_length(&mut out);
        Ok(out)
    }
}
