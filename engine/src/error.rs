//! The engine's error type and MongoDB-style error codes (SPEC ).

/// Error categories, named and numbered as MongoDB's (SPEC ).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `BadValue` (2): a value is out of range or of the wrong form.
    BadValue,
    /// `TypeMismatch` (14): a value has the wrong BSON type.
    TypeMismatch,
    /// `NamespaceNotFound` (26): no such collection.
    NamespaceNotFound,
    /// `IndexNotFound` (27): no index of that name or key (SPEC §13; also `_id_`, R-13.1).
    IndexNotFound,
    /// `NamespaceExists` (48): a collection of that name exists with other options.
    NamespaceExists,
    /// `CannotCreateIndex` (67): a malformed index specification, or an index type tscoll
    /// does not support (SPEC ).
    CannotCreateIndex,
    /// `InvalidOptions` (72): options that do not go together.
    InvalidOptions,
    /// `InvalidNamespace` (73): a collection name that cannot be used.
    InvalidNamespace,
    /// `IndexOptionsConflict` (85): an index with that key exists under another name, or
    /// with that name and other options.
    IndexOptionsConflict,
    /// `IndexKeySpecsConflict` (86): an index of that name exists with another key.
    IndexKeySpecsConflict,
    /// `BSONObjectTooLarge` (10334): a bucket would exceed 16 MiB (SPEC ).
    BsonObjectTooLarge,
    /// `IDLFailedToParse` (40414): a required option is missing.
    IdlFailedToParse,
    /// `IDLUnknownField` (40415): an unknown option inside `timeseries`.
    IdlUnknownField,
    /// `InternalError` (1): storage, codec or corruption failures.
    InternalError,
}

impl ErrorCode {
    /// MongoDB's numeric code.
    #[must_use]
    pub fn code(self) -> i32 {
        match self {
            ErrorCode::BadValue => 2,
            ErrorCode::TypeMismatch => 14,
            ErrorCode::NamespaceNotFound => 26,
            ErrorCode::IndexNotFound => 27,
            ErrorCode::NamespaceExists => 48,
            ErrorCode::CannotCreateIndex => 67,
            ErrorCode::InvalidOptions => 72,
            ErrorCode::InvalidNamespace => 73,
            ErrorCode::IndexOptionsConflict => 85,
            ErrorCode::IndexKeySpecsConflict => 86,
            ErrorCode::BsonObjectTooLarge => 10334,
            ErrorCode::IdlFailedToParse => 40414,
            ErrorCode::IdlUnknownField => 40415,
            ErrorCode::InternalError => 1,
        }
    }

    /// MongoDB's code name, e.g. `"InvalidOptions"`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::BadValue => "BadValue",
            ErrorCode::TypeMismatch => "TypeMismatch",
            ErrorCode::NamespaceNotFound => "NamespaceNotFound",
            ErrorCode::IndexNotFound => "IndexNotFound",
            ErrorCode::NamespaceExists => "NamespaceExists",
            ErrorCode::CannotCreateIndex => "CannotCreateIndex",
            ErrorCode::InvalidOptions => "InvalidOptions",
            ErrorCode::InvalidNamespace => "InvalidNamespace",
            ErrorCode::IndexOptionsConflict => "IndexOptionsConflict",
            ErrorCode::IndexKeySpecsConflict => "IndexKeySpecsConflict",
            ErrorCode::BsonObjectTooLarge => "BSONObjectTooLarge",
            ErrorCode::IdlFailedToParse => "IDLFailedToParse",
            ErrorCode::IdlUnknownField => "IDLUnknownField",
            ErrorCode::InternalError => "InternalError",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

/// Everything that can go wrong in the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A request the engine refuses, with its MongoDB category (SPEC) and a message
    /// naming the offending option or value.
    #[error("{code}: {message}")]
    Rejected {
        /// The category.
        code: ErrorCode,
        /// What is wrong and with which option or field.
        message: String,
    },
    /// fjall failed; `context` says what the engine was doing.
    #[error("storage error while {context}: {source}")]
    Storage {
        /// What the engine was doing.
        context: &'static str,
        /// fjall's error.
        #[source]
        source: fjall::Error,
    },
    /// A stored record could not be decoded: the database is damaged.
    #[error("corrupt data in keyspace {keyspace}, key {key}: {reason}")]
    Corruption {
        /// Keyspace name.
        keyspace: String,
        /// The key, hex-encoded.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A bucket blob failed to decode.
    #[error("bucket data: {0}")]
    Codec(#[from] tscoll_codec::Error),
    /// Another process (or handle) has the database open (fjall `Locked`).
    #[error("the database directory is locked by another process; close it there first")]
    Locked,
    /// An earlier fsync failed; the database refuses writes until it is reopened (fjall
    /// `Poisoned`).
    #[error("an earlier write to disk failed (fsync); reopen the database to recover")]
    Poisoned,
    /// File-system error outside fjall.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    pub(crate) fn rejected(code: ErrorCode, message: impl Into<String>) -> Self {
        Error::Rejected {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn storage(context: &'static str) -> impl FnOnce(fjall::Error) -> Error {
        move |source| match source {
            fjall::Error::Locked => Error::Locked,
            fjall::Error::Poisoned => Error::Poisoned,
            source => Error::Storage { context, source },
        }
    }

    /// The MongoDB category of this error (`InternalError` for storage, codec, I/O).
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Rejected { code, .. } => *code,
            _ => ErrorCode::InternalError,
        }
    }
}

/// Result alias of the engine.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fjall_locked_and_poisoned_get_their_own_variants() {
        let locked = Error::storage("opening the database")(fjall::Error::Locked);
        assert!(matches!(locked, Error::Locked), "{locked:?}");
        assert_eq!(locked.code(), ErrorCode::InternalError);
        let text = locked.to_string();
        assert!(text.contains("locked by another process"), "{text}");

        let poisoned = Error::storage("committing a write batch")(fjall::Error::Poisoned);
        assert!(matches!(poisoned, Error::Poisoned), "{poisoned:?}");
        assert_eq!(poisoned.code(), ErrorCode::InternalError);
        let text = poisoned.to_string();
        assert!(text.contains("fsync"), "{text}");
        assert!(text.contains("reopen the database"), "{text}");
    }

    #[test]
    fn other_fjall_errors_keep_their_context() {
        let e = Error::storage("reading collections")(fjall::Error::KeyspaceDeleted);
        assert!(matches!(e, Error::Storage { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.starts_with("storage error while reading collections: "),
            "{text}"
        );
    }
}
