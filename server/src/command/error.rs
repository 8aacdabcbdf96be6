//! A command's failure, and its reply: MongoDB's error document.

use std::borrow::Cow;

use bson::{Document, doc};
use tscoll_engine::{Error, ErrorCode};

/// Why a command failed, as MongoDB reports it: `{ok: 0, errmsg, code, codeName}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandError {
    /// MongoDB's error code (`59` for `CommandNotFound`, …).
    pub code: i32,
    /// MongoDB's name of the code (`CommandNotFound`, …).
    pub code_name: Cow<'static, str>,
    /// What went wrong.
    pub message: String,
}

impl CommandError {
    /// An error with a code and name that [`ErrorCode`] has no variant for.
    pub fn new(code: i32, code_name: &'static str, message: impl Into<String>) -> Self {
        CommandError {
            code,
            code_name: Cow::Borrowed(code_name),
            message: message.into(),
        }
    }

    /// An error of one of the engine's codes.
    pub fn of(code: ErrorCode, message: impl Into<String>) -> Self {
        CommandError {
            code: code.code(),
            code_name: code.name(),
            message: message.into(),
        }
    }

    /// `BadValue` (2).
    pub fn bad_value(message: impl Into<String>) -> Self {
        Self::of(ErrorCode::BadValue, message)
    }

    /// `TypeMismatch` (14): a command field of the wrong BSON type.
    pub fn type_mismatch(field: &str, expected: &str) -> Self {
        Self::of(
            ErrorCode::TypeMismatch,
            format!("BSON field '{field}' is the wrong type, expected {expected}"),
        )
    }

    /// `FailedToParse` (9).
    pub fn failed_to_parse(message: impl Into<String>) -> Self {
        Self::of(ErrorCode::FailedToParse, message)
    }

    /// `CommandNotFound` (59).
    pub fn command_not_found(name: &str) -> Self {
        Self::new(59, "CommandNotFound", format!("no such command: '{name}'"))
    }

    /// `Unauthorized` (13).
    pub fn unauthorized(command: &str) -> Self {
        Self::new(
            13,
            "Unauthorized",
            format!("command {command} requires authentication"),
        )
    }

    /// `CursorNotFound` (43).
    pub fn cursor_not_found(id: i64) -> Self {
        Self::new(43, "CursorNotFound", format!("cursor id {id} not found"))
    }

    /// `InvalidNamespace` (73).
    pub fn invalid_namespace(message: impl Into<String>) -> Self {
        Self::of(ErrorCode::InvalidNamespace, message)
    }

    /// `IllegalOperation` (20).
    pub fn illegal_operation(message: impl Into<String>) -> Self {
        Self::new(20, "IllegalOperation", message)
    }

    /// The reply document: `{ok: 0.0, errmsg, code, codeName}`.
    pub fn to_reply(&self) -> Document {
        doc! {
            "ok": 0.0,
            "errmsg": self.message.as_str(),
            "code": self.code,
            "codeName": self.code_name.as_ref(),
        }
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code_name, self.code, self.message)
    }
}

impl std::error::Error for CommandError {}

impl From<Error> for CommandError {
    /// The engine's refusals keep their code; its storage, codec and I/O failures are
    /// `InternalError` (1) with the engine's message.
    fn from(e: Error) -> Self {
        match &e {
            Error::Rejected { code, message } => CommandError::of(*code, message.clone()),
            Error::ReadOnly => CommandError::new(10107, "NotWritablePrimary", e.to_string()),
            _ => CommandError::of(e.code(), e.to_string()),
        }
    }
}

/// A command's outcome: its reply document (with `ok: 1`) or its error.
pub type CommandResult = Result<Document, CommandError>;
