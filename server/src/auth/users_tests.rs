//! Tests of the user store: add, remove, list, persistence, the file's shape, damage, and a
//! database directory that holds the file.

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::scram_tests::converse;
use super::{AuthError, Credential, USERS_FILE, UserStore};

fn file_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(USERS_FILE)).expect("read the file");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn missing_file_is_an_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = UserStore::open(dir.path()).unwrap();
    assert!(store.is_empty());
    assert!(store.names().is_empty());
    assert_eq!(store.credential("alice"), None);
    assert!(!dir.path().join(USERS_FILE).exists(), "open wrote nothing");
    // Nor does a directory that does not exist.
    assert!(
        UserStore::open(&dir.path().join("none"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn add_remove_list_persist() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = UserStore::open(dir.path()).unwrap();
    store.add("bob", "bob's password").unwrap();
    store.add("alice", "pencil").unwrap();
    assert_eq!(store.names(), ["alice", "bob"]);
    assert!(!store.is_empty());
    assert_eq!(store.path(), dir.path().join(USERS_FILE));

    let reopened = UserStore::open(dir.path()).unwrap();
    assert_eq!(reopened.names(), ["alice", "bob"]);
    let alice = reopened.credential("alice").unwrap();
    assert_eq!(Some(&alice), store.credential("alice").as_ref());
    assert_eq!(alice.iterations, Credential::DEFAULT_ITERATIONS);
    assert_eq!(alice.salt.len(), Credential::SALT_BYTES);
    // The stored credential authenticates its password, and only it.
    converse("alice", "pencil", "alice", &alice).expect("authenticated");
    assert!(matches!(
        converse("alice", "bob's password", "alice", &alice),
        Err(AuthError::AuthenticationFailed)
    ));

    assert!(store.remove("bob").unwrap());
    assert!(!store.remove("bob").unwrap());
    assert_eq!(UserStore::open(dir.path()).unwrap().names(), ["alice"]);
    assert!(store.remove("alice").unwrap());
    let empty = UserStore::open(dir.path()).unwrap();
    assert!(empty.is_empty());
    assert!(!dir.path().join("tscoll-users.json.tmp").exists());
}

#[test]
fn file_shape_holds_no_password() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = UserStore::open(dir.path()).unwrap();
    store.add("alice", "very-secret-password").unwrap();
    let text = std::fs::read_to_string(dir.path().join(USERS_FILE)).unwrap();
    assert!(!text.contains("very-secret-password"), "{text}");
    let json = file_json(dir.path());
    assert_eq!(json["version"], 1);
    let users = json["users"].as_array().unwrap();
    assert_eq!(users.len(), 1);
    let u = &users[0];
    assert_eq!(u["name"], "alice");
    assert_eq!(u["db"], "admin");
    assert_eq!(u["mechanism"], "SCRAM-SHA-256");
    assert_eq!(u["iterations"], 15000);
    let bytes = |field: &str| BASE64.decode(u[field].as_str().unwrap()).unwrap().len();
    assert_eq!(bytes("salt"), 28);
    assert_eq!(bytes("storedKey"), 32);
    assert_eq!(bytes("serverKey"), 32);
    let keys: Vec<&str> = u.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 7, "{keys:?}");
}

#[cfg(unix)]
#[test]
fn file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // A stale temporary file with open permissions is replaced, not reused.
    std::fs::write(dir.path().join("tscoll-users.json.tmp"), b"stale").unwrap();
    std::fs::set_permissions(
        dir.path().join("tscoll-users.json.tmp"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let mut store = UserStore::open(dir.path()).unwrap();
    store.add("alice", "pencil").unwrap();
    let mode = std::fs::metadata(dir.path().join(USERS_FILE))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn duplicate_add_fails() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = UserStore::open(dir.path()).unwrap();
    store.add("alice", "pencil").unwrap();
    let before = store.credential("alice");
    let e = store.add("alice", "other").unwrap_err();
    assert!(
        matches!(e, AuthError::UserExists(ref n) if n == "alice"),
        "{e:?}"
    );
    assert_eq!(e.code(), (51003, "Location51003"));
    assert_eq!(e.to_string(), "User \"alice@admin\" already exists");
    assert_eq!(store.credential("alice"), before, "unchanged");
}

#[test]
fn bad_names_and_passwords_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = UserStore::open(dir.path()).unwrap();
    for name in ["", "a\0b"] {
        let e = store.add(name, "pencil").unwrap_err();
        assert!(matches!(e, AuthError::InvalidUserName { .. }), "{e:?}");
        assert_eq!(e.code(), (2, "BadValue"));
    }
    for password in ["", "bell\u{7}"] {
        let e = store.add("alice", password).unwrap_err();
        assert!(matches!(e, AuthError::InvalidPassword(_)), "{e:?}");
    }
    assert!(store.is_empty());
    assert!(!dir.path().join(USERS_FILE).exists());
    // Names with commas and equals signs (escaped in SCRAM) and non-ASCII are fine.
    store.add("we,ird=näme", "pencil").unwrap();
    let c = store.credential("we,ird=näme").unwrap();
    converse("we,ird=näme", "pencil", "we,ird=näme", &c).expect("authenticated");
}

#[test]
fn failed_write_leaves_the_store_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let mut store = UserStore::open(&gone).unwrap();
    let e = store.add("alice", "pencil").unwrap_err();
    assert!(matches!(e, AuthError::Io { .. }), "{e:?}");
    assert_eq!(e.code(), (1, "InternalError"));
    assert!(store.is_empty());
}

#[test]
fn damaged_files_are_errors_naming_the_file() {
    let good = {
        let dir = tempfile::tempdir().unwrap();
        let mut store = UserStore::open(dir.path()).unwrap();
        store.add("alice", "pencil").unwrap();
        file_json(dir.path())
    };
    let with = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        edit(&mut v);
        serde_json::to_string(&v).unwrap()
    };
    let user = |field: &'static str, value: serde_json::Value| {
        with(&move |v: &mut serde_json::Value| v["users"][0][field] = value.clone())
    };
    let cases: Vec<(String, &str)> = vec![
        ("{not json".into(), "not JSON"),
        (String::new(), "empty"),
        ("[]".into(), "not an object"),
        (with(&|v| v["version"] = 2.into()), "format version 2"),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("version");
            }),
            "no format version",
        ),
        (with(&|v| v["users"] = "x".into()), "users"),
        (with(&|v| v["extra"] = 1.into()), "unknown field"),
        (user("db", "test".into()), "database"),
        (user("mechanism", "SCRAM-SHA-1".into()), "mechanism"),
        (user("salt", "!!".into()), "salt"),
        (user("salt", "".into()), "salt is empty"),
        (
            user("storedKey", BASE64.encode([0u8; 31]).into()),
            "storedKey",
        ),
        (user("serverKey", "%%%".into()), "serverKey"),
        (user("iterations", 10.into()), "iterations"),
        (user("iterations", (-1).into()), "iterations"),
        (user("name", "".into()), "empty name"),
        (user("password", "pencil".into()), "unknown field"),
        (
            with(&|v| {
                let u = v["users"][0].clone();
                v["users"].as_array_mut().unwrap().push(u);
            }),
            "listed twice",
        ),
    ];
    for (text, context) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(USERS_FILE), &text).unwrap();
        match UserStore::open(dir.path()) {
            Err(e @ AuthError::Corrupt { .. }) => {
                let message = e.to_string();
                assert!(
                    message.contains(&dir.path().join(USERS_FILE).display().to_string()),
                    "{context}: {message}"
                );
                assert_eq!(e.code(), (1, "InternalError"));
            }
            other => panic!("{context}: {text}: {other:?}"),
        }
    }
}

#[test]
fn database_opens_with_the_user_store_in_its_directory() {
    use tscoll_engine::{Database, TimeseriesOptions};
    let dir = tempfile::tempdir().unwrap();
    // The users first, in a directory that holds no database yet.
    UserStore::open(dir.path())
        .unwrap()
        .add("alice", "pencil")
        .unwrap();
    {
        let db = Database::open(dir.path(), Default::default()).expect("create the database");
        db.create_collection("m", &TimeseriesOptions::new("ts"))
            .expect("create a collection");
    }
    // A database that holds the file opens again, and the file is untouched.
    let mut store = UserStore::open(dir.path()).unwrap();
    store.add("bob", "pencil").unwrap();
    {
        let db = Database::open(dir.path(), Default::default()).expect("reopen the database");
        let names: Vec<String> = db
            .list_collections()
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["m"]);
    }
    assert_eq!(
        UserStore::open(dir.path()).unwrap().names(),
        ["alice", "bob"]
    );
}
