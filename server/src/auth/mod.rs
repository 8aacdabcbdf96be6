//! Authentication: SCRAM-SHA-256 (RFC 5802, RFC 7677) as MongoDB speaks it, and the users it
//! checks, kept in the database directory.
//!
//! - [`Credential`]: what is kept of a password (salt, PBKDF2 iterations, stored and server
//!   keys);
//! - [`ScramServer`]: the server side of one conversation, with no I/O: the command layer
//!   hands it the payloads of `saslStart` and `saslContinue` and sends back its answers;
//! - [`UserStore`]: the users, in `<database directory>/`[`USERS_FILE`];
//! - [`AuthError`]: every failure, with MongoDB's error code ([`AuthError::code`]).

mod credential;
mod error;
mod scram;
mod users;

pub use credential::Credential;
pub use error::AuthError;
pub use scram::{MAX_MESSAGE_BYTES, MECHANISM, SERVER_NONCE_BYTES, ScramServer};
pub use users::{USERS_FILE, UserStore};

#[cfg(test)]
mod scram_tests;
#[cfg(test)]
mod users_tests;
