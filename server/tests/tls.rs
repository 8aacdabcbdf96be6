//! The driver over TLS: `--tls-cert`/`--tls-key` on the server, `tls=true&tlsCAFile=` on the
//! client; a plain-text client gets no service.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use base64::Engine;
use bson::doc;
use common::{Fixture, code};
use rcgen::{CertificateParams, KeyPair};
use tscoll_server::wire::OpMsg;
use tscoll_server::{ServerOptions, TlsFiles};

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// A certificate for localhost and 127.0.0.1, and its key: (cert, key) paths.
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let key = KeyPair::generate().unwrap();
    let params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let cert_path = dir.join("server.pem");
    let key_path = dir.join("server.key");
    std::fs::write(&cert_path, pem("CERTIFICATE", cert.der())).unwrap();
    std::fs::write(&key_path, pem("PRIVATE KEY", &key.serialize_der())).unwrap();
    (cert_path, key_path)
}

#[test]
fn the_driver_speaks_tls() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(certs.path());
    let f = Fixture::with_options_and_client(
        ServerOptions {
            tls: Some(TlsFiles {
                cert: cert.clone(),
                key,
            }),
            ..ServerOptions::default()
        },
        &format!("&tls=true&tlsCAFile={}", cert.display()),
    );
    let db = f.client.database("test");
    db.run_command(doc! { "create": "m", "timeseries": { "timeField": "t" } })
        .run()
        .unwrap();
    let coll = db.collection::<bson::Document>("m");
    coll.insert_many((0..100).map(|i| doc! { "t": bson::DateTime::from_millis(i * 1000), "v": i }))
        .run()
        .unwrap();
    assert_eq!(coll.count_documents(doc! {}).run().unwrap(), 100);
    let e = db.run_command(doc! { "nope": 1 }).run().unwrap_err();
    assert_eq!(code(&e), 59);
    // A plain-text client is not served: its bytes are not a TLS handshake.
    let mut s = std::net::TcpStream::connect(f.server.as_ref().unwrap().local_addr()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(15)))
        .unwrap();
    s.write_all(
        &OpMsg::new(doc! { "ping": 1, "$db": "admin" })
            .encode(1, 0, false)
            .unwrap(),
    )
    .unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    // Whatever comes back (a TLS alert, or nothing) is no reply to the ping.
    assert!(n < 16 || i32::from_le_bytes(buf[12..16].try_into().unwrap()) != 2013);
}

#[test]
fn a_bad_certificate_is_an_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = tscoll_engine::Database::open(dir.path(), tscoll_engine::DatabaseOptions::default())
        .unwrap();
    let err = tscoll_server::Server::spawn(
        db,
        ServerOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            tls: Some(TlsFiles {
                cert: dir.path().join("missing.pem"),
                key: dir.path().join("missing.key"),
            }),
            ..ServerOptions::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("missing.pem"), "{err}");
}
