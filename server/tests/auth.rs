//! SCRAM-SHA-256 through the driver: users of the database directory's store, commands
//! refused before authentication, wrong passwords refused.

mod common;

use bson::doc;
use common::code;
use mongodb::sync::Client;
use tscoll_engine::{Database, DatabaseOptions};
use tscoll_server::auth::UserStore;
use tscoll_server::{Server, ServerOptions};

fn server_with_user() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), DatabaseOptions::default()).unwrap();
    let mut users = UserStore::open(dir.path()).unwrap();
    users.add("ada", "correct horse").unwrap();
    let server = Server::spawn(
        db,
        ServerOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            ..ServerOptions::default()
        },
    )
    .unwrap();
    (server, dir)
}

fn client(server: &Server, credentials: &str) -> Client {
    Client::with_uri_str(format!(
        "mongodb://{credentials}{}/?directConnection=true&serverSelectionTimeoutMS=5000&authSource=admin",
        server.local_addr()
    ))
    .unwrap()
}

#[test]
fn users_authenticate_with_scram_sha_256() {
    let (server, _dir) = server_with_user();
    let ada = client(&server, "ada:correct%20horse@");
    let db = ada.database("test");
    db.run_command(doc! { "create": "m", "timeseries": { "timeField": "t" } })
        .run()
        .unwrap();
    db.collection::<bson::Document>("m")
        .insert_one(doc! { "t": bson::DateTime::from_millis(0) })
        .run()
        .unwrap();
    let status = ada
        .database("admin")
        .run_command(doc! { "connectionStatus": 1 })
        .run()
        .unwrap();
    let users = status
        .get_document("authInfo")
        .unwrap()
        .get_array("authenticatedUsers")
        .unwrap();
    assert_eq!(users.len(), 1);
    // The mechanism the driver asks about in its handshake.
    let hello = ada
        .database("admin")
        .run_command(doc! { "hello": 1, "saslSupportedMechs": "admin.ada" })
        .run()
        .unwrap();
    assert_eq!(
        hello.get_array("saslSupportedMechs").unwrap(),
        &vec![bson::Bson::String("SCRAM-SHA-256".into())]
    );
    // The explicit mechanism, too.
    let explicit = Client::with_uri_str(format!(
        "mongodb://ada:correct%20horse@{}/?directConnection=true&authMechanism=SCRAM-SHA-256",
        server.local_addr()
    ))
    .unwrap();
    explicit
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .run()
        .unwrap();
    server.stop().unwrap();
}

#[test]
fn without_authentication_only_the_handshake_runs() {
    let (server, _dir) = server_with_user();
    let anonymous = client(&server, "");
    anonymous
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .run()
        .unwrap();
    let e = anonymous
        .database("test")
        .run_command(doc! { "listCollections": 1 })
        .run()
        .unwrap_err();
    assert_eq!(code(&e), 13);
    let e = anonymous.list_database_names().run().unwrap_err();
    assert_eq!(code(&e), 13);
    server.stop().unwrap();
}

#[test]
fn wrong_passwords_and_unknown_users_fail_alike() {
    let (server, _dir) = server_with_user();
    for credentials in ["ada:wrong@", "nobody:correct%20horse@"] {
        let c = client(&server, credentials);
        let e = c
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .run()
            .unwrap_err();
        assert!(
            matches!(
                e.kind.as_ref(),
                mongodb::error::ErrorKind::Authentication { .. }
            ),
            "{credentials}: {e}"
        );
        assert!(e.to_string().contains("Authentication failed"), "{e}");
    }
    server.stop().unwrap();
}

#[test]
fn an_unknown_mechanism_is_refused() {
    let (server, _dir) = server_with_user();
    let c = Client::with_uri_str(format!(
        "mongodb://ada:correct%20horse@{}/?directConnection=true&authMechanism=SCRAM-SHA-1",
        server.local_addr()
    ))
    .unwrap();
    let e = c
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("SCRAM-SHA-1"), "{e}");
    server.stop().unwrap();
}

#[test]
fn users_allow_a_non_loopback_address() {
    let (server, dir) = server_with_user();
    server.stop().unwrap();
    let db = Database::open(dir.path(), DatabaseOptions::default()).unwrap();
    let server = Server::spawn(
        db,
        ServerOptions {
            bind: "0.0.0.0:0".parse().unwrap(),
            ..ServerOptions::default()
        },
    )
    .unwrap();
    server.stop().unwrap();
}
