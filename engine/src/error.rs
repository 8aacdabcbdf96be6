//! The engine's error type and MongoDB-style error codes (SPEC R-1.4.2).
//!
//! Every message is one plain sentence saying what went wrong and what to do about it; the
//! errors of fjall (whose own `Display` is its debug form) are rendered by
//! [`describe_storage_error`], their I/O errors by [`describe_io_error`].

use std::io;

/// Error categories, named and numbered as MongoDB's (SPEC R-1.4.2, R-2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `BadValue` (2): a value is out of range or of the wrong form.
    BadValue,
    /// `FailedToParse` (9): a command document of the wrong shape (e.g. an update mixing
    /// operators and fields, or an unknown update operator).
    FailedToParse,
    /// `TypeMismatch` (14): a value has the wrong BSON type.
    TypeMismatch,
    /// `PathNotViable` (28): an update path runs through a value that is neither a document
    /// nor an array.
    PathNotViable,
    /// `ConflictingUpdateOperators` (40): two update operators touch the same path, or one
    /// a path inside the other's.
    ConflictingUpdateOperators,
    /// `NamespaceNotFound` (26): no such collection.
    NamespaceNotFound,
    /// `ImmutableField` (66): an update would change a measurement's `_id`.
    ImmutableField,
    /// `IndexNotFound` (27): no index of that name or key (SPEC §13; also `_id_`, R-13.1).
    IndexNotFound,
    /// `NamespaceExists` (48): a collection of that name exists with other options.
    NamespaceExists,
    /// `CannotCreateIndex` (67): a malformed index specification, or an index type tscoll
    /// does not support (SPEC R-13.5, R-10.5).
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
    /// `BSONObjectTooLarge` (10334): a bucket would exceed 16 MiB (SPEC R-2.4).
    BsonObjectTooLarge,
    /// `ExceededMemoryLimit` (146): an accumulator holding more than MongoDB lets it (e.g.
    /// `$topN` or `$percentile` past 100 MiB in one group), or an expression that would
    /// build a value past MongoDB's memory limit (e.g. a `$range` of more than 100 MiB).
    ExceededMemoryLimit,
    /// `IDLFailedToParse` (40414): a required option is missing.
    IdlFailedToParse,
    /// `IDLUnknownField` (40415): an unknown option inside `timeseries`.
    IdlUnknownField,
    /// `InternalError` (1): storage, codec or corruption failures.
    InternalError,
    /// `InvalidPipelineOperator` (168): an expression operator MongoDB does not know, or
    /// one tscoll does not support.
    InvalidPipelineOperator,
    /// `ConversionFailure` (241): `$convert` and the `$to…` operators given a value they
    /// cannot convert (and no `onError`).
    ConversionFailure,
    /// One of MongoDB's numbered assertions, whose code name is `Location<code>`: e.g.
    /// 16608 for a `$divide` by zero, 5624901 and 5490710 for window units that do not fit
    /// the sort key. The number is MongoDB's own, so a host can pass it on unchanged.
    Location(u32),
}

impl ErrorCode {
    /// MongoDB's numeric code.
    #[must_use]
    pub fn code(self) -> i32 {
        match self {
            ErrorCode::BadValue => 2,
            ErrorCode::FailedToParse => 9,
            ErrorCode::TypeMismatch => 14,
            ErrorCode::PathNotViable => 28,
            ErrorCode::ConflictingUpdateOperators => 40,
            ErrorCode::NamespaceNotFound => 26,
            ErrorCode::ImmutableField => 66,
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
            ErrorCode::InvalidPipelineOperator => 168,
            ErrorCode::ConversionFailure => 241,
            ErrorCode::ExceededMemoryLimit => 146,
            ErrorCode::Location(n) => i32::try_from(n).unwrap_or(i32::MAX),
        }
    }

    /// MongoDB's code name, e.g. `"InvalidOptions"`, or `"Location16608"` for a numbered
    /// assertion.
    #[must_use]
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed(match self {
            ErrorCode::BadValue => "BadValue",
            ErrorCode::FailedToParse => "FailedToParse",
            ErrorCode::TypeMismatch => "TypeMismatch",
            ErrorCode::PathNotViable => "PathNotViable",
            ErrorCode::ConflictingUpdateOperators => "ConflictingUpdateOperators",
            ErrorCode::NamespaceNotFound => "NamespaceNotFound",
            ErrorCode::ImmutableField => "ImmutableField",
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
            ErrorCode::InvalidPipelineOperator => "InvalidPipelineOperator",
            ErrorCode::ConversionFailure => "ConversionFailure",
            ErrorCode::ExceededMemoryLimit => "ExceededMemoryLimit",
            ErrorCode::Location(n) => return std::borrow::Cow::Owned(format!("Location{n}")),
        })
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
    /// A request the engine refuses, with its MongoDB category (SPEC R-1.4.2) and a message
    /// naming the offending option or value.
    #[error("{code}: {message}")]
    Rejected {
        /// The category.
        code: ErrorCode,
        /// What is wrong and with which option or field.
        message: String,
    },
    /// fjall failed; `context` says what the engine was doing.
    #[error("storage error while {context}: {}", describe_storage_error(.source))]
    Storage {
        /// What the engine was doing.
        context: &'static str,
        /// fjall's error.
        #[source]
        source: fjall::Error,
    },
    /// A stored record could not be decoded: the database is damaged.
    #[error(
        "corrupt data in keyspace {keyspace}, key {key}: {reason}; the database is damaged: {}",
        DAMAGED
    )]
    Corruption {
        /// Keyspace name.
        keyspace: String,
        /// The key, hex-encoded.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// fjall's journal is damaged beyond a torn last write: the database opens only with
    /// [`Database::open_recovering`](crate::Database::open_recovering), which keeps every
    /// write before the damage (`docs/durability.md`, "A damaged journal").
    #[error("the journal file {file} is damaged: {reason}")]
    JournalDamaged {
        /// The journal file, and the byte where the damage starts when known.
        file: String,
        /// What is wrong, and how to recover.
        reason: String,
    },
    /// The directory holds no database, and the open was not to create one
    /// ([`DatabaseOptions::create`](crate::DatabaseOptions::create) off): nothing was written.
    #[error(
        "{path} is not a tscoll database ({reason}): check the path, or create a collection \
         there first with `tscoll create --db {path} ...`"
    )]
    NotADatabase {
        /// The directory.
        path: String,
        /// Why: it does not exist, is not a directory, or holds no database files.
        reason: &'static str,
    },
    /// The database is open read-only ([`Access`](crate::Access)): it takes no writes.
    #[error(
        "the database is open read-only (asked for, or the disk was full when it was opened): \
         it takes no writes; open it again for writing once the disk has room"
    )]
    ReadOnly,
    /// A collection's write-ahead log is damaged before its end (not merely a torn last
    /// record): the database opens only with
    /// [`Database::open_recovering`](crate::Database::open_recovering), which keeps every
    /// record before the damage (`docs/durability.md`, "A damaged write-ahead log").
    #[error("the write-ahead log file {file} is damaged: {reason}")]
    LogDamaged {
        /// The log file and the byte where the damaged record starts.
        file: String,
        /// What is wrong, in which collection, and how to recover.
        reason: String,
    },
    /// An insert call failed after some of its measurements were committed, or in a way
    /// that may have left some in the write-ahead log (`docs/durability.md`, "What an error
    /// means"): unlike its other errors, this one does not mean that nothing of the call was
    /// stored. Every measurement of the call not listed was not stored.
    #[error("{}", describe_incomplete(.source, .committed, .uncertain, *.buffered))]
    InsertIncomplete {
        /// Input positions (ascending) of the measurements committed before the failure: they
        /// are kept as an acknowledged insert of the call's durability is.
        committed: Vec<usize>,
        /// The call's durability was [`Durability::Buffered`](crate::Durability::Buffered):
        /// the committed measurements may still be in the log's buffer, which a full disk
        /// may keep from ever being written, so they may or may not be stored.
        buffered: bool,
        /// Input positions (ascending) of the measurements whose log record failed to be
        /// written and could not be cut off again: they may have been stored.
        uncertain: Vec<usize>,
        /// What failed.
        source: Box<Error>,
    },
    /// An ordered insert stopped at a rejected measurement (SPEC R-2.5; MongoDB's
    /// `BulkWriteError`): every measurement before it was stored ([`InsertResult::inserted`](crate::InsertResult)
    /// of them), none after it; [`InsertResult::errors`](crate::InsertResult) holds the
    /// rejected one with its position and reason. An unordered insert returns `Ok` with
    /// its rejections in the result instead ([`crate::InsertResult::check`] turns them
    /// into this error). [`Error::into_insert_result`] gives the result back.
    #[error("{}", describe_bulk_write(.0))]
    BulkWrite(Box<crate::InsertResult>),
    /// A bucket blob failed to decode.
    #[error("{}", describe_codec_error(.0))]
    Codec(#[from] tscoll_codec::Error),
    /// Another process (or handle) has the database open (fjall `Locked`).
    #[error("the database directory is locked by another process; close it there first")]
    Locked,
    /// An earlier fsync failed; the database refuses writes until it is reopened (fjall
    /// `Poisoned`).
    #[error("an earlier write to disk failed (fsync); reopen the database to recover")]
    Poisoned,
    /// File-system error outside fjall.
    #[error("{}", describe_io_error(.0))]
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

    /// Whether the error says that the database's disk cannot be written: full, over quota,
    /// or read-only ([`Access::ReadWriteOrReadOnly`](crate::Access::ReadWriteOrReadOnly)
    /// opens read-only then).
    pub(crate) fn writing_impossible(&self) -> bool {
        let io = match self {
            Error::Io(e)
            | Error::Storage {
                source: fjall::Error::Io(e) | fjall::Error::Storage(fjall::LsmError::Io(e)),
                ..
            } => Some(e),
            _ => None,
        };
        io.is_some_and(|e| {
            matches!(
                e.kind(),
                io::ErrorKind::StorageFull
                    | io::ErrorKind::QuotaExceeded
                    | io::ErrorKind::ReadOnlyFilesystem
            )
        })
    }

    /// The MongoDB category of this error (`InternalError` for storage, codec, I/O).
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Rejected { code, .. } => *code,
            Error::BulkWrite(result) => result
                .errors
                .first()
                .map_or(ErrorCode::InternalError, |e| e.code),
            _ => ErrorCode::InternalError,
        }
    }
}

impl Error {
    /// The result an insert's [`Error::BulkWrite`] holds, as `Ok`; any other error as it is:
    /// for a caller that reports rejected measurements itself, whether the insert was
    /// ordered or not.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t"))?;
    /// let docs = [doc! { "t": DateTime::from_millis(0) }, doc! { "t": 1 }, doc! { "t": DateTime::from_millis(2) }];
    /// let err = coll.insert_many(&docs, &InsertOptions::default()).unwrap_err();
    /// assert_eq!(err.code(), ErrorCode::BadValue);
    /// let result = err.into_insert_result()?;
    /// assert_eq!((result.inserted, result.errors[0].index), (1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `self`, when it is not [`Error::BulkWrite`].
    pub fn into_insert_result(self) -> Result<crate::InsertResult> {
        match self {
            Error::BulkWrite(result) => Ok(*result),
            other => Err(other),
        }
    }
}

/// The message of [`Error::BulkWrite`]: how many were stored, then the rejected
/// measurement's position, code and reason.
fn describe_bulk_write(result: &crate::InsertResult) -> String {
    let mut out = format!(
        "BulkWriteError: {} measurement(s) inserted, then the insert stopped",
        result.inserted
    );
    for e in result.errors.iter().take(3) {
        out.push_str(&format!(
            "; measurement {} rejected: {}: {}",
            e.index, e.code, e.message
        ));
    }
    if result.errors.len() > 3 {
        out.push_str(&format!("; {} more rejected", result.errors.len() - 3));
    }
    out
}

/// The message of [`Error::InsertIncomplete`]: the failure, then which of the call's
/// measurements were committed or may have been stored (input positions, as ranges).
fn describe_incomplete(
    source: &Error,
    committed: &[usize],
    uncertain: &[usize],
    buffered: bool,
) -> String {
    let mut out = source.to_string();
    if !committed.is_empty() {
        let state = if buffered {
            "to the write-ahead log's buffer (buffered durability): they may have been stored"
        } else {
            "to the write-ahead log: they are stored"
        };
        out.push_str(&format!(
            "; before that, {} measurement(s) of the call (positions {}) were committed {state}",
            committed.len(),
            position_ranges(committed.iter().map(|&p| p as u64))
        ));
    }
    if !uncertain.is_empty() {
        out.push_str(&format!(
            "; {} measurement(s) (positions {}) may have been stored: their log record could \
             not be cut off",
            uncertain.len(),
            position_ranges(uncertain.iter().map(|&p| p as u64))
        ));
    }
    out.push_str(
        if buffered && !committed.is_empty() || !uncertain.is_empty() {
            "; the others were not stored: query for those that may have been before sending them \
         again"
        } else {
            "; the others were not stored: send only those again"
        },
    );
    out
}

/// Ascending positions written as ranges, `0-4, 7, 9-12`, and after 8 ranges how many more,
/// as the message of [`Error::InsertIncomplete`] writes them (for other messages about the
/// same measurements, e.g. with line numbers instead of positions).
#[must_use]
pub fn position_ranges(positions: impl IntoIterator<Item = u64>) -> String {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for p in positions {
        match runs.last_mut() {
            Some((_, end)) if p <= *end + 1 => *end = (*end).max(p),
            _ => runs.push((p, p)),
        }
    }
    let mut parts: Vec<String> = runs
        .iter()
        .take(8)
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    if runs.len() > 8 {
        parts.push(format!("and {} more range(s)", runs.len() - 8));
    }
    parts.join(", ")
}

/// Result alias of the engine.
pub type Result<T> = std::result::Result<T, Error>;

/// What to do about data on disk that fails its checks.
const DAMAGED: &str = "run `tscoll verify` to list what is damaged and `tscoll salvage` to copy \
                       what is readable into a new database";

/// What to do about a damaged journal.
const JOURNAL_DAMAGED: &str = "open the database with `--recover` (`tscoll verify --recover \
                               --db DIR`; `Database::open_recovering`) to keep every write \
                               before the damage";

/// A fjall error as one plain sentence: what went wrong and what to do (fjall's own
/// `Display` is its debug form, e.g. `FjallError: Io(Os { code: 28, ... })`).
#[must_use]
pub(crate) fn describe_storage_error(error: &fjall::Error) -> String {
    match error {
        fjall::Error::Storage(e) => describe_lsm_error(e),
        fjall::Error::Io(e) => describe_io_error(e),
        fjall::Error::JournalRecovery(e) => {
            let what = match e {
                fjall::JournalRecoveryError::InsufficientLength => {
                    "a write batch in it is incomplete"
                }
                fjall::JournalRecoveryError::TooManyItems => "a write batch in it is malformed",
                fjall::JournalRecoveryError::ChecksumMismatch => "checksum mismatch",
                fjall::JournalRecoveryError::InvalidFileName => {
                    "a file in the journal folder has a name fjall does not write"
                }
            };
            format!(
                "the journal (the log of the latest writes) is damaged ({what}), so the \
                 database cannot replay it: {JOURNAL_DAMAGED}"
            )
        }
        fjall::Error::InvalidVersion(Some(version)) => format!(
            "the database was written in storage format {version}, which this build of \
             tscoll does not read: open it with the tscoll version that wrote it"
        ),
        fjall::Error::InvalidVersion(None) => format!(
            "the database's storage format version is unreadable (not a tscoll database, or \
             damaged): check the path, or {DAMAGED}"
        ),
        fjall::Error::Decompress(_) => format!(
            "data on disk is damaged ({}): {DAMAGED}",
            table_damage(error).unwrap_or_default()
        ),
        fjall::Error::InvalidTrailer | fjall::Error::InvalidTag(_) => {
            format!("the journal is damaged (a record in it is malformed): {JOURNAL_DAMAGED}")
        }
        fjall::Error::Poisoned => "an earlier write to disk failed (fsync); reopen the \
                                   database to recover"
            .to_owned(),
        fjall::Error::KeyspaceDeleted => "the collection's storage was dropped while in use: \
                                         open the collection again"
            .to_owned(),
        fjall::Error::Locked => "the database directory is locked by another process; close \
                                 it there first"
            .to_owned(),
        fjall::Error::Unrecoverable => format!(
            "files of the database are missing or unreadable, it cannot be recovered: {DAMAGED}"
        ),
        // fjall's errors are non-exhaustive: name a newer variant without its debug form.
        _ => "fjall reported an unexpected error: retry, and run `tscoll verify` if it persists"
            .to_owned(),
    }
}

/// A codec error as one plain sentence; damaged bucket data says what to do.
fn describe_codec_error(error: &tscoll_codec::Error) -> String {
    match error {
        tscoll_codec::Error::Corruption(_) | tscoll_codec::Error::Truncated { .. } => {
            format!("bucket data: {error}; the database is damaged: {DAMAGED}")
        }
        _ => format!("bucket data: {error}"),
    }
}

/// An lsm-tree error (inside a fjall error) as one plain sentence.
fn describe_lsm_error(error: &fjall::LsmError) -> String {
    if let Some(what) = lsm_damage(error) {
        return format!("data on disk is damaged ({what}): {DAMAGED}");
    }
    match error {
        fjall::LsmError::Io(e) => describe_io_error(e),
        fjall::LsmError::InvalidVersion(version) => format!(
            "a table file is in storage format version {version}, which this build of tscoll \
             does not read: open the database with the tscoll version that wrote it"
        ),
        fjall::LsmError::Unrecoverable => format!(
            "files of the database are missing or unreadable, it cannot be recovered: {DAMAGED}"
        ),
        _ => "the storage layer reported an unexpected error: retry, and run `tscoll verify` if \
              it persists"
            .to_owned(),
    }
}

/// What is damaged when an lsm-tree error says a table file's contents are wrong, e.g.
/// `"checksum mismatch"`; `None` for other errors.
fn lsm_damage(error: &fjall::LsmError) -> Option<String> {
    Some(match error {
        fjall::LsmError::ChecksumMismatch { .. } => "checksum mismatch".to_owned(),
        fjall::LsmError::Decompress(kind) => {
            format!("a {kind}-compressed block does not decompress")
        }
        fjall::LsmError::InvalidTag(_)
        | fjall::LsmError::InvalidTrailer
        | fjall::LsmError::InvalidHeader(_) => "a malformed block in a table file".to_owned(),
        fjall::LsmError::Utf8(_) => "a name is not valid UTF-8".to_owned(),
        _ => return None,
    })
}

/// What is damaged when a fjall read error says a table file's contents are wrong (see
/// [`lsm_damage`]); `None` for other errors (I/O, a full disk, ...).
pub(crate) fn table_damage(error: &fjall::Error) -> Option<String> {
    match error {
        fjall::Error::Storage(e) => lsm_damage(e),
        fjall::Error::Decompress(kind) => {
            Some(format!("a {kind}-compressed block does not decompress"))
        }
        _ => None,
    }
}

/// An I/O error of the database's files as one plain sentence: what went wrong and what to
/// do. A custom message the error carries (e.g. one naming a file) comes first.
#[must_use]
pub(crate) fn describe_io_error(error: &io::Error) -> String {
    // A fjall or lsm-tree error carried inside an I/O error: render it, not its debug form.
    if let Some(inner) = error.get_ref() {
        if let Some(e) = inner.downcast_ref::<fjall::Error>() {
            return describe_storage_error(e);
        }
        if let Some(e) = inner.downcast_ref::<fjall::LsmError>() {
            return describe_lsm_error(e);
        }
    }
    let hint = match error.kind() {
        io::ErrorKind::StorageFull => "the disk is full: free space and retry".to_owned(),
        io::ErrorKind::QuotaExceeded => {
            "the disk quota is exceeded: free space and retry".to_owned()
        }
        io::ErrorKind::PermissionDenied => {
            "permission denied: check the owner and permissions of the database directory"
                .to_owned()
        }
        io::ErrorKind::NotFound => {
            format!("a file of the database is missing (removed while in use?): {DAMAGED}")
        }
        io::ErrorKind::ReadOnlyFilesystem => {
            "the file system is read-only: move the database to a writable disk or remount it"
                .to_owned()
        }
        io::ErrorKind::UnexpectedEof => {
            format!("a file of the database ends early (truncated): {DAMAGED}")
        }
        io::ErrorKind::InvalidData => format!("data on disk is damaged (malformed): {DAMAGED}"),
        io::ErrorKind::FileTooLarge => "a file of the database is larger than the file system \
                                        allows: move the database to another file system"
            .to_owned(),
        io::ErrorKind::OutOfMemory => "out of memory: free memory and retry".to_owned(),
        // The OS message, e.g. `Input/output error (os error 5)`, or the custom message.
        _ => return format!("I/O error: {error}"),
    };
    match error.get_ref() {
        Some(message) => format!("{message}: {hint}"),
        None => hint,
    }
}

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

    /// No debug forms in a message: no braces, no `Os {`, no `FjallError`.
    #[track_caller]
    fn assert_plain(text: &str) {
        for bad in [
            "{",
            "}",
            "Os {",
            "FjallError",
            "LsmTreeError",
            "Storage(",
            "Io(",
        ] {
            assert!(!text.contains(bad), "{bad:?} in {text:?}");
        }
    }

    #[test]
    fn storage_full_is_one_plain_sentence() {
        let full = io::Error::from_raw_os_error(28);
        assert_eq!(full.kind(), io::ErrorKind::StorageFull);
        let e = Error::storage("committing a write batch")(fjall::Error::Io(full));
        let text = e.to_string();
        assert_eq!(
            text,
            "storage error while committing a write batch: the disk is full: free space and \
             retry"
        );
        assert_plain(&text);
        // Also when fjall got it from the lsm-tree, and outside fjall.
        let nested = fjall::Error::Storage(fjall::LsmError::Io(io::Error::from_raw_os_error(28)));
        assert_eq!(
            describe_storage_error(&nested),
            "the disk is full: free space and retry"
        );
        let io = Error::Io(io::Error::from_raw_os_error(28));
        assert_eq!(io.to_string(), "the disk is full: free space and retry");
        // The source chain is kept.
        let source = std::error::Error::source(&e).expect("source");
        assert!(source.downcast_ref::<fjall::Error>().is_some());
    }

    #[test]
    fn checksum_mismatch_says_the_data_is_damaged() {
        let mismatch = fjall::Error::Storage(fjall::LsmError::ChecksumMismatch {
            got: lsm_tree::Checksum::from_raw(0x1234),
            expected: lsm_tree::Checksum::from_raw(0x5678),
        });
        let text = Error::storage("reading a bucket")(mismatch).to_string();
        assert_eq!(
            text,
            "storage error while reading a bucket: data on disk is damaged (checksum \
             mismatch): run `tscoll verify` to list what is damaged and `tscoll salvage` to \
             copy what is readable into a new database"
        );
        assert_plain(&text);
    }

    #[test]
    fn journal_recovery_says_the_journal_is_damaged() {
        let e = fjall::Error::JournalRecovery(fjall::JournalRecoveryError::ChecksumMismatch);
        let text = Error::storage("opening the database")(e).to_string();
        assert!(text.contains("the journal"), "{text}");
        assert!(text.contains("checksum mismatch"), "{text}");
        assert!(
            text.ends_with("to keep every write before the damage"),
            "{text}"
        );
        assert_plain(&text);
    }

    #[test]
    fn every_fjall_error_is_plain_text() {
        let io = |kind: io::ErrorKind| fjall::Error::Io(io::Error::from(kind));
        let errors = [
            io(io::ErrorKind::PermissionDenied),
            io(io::ErrorKind::NotFound),
            io(io::ErrorKind::ReadOnlyFilesystem),
            io(io::ErrorKind::UnexpectedEof),
            io(io::ErrorKind::Other),
            fjall::Error::Io(io::Error::from_raw_os_error(5)),
            fjall::Error::Io(io::Error::other(fjall::Error::Unrecoverable)),
            fjall::Error::JournalRecovery(fjall::JournalRecoveryError::InsufficientLength),
            fjall::Error::JournalRecovery(fjall::JournalRecoveryError::TooManyItems),
            fjall::Error::JournalRecovery(fjall::JournalRecoveryError::InvalidFileName),
            fjall::Error::InvalidVersion(None),
            fjall::Error::InvalidVersion(Some(fjall::FormatVersion::V2)),
            fjall::Error::Decompress(fjall::CompressionType::None),
            fjall::Error::InvalidTrailer,
            fjall::Error::InvalidTag(("tag", 9)),
            fjall::Error::Poisoned,
            fjall::Error::KeyspaceDeleted,
            fjall::Error::Locked,
            fjall::Error::Unrecoverable,
            fjall::Error::Storage(fjall::LsmError::InvalidVersion(9)),
            fjall::Error::Storage(fjall::LsmError::Unrecoverable),
            fjall::Error::Storage(fjall::LsmError::InvalidTrailer),
            fjall::Error::Storage(fjall::LsmError::InvalidHeader("block")),
        ];
        for error in errors {
            let text = describe_storage_error(&error);
            assert_plain(&text);
            assert!(!text.is_empty() && !text.ends_with('.'), "{text:?}");
        }
        let denied = describe_storage_error(&io(io::ErrorKind::PermissionDenied));
        assert!(denied.starts_with("permission denied: "), "{denied}");
        let named = io::Error::new(io::ErrorKind::StorageFull, "writing journal/3.jnl");
        assert_eq!(
            describe_io_error(&named),
            "writing journal/3.jnl: the disk is full: free space and retry"
        );
        let codec = Error::Codec(tscoll_codec::Error::Corruption("bad tag 9".to_owned()));
        let text = codec.to_string();
        assert!(
            text.contains("bad tag 9") && text.contains("tscoll verify"),
            "{text}"
        );
        let eio = describe_storage_error(&fjall::Error::Io(io::Error::from_raw_os_error(5)));
        assert!(
            eio.starts_with("I/O error: ") && eio.contains("os error 5"),
            "{eio}"
        );
    }

    #[test]
    fn position_ranges_collapse_runs_and_count_the_rest() {
        assert_eq!(position_ranges([]), "");
        assert_eq!(position_ranges([5]), "5");
        assert_eq!(
            position_ranges([0, 1, 2, 3, 4, 7, 9, 10, 11, 12]),
            "0-4, 7, 9-12"
        );
        // A repeated position extends nothing.
        assert_eq!(position_ranges([3, 3, 4, 4, 6]), "3-4, 6");
        // Eight ranges, then how many more.
        let odd = (0..12).map(|i| 2 * i);
        assert_eq!(
            position_ranges(odd),
            "0, 2, 4, 6, 8, 10, 12, 14, and 4 more range(s)"
        );
        assert_eq!(position_ranges(0..5000), "0-4999");
    }

    fn incomplete(committed: Vec<usize>, uncertain: Vec<usize>, buffered: bool) -> String {
        Error::InsertIncomplete {
            committed,
            buffered,
            uncertain,
            source: Box::new(Error::Io(io::Error::from_raw_os_error(28))),
        }
        .to_string()
    }

    #[test]
    fn insert_incomplete_says_what_is_stored_and_what_may_be() {
        // Committed with a durability that wrote the record: stored, send the others again.
        assert_eq!(
            incomplete((0..5000).collect(), vec![], false),
            "the disk is full: free space and retry; before that, 5000 measurement(s) of the \
             call (positions 0-4999) were committed to the write-ahead log: they are stored; \
             the others were not stored: send only those again"
        );
        // Committed to the buffer only: they may have been stored, so query before sending.
        assert_eq!(
            incomplete(vec![0, 1, 2, 5], vec![], true),
            "the disk is full: free space and retry; before that, 4 measurement(s) of the call \
             (positions 0-2, 5) were committed to the write-ahead log's buffer (buffered \
             durability): they may have been stored; the others were not stored: query for \
             those that may have been before sending them again"
        );
        // A record that could not be cut off: uncertain, whatever the durability.
        assert_eq!(
            incomplete(vec![], vec![10, 11, 12, 20], false),
            "the disk is full: free space and retry; 4 measurement(s) (positions 10-12, 20) \
             may have been stored: their log record could not be cut off; the others were not \
             stored: query for those that may have been before sending them again"
        );
        let both = incomplete(vec![0, 1], vec![2, 3], false);
        assert!(
            both.contains("(positions 0-1) were committed to the write-ahead log: they are stored")
                && both.contains("(positions 2-3) may have been stored"),
            "{both}"
        );
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
