//! The server side of a SCRAM-SHA-256 conversation (RFC 5802, RFC 7677) as MongoDB speaks it
//! in `saslStart` / `saslContinue`: a state machine with no I/O.
//!
//! ```text
//! client-first:  n,,n=<user>,r=<client nonce>
//! server-first:  r=<client nonce><server nonce>,s=<salt, base64>,i=<iterations>
//! client-final:  c=biws,r=<client nonce><server nonce>,p=<proof, base64>
//! server-final:  v=<server signature, base64>
//! ```
//!
//! [`ScramServer::start`] reads the client-first message and answers the server-first one;
//! [`ScramServer::finish`] checks the client's proof and answers the server-final one. The
//! empty third exchange MongoDB's drivers may skip (`skipEmptyExchange`) belongs to the
//! command layer.

use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rand::RngCore;
use subtle::ConstantTimeEq;

use super::credential::{KEY_BYTES, hmac_sha256, sha256};
use super::{AuthError, Credential};

/// The SASL mechanism name of this conversation, as MongoDB's `saslStart` takes it.
pub const MECHANISM: &str = "SCRAM-SHA-256";

/// Random bytes of the server's part of the nonce: 24, as MongoDB's (sent base64-encoded,
/// 32 characters).
pub const SERVER_NONCE_BYTES: usize = 24;

/// The longest client message accepted, in bytes (8 KiB): a SCRAM message holds a user name,
/// a nonce and a proof, so anything longer is refused before it is parsed.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024;

/// A SCRAM-SHA-256 conversation between [`ScramServer::start`] and [`ScramServer::finish`]:
/// the user, their credential (or a fake one when the user does not exist), and the messages
/// the proof is computed over.
#[derive(Debug)]
pub struct ScramServer {
    /// The user name of the client-first message (`n=`, unescaped).
    user: String,
    /// The user's credential, or a fake one.
    credential: Credential,
    /// Whether `credential` is the user's own (false: the user does not exist).
    known: bool,
    /// The GS2 header of the client-first message (e.g. `n,,`), which `c=` must repeat.
    gs2_header: String,
    /// The client nonce followed by the server nonce.
    nonce: String,
    /// The client-first message without its GS2 header.
    client_first_bare: String,
    /// The server-first message sent.
    server_first: String,
}

impl ScramServer {
    /// Reads the client-first message (`n,,n=<user>,r=<nonce>`, UTF-8), looks the user up
    /// with `lookup` (called once, with the unescaped user name) and returns the
    /// conversation with the server-first message to send (`r=…,s=…,i=…`, ASCII).
    ///
    /// The server nonce is [`SERVER_NONCE_BYTES`] random bytes, base64-encoded, appended to
    /// the client's. A user that `lookup` does not know is answered like any other, with a
    /// salt derived from the user name (the same one for every attempt during this process)
    /// and [`Credential::DEFAULT_ITERATIONS`]; the conversation then fails at
    /// [`ScramServer::finish`] with the same error as a wrong password.
    ///
    /// # Errors
    /// [`AuthError::Malformed`] for a message that is not a SCRAM client-first message: not
    /// UTF-8, longer than [`MAX_MESSAGE_BYTES`], channel binding asked for (`p=`), an unknown
    /// GS2 flag, an authorization identity other than the user, a mandatory extension
    /// (`m=`), a missing or empty user name or nonce, a bad `=` escape in the user name, a
    /// nonce with a character outside printable ASCII or a comma.
    pub fn start(
        client_first: &[u8],
        lookup: impl FnOnce(&str) -> Option<Credential>,
    ) -> Result<(ScramServer, Vec<u8>), AuthError> {
        let mut random = [0u8; SERVER_NONCE_BYTES];
        rand::rng().fill_bytes(&mut random);
        ScramServer::start_with(client_first, lookup, &BASE64.encode(random))
    }

    /// [`ScramServer::start`] with the server's part of the nonce given (printable ASCII
    /// without commas): for known-answer tests.
    pub(crate) fn start_with(
        client_first: &[u8],
        lookup: impl FnOnce(&str) -> Option<Credential>,
        server_nonce: &str,
    ) -> Result<(ScramServer, Vec<u8>), AuthError> {
        let message = message_text(client_first, "client-first")?;
        let first = parse_client_first(message)?;
        let (credential, known) = match lookup(&first.user) {
            Some(c) => (c, true),
            None => (fake_credential(&first.user), false),
        };
        let nonce = format!("{}{server_nonce}", first.client_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            BASE64.encode(&credential.salt),
            credential.iterations
        );
        let reply = server_first.clone().into_bytes();
        Ok((
            ScramServer {
                user: first.user,
                credential,
                known,
                gs2_header: first.gs2_header.to_owned(),
                nonce,
                client_first_bare: first.bare.to_owned(),
                server_first,
            },
            reply,
        ))
    }

    /// The user name of the client-first message.
    #[must_use]
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Reads the client-final message (`c=<GS2 header, base64>,r=<nonce>,p=<proof,
    /// base64>`), checks the proof in constant time, and returns the authenticated user name
    /// with the server-final message to send (`v=<server signature, base64>`, ASCII).
    ///
    /// # Errors
    /// [`AuthError::AuthenticationFailed`] when the proof is wrong (a wrong password) or the
    /// user does not exist — one error for both; [`AuthError::Malformed`] for a message that
    /// is not a SCRAM client-final message: not UTF-8, too long, `c=` missing or not the
    /// base64 of the client-first message's GS2 header, `r=` missing or not the nonce of
    /// the server-first message, `p=` missing, not last, not base64 or not 32 bytes.
    pub fn finish(self, client_final: &[u8]) -> Result<(String, Vec<u8>), AuthError> {
        let message = message_text(client_final, "client-final")?;
        let Some((without_proof, proof)) = message.rsplit_once(",p=") else {
            return Err(AuthError::malformed(
                "SCRAM client-final message has no proof (p=) at its end",
            ));
        };
        let mut attributes = without_proof.split(',');
        let binding = attribute(attributes.next(), 'c', "client-final", "channel binding")?;
        let binding = BASE64.decode(binding).map_err(|e| {
            AuthError::malformed(format!("SCRAM channel binding (c=) is not base64: {e}"))
        })?;
        if binding != self.gs2_header.as_bytes() {
            return Err(AuthError::malformed(
                "Unmatched SCRAM channel binding from client",
            ));
        }
        let nonce = attribute(attributes.next(), 'r', "client-final", "nonce")?;
        if nonce != self.nonce {
            return Err(AuthError::malformed(
                "Unmatched SCRAM nonce received from client in second step",
            ));
        }
        check_extensions(attributes, "client-final")?;
        let proof = decode_key(proof, "proof (p=)")?;

        let auth_message = [
            self.client_first_bare.as_bytes(),
            b",",
            self.server_first.as_bytes(),
            b",",
            without_proof.as_bytes(),
        ];
        let client_signature = hmac_sha256(&self.credential.stored_key, &auth_message);
        let mut client_key = [0u8; KEY_BYTES];
        for (k, (p, s)) in client_key
            .iter_mut()
            .zip(proof.iter().zip(client_signature.iter()))
        {
            *k = p ^ s;
        }
        let matches = sha256(&client_key).ct_eq(&self.credential.stored_key);
        if !bool::from(matches & subtle::Choice::from(u8::from(self.known))) {
            return Err(AuthError::AuthenticationFailed);
        }
        let server_signature = hmac_sha256(&self.credential.server_key, &auth_message);
        let reply = format!("v={}", BASE64.encode(server_signature)).into_bytes();
        Ok((self.user, reply))
    }
}

/// The parts of a client-first message.
struct ClientFirst<'a> {
    /// The GS2 header, e.g. `n,,`.
    gs2_header: &'a str,
    /// The rest: `n=…,r=…[,extensions]`.
    bare: &'a str,
    /// The unescaped user name.
    user: String,
    /// The client's nonce.
    client_nonce: &'a str,
}

/// Parses a client-first message (RFC 5802 §7, `client-first-message`).
fn parse_client_first(message: &str) -> Result<ClientFirst<'_>, AuthError> {
    if message.starts_with("p=") {
        return Err(AuthError::malformed(
            "Server does not support channel binding",
        ));
    }
    // The GS2 header: a flag ("n": no channel binding; "y": the client supports it but
    // thinks the server does not, which is true), then an optional authorization identity.
    let Some(rest) = message
        .strip_prefix("n,")
        .or_else(|| message.strip_prefix("y,"))
    else {
        return Err(AuthError::malformed(format!(
            "Incorrect SCRAM client message prefix: {}",
            message.split(',').next().unwrap_or_default()
        )));
    };
    let Some((authzid, bare)) = rest.split_once(',') else {
        return Err(AuthError::malformed(
            "SCRAM client-first message is truncated after its GS2 header",
        ));
    };
    let gs2_header = &message[..message.len() - bare.len()];
    let authzid = match authzid {
        "" => None,
        a => match a.strip_prefix("a=") {
            Some(name) => Some(unescape_name(name)?),
            None => {
                return Err(AuthError::malformed(format!(
                    "Incorrect SCRAM authorization identity: {a}"
                )));
            }
        },
    };
    if bare.starts_with("m=") {
        return Err(AuthError::malformed(
            "SCRAM mandatory extensions are not supported",
        ));
    }
    let mut attributes = bare.split(',');
    let name = attribute(attributes.next(), 'n', "client-first", "user name")?;
    let user = unescape_name(name)?;
    if user.is_empty() {
        return Err(AuthError::malformed("Invalid SCRAM user name: it is empty"));
    }
    if let Some(a) = authzid
        && a != user
    {
        return Err(AuthError::malformed(format!(
            "SCRAM user name {user} does not match authzid {a}"
        )));
    }
    let client_nonce = attribute(attributes.next(), 'r', "client-first", "nonce")?;
    check_nonce(client_nonce)?;
    check_extensions(attributes, "client-first")?;
    Ok(ClientFirst {
        gs2_header,
        bare,
        user,
        client_nonce,
    })
}

/// The bytes of a client message as text, refused when too long or not UTF-8.
fn message_text<'a>(bytes: &'a [u8], which: &str) -> Result<&'a str, AuthError> {
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(AuthError::malformed(format!(
            "SCRAM {which} message of {} bytes exceeds the limit of {MAX_MESSAGE_BYTES} bytes",
            bytes.len()
        )));
    }
    std::str::from_utf8(bytes)
        .map_err(|e| AuthError::malformed(format!("SCRAM {which} message is not UTF-8: {e}")))
}

/// The value of an attribute `<name>=<value>` that must come next in a message.
fn attribute<'a>(
    part: Option<&'a str>,
    name: char,
    which: &str,
    what: &str,
) -> Result<&'a str, AuthError> {
    part.and_then(|p| p.strip_prefix(name))
        .and_then(|p| p.strip_prefix('='))
        .ok_or_else(|| {
            AuthError::malformed(format!(
                "SCRAM {which} message lacks its {what} ({name}=) where expected"
            ))
        })
}

/// Checks the optional extensions after the nonce: each `<letter>=<value>`, ignored.
fn check_extensions<'a>(
    mut rest: impl Iterator<Item = &'a str>,
    which: &str,
) -> Result<(), AuthError> {
    match rest.find(|a| {
        let mut chars = a.chars();
        !(chars.next().is_some_and(|c| c.is_ascii_alphabetic()) && chars.next() == Some('='))
    }) {
        Some(bad) => Err(AuthError::malformed(format!(
            "SCRAM {which} message has a malformed attribute: {bad:?}"
        ))),
        None => Ok(()),
    }
}

/// Checks a client nonce: non-empty printable ASCII without commas (RFC 5802 §7, `c-nonce`).
fn check_nonce(nonce: &str) -> Result<(), AuthError> {
    if nonce.is_empty() {
        return Err(AuthError::malformed(
            "Invalid SCRAM client nonce: it is empty",
        ));
    }
    if let Some(c) = nonce
        .chars()
        .find(|c| !matches!(c, '\x21'..='\x2b' | '\x2d'..='\x7e'))
    {
        return Err(AuthError::malformed(format!(
            "Invalid SCRAM client nonce: it holds {c:?}, not printable ASCII"
        )));
    }
    Ok(())
}

/// A `saslname` with its escapes undone: `=2C` is a comma, `=3D` an equals sign; any other
/// `=` is an error (RFC 5802 §5.1).
fn unescape_name(name: &str) -> Result<String, AuthError> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let escape = rest.get(at..at + 3);
        match escape {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => {
                return Err(AuthError::malformed(format!(
                    "Invalid SCRAM user name {name:?}: '=' must be followed by 2C or 3D"
                )));
            }
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A 32-byte key (a proof) from its base64 text.
fn decode_key(text: &str, what: &str) -> Result<[u8; KEY_BYTES], AuthError> {
    let bytes = BASE64
        .decode(text)
        .map_err(|e| AuthError::malformed(format!("SCRAM {what} is not base64: {e}")))?;
    <[u8; KEY_BYTES]>::try_from(bytes.as_slice()).map_err(|_| {
        AuthError::malformed(format!(
            "SCRAM {what} holds {} bytes, not {KEY_BYTES}",
            bytes.len()
        ))
    })
}

/// The credential shown for a user that does not exist: a salt of
/// [`Credential::SALT_BYTES`] bytes derived from the user name with a key drawn once per
/// process (so one name always gets the same salt, and nobody outside can tell it from a real
/// one), [`Credential::DEFAULT_ITERATIONS`], and keys no password matches in practice.
fn fake_credential(user: &str) -> Credential {
    static KEY: OnceLock<[u8; KEY_BYTES]> = OnceLock::new();
    let key = KEY.get_or_init(|| {
        let mut key = [0u8; KEY_BYTES];
        rand::rng().fill_bytes(&mut key);
        key
    });
    let salt = hmac_sha256(key, &[b"salt\0", user.as_bytes()]);
    Credential {
        salt: salt[..Credential::SALT_BYTES].to_vec(),
        iterations: Credential::DEFAULT_ITERATIONS,
        stored_key: hmac_sha256(key, &[b"stored key\0", user.as_bytes()]),
        server_key: hmac_sha256(key, &[b"server key\0", user.as_bytes()]),
    }
}
