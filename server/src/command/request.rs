//! A command as received: its database, its body and its document sequences.

use bson::{Bson, Document};

use super::error::CommandError;
use crate::wire::DocumentSequence;

/// Fields every command may carry that the commands themselves do not read: the session,
/// the cluster time, read preference and concern, the stable API version, a time limit, a
/// comment. They are removed before a command's own fields are checked.
const GENERIC_FIELDS: [&str; 13] = [
    "$db",
    "lsid",
    "$clusterTime",
    "$readPreference",
    "readConcern",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "maxTimeMS",
    "comment",
    "txnNumber",
    "autocommit",
    "$audit",
];

/// One command: the body of an OP_MSG (or the query of an OP_QUERY on `db.$cmd`), with the
/// generic fields removed, and the message's document sequences.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The database the command runs in (`$db`, or the OP_QUERY's namespace).
    pub db: String,
    /// The command document: its first field names the command.
    pub body: Document,
    /// The document sequences (kind-1 sections) standing for array fields of the body.
    pub sequences: Vec<DocumentSequence>,
}

impl Request {
    /// A request from an OP_MSG's body and sequences: `$db` gives the database.
    ///
    /// # Errors
    /// `FailedToParse` without a string `$db`, or with an empty body.
    pub fn from_msg(
        mut body: Document,
        sequences: Vec<DocumentSequence>,
    ) -> Result<Request, CommandError> {
        let db = match body.get("$db") {
            Some(Bson::String(s)) => s.clone(),
            Some(_) => return Err(CommandError::type_mismatch("$db", "string")),
            None => {
                return Err(CommandError::failed_to_parse(
                    "OP_MSG requests require a $db argument",
                ));
            }
        };
        strip_generic(&mut body);
        if body.is_empty() {
            return Err(CommandError::failed_to_parse(
                "the command document is empty",
            ));
        }
        Ok(Request {
            db,
            body,
            sequences,
        })
    }

    /// A request from an OP_QUERY on `<db>.$cmd`: the query, or its `$query` when
    /// wrapped with a read preference
    /// (`{$query: {...}, $readPreference: {...}}`).
    ///
    /// # Errors
    /// `InvalidNamespace` when the namespace is not a command namespace; `FailedToParse`
    /// for an empty command.
    pub fn from_query(namespace: &str, query: Document) -> Result<Request, CommandError> {
        let Some(db) = namespace.strip_suffix(".$cmd") else {
            return Err(CommandError::invalid_namespace(format!(
                "OP_QUERY is only supported for commands (on <db>.$cmd), not on {namespace}"
            )));
        };
        let mut body = match query.get("$query") {
            Some(Bson::Document(inner)) => inner.clone(),
            _ => query,
        };
        strip_generic(&mut body);
        if body.is_empty() {
            return Err(CommandError::failed_to_parse(
                "the command document is empty",
            ));
        }
        Ok(Request {
            db: db.to_owned(),
            body,
            sequences: Vec::new(),
        })
    }

    /// The command's name: the body's first field.
    pub fn name(&self) -> &str {
        self.body.keys().next().map_or("", String::as_str)
    }

    /// The documents of an array field given either in the body or as a document sequence
    /// (`documents` of `insert`, `updates` of `update`, `deletes` of `delete`), moved out.
    ///
    /// # Errors
    /// `TypeMismatch` when the field is not an array of documents; `FailedToParse` when it
    /// is given twice or not at all.
    pub fn take_documents(&mut self, field: &str) -> Result<Vec<Document>, CommandError> {
        let from_sequence = self
            .sequences
            .iter()
            .position(|s| s.identifier == field)
            .map(|i| self.sequences.swap_remove(i).documents);
        match (self.body.remove(field), from_sequence) {
            (Some(_), Some(_)) => Err(CommandError::failed_to_parse(format!(
                "'{field}' is given both in the command and as a document sequence"
            ))),
            (None, Some(docs)) => Ok(docs),
            (Some(Bson::Array(items)), None) => items
                .into_iter()
                .map(|item| match item {
                    Bson::Document(d) => Ok(d),
                    _ => Err(CommandError::type_mismatch(&format!("{field}.0"), "object")),
                })
                .collect(),
            (Some(_), None) => Err(CommandError::type_mismatch(field, "array")),
            (None, None) => Err(CommandError::failed_to_parse(format!(
                "BSON field '{}.{field}' is missing but a required field",
                self.name()
            ))),
        }
    }
}

fn strip_generic(body: &mut Document) {
    for f in GENERIC_FIELDS {
        body.remove(f);
    }
}
