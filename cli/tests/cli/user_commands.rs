//! `tscoll user add|remove|list`: the users `tscoll serve` authenticates, in the database
//! directory's `tscoll-users.json`.

use crate::common::{Scratch, tscoll};

/// Runs `tscoll user ACTION --db DB args...` with `stdin`.
fn user(s: &Scratch, action: &str, args: &[&str], stdin: Option<&[u8]>) -> crate::common::Run {
    let db = s.db();
    let mut all = vec!["user", action, "--db", db.as_str()];
    all.extend_from_slice(args);
    tscoll(&all, stdin)
}

fn names(s: &Scratch) -> Vec<String> {
    user(s, "list", &[], None)
        .ok()
        .stdout()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn add_list_remove() {
    let s = Scratch::new();
    s.create("m");
    assert!(names(&s).is_empty());
    let out = user(&s, "add", &["alice"], Some(b"pencil\n")).ok().stdout();
    assert!(out.contains("added user 'alice'"), "{out}");
    let file = s.file("pw.txt", b"bob's password\r\nignored second line\n");
    user(&s, "add", &["bob", "--password-file", &file], None).ok();
    assert_eq!(names(&s), ["alice", "bob"]);

    // The file holds the credentials, never the passwords.
    let path = std::path::Path::new(&s.db()).join("tscoll-users.json");
    let text = std::fs::read_to_string(&path).expect("the user store");
    assert!(
        !text.contains("pencil") && !text.contains("bob's"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(json["users"][0]["mechanism"], "SCRAM-SHA-256");

    let out = user(&s, "remove", &["alice"], None).ok().stdout();
    assert!(out.contains("removed user 'alice'"), "{out}");
    assert_eq!(names(&s), ["bob"]);
    let err = user(&s, "remove", &["alice"], None).failed().stderr();
    assert!(err.contains("no user named 'alice'"), "{err}");

    // The database still opens with the file in its directory.
    s.run("list", &[]).ok();
}

#[test]
fn duplicate_add_fails_with_a_clear_message() {
    let s = Scratch::new();
    s.create("m");
    user(&s, "add", &["alice"], Some(b"pencil\n")).ok();
    let err = user(&s, "add", &["alice"], Some(b"other\n"))
        .failed()
        .stderr();
    assert!(err.contains("user 'alice' already exists"), "{err}");
    assert!(err.contains("tscoll-users.json"), "{err}");
    assert_eq!(names(&s), ["alice"]);
}

#[test]
fn bad_passwords_and_directories_are_refused() {
    let s = Scratch::new();
    s.create("m");
    let err = user(&s, "add", &["alice"], None).failed().stderr();
    assert!(err.contains("no password on stdin"), "{err}");
    let err = user(&s, "add", &["alice"], Some(b"\n")).failed().stderr();
    assert!(err.contains("the password is empty"), "{err}");
    let err = user(&s, "add", &["alice"], Some(b"bell\x07\n"))
        .failed()
        .stderr();
    assert!(err.contains("SASLprep"), "{err}");
    assert!(names(&s).is_empty());

    let missing = s.path().join("missing");
    let missing = missing.to_str().expect("utf-8");
    let err = tscoll(&["user", "list", "--db", missing], None)
        .failed()
        .stderr();
    assert!(err.contains("is not a directory"), "{err}");
    assert!(!std::path::Path::new(missing).exists());
}

#[test]
fn password_is_not_an_option() {
    let s = Scratch::new();
    s.create("m");
    user(&s, "add", &["alice", "--password", "pencil"], None).failed();
    assert!(names(&s).is_empty());
}
