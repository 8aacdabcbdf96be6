//! Helpers of the CLI integration tests: run the `tscoll` binary in a temporary database.

#![allow(dead_code, unreachable_pub)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A temporary directory holding a database (`db/`) and input files.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// A fresh scratch directory.
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The database directory.
    pub fn db(&self) -> String {
        self.dir
            .path()
            .join("db")
            .to_str()
            .expect("utf-8")
            .to_owned()
    }

    /// Writes an input file and returns its path.
    pub fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path: PathBuf = self.dir.path().join(name);
        std::fs::write(&path, bytes).expect("write input");
        path.to_str().expect("utf-8").to_owned()
    }

    /// The scratch directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs `tscoll <cmd> --db DB args...`.
    pub fn run(&self, cmd: &str, args: &[&str]) -> Run {
        self.run_with_stdin(cmd, args, None)
    }

    /// Same, feeding `stdin`.
    pub fn run_with_stdin(&self, cmd: &str, args: &[&str], stdin: Option<&[u8]>) -> Run {
        let db = self.db();
        let mut all = vec![cmd, "--db", db.as_str()];
        all.extend_from_slice(args);
        tscoll(&all, stdin)
    }

    /// `create COLL --time-field ts --meta-field meta` (must succeed).
    pub fn create(&self, coll: &str) {
        create_in(&self.db(), coll).ok();
    }

    /// Every document `find` prints, parsed.
    pub fn find_all(&self, coll: &str) -> Vec<serde_json::Value> {
        self.run("find", &[coll]).ok().json_lines()
    }

    /// The sorted `v` values of every measurement of `coll`.
    pub fn values(&self, coll: &str) -> Vec<i64> {
        let mut v: Vec<i64> = self
            .find_all(coll)
            .iter()
            .map(|d| d["v"].as_i64().expect("v is an integer"))
            .collect();
        v.sort_unstable();
        v
    }
}

/// The outcome of one run.
pub struct Run {
    /// Exit status and output.
    pub output: Output,
}

impl Run {
    /// Standard output as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// Standard error as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// Whether it exited with 0.
    pub fn success(&self) -> bool {
        self.output.status.success()
    }

    /// Asserts success and returns self.
    #[track_caller]
    pub fn ok(self) -> Run {
        assert!(
            self.success(),
            "tscoll failed:\nstdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        self
    }

    /// Asserts failure and returns self.
    #[track_caller]
    pub fn failed(self) -> Run {
        assert!(
            !self.success(),
            "tscoll should have failed:\nstdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        self
    }

    /// Standard output parsed as one JSON value per line.
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
            .collect()
    }
}

/// Runs `create --db DB COLL --time-field ts --meta-field meta`.
pub fn create_in(db: &str, coll: &str) -> Run {
    tscoll(
        &[
            "create",
            "--db",
            db,
            coll,
            "--time-field",
            "ts",
            "--meta-field",
            "meta",
        ],
        None,
    )
}

/// Copies the directory tree `from` to `to` (a database as a process left it).
pub fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read_dir") {
            let entry = entry.expect("entry");
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).expect("copy");
    }
}

/// Runs the binary with `args`.
pub fn tscoll(args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tscoll"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tscoll");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(bytes).expect("write stdin");
    }
    Run {
        output: child.wait_with_output().expect("wait"),
    }
}

/// A measurement line of series `s` at `2016-01-01T00:00:00Z + minutes`, with `v` = `v`.
pub fn line(series: &str, minutes: u32, v: i64) -> String {
    format!(
        "{{\"ts\":{{\"$date\":\"2016-01-01T{:02}:{:02}:00Z\"}},\"meta\":{{\"series\":\"{series}\"}},\"v\":{v}}}\n",
        minutes / 60,
        minutes % 60
    )
}

/// Ten good lines (`v` = line number 1..=10) in two series.
pub fn good_ndjson() -> String {
    (1..=10)
        .map(|i| line(if i % 2 == 0 { "a" } else { "b" }, i, i64::from(i)))
        .collect()
}

/// A `tscoll` process that serves until it is stopped (`tscoll worker`, `tscoll serve`):
/// killed (SIGKILL) when dropped, so that a failing test leaves no process behind.
pub struct Server {
    child: std::process::Child,
    /// The first line it printed on stderr (its address).
    pub first_line: String,
    /// The rest of its stderr, read by a thread until the process ends.
    rest: Option<std::thread::JoinHandle<String>>,
}

impl Server {
    /// Starts `tscoll args...` and waits (at most `timeout`) for its first line on stderr.
    pub fn start(args: &[&str], timeout: std::time::Duration) -> Server {
        use std::io::BufRead;
        let mut child = Command::new(env!("CARGO_BIN_EXE_tscoll"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tscoll");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        let rest = std::thread::spawn(move || {
            let mut lines = std::io::BufReader::new(stderr).lines();
            let first = lines.next().and_then(Result::ok).unwrap_or_default();
            let _ = tx.send(first);
            lines.map_while(Result::ok).collect::<Vec<_>>().join("\n")
        });
        let mut server = Server {
            child,
            first_line: String::new(),
            rest: Some(rest),
        };
        server.first_line = rx
            .recv_timeout(timeout)
            .unwrap_or_else(|_| panic!("tscoll {args:?} printed nothing in {timeout:?}"));
        server
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills it with SIGKILL and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends it SIGTERM and waits (at most `timeout`) for it to end; returns its exit status
    /// and the rest of its stderr.
    pub fn terminate(mut self, timeout: std::time::Duration) -> (std::process::ExitStatus, String) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(sent.success(), "kill -TERM {}", self.pid());
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let rest = self.rest.take().map(|t| t.join().unwrap_or_default());
                return (status, rest.unwrap_or_default());
            }
            assert!(
                start.elapsed() < timeout,
                "tscoll (pid {}) still runs {timeout:?} after SIGTERM",
                self.pid()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
