//! The cluster commands (feature `cluster`): three `tscoll worker` processes on 127.0.0.1
//! with a token, the TSBS cpu-only data of 100 hosts ingested through `--workers` and into a
//! reference database, the TSBS queries answered byte for byte alike, the collection
//! commands on every shard, a worker killed, and a wrong token.
#![cfg(feature = "cluster")]

mod common;

use std::path::Path;
use std::time::Duration;

use common::{Run, Scratch, Server, tscoll};
use tscoll_benches::tsbs::{self, Workload};

/// How long a worker may take to start or stop.
const WAIT: Duration = Duration::from_secs(30);

/// Days of data per host: 432 measurements of each of 100 hosts (1 h 12 min).
const DAYS: f64 = 0.05;

/// Starts `tscoll worker` on a database of `dir`, on a port the system picks, requiring the
/// token of `token`; returns it and its address.
fn worker(dir: &Path, token: &str) -> (Server, String) {
    let db = dir.to_str().expect("utf-8");
    let w = Server::start(
        &[
            "worker",
            "--db",
            db,
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            token,
        ],
        WAIT,
    );
    // "worker listening on ADDR, database DIR"
    let addr = w
        .first_line
        .strip_prefix("worker listening on ")
        .and_then(|rest| rest.split_once(", database "))
        .map(|(addr, _)| addr.to_owned())
        .unwrap_or_else(|| panic!("no address in {:?}", w.first_line));
    (w, addr)
}

/// Runs `tscoll CMD --workers LIST --token-file TOKEN args...`.
fn on_cluster(cmd: &[&str], workers: &str, token: &str, args: &[&str]) -> Run {
    let mut all: Vec<&str> = cmd.to_vec();
    all.extend(["--workers", workers, "--token-file", token]);
    all.extend_from_slice(args);
    tscoll(&all, None)
}

/// The lines of `out` labelled with shard `i` of worker `addr`: the line itself, or the
/// block under it.
fn shard_block(out: &str, i: usize, addr: &str) -> Vec<String> {
    let label = format!("shard {i} ({addr}):");
    let mut lines = out.lines().skip_while(|l| !l.starts_with(&label));
    let Some(first) = lines.next() else {
        panic!("no {label} in:\n{out}")
    };
    let rest = first[label.len()..].trim();
    if rest.is_empty() {
        lines
            .take_while(|l| l.starts_with("  "))
            .map(|l| l.trim().to_owned())
            .collect()
    } else {
        vec![rest.to_owned()]
    }
}

/// The TSBS queries (`tsbs::sql_queries`), within the data's 72 minutes: q1 over the first
/// hour, the ranged queries from 00:10 to 01:05.
fn queries() -> Vec<(&'static str, String)> {
    tsbs::sql_queries("host_42", 0..60, 10..65)
}

/// The measurements of `coll` in the database `db` (a stopped worker's).
fn count(db: &Path, coll: &str) -> u64 {
    let out = tscoll(
        &[
            "sql",
            "--db",
            db.to_str().expect("utf-8"),
            "--format",
            "csv",
            &format!("SELECT count(*) AS n FROM {coll}"),
        ],
        None,
    )
    .ok()
    .stdout();
    out.lines()
        .nth(1)
        .and_then(|l| l.parse().ok())
        .unwrap_or_else(|| panic!("no count in {out:?}"))
}

#[test]
fn a_cluster_of_three_workers_answers_as_one_database() {
    let s = Scratch::new();
    let token = s.file("token", b"s3cret-t0ken\n");
    let dirs: Vec<_> = (0..3).map(|i| s.path().join(format!("w{i}"))).collect();
    let mut workers = Vec::new();
    let mut addrs = Vec::new();
    for d in &dirs {
        let (w, addr) = worker(d, &token);
        workers.push(Some(w));
        addrs.push(addr);
    }
    let list = addrs.join(",");

    // The collection on every shard, sharded by host.
    let created = on_cluster(
        &["create"],
        &list,
        &token,
        &[
            "cpu",
            "--time-field",
            tsbs::TIME_FIELD,
            "--meta-field",
            tsbs::META_FIELD,
            "--shard-key",
            "tags.hostname",
        ],
    )
    .ok()
    .stdout();
    for (i, a) in addrs.iter().enumerate() {
        assert_eq!(shard_block(&created, i, a), ["created collection 'cpu'"]);
    }
    // A shard key is chosen on a cluster only.
    let local = s.run(
        "create",
        &["x", "--time-field", "t", "--shard-key", "tags.hostname"],
    );
    assert!(local.failed().stderr().contains("--shard-key"));

    // The same file through the cluster and into a reference database.
    let input = s.path().join("cpu.ndjson");
    let file = std::fs::File::create(&input).expect("create input");
    tsbs::write_ndjson(&Workload::new(100, DAYS, 1), file).expect("write input");
    let input = input.to_str().expect("utf-8").to_owned();
    let ingested = on_cluster(&["ingest"], &list, &token, &["cpu", &input]).ok();
    let err = ingested.stderr();
    assert!(
        err.contains("43200 measurements inserted, 0 rejected"),
        "{err}"
    );
    let mut sent = 0;
    for (i, a) in addrs.iter().enumerate() {
        let line = err
            .lines()
            .find(|l| l.starts_with(&format!("shard {i} ({a}): ")))
            .unwrap_or_else(|| panic!("no shard {i} in {err}"));
        let n: usize = line
            .split_once("): ")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        assert!(
            line.ends_with(&format!("{n} measurements sent, {n} inserted, 0 rejected")),
            "{line}"
        );
        assert!(n > 0, "{line}");
        sent += n;
    }
    assert_eq!(sent, 43_200);
    let reference = s.path().join("ref");
    let reference = reference.to_str().expect("utf-8");
    tscoll(
        &[
            "create",
            "--db",
            reference,
            "cpu",
            "--time-field",
            tsbs::TIME_FIELD,
            "--meta-field",
            tsbs::META_FIELD,
        ],
        None,
    )
    .ok();
    tscoll(&["ingest", "--db", reference, "cpu", &input], None).ok();

    // The TSBS queries: the cluster's CSV is the reference database's, byte for byte.
    for (name, q) in queries() {
        let got = on_cluster(&["sql"], &list, &token, &["--format", "csv", &q]).ok();
        let want = tscoll(&["sql", "--db", reference, "--format", "csv", &q], None).ok();
        assert!(
            want.stdout().lines().count() > 1,
            "{name}: no rows\n{}",
            want.stdout()
        );
        assert_eq!(got.stdout(), want.stdout(), "{name}: {q}");
    }
    // --repeat times the query over the cluster as over a database.
    let timed = on_cluster(
        &["sql"],
        &list,
        &token,
        &["--repeat", "2", "SELECT count(*) AS n FROM cpu"],
    )
    .ok();
    assert!(
        timed.stderr().contains("2 runs: median "),
        "{}",
        timed.stderr()
    );
    assert!(timed.stdout().contains("| 43200 |"), "{}", timed.stdout());

    // list, stats and index on every shard, each shard's figures apart.
    let listed = on_cluster(&["list"], &list, &token, &[]).ok().stdout();
    let stats = on_cluster(&["stats"], &list, &token, &["cpu"])
        .ok()
        .stdout();
    for (i, a) in addrs.iter().enumerate() {
        let l = shard_block(&listed, i, a);
        assert!(
            l.len() == 1 && l[0].starts_with("cpu: {\"timeseries\":"),
            "{listed}"
        );
        let st = shard_block(&stats, i, a);
        assert!(
            st[0].starts_with("cpu: ") && st[0].contains(" measurements in "),
            "{stats}"
        );
    }
    let made = on_cluster(
        &["index", "create"],
        &list,
        &token,
        &["cpu", r#"{"tags.region": 1}"#],
    )
    .ok()
    .stdout();
    let indexes = on_cluster(&["index", "list"], &list, &token, &["cpu"])
        .ok()
        .stdout();
    for (i, a) in addrs.iter().enumerate() {
        assert_eq!(shard_block(&made, i, a), ["tags.region_1"]);
        let names = shard_block(&indexes, i, a);
        assert_eq!(names.len(), 2, "{indexes}");
        assert!(names[1].contains("\"name\":\"tags.region_1\""), "{indexes}");
    }
    let dropped = on_cluster(&["index", "drop"], &list, &token, &["cpu", "tags.region_1"])
        .ok()
        .stdout();
    // A second collection, dropped on every shard; dropping it again fails on every shard.
    on_cluster(
        &["create"],
        &list,
        &token,
        &["gone", "--time-field", "t", "--meta-field", "m"],
    )
    .ok();
    let modded = on_cluster(
        &["collmod"],
        &list,
        &token,
        &["gone", r#"{"timeseries": {"granularity": "minutes"}}"#],
    )
    .ok()
    .stdout();
    // A rejected measurement is reported at its line, as the local ingest reports it (one
    // series: the three measurements go to one shard in one batch).
    let bad = s.file(
        "bad.ndjson",
        b"{\"t\":{\"$date\":\"2016-01-01T00:00:00Z\"},\"m\":\"a\",\"v\":1}\n\
          {\"m\":\"a\",\"v\":2}\n\
          {\"t\":{\"$date\":\"2016-01-01T00:00:01Z\"},\"m\":\"a\",\"v\":3}\n",
    );
    let rejected = on_cluster(&["ingest"], &list, &token, &["--unordered", "gone", &bad]).failed();
    assert!(
        rejected
            .stderr()
            .contains(&format!("{bad}:2: 't' must be present")),
        "{}",
        rejected.stderr()
    );
    assert!(
        rejected
            .stderr()
            .contains("2 measurements inserted, 1 rejected"),
        "{}",
        rejected.stderr()
    );
    let gone = on_cluster(&["drop"], &list, &token, &["gone"])
        .ok()
        .stdout();
    let again = on_cluster(&["drop"], &list, &token, &["gone"]).failed();
    for (i, a) in addrs.iter().enumerate() {
        assert_eq!(
            shard_block(&dropped, i, a),
            ["dropped index 'tags.region_1' of 'cpu'"]
        );
        assert_eq!(shard_block(&gone, i, a), ["dropped collection 'gone'"]);
        let m = shard_block(&modded, i, a);
        assert!(
            m[0].starts_with("collection 'gone': ") && m[0].contains("\"granularity\":\"minutes\""),
            "{modded}"
        );
        assert!(
            again.stderr().contains(&format!("shard {i} ({a}): ")),
            "{}",
            again.stderr()
        );
    }
    // A cluster file names the workers in shard order and its token file.
    let quoted: Vec<String> = addrs.iter().map(|a| format!("\"{a}\"")).collect();
    let file = s.file(
        "cluster.toml",
        format!(
            "workers = [{}]\ntoken_file = \"token\"\n",
            quoted.join(", ")
        )
        .as_bytes(),
    );
    let left = tscoll(&["list", "--cluster", &file, "--json"], None)
        .ok()
        .stdout();
    for (i, a) in addrs.iter().enumerate() {
        let l = shard_block(&left, i, a);
        assert!(
            l.len() == 1 && l[0].starts_with("{\"name\":\"cpu\""),
            "{left}"
        );
    }

    // A wrong token: refused by every worker, clearly.
    let wrong = s.file("wrong", b"not-the-token\n");
    let refused = on_cluster(&["list"], &list, &wrong, &[]).failed().stderr();
    assert!(
        refused.contains("requires the cluster's token") && refused.contains(&addrs[0]),
        "{refused}"
    );
    let refused = on_cluster(&["sql"], &list, &wrong, &["SELECT 1"]).failed();
    assert!(refused.stderr().contains("token"), "{}", refused.stderr());
    assert!(refused.stdout().is_empty());

    // One worker killed: SQL fails naming it; an ingest stores the other shards' parts.
    on_cluster(
        &["create"],
        &list,
        &token,
        &[
            "cpu2",
            "--time-field",
            tsbs::TIME_FIELD,
            "--meta-field",
            tsbs::META_FIELD,
            "--shard-key",
            "tags.hostname",
        ],
    )
    .ok();
    if let Some(w) = workers[1].as_mut() {
        w.kill();
    }
    let down = on_cluster(
        &["sql"],
        &list,
        &token,
        &["--format", "csv", &queries()[1].1],
    )
    .failed();
    assert!(down.stderr().contains(&addrs[1]), "{}", down.stderr());
    assert!(down.stdout().is_empty(), "{}", down.stdout());
    let partial = on_cluster(&["ingest"], &list, &token, &["--unordered", "cpu2", &input]).failed();
    let err = partial.stderr();
    assert!(
        err.contains(&format!("tscoll: error: shard 1 ({}): worker", addrs[1])),
        "{err}"
    );
    for i in [0, 2] {
        let a = &addrs[i];
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("shard {i} ({a}): "))
                    && l.ends_with(" inserted, 0 rejected")),
            "{err}"
        );
    }
    // The survivors stop gracefully; each holds as many cpu2 measurements as cpu (the same
    // hosts, routed alike), and the killed worker's shard none of cpu2.
    for i in [0, 2] {
        let w = workers[i].take().expect("running");
        let (status, rest) = w.terminate(WAIT);
        assert!(status.success(), "worker {i}: {status}: {rest}");
        let (cpu, cpu2) = (count(&dirs[i], "cpu"), count(&dirs[i], "cpu2"));
        assert!(cpu > 0 && cpu == cpu2, "shard {i}: cpu {cpu}, cpu2 {cpu2}");
    }
    assert_eq!(count(&dirs[1], "cpu2"), 0);
}

#[test]
fn a_worker_beyond_loopback_needs_a_token_and_commands_need_a_target() {
    let s = Scratch::new();
    let db = s.db();
    let refused = tscoll(&["worker", "--db", &db, "--listen", "0.0.0.0:0"], None).failed();
    assert!(
        refused.stderr().contains("requires a token"),
        "{}",
        refused.stderr()
    );
    let both = tscoll(&["list", "--db", &db, "--workers", "127.0.0.1:1"], None).failed();
    assert!(
        both.stderr().contains("cannot be used with"),
        "{}",
        both.stderr()
    );
    let neither = tscoll(&["list"], None).failed();
    assert!(
        neither.stderr().contains("--workers"),
        "{}",
        neither.stderr()
    );
    let bad = tscoll(&["list", "--workers", "127.0.0.1"], None).failed();
    assert!(bad.stderr().contains("HOST:PORT"), "{}", bad.stderr());
}
