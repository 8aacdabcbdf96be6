//! The errors of authentication and of the user store.

use std::path::PathBuf;

use thiserror::Error;

/// Why a SCRAM conversation, a password or the user store failed. Nothing in [`crate::auth`]
/// panics on bad input: every malformed message, refused password or damaged file is one of
/// these.
///
/// [`AuthError::code`] gives the MongoDB error code and code name a command reply carries.
#[derive(Debug, Error)]
pub enum AuthError {
    /// The proof did not match: a wrong password, or a user that does not exist (the client
    /// cannot tell the two apart). MongoDB's `AuthenticationFailed` (18), with its message.
    #[error("Authentication failed.")]
    AuthenticationFailed,
    /// A SCRAM message that does not follow RFC 5802 as MongoDB speaks it: a missing or
    /// misplaced attribute, bad base64, a nonce that is not the server's, channel binding,
    /// a message too long. MongoDB's `BadValue` (2).
    #[error("{0}")]
    Malformed(String),
    /// A password that cannot be used: empty, or refused by SASLprep (RFC 4013: control
    /// characters, unassigned code points, bidirectional text mixed wrongly). MongoDB's
    /// `BadValue` (2).
    #[error("invalid password: {0}")]
    InvalidPassword(String),
    /// A user name that cannot be used (empty, or holding a NUL character). MongoDB's
    /// `BadValue` (2).
    #[error("invalid user name {name:?}: {reason}")]
    InvalidUserName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An iteration count below [`crate::auth::Credential::MIN_ITERATIONS`]. MongoDB's
    /// `BadValue` (2).
    #[error("{iterations} PBKDF2 iterations is below the minimum of {minimum}")]
    TooFewIterations {
        /// The iterations asked for.
        iterations: u32,
        /// The fewest accepted.
        minimum: u32,
    },
    /// A SASL mechanism other than `SCRAM-SHA-256` (the command layer's error).
    /// MongoDB's `MechanismUnavailable` (334).
    #[error("Received authentication for mechanism {0} which is not enabled")]
    MechanismUnavailable(String),
    /// [`crate::auth::UserStore::add`] of a name the store already holds. MongoDB's
    /// `createUser` error on an existing user (`Location51003`, 51003).
    #[error("User \"{0}@admin\" already exists")]
    UserExists(String),
    /// The user store's file cannot be read, written, synced or renamed. `InternalError` (1).
    #[error("user store {}: {source}", path.display())]
    Io {
        /// The file (or directory) the operation was on.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The user store's file exists but is not a user store tscoll can read: not JSON, a
    /// newer version, a field of the wrong shape. `InternalError` (1).
    #[error("user store {} is damaged: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl AuthError {
    /// MongoDB's numeric error code and code name for this error, as a command reply carries
    /// them (`{ok: 0, errmsg, code, codeName}`): `(18, "AuthenticationFailed")`,
    /// `(2, "BadValue")` for malformed messages and refused passwords or names,
    /// `(334, "MechanismUnavailable")`, `(51003, "Location51003")` for an existing user, and
    /// `(1, "InternalError")` for the user store's I/O errors and damage.
    #[must_use]
    pub fn code(&self) -> (i32, &'static str) {
        match self {
            AuthError::AuthenticationFailed => (18, "AuthenticationFailed"),
            AuthError::Malformed(_)
            | AuthError::InvalidPassword(_)
            | AuthError::InvalidUserName { .. }
            | AuthError::TooFewIterations { .. } => (2, "BadValue"),
            AuthError::MechanismUnavailable(_) => (334, "MechanismUnavailable"),
            AuthError::UserExists(_) => (51003, "Location51003"),
            AuthError::Io { .. } | AuthError::Corrupt { .. } => (1, "InternalError"),
        }
    }

    /// A [`AuthError::Malformed`] with `message`.
    pub(crate) fn malformed(message: impl Into<String>) -> AuthError {
        AuthError::Malformed(message.into())
    }
}
