//! What the server keeps of a password for SCRAM-SHA-256 (RFC 5802 §3, RFC 7677): a salt, an
//! iteration count and two keys derived from the salted password, never the password itself.

use std::borrow::Cow;
use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::AuthError;

/// Bytes of a SHA-256 digest, and so of every SCRAM-SHA-256 key and proof.
pub(crate) const KEY_BYTES: usize = 32;

/// A user's SCRAM-SHA-256 credential, as MongoDB keeps it in `admin.system.users`
/// (`credentials["SCRAM-SHA-256"]`):
///
/// - `SaltedPassword = PBKDF2-HMAC-SHA-256(SASLprep(password), salt, iterations)`, 32 bytes;
/// - `ClientKey = HMAC(SaltedPassword, "Client Key")`, `StoredKey = SHA-256(ClientKey)`;
/// - `ServerKey = HMAC(SaltedPassword, "Server Key")`.
///
/// The stored key checks a client's proof, the server key signs the server's final message.
/// Neither gives back the password, but together with a recorded conversation the stored key
/// lets one impersonate the user, so both are secrets: `Debug` does not print them.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// The PBKDF2 salt, sent to the client in the server-first message:
    /// [`Credential::SALT_BYTES`] random bytes when made by [`Credential::new`].
    pub salt: Vec<u8>,
    /// PBKDF2 iterations (the `i=` of the server-first message).
    pub iterations: u32,
    /// `SHA-256(HMAC(SaltedPassword, "Client Key"))`, 32 bytes.
    pub stored_key: [u8; KEY_BYTES],
    /// `HMAC(SaltedPassword, "Server Key")`, 32 bytes.
    pub server_key: [u8; KEY_BYTES],
}

impl Credential {
    /// PBKDF2 iterations of a new credential: 15000, MongoDB's default
    /// `scramSHA256IterationCount`.
    pub const DEFAULT_ITERATIONS: u32 = 15_000;
    /// The fewest PBKDF2 iterations accepted: 4096, MongoDB's minimum `scramSHA256IterationCount`
    /// (and RFC 7677's recommended minimum).
    pub const MIN_ITERATIONS: u32 = 4096;
    /// Bytes of the random salt of a new credential: 28, as MongoDB's SCRAM-SHA-256.
    pub const SALT_BYTES: usize = 28;

    /// The credential of `password` with a fresh random salt of [`Credential::SALT_BYTES`]
    /// bytes and [`Credential::DEFAULT_ITERATIONS`] iterations. Takes a few milliseconds
    /// (PBKDF2).
    ///
    /// # Errors
    /// [`AuthError::InvalidPassword`] when the password is empty or SASLprep refuses it.
    pub fn new(password: &str) -> Result<Credential, AuthError> {
        let mut salt = vec![0u8; Credential::SALT_BYTES];
        rand::rng().fill_bytes(&mut salt);
        Credential::derive(password, &salt, Credential::DEFAULT_ITERATIONS)
    }

    /// The credential of `password` with the given salt and PBKDF2 iteration count: the
    /// password is prepared with SASLprep (RFC 4013), as MongoDB's SCRAM-SHA-256 does.
    ///
    /// # Errors
    /// [`AuthError::InvalidPassword`] when the password is empty or SASLprep refuses it;
    /// [`AuthError::TooFewIterations`] below [`Credential::MIN_ITERATIONS`].
    pub fn derive(password: &str, salt: &[u8], iterations: u32) -> Result<Credential, AuthError> {
        if iterations < Credential::MIN_ITERATIONS {
            return Err(AuthError::TooFewIterations {
                iterations,
                minimum: Credential::MIN_ITERATIONS,
            });
        }
        let prepared = saslprep(password)?;
        let salted = salted_password(prepared.as_bytes(), salt, iterations);
        Ok(Credential::from_salted_password(&salted, salt, iterations))
    }

    /// The credential of an already salted password (`SaltedPassword`, 32 bytes).
    pub(crate) fn from_salted_password(
        salted: &[u8; KEY_BYTES],
        salt: &[u8],
        iterations: u32,
    ) -> Credential {
        let client_key = hmac_sha256(salted, &[b"Client Key"]);
        Credential {
            salt: salt.to_vec(),
            iterations,
            stored_key: sha256(&client_key),
            server_key: hmac_sha256(salted, &[b"Server Key"]),
        }
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("salt", &self.salt)
            .field("iterations", &self.iterations)
            .field("stored_key", &"<secret>")
            .field("server_key", &"<secret>")
            .finish()
    }
}

/// `password` prepared with SASLprep (RFC 4013), as MongoDB's drivers prepare a SCRAM-SHA-256
/// password before salting it: e.g. a non-ASCII space becomes a space, a soft hyphen is
/// removed, the text is put in Unicode normalization form KC.
///
/// # Errors
/// [`AuthError::InvalidPassword`] when the password is empty (before or after preparation) or
/// holds what SASLprep prohibits (control characters, unassigned code points, …).
pub(crate) fn saslprep(password: &str) -> Result<Cow<'_, str>, AuthError> {
    if password.is_empty() {
        return Err(AuthError::InvalidPassword("the password is empty".into()));
    }
    let prepared = stringprep::saslprep(password)
        .map_err(|e| AuthError::InvalidPassword(format!("SASLprep (RFC 4013) refuses it: {e}")))?;
    if prepared.is_empty() {
        return Err(AuthError::InvalidPassword(
            "the password is empty once prepared with SASLprep (RFC 4013)".into(),
        ));
    }
    Ok(prepared)
}

/// `Hi(password, salt, iterations)` of RFC 5802 for SHA-256: PBKDF2-HMAC-SHA-256 with a 32-byte
/// output.
pub(crate) fn salted_password(password: &[u8], salt: &[u8], iterations: u32) -> [u8; KEY_BYTES] {
    pbkdf2::pbkdf2_hmac_array::<Sha256, KEY_BYTES>(password, salt, iterations)
}

/// HMAC-SHA-256 with `key` over the concatenation of `parts`.
pub(crate) fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; KEY_BYTES] {
    // HMAC takes keys of any length: `new_from_slice` cannot fail.
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(key) else {
        unreachable!("HMAC takes keys of any length")
    };
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// SHA-256 of `data`.
pub(crate) fn sha256(data: &[u8]) -> [u8; KEY_BYTES] {
    Sha256::digest(data).into()
}
