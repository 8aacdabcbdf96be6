//! TLS for `tscoll serve`: [`acceptor`] reads a PEM certificate chain and its private key into
//! a [`TlsAcceptor`], which wraps each accepted TCP stream before the wire protocol reads from
//! it.
//!
//! # Command line
//!
//! ```text
//! tscoll serve --tls-cert cert.pem --tls-key key.pem
//! ```
//!
//! - `--tls-cert FILE`: the server's certificate chain in PEM (`BEGIN CERTIFICATE` sections),
//!   the server's own certificate first, then the intermediates, if any, in order.
//! - `--tls-key FILE`: the private key of that first certificate in PEM: PKCS#8
//!   (`BEGIN PRIVATE KEY`), PKCS#1 RSA (`BEGIN RSA PRIVATE KEY`) or SEC1 EC
//!   (`BEGIN EC PRIVATE KEY`), unencrypted. The first key in the file is used.
//!
//! Both flags or neither: with both, every connection must be TLS (as mongod's
//! `--tlsMode requireTLS`; plain and TLS connections are not mixed on one port); with neither,
//! plain TCP; one without the other is a usage error. The files are read once, at start-up, and a bad file stops the server with a
//! [`TlsError`] that names it.
//!
//! # Drivers
//!
//! Drivers and mongosh connect with `tls=true` in the connection string. For a self-signed
//! certificate (or one from a private CA), `tlsCAFile=` names a PEM file with that
//! certificate (or the CA's), which the client then trusts:
//!
//! ```text
//! mongosh "mongodb://localhost:27017/?tls=true&tlsCAFile=cert.pem"
//! ```
//!
//! The host name in the connection string must be one of the certificate's subject alternative
//! names (`DNS:localhost`, `IP:127.0.0.1`, …), as drivers verify it. A certificate for local
//! tests:
//!
//! ```text
//! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
//!     -keyout key.pem -out cert.pem -subj /CN=localhost \
//!     -addext subjectAltName=DNS:localhost,IP:127.0.0.1
//! ```
//!
//! # What is offered
//!
//! TLS 1.3 and TLS 1.2 (with the cipher suites of rustls' `ring` provider: AES-GCM and
//! ChaCha20-Poly1305, ECDHE key exchange), no client certificates (no mutual TLS, so no
//! MONGODB-X509 authentication), and no ALPN: a client's ALPN offer is ignored.

#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{InconsistentKeys, ServerConfig, version};
use tokio_rustls::TlsAcceptor;

/// The largest certificate or key file [`acceptor`] reads, in bytes (1 MiB). A certificate
/// chain takes a few KiB; a larger file is refused with [`TlsError::TooLarge`] rather than
/// read whole.
pub const MAX_PEM_FILE_BYTES: u64 = 1 << 20;

/// Why [`acceptor`] could not load a certificate chain and its key. Each variant names the file
/// (or both files) at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The file could not be opened or read: missing, unreadable, a directory, ….
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The certificate or key file.
        path: PathBuf,
        /// The operating system's error (`ErrorKind::NotFound` for a missing file).
        #[source]
        source: io::Error,
    },
    /// The file is larger than [`MAX_PEM_FILE_BYTES`].
    #[error(
        "{} is larger than {MAX_PEM_FILE_BYTES} bytes, too large for a PEM certificate or key file",
        .path.display()
    )]
    TooLarge {
        /// The certificate or key file.
        path: PathBuf,
    },
    /// The file is not well-formed PEM: a section without its `END` line, a bad `BEGIN` line,
    /// or a body that is not base64.
    #[error("{}: malformed PEM: {source}", .path.display())]
    Pem {
        /// The certificate or key file.
        path: PathBuf,
        /// The PEM parser's error.
        #[source]
        source: pem::Error,
    },
    /// The certificate file holds no `BEGIN CERTIFICATE` section.
    #[error("{}: no certificate in it (expected a PEM \"BEGIN CERTIFICATE\" section)", .path.display())]
    NoCertificate {
        /// The certificate file.
        path: PathBuf,
    },
    /// The key file holds no private key section (`BEGIN PRIVATE KEY`, `BEGIN RSA PRIVATE KEY`
    /// or `BEGIN EC PRIVATE KEY`).
    #[error(
        "{}: no private key in it (expected a PEM \"BEGIN PRIVATE KEY\", \"BEGIN RSA PRIVATE KEY\" or \"BEGIN EC PRIVATE KEY\" section)",
        .path.display()
    )]
    NoKey {
        /// The key file.
        path: PathBuf,
    },
    /// The private key is not the key of the chain's first certificate.
    #[error(
        "the private key in {} does not match the certificate in {}",
        .key.display(),
        .cert.display()
    )]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refused the key (an algorithm the `ring` provider cannot sign with, or bytes that
    /// are not a key) or the certificate (not an X.509 certificate in DER).
    #[error("{} with {}: unusable key or certificate: {source}", .key.display(), .cert.display())]
    Rejected {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// rustls' reason.
        #[source]
        source: rustls::Error,
    },
    /// The crypto provider does not offer the protocol versions asked for (TLS 1.2 and 1.3);
    /// not expected with `ring`.
    #[error("TLS configuration refused by the crypto provider: {0}")]
    Provider(#[source] rustls::Error),
}

/// Reads the PEM certificate chain at `cert_pem` and the PEM private key at `key_pem` into a
/// [`TlsAcceptor`] for `tscoll serve`: TLS 1.3 and 1.2, rustls' `ring` provider, no client
/// authentication, no ALPN.
///
/// `cert_pem` holds one or more `BEGIN CERTIFICATE` sections, the server's certificate first;
/// other sections (a key, parameters) are skipped. `key_pem` holds the private key of that
/// first certificate as PKCS#8, PKCS#1 (RSA) or SEC1 (EC); its first key is used and other
/// sections are skipped. Each file may be at most [`MAX_PEM_FILE_BYTES`] long.
///
/// # Errors
///
/// [`TlsError::Read`] if a file is missing or unreadable, [`TlsError::TooLarge`],
/// [`TlsError::Pem`] if a file is not well-formed PEM, [`TlsError::NoCertificate`] and
/// [`TlsError::NoKey`] if the file lacks what it should hold, [`TlsError::KeyMismatch`] if the
/// key is not the certificate's, and [`TlsError::Rejected`] if rustls cannot use the key or
/// parse the certificate.
pub fn acceptor(cert_pem: &Path, key_pem: &Path) -> Result<TlsAcceptor, TlsError> {
    let certs = read_certificates(cert_pem)?;
    let key = read_private_key(key_pem)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&version::TLS13, &version::TLS12])
        .map_err(TlsError::Provider)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|source| match source {
            rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch) => {
                TlsError::KeyMismatch {
                    cert: cert_pem.to_path_buf(),
                    key: key_pem.to_path_buf(),
                }
            }
            source => TlsError::Rejected {
                cert: cert_pem.to_path_buf(),
                key: key_pem.to_path_buf(),
                source,
            },
        })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Every `BEGIN CERTIFICATE` section of the PEM file at `path`, in file order; at least one.
fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read_pem_file(path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| pem_error(path, source))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The first private key section (PKCS#8, PKCS#1 or SEC1) of the PEM file at `path`.
fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read_pem_file(path)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|source| match source {
        pem::Error::NoItemsFound => TlsError::NoKey {
            path: path.to_path_buf(),
        },
        source => pem_error(path, source),
    })
}

/// The bytes of the file at `path`, refusing one longer than [`MAX_PEM_FILE_BYTES`] without
/// reading past that.
fn read_pem_file(path: &Path) -> Result<Vec<u8>, TlsError> {
    let read_error = |source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(MAX_PEM_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_PEM_FILE_BYTES {
        return Err(TlsError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// [`TlsError::Pem`] for `path`; an I/O error (not expected from a slice) stays one.
fn pem_error(path: &Path, source: pem::Error) -> TlsError {
    match source {
        pem::Error::Io(source) => TlsError::Read {
            path: path.to_path_buf(),
            source,
        },
        source => TlsError::Pem {
            path: path.to_path_buf(),
            source,
        },
    }
}
