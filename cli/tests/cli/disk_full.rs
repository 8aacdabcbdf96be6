//! A full disk (`docs/durability.md`, "What an error means"): `tscoll ingest --durability
//! flush` into a database on a small tmpfs until the disk is full. The batch it reports as
//! failed is not stored after a restart, but for the lines the message says were committed
//! before the failure, which are, each once; every batch acknowledged before is stored.
//!
//! Needs root to mount a tmpfs (CI runs the tests as root); skipped with a message on stderr
//! where the mount fails.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{copy_tree, create_in, tscoll};

/// Unmounts the tmpfs when the test ends, passed or not.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

/// The lines an error message of `ingest` says were committed before the failure, and those
/// it says may have been stored: `; lines 1-500, 731 were committed ...`, `; lines 9 may ...`.
fn reported(text: &str) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let (mut committed, mut uncertain) = (BTreeSet::new(), BTreeSet::new());
    for piece in text.split("; lines ").skip(1) {
        let (list, is_committed) = match piece.split_once(" were committed") {
            Some((list, _)) => (list, true),
            None => match piece.split_once(" may have been stored") {
                Some((list, _)) => (list, false),
                None => continue,
            },
        };
        assert!(
            !list.contains("more range(s)"),
            "the lines are not all listed: {text}"
        );
        for part in list.split(", ") {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b): (u64, u64) = (a.parse().expect("line"), b.parse().expect("line"));
            if is_committed {
                &mut committed
            } else {
                &mut uncertain
            }
            .extend(a..=b);
        }
    }
    (committed, uncertain)
}

/// The measurement of input line `n` (`_id` = `n`): one of 40 series, a minute apart, with
/// noisy values so that a small disk fills after a few thousand lines.
fn line(n: u64) -> String {
    let noise = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20;
    format!(
        "{{\"_id\":{n},\"ts\":{{\"$date\":{}}},\"meta\":{{\"series\":\"s{}\"}},\"v\":{noise},\"w\":\"{noise:x}{noise:o}\"}}\n",
        1_451_606_400_000 + n / 40 * 60_000,
        n % 40
    )
}

/// How many input lines: a 1 MiB disk fills after about 19 000 of them.
const LINES: u64 = 30_000;

#[test]
fn a_batch_reported_failed_is_not_stored() {
    let root = tempfile::tempdir().expect("tempdir");
    let input = root.path().join("in.ndjson");
    std::fs::write(&input, (1..=LINES).map(line).collect::<String>()).expect("input");
    // Disks that fill at different points of the ingest: while a commit appends its log
    // record (nothing of the batch is stored) or while buckets leaving memory are stored
    // (the batch was committed before).
    for size in ["400k", "700k", "800k", "1m"] {
        if !fill_and_restart(root.path(), &input, size) {
            return;
        }
    }
}

/// Ingests `input` into a database on a tmpfs of `size` until the disk is full, then checks
/// a copy of the database (a restart with room); false when no tmpfs can be mounted.
fn fill_and_restart(root: &Path, input: &Path, size: &str) -> bool {
    let mnt = root.join(format!("mnt-{size}"));
    std::fs::create_dir(&mnt).expect("mkdir");
    let mounted = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size}"),
            "tmpfs",
            path(&mnt),
        ])
        .output();
    match mounted {
        Ok(o) if o.status.success() => {}
        other => {
            eprintln!("disk_full: skipped, cannot mount a tmpfs here (it needs root): {other:?}");
            return false;
        }
    }
    let guard = Mounted(mnt.clone());
    let db = mnt.join("db");
    create_in(path(&db), "c").ok();
    let run = tscoll(
        &[
            "ingest",
            "--db",
            path(&db),
            "c",
            path(input),
            "--durability",
            "flush",
            "--batch-size",
            "400",
            "--report-acks",
        ],
        None,
    );
    assert!(
        !run.success(),
        "{size}: the disk did not fill: {}",
        run.stdout()
    );
    let err = run.stderr();
    assert!(err.contains("the disk is full"), "{size}: {err}");
    // Acknowledged batches: `ack FIRST LAST INSERTED`.
    let mut acked = BTreeSet::new();
    for l in run.stdout().lines().filter_map(|l| l.strip_prefix("ack ")) {
        let f: Vec<u64> = l.split(' ').map(|x| x.parse().expect("number")).collect();
        assert_eq!(f[2], f[1] - f[0] + 1, "{l}");
        acked.extend(f[0]..=f[1]);
    }
    assert!(!acked.is_empty(), "{size}: nothing acknowledged: {err}");
    let (stored, uncertain) = reported(&err);
    println!("{size}: {} line(s) acknowledged; {err}", acked.len());

    // A restart, on a disk with room: a copy of the database as the process left it.
    let copy = root.join(format!("copy-{size}"));
    copy_tree(&db, &copy);
    drop(guard);
    let found: Vec<u64> = tscoll(&["find", "--db", path(&copy), "c"], None)
        .ok()
        .json_lines()
        .iter()
        .map(|d| {
            d["_id"]
                .as_u64()
                .or_else(|| {
                    d["_id"]["$numberLong"]
                        .as_str()
                        .and_then(|n| n.parse().ok())
                })
                .expect("_id")
        })
        .collect();
    let ids: BTreeSet<u64> = found.iter().copied().collect();
    assert_eq!(ids.len(), found.len(), "{size}: a measurement stored twice");
    let missing: Vec<&u64> = acked.union(&stored).filter(|i| !ids.contains(i)).collect();
    assert!(
        missing.is_empty(),
        "{size}: acknowledged or committed lines missing: {missing:?}"
    );
    let extra: Vec<&u64> = ids
        .iter()
        .filter(|i| !acked.contains(i) && !stored.contains(i) && !uncertain.contains(i))
        .collect();
    assert!(
        extra.is_empty(),
        "{size}: {} line(s) reported as not stored are stored: {:?}...",
        extra.len(),
        &extra[..extra.len().min(5)]
    );
    // What was stored agrees with its control records: a failed batch left no trace in the
    // min/max of the buckets it was staged in.
    let verify = tscoll(&["verify", "--db", path(&copy)], None);
    assert!(
        verify.success() && verify.stdout().contains("no problem found"),
        "{size}: verify after the restart: {}{}",
        verify.stdout(),
        verify.stderr()
    );
    true
}
