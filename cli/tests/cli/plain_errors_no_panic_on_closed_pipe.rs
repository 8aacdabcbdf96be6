//! Errors a user can cause are plain sentences naming the file, and a closed stdout or
//! stderr (`tscoll ingest ... 2>&1 | head -1`) never ends a command with a panic.

use std::process::{Command, ExitStatus, Stdio};

use crate::common::{Scratch, good_ndjson};

#[test]
fn directory_input_says_it_is_a_directory() {
    let s = Scratch::new();
    s.create("m");
    let dir = s.path().join("inputs");
    std::fs::create_dir(&dir).expect("mkdir");
    let dir = dir.to_str().expect("utf-8");
    let run = s.run("ingest", &["m", dir]).failed();
    let stderr = run.stderr();
    assert!(
        stderr.contains(&format!("{dir}: is a directory, not an input file")),
        "{stderr}"
    );
    assert!(!stderr.contains("os error"), "{stderr}");
}

#[test]
fn missing_input_says_there_is_no_such_file() {
    let s = Scratch::new();
    s.create("m");
    let missing = s.path().join("nope.ndjson");
    let missing = missing.to_str().expect("utf-8");
    let run = s.run("ingest", &["m", missing]).failed();
    let stderr = run.stderr();
    assert!(
        stderr.contains(&format!("{missing}: no such file")),
        "{stderr}"
    );
    assert!(!stderr.contains("os error"), "{stderr}");
}

/// Runs `tscoll args...` with stdout and stderr pipes whose read ends are closed at once,
/// before the child writes anything.
fn run_with_closed_pipes(args: &[&str]) -> ExitStatus {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tscoll"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tscoll");
    drop(child.stdout.take());
    drop(child.stderr.take());
    child.wait().expect("wait")
}

#[track_caller]
fn assert_no_panic(status: ExitStatus, what: &str) {
    assert_ne!(status.code(), Some(101), "{what}: panicked");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), None, "{what}: killed by a signal");
    }
}

#[test]
fn closed_stdout_and_stderr_do_not_panic() {
    let s = Scratch::new();
    s.create("m");
    let db = s.db();
    let file = s.file("in.ndjson", good_ndjson().as_bytes());

    // Summary and figures on stderr, the catalog statistics on stdout.
    let status = run_with_closed_pipes(&["ingest", "--db", &db, "m", &file, "--stats"]);
    assert_no_panic(status, "ingest --stats");
    assert!(status.success(), "{status}");
    assert_eq!(s.values("m"), (1..=10).collect::<Vec<_>>());

    // The figures as JSON on stdout.
    s.create("j");
    let status = run_with_closed_pipes(&["ingest", "--db", &db, "j", &file, "--json"]);
    assert_no_panic(status, "ingest --json");
    assert!(status.success(), "{status}");
    assert_eq!(s.values("j"), (1..=10).collect::<Vec<_>>());

    // Bad lines reported on stderr, then the error of a missing second input.
    s.create("b");
    let bad = s.file(
        "bad.ndjson",
        format!("{}not json\n", good_ndjson()).as_bytes(),
    );
    let missing = s.path().join("missing.ndjson");
    let missing = missing.to_str().expect("utf-8");
    let status = run_with_closed_pipes(&["ingest", "--db", &db, "b", &bad, missing, "--unordered"]);
    assert_no_panic(status, "ingest with errors");
    assert_eq!(status.code(), Some(1), "{status}");
    assert_eq!(s.values("b"), (1..=10).collect::<Vec<_>>());

    // Other commands that print.
    for args in [
        vec!["stats", "--db", &db, "m"],
        vec!["buckets", "--db", &db, "m"],
        vec!["create", "--db", &db, "c", "--time-field", "ts"],
    ] {
        let status = run_with_closed_pipes(&args);
        assert_no_panic(status, args[0]);
        assert!(status.success(), "{}: {status}", args[0]);
    }
}
