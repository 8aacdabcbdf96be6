//! Tests of [`acceptor`]: self-signed certificates made with rcgen in a temporary directory,
//! each key encoding, each error, and a TLS echo over loopback TCP.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::prelude::{BASE64_STANDARD, Engine as _};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ProtocolVersion, RootCertStore, SupportedProtocolVersion, version};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;

use super::{MAX_PEM_FILE_BYTES, TlsError, acceptor};

/// A 2048-bit RSA key in PKCS#8, made for these tests only (ring, rcgen's signer here, signs
/// with RSA keys but cannot generate them).
const TEST_RSA_KEY_PKCS8: &str = include_str!("test-rsa2048-key.pem");

/// A self-signed certificate for `localhost` and its key, written as PEM files.
struct SelfSigned {
    /// The certificate's file.
    cert: PathBuf,
    /// The key's file (PKCS#8).
    key: PathBuf,
    /// The certificate, for a client to trust.
    cert_der: CertificateDer<'static>,
    /// The certificate in PEM.
    cert_pem: String,
    /// The key in PEM (PKCS#8).
    key_pem: String,
}

/// `der` as a PEM section labelled `label` (RFC 7468): base64 in lines of 64 characters.
fn to_pem(label: &str, der: &[u8]) -> String {
    let body = BASE64_STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

/// A temporary directory for certificate and key files, removed when dropped.
fn tempdir() -> TempDir {
    tempfile::tempdir().expect("temporary directory")
}

/// Writes `contents` to `dir/name`, returning the path.
fn write(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write a test file");
    path
}

/// A certificate for `localhost` (subject `CN=<name>`) self-signed with `key`, written to `dir`
/// as `<name>.cert.pem` and `<name>.key.pem`.
fn self_signed_with(dir: &Path, name: &str, key: &KeyPair) -> SelfSigned {
    let mut params =
        CertificateParams::new(vec!["localhost".to_string()]).expect("subject alternative names");
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(key).expect("self-signed certificate");
    let cert_pem = to_pem("CERTIFICATE", cert.der());
    let key_pem = to_pem("PRIVATE KEY", &key.serialize_der());
    SelfSigned {
        cert: write(dir, &format!("{name}.cert.pem"), &cert_pem),
        key: write(dir, &format!("{name}.key.pem"), &key_pem),
        cert_der: cert.der().clone(),
        cert_pem,
        key_pem,
    }
}

/// A certificate for `localhost` with a new ECDSA P-256 key, written to `dir`.
fn self_signed(dir: &Path, name: &str) -> SelfSigned {
    self_signed_with(dir, name, &KeyPair::generate().expect("key pair"))
}

/// The `privateKey` OCTET STRING's contents in a PKCS#8 `PrivateKeyInfo` (RFC 5208 §5): the
/// algorithm's own encoding of the key, PKCS#1 `RSAPrivateKey` for RSA, SEC1 `ECPrivateKey`
/// for EC.
fn pkcs8_inner_key(pkcs8: &[u8]) -> Vec<u8> {
    let (tag, info, _) = der_element(pkcs8);
    assert_eq!(tag, 0x30, "PrivateKeyInfo is a SEQUENCE");
    let (tag, _, rest) = der_element(info);
    assert_eq!(tag, 0x02, "version INTEGER");
    let (tag, _, rest) = der_element(rest);
    assert_eq!(tag, 0x30, "privateKeyAlgorithm SEQUENCE");
    let (tag, key, _) = der_element(rest);
    assert_eq!(tag, 0x04, "privateKey OCTET STRING");
    key.to_vec()
}

/// One DER element of `der`: its tag, its contents, and the bytes after it.
fn der_element(der: &[u8]) -> (u8, &[u8], &[u8]) {
    let tag = der[0];
    let (len, header) = match der[1] {
        short @ 0..0x80 => (usize::from(short), 2),
        long => {
            let octets = usize::from(long & 0x7f);
            let len = der[2..2 + octets]
                .iter()
                .fold(0, |len, &octet| len << 8 | usize::from(octet));
            (len, 2 + octets)
        }
    };
    (tag, &der[header..header + len], &der[header + len..])
}

/// The error of [`acceptor`] for `cert` and `key`, which must fail.
fn refused(cert: &Path, key: &Path) -> TlsError {
    match acceptor(cert, key) {
        Ok(_) => panic!("{} with {} was accepted", cert.display(), key.display()),
        Err(err) => err,
    }
}

#[test]
fn loads_a_self_signed_certificate_and_its_pkcs8_key() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    assert!(pair.key_pem.contains("BEGIN PRIVATE KEY"));
    acceptor(&pair.cert, &pair.key).expect("acceptor");
}

#[test]
fn loads_ed25519_and_p384_keys() {
    let dir = tempdir();
    for (name, alg) in [
        ("ed25519", &rcgen::PKCS_ED25519),
        ("p384", &rcgen::PKCS_ECDSA_P384_SHA384),
    ] {
        let key = KeyPair::generate_for(alg).expect("key pair");
        let pair = self_signed_with(dir.path(), name, &key);
        acceptor(&pair.cert, &pair.key).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn loads_a_sec1_ec_key() {
    let dir = tempdir();
    let key = KeyPair::generate().expect("P-256 key pair");
    let pair = self_signed_with(dir.path(), "ec", &key);
    let sec1 = pkcs8_inner_key(&key.serialize_der());
    let sec1_pem = to_pem("EC PRIVATE KEY", &sec1);
    let key_file = write(dir.path(), "ec.sec1.pem", sec1_pem);
    acceptor(&pair.cert, &key_file).expect("acceptor with a SEC1 key");
}

#[test]
fn loads_a_pkcs1_rsa_key() {
    let dir = tempdir();
    let pkcs8 =
        PrivatePkcs8KeyDer::from_pem_slice(TEST_RSA_KEY_PKCS8.as_bytes()).expect("RSA test key");
    let key = KeyPair::try_from(&pkcs8).expect("RSA test key");
    let pair = self_signed_with(dir.path(), "rsa", &key);
    acceptor(&pair.cert, &pair.key).expect("acceptor with the PKCS#8 RSA key");
    let pkcs1 = pkcs8_inner_key(&key.serialize_der());
    let pkcs1_pem = to_pem("RSA PRIVATE KEY", &pkcs1);
    let key_file = write(dir.path(), "rsa.pkcs1.pem", pkcs1_pem);
    acceptor(&pair.cert, &key_file).expect("acceptor with a PKCS#1 key");
}

#[test]
fn one_file_can_hold_the_chain_and_the_key() {
    // A key section first, then the server's certificate, then another certificate as an
    // intermediate: each loader takes its own sections and skips the others.
    let dir = tempdir();
    let server = self_signed(dir.path(), "server");
    let other = self_signed(dir.path(), "other");
    let combined = write(
        dir.path(),
        "combined.pem",
        format!("{}{}{}", server.key_pem, server.cert_pem, other.cert_pem),
    );
    acceptor(&combined, &combined).expect("acceptor from one combined file");
}

#[test]
fn a_missing_file_is_named() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    let missing = dir.path().join("missing.pem");

    for (cert, key) in [(&missing, &pair.key), (&pair.cert, &missing)] {
        let err = refused(cert, key);
        match &err {
            TlsError::Read { path, source } => {
                assert_eq!(path, &missing);
                assert_eq!(source.kind(), ErrorKind::NotFound);
            }
            other => panic!("expected TlsError::Read, got {other:?}"),
        }
        assert!(err.to_string().contains("missing.pem"), "{err}");
    }
}

#[test]
fn a_directory_is_not_a_file() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    let err = refused(dir.path(), &pair.key);
    assert!(
        matches!(&err, TlsError::Read { path, .. } if path == dir.path()),
        "{err:?}"
    );
}

#[test]
fn a_key_file_without_a_key_is_refused() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    let empty = write(dir.path(), "empty.pem", "");
    for key in [&pair.cert, &empty] {
        let err = refused(&pair.cert, key);
        assert!(
            matches!(&err, TlsError::NoKey { path } if path == key),
            "{err:?}"
        );
        assert!(err.to_string().contains("no private key"), "{err}");
    }
}

#[test]
fn a_certificate_file_without_a_certificate_is_refused() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    let empty = write(dir.path(), "empty.pem", "");
    for cert in [&pair.key, &empty] {
        let err = refused(cert, &pair.key);
        assert!(
            matches!(&err, TlsError::NoCertificate { path } if path == cert),
            "{err:?}"
        );
        assert!(err.to_string().contains("no certificate"), "{err}");
    }
}

#[test]
fn a_key_of_another_certificate_is_refused() {
    let dir = tempdir();
    let server = self_signed(dir.path(), "server");
    let other = self_signed(dir.path(), "other");
    let err = refused(&server.cert, &other.key);
    assert!(
        matches!(&err, TlsError::KeyMismatch { cert, key } if cert == &server.cert && key == &other.key),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("other.key.pem") && message.contains("server.cert.pem"),
        "{message}"
    );
}

#[test]
fn malformed_pem_is_refused() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    // The certificate cut short: its END line is missing.
    let cut = &pair.cert_pem[..pair.cert_pem.len() / 2];
    let truncated = write(dir.path(), "truncated.pem", cut);
    let err = refused(&truncated, &pair.key);
    assert!(
        matches!(&err, TlsError::Pem { path, .. } if path == &truncated),
        "{err:?}"
    );
}

#[test]
fn bytes_that_are_not_a_certificate_or_a_key_are_refused() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    // Well-formed PEM whose contents are not DER.
    let junk_cert = write(
        dir.path(),
        "junk-cert.pem",
        to_pem("CERTIFICATE", b"not a certificate"),
    );
    let junk_key = write(
        dir.path(),
        "junk-key.pem",
        to_pem("PRIVATE KEY", b"not a key"),
    );
    for (cert, key) in [(&junk_cert, &pair.key), (&pair.cert, &junk_key)] {
        let err = refused(cert, key);
        assert!(
            matches!(&err, TlsError::Rejected { cert: c, key: k, .. } if c == cert && k == key),
            "{err:?}"
        );
    }
}

#[test]
fn a_file_over_the_limit_is_refused() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    let padding = " ".repeat(usize::try_from(MAX_PEM_FILE_BYTES).expect("1 MiB fits"));
    let large = write(
        dir.path(),
        "large.pem",
        format!("{}{padding}", pair.cert_pem),
    );
    let err = refused(&large, &pair.key);
    assert!(
        matches!(&err, TlsError::TooLarge { path } if path == &large),
        "{err:?}"
    );
}

/// What a client saw of an echo over TLS.
struct Echo {
    /// The bytes the server sent back.
    echoed: Vec<u8>,
    /// The protocol version negotiated.
    version: Option<ProtocolVersion>,
    /// The application protocol negotiated by ALPN.
    alpn: Option<Vec<u8>>,
}

/// Serves one connection on 127.0.0.1 with `pair`'s certificate, echoing every byte until
/// the client closes; connects to it trusting `trusted`, with `versions` and offering `alpn`;
/// sends `message` and reads the echo.
async fn echo_over_tls(
    pair: &SelfSigned,
    trusted: &CertificateDer<'static>,
    versions: &[&'static SupportedProtocolVersion],
    alpn: Vec<Vec<u8>>,
    message: &[u8],
) -> (Result<Echo, std::io::Error>, Result<(), std::io::Error>) {
    let acceptor = acceptor(&pair.cert, &pair.key).expect("acceptor");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local address");

    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        let mut tls = acceptor.accept(tcp).await?;
        let mut buf = [0u8; 1024];
        loop {
            let n = tls.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            tls.write_all(&buf[..n]).await?;
        }
        tls.shutdown().await
    });

    let client = async {
        let mut roots = RootCertStore::empty();
        roots
            .add(trusted.clone())
            .expect("trust the test certificate");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .expect("protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn;
        let connector = TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(addr).await?;
        let name = ServerName::try_from("localhost").expect("server name");
        let mut tls = connector.connect(name, tcp).await?;
        let (_, session) = tls.get_ref();
        let version = session.protocol_version();
        let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
        tls.write_all(message).await?;
        tls.flush().await?;
        // close_notify and the end of our half: the server echoes what it read, then closes.
        tls.shutdown().await?;
        let mut echoed = Vec::new();
        tls.read_to_end(&mut echoed).await?;
        Ok(Echo {
            echoed,
            version,
            alpn,
        })
    };
    let echo = client.await;
    let served = server.await.expect("server task");
    (echo, served)
}

#[tokio::test]
async fn echoes_over_tls_1_3() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    let message: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    let (echo, served) = echo_over_tls(
        &pair,
        &pair.cert_der,
        rustls::ALL_VERSIONS,
        Vec::new(),
        &message,
    )
    .await;
    let echo = echo.expect("client");
    served.expect("server");
    assert_eq!(echo.echoed, message);
    assert_eq!(echo.version, Some(ProtocolVersion::TLSv1_3));
    assert_eq!(echo.alpn, None);
}

#[tokio::test]
async fn echoes_over_tls_1_2() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    let (echo, served) = echo_over_tls(
        &pair,
        &pair.cert_der,
        &[&version::TLS12],
        Vec::new(),
        b"hello over TLS 1.2",
    )
    .await;
    let echo = echo.expect("client");
    served.expect("server");
    assert_eq!(echo.echoed, b"hello over TLS 1.2");
    assert_eq!(echo.version, Some(ProtocolVersion::TLSv1_2));
}

#[tokio::test]
async fn ignores_a_client_alpn_offer() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    let (echo, served) = echo_over_tls(
        &pair,
        &pair.cert_der,
        rustls::ALL_VERSIONS,
        vec![b"mongodb".to_vec()],
        b"ping",
    )
    .await;
    let echo = echo.expect("client");
    served.expect("server");
    assert_eq!(echo.echoed, b"ping");
    assert_eq!(echo.alpn, None);
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_is_refused() {
    let dir = tempdir();
    let pair = self_signed(dir.path(), "server");
    let stranger = self_signed(dir.path(), "stranger");
    let (echo, served) = echo_over_tls(
        &pair,
        &stranger.cert_der,
        rustls::ALL_VERSIONS,
        Vec::new(),
        b"ping",
    )
    .await;
    let err = echo.err().expect("the client refuses an unknown issuer");
    let cause = err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    assert!(
        matches!(
            cause,
            Some(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer
            ))
        ),
        "{err:?}"
    );
    assert!(served.is_err(), "the server's handshake fails too");
}
