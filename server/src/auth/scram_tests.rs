//! Tests of the SCRAM-SHA-256 server and of credentials: RFC 7677's known answer, round trips
//! with a client written here, wrong passwords, unknown users, malformed messages.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use proptest::prelude::*;

use super::credential::{hmac_sha256, salted_password, saslprep, sha256};
use super::{AuthError, Credential, MAX_MESSAGE_BYTES, ScramServer};

// RFC 7677 §3: user "user", password "pencil".
const RFC_CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
const RFC_SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
const RFC_SALT: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
const RFC_SERVER_FIRST: &str =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
const RFC_CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
                                p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
const RFC_SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

/// The credential of RFC 7677's example (derived once: PBKDF2 is slow in a test build).
fn rfc_credential() -> Credential {
    static CREDENTIAL: std::sync::LazyLock<Credential> = std::sync::LazyLock::new(|| {
        let salt = BASE64.decode(RFC_SALT).expect("salt");
        Credential::derive("pencil", &salt, 4096).expect("credential")
    });
    CREDENTIAL.clone()
}

/// A SCRAM-SHA-256 client, as a driver runs it.
pub(super) struct TestClient {
    /// The GS2 header sent (`n,,` or `y,,`).
    gs2: String,
    /// The client-first message without the header.
    bare: String,
}

impl TestClient {
    /// The client of `user` with `nonce`; returns it with its client-first message.
    fn first(user: &str, nonce: &str) -> (TestClient, String) {
        Self::first_with("n,,", user, nonce)
    }

    /// Same with a GS2 header.
    fn first_with(gs2: &str, user: &str, nonce: &str) -> (TestClient, String) {
        let escaped = user.replace('=', "=3D").replace(',', "=2C");
        let bare = format!("n={escaped},r={nonce}");
        let message = format!("{gs2}{bare}");
        (
            TestClient {
                gs2: gs2.to_owned(),
                bare,
            },
            message,
        )
    }

    /// The client-final message for `password` answering `server_first`, with the
    /// server-final message the server must answer.
    fn final_message(&self, password: &str, server_first: &[u8]) -> (String, String) {
        let server_first = std::str::from_utf8(server_first).expect("server-first is UTF-8");
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for a in server_first.split(',') {
            let (k, v) = a.split_once('=').expect("attribute");
            match k {
                "r" => nonce = Some(v.to_owned()),
                "s" => salt = Some(BASE64.decode(v).expect("salt base64")),
                "i" => iterations = Some(v.parse::<u32>().expect("iterations")),
                other => panic!("unexpected attribute {other}"),
            }
        }
        let (nonce, salt, iterations) = (nonce.unwrap(), salt.unwrap(), iterations.unwrap());
        assert!(nonce.starts_with(self.bare.split("r=").nth(1).unwrap()));
        let prepared = saslprep(password).expect("password");
        let salted = salted_password(prepared.as_bytes(), &salt, iterations);
        let client_key = hmac_sha256(&salted, &[b"Client Key"]);
        let stored_key = sha256(&client_key);
        let server_key = hmac_sha256(&salted, &[b"Server Key"]);
        let without_proof = format!("c={},r={nonce}", BASE64.encode(&self.gs2));
        let auth_message = format!("{},{server_first},{without_proof}", self.bare);
        let signature = hmac_sha256(&stored_key, &[auth_message.as_bytes()]);
        let proof: Vec<u8> = client_key
            .iter()
            .zip(signature.iter())
            .map(|(k, s)| k ^ s)
            .collect();
        let server_signature = hmac_sha256(&server_key, &[auth_message.as_bytes()]);
        (
            format!("{without_proof},p={}", BASE64.encode(proof)),
            format!("v={}", BASE64.encode(server_signature)),
        )
    }
}

/// Runs a whole conversation of `user` with `password` against a server whose only user is
/// `stored` with `credential`.
pub(super) fn converse(
    user: &str,
    password: &str,
    stored: &str,
    credential: &Credential,
) -> Result<(String, Vec<u8>, String), AuthError> {
    let (client, first) = TestClient::first(user, "fyko+d2lbbFgONRv9qkxdawL");
    let (server, server_first) = ScramServer::start(first.as_bytes(), |name| {
        (name == stored).then(|| credential.clone())
    })?;
    assert_eq!(server.user(), user);
    let (final_message, expected) = client.final_message(password, &server_first);
    let (name, server_final) = server.finish(final_message.as_bytes())?;
    Ok((name, server_final, expected))
}

/// A conversation started on RFC 7677's client-first message, with its credential.
fn rfc_server() -> ScramServer {
    ScramServer::start_with(
        RFC_CLIENT_FIRST.as_bytes(),
        |_| Some(rfc_credential()),
        RFC_SERVER_NONCE,
    )
    .expect("start")
    .0
}

fn assert_malformed<T: std::fmt::Debug>(result: Result<T, AuthError>, context: &str) {
    match result {
        Err(e @ AuthError::Malformed(_)) => assert_eq!(e.code(), (2, "BadValue"), "{context}"),
        other => panic!("{context}: expected Malformed, got {other:?}"),
    }
}

fn assert_auth_failed<T: std::fmt::Debug>(result: Result<T, AuthError>) {
    match result {
        Err(e @ AuthError::AuthenticationFailed) => {
            assert_eq!(e.code(), (18, "AuthenticationFailed"));
            assert_eq!(e.to_string(), "Authentication failed.");
        }
        other => panic!("expected AuthenticationFailed, got {other:?}"),
    }
}

#[test]
fn rfc_7677_example() {
    let mut looked_up = None;
    let (server, server_first) = ScramServer::start_with(
        RFC_CLIENT_FIRST.as_bytes(),
        |name| {
            looked_up = Some(name.to_owned());
            Some(rfc_credential())
        },
        RFC_SERVER_NONCE,
    )
    .expect("start");
    assert_eq!(looked_up.as_deref(), Some("user"));
    assert_eq!(
        std::str::from_utf8(&server_first).unwrap(),
        RFC_SERVER_FIRST
    );
    let (user, server_final) = server.finish(RFC_CLIENT_FINAL.as_bytes()).expect("finish");
    assert_eq!(user, "user");
    assert_eq!(
        std::str::from_utf8(&server_final).unwrap(),
        RFC_SERVER_FINAL
    );
}

#[test]
fn test_client_computes_rfc_7677_messages() {
    let (client, first) = TestClient::first("user", "rOprNGfwEbeRWgbNEkqO");
    assert_eq!(first, RFC_CLIENT_FIRST);
    let (final_message, server_final) = client.final_message("pencil", RFC_SERVER_FIRST.as_bytes());
    assert_eq!(final_message, RFC_CLIENT_FINAL);
    assert_eq!(server_final, RFC_SERVER_FINAL);
}

#[test]
fn round_trip_with_a_new_credential() {
    let password = "correct horse\u{00A0}battery staple é";
    let credential = Credential::new(password).expect("credential");
    assert_eq!(credential.salt.len(), Credential::SALT_BYTES);
    assert_eq!(credential.iterations, Credential::DEFAULT_ITERATIONS);
    let (user, server_final, expected) =
        converse("alice", password, "alice", &credential).expect("authenticated");
    assert_eq!(user, "alice");
    assert_eq!(String::from_utf8(server_final).unwrap(), expected);
    // SASLprep maps the no-break space to a space: the client's prepared password matches.
    converse(
        "alice",
        "correct horse battery staple é",
        "alice",
        &credential,
    )
    .expect("prepared");
}

#[test]
fn server_nonce_is_24_random_bytes_after_the_clients() {
    let (_, first) = TestClient::first("user", "abc");
    let nonce = |reply: Vec<u8>| {
        let text = String::from_utf8(reply).unwrap();
        let r = text.split(',').next().unwrap().strip_prefix("r=").unwrap();
        r.to_owned()
    };
    let (_, a) = ScramServer::start(first.as_bytes(), |_| Some(rfc_credential())).unwrap();
    let (_, b) = ScramServer::start(first.as_bytes(), |_| Some(rfc_credential())).unwrap();
    let (a, b) = (nonce(a), nonce(b));
    assert_ne!(a, b);
    let server_part = a.strip_prefix("abc").expect("client nonce first");
    assert_eq!(
        BASE64.decode(server_part).unwrap().len(),
        super::SERVER_NONCE_BYTES
    );
}

#[test]
fn escaped_user_names_and_y_flag() {
    let user = "we,ird=name";
    let credential = rfc_credential();
    let (client, first) = TestClient::first_with("y,,", user, "nonce123");
    assert!(first.contains("n=we=2Cird=3Dname,"), "{first}");
    let (server, server_first) = ScramServer::start(first.as_bytes(), |name| {
        assert_eq!(name, user);
        Some(credential.clone())
    })
    .unwrap();
    let (final_message, _) = client.final_message("pencil", &server_first);
    assert!(final_message.starts_with("c=eSws,"), "{final_message}");
    assert_eq!(server.finish(final_message.as_bytes()).unwrap().0, user);
}

#[test]
fn authorization_identity_equal_to_the_user_is_accepted() {
    let credential = rfc_credential();
    let (client, first) = TestClient::first_with("n,a=user,", "user", "nonce123");
    let (server, server_first) =
        ScramServer::start(first.as_bytes(), |_| Some(credential.clone())).unwrap();
    let (final_message, _) = client.final_message("pencil", &server_first);
    server
        .finish(final_message.as_bytes())
        .expect("authenticated");
}

#[test]
fn wrong_password_fails() {
    let credential = Credential::derive("pencil", b"salt of the test", 4096).unwrap();
    assert_auth_failed(converse("user", "pencil2", "user", &credential));
    assert_auth_failed(converse("user", "Pencil", "user", &credential));
}

#[test]
fn unknown_user_fails_like_a_wrong_password() {
    let credential = Credential::derive("pencil", b"salt of the test", 4096).unwrap();
    // With the right password of another user, and with a wrong one.
    assert_auth_failed(converse("mallory", "pencil", "user", &credential));
    assert_auth_failed(converse("mallory", "other", "user", &credential));

    // The server-first message looks like a real user's: a 28-byte salt, the default
    // iterations, the same salt on every attempt for one name, another for another name.
    let server_first = |user: &str| {
        let (_, first) = TestClient::first(user, "abc");
        let (_, reply) = ScramServer::start(first.as_bytes(), |_| None).unwrap();
        let text = String::from_utf8(reply).unwrap();
        let parts: Vec<&str> = text.split(',').collect();
        assert_eq!(parts.len(), 3, "{text}");
        let salt = BASE64.decode(parts[1].strip_prefix("s=").unwrap()).unwrap();
        assert_eq!(salt.len(), Credential::SALT_BYTES);
        assert_eq!(parts[2], format!("i={}", Credential::DEFAULT_ITERATIONS));
        salt
    };
    assert_eq!(server_first("nobody"), server_first("nobody"));
    assert_ne!(server_first("nobody"), server_first("somebody"));
}

#[test]
fn replayed_proof_against_a_new_nonce_fails() {
    let credential = rfc_credential();
    let (client, first) = TestClient::first("user", "nonce-1");
    let (_, server_first) =
        ScramServer::start(first.as_bytes(), |_| Some(credential.clone())).unwrap();
    let (final_message, _) = client.final_message("pencil", &server_first);
    // A second conversation with the same client-first gets another server nonce.
    let (server, _) = ScramServer::start(first.as_bytes(), |_| Some(credential.clone())).unwrap();
    assert_malformed(server.finish(final_message.as_bytes()), "replayed nonce");
}

#[test]
fn malformed_client_first_messages() {
    let long = format!("n,,n=user,r={}", "a".repeat(MAX_MESSAGE_BYTES));
    let cases: &[(&[u8], &str)] = &[
        (b"", "empty"),
        (b"n", "flag only"),
        (b"n,", "no authzid field"),
        (b"n,,", "no bare message"),
        (b"n,,n=user", "no nonce"),
        (b"n,,n=user,r=", "empty nonce"),
        (b"n,,n=,r=abc", "empty user"),
        (b"n,,r=abc,n=user", "attributes out of order"),
        (b"n,,n=us=2Xer,r=abc", "bad escape"),
        (b"n,,n=user=,r=abc", "truncated escape"),
        (b"n,,n=user,r=ab c", "nonce with a space"),
        (b"n,,n=user,r=abc,xx", "malformed extension"),
        (b"n,,m=ext,n=user,r=abc", "mandatory extension"),
        (b"x,,n=user,r=abc", "unknown GS2 flag"),
        (b"p=tls-unique,,n=user,r=abc", "channel binding"),
        (b"n,a=other,n=user,r=abc", "authzid of another user"),
        (b"n,b=user,n=user,r=abc", "bad authzid field"),
        (b"n,,n=us\xffer,r=abc", "not UTF-8"),
        (long.as_bytes(), "too long"),
    ];
    for (message, context) in cases {
        assert_malformed(
            ScramServer::start(message, |_| Some(rfc_credential())),
            context,
        );
    }
    let Err(e) = ScramServer::start(b"p=tls-server-end-point,,n=user,r=abc", |_| None) else {
        panic!("channel binding accepted");
    };
    assert_eq!(e.to_string(), "Server does not support channel binding");
}

#[test]
fn malformed_client_final_messages() {
    let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    let proof = "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    let cases = [
        (String::new(), "empty"),
        (format!("c=biws,r={nonce}"), "no proof"),
        (format!("c=biws,r={nonce},p="), "empty proof"),
        (format!("c=biws,r={nonce},p=not*base64"), "proof not base64"),
        (
            format!("c=biws,r={nonce},p={}", BASE64.encode([0u8; 31])),
            "31-byte proof",
        ),
        (format!("r={nonce},p={proof}"), "no channel binding"),
        (format!("c=biws,p={proof}"), "no nonce"),
        (
            format!("c=eSws,r={nonce},p={proof}"),
            "channel binding of another header",
        ),
        (
            format!("c=b!ws,r={nonce},p={proof}"),
            "channel binding not base64",
        ),
        (
            format!("c=biws,r=rOprNGfwEbeRWgbNEkqO,p={proof}"),
            "client nonce only",
        ),
        (format!("c=biws,r={nonce}x,p={proof}"), "longer nonce"),
        (
            format!("c=biws,r={nonce},x,p={proof}"),
            "malformed extension",
        ),
        (format!("c=biws,p={proof},r={nonce}"), "proof not last"),
        ("c=biws,r=\u{e9},p=x".to_owned(), "non-ASCII"),
        (
            format!("c=biws,r={}", "a".repeat(MAX_MESSAGE_BYTES)),
            "too long",
        ),
    ];
    for (message, context) in &cases {
        assert_malformed(rfc_server().finish(message.as_bytes()), context);
    }
    assert_malformed(rfc_server().finish(b"c=biws,r=\xff,p=x"), "not UTF-8");
    // Every strict prefix of the right message fails.
    for end in 0..RFC_CLIENT_FINAL.len() {
        let result = rfc_server().finish(&RFC_CLIENT_FINAL.as_bytes()[..end]);
        assert!(result.is_err(), "prefix of {end} bytes accepted");
    }
    // A well-formed message with a proof of the right size but wrong bytes.
    let wrong = format!("c=biws,r={nonce},p={}", BASE64.encode([7u8; 32]));
    assert_auth_failed(rfc_server().finish(wrong.as_bytes()));
}

#[test]
fn credential_prepares_passwords_with_saslprep() {
    let salt = b"0123456789abcdef0123456789ab";
    let ix = Credential::derive("IX", salt, 4096).unwrap();
    // RFC 4013 §3's examples: the soft hyphen maps to nothing, U+2168 to "IX" (NFKC).
    assert_eq!(Credential::derive("I\u{00AD}X", salt, 4096).unwrap(), ix);
    assert_eq!(Credential::derive("\u{2168}", salt, 4096).unwrap(), ix);
    assert_ne!(Credential::derive("ix", salt, 4096).unwrap(), ix);
    for bad in ["", "\u{0007}", "a\u{0007}b", "\u{00AD}", "\u{0627}1"] {
        match Credential::derive(bad, salt, 4096) {
            Err(e @ AuthError::InvalidPassword(_)) => assert_eq!(e.code(), (2, "BadValue")),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    assert!(matches!(
        Credential::derive("IX", salt, 4095),
        Err(AuthError::TooFewIterations {
            iterations: 4095,
            minimum: 4096
        })
    ));
}

#[test]
fn credential_debug_hides_the_keys() {
    let c = rfc_credential();
    let text = format!("{c:?}");
    assert!(text.contains("<secret>"), "{text}");
    assert!(!text.contains(&format!("{:?}", c.stored_key)), "{text}");
    assert!(!text.contains(&format!("{:?}", c.server_key)), "{text}");
}

#[test]
fn error_codes() {
    assert_eq!(
        AuthError::MechanismUnavailable("PLAIN".into()).code(),
        (334, "MechanismUnavailable")
    );
    assert_eq!(
        AuthError::MechanismUnavailable("PLAIN".into()).to_string(),
        "Received authentication for mechanism PLAIN which is not enabled"
    );
    assert_eq!(
        AuthError::UserExists("a".into()).code(),
        (51003, "Location51003")
    );
    assert_eq!(
        AuthError::AuthenticationFailed.code(),
        (18, "AuthenticationFailed")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn start_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = ScramServer::start(&bytes, |_| Some(rfc_credential()));
    }

    #[test]
    fn start_never_panics_on_near_messages(text in "[nyp]?(,|=)?(a=[a-z=2CD]{0,4})?,?(m=)?(n=[a-z=,2CD3]{0,6})?,?(r=[ -~]{0,8})?(,[a-z=]{0,4}){0,2}") {
        let _ = ScramServer::start(text.as_bytes(), |_| None);
    }

    #[test]
    fn finish_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        prop_assert!(rfc_server().finish(&bytes).is_err());
    }

    #[test]
    fn finish_never_panics_on_near_messages(
        c in "(c=(biws|eSws|[A-Za-z0-9+/=]{0,8}))?",
        r in "(,r=rOprNGfwEbeRWgbNEkqO(%hvYDpWUa2RaTCAfuxFIlj\\)hNlF\\$k0)?[a-z]{0,2})?",
        ext in "(,[a-z=]{0,4}){0,2}",
        p in "(,p=[A-Za-z0-9+/=]{0,48})?",
    ) {
        let message = format!("{c}{r}{ext}{p}");
        prop_assert!(rfc_server().finish(message.as_bytes()).is_err());
    }
}
