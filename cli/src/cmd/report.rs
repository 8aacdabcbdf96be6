//! The figures of an ingest, as `tscoll ingest` and `tscoll bench ingest` both report them:
//! measurements/s, field values/s, bytes per measurement on disk, write amplification and
//! peak RSS, as a table or as the keys of one JSON object.
//!
//! * **Disk bytes**: the bytes the database directory occupies on disk after
//!   `Database::close` and, for `bench ingest` (and `ingest --compact`), `Database::compact`
//!   (allocated blocks, as `du` counts them), so fjall's journal, a sparse file preallocated
//!   to 64 MiB, counts only what was written into it. fjall keeps its active journal file
//!   until it reaches 64 MiB, flushed or not, so up to 64 MiB of it stays in the figure.
//! * **Write amplification**: the process's `write_bytes` less its `cancelled_write_bytes`
//!   (`/proc/self/io`: bytes sent to the block layer, fjall's background flushes and
//!   compactions included, less pages dropped unwritten, such as write-ahead log files removed
//!   at a checkpoint before the kernel wrote them back) from [`Meter::start`]
//!   (before the ingest) to [`Meter::finish`] (after `close`), divided by the disk bytes;
//!   unknown where `/proc/self/io` is missing or counts nothing (e.g. on tmpfs).
//! * **Peak RSS**: `VmHWM` of `/proc/self/status`, the process's high-water mark of resident
//!   memory since it started.
//! * **CPU seconds**: user + system CPU time of the whole process (every thread, the engine's
//!   background threads included; `/proc/self/stat`) over the same span as the write
//!   counter, less the thread time the command says was spent on something else than the
//!   load ([`Ingest::cpu_excluded_seconds`]); measurements per CPU-second divide by it.

use std::fmt;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::cmd::ingest::DurabilityArg;
use crate::cmd::{CmdResult, human_bytes};

/// What an ingest measures before it starts: the process's write counter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meter {
    written_before: Option<u64>,
    cpu_before: Option<f64>,
}

impl Meter {
    /// Reads the starting figures; call it right before the first insert.
    pub(crate) fn start() -> Meter {
        Meter {
            written_before: proc_write_bytes(),
            cpu_before: proc_cpu_seconds(),
        }
    }

    /// The report of an ingest that stored `measurements` measurements holding
    /// `field_values` field values in `seconds` (the timed part) into the database in `dir`,
    /// now closed.
    ///
    /// # Errors
    /// The directory cannot be read.
    pub(crate) fn finish(&self, dir: &Path, ingest: Ingest) -> CmdResult<IngestReport> {
        let write_bytes = self
            .written_before
            .zip(proc_write_bytes())
            .map(|(before, after)| after.saturating_sub(before));
        let cpu_seconds = self
            .cpu_before
            .zip(proc_cpu_seconds())
            .map(|(before, after)| (after - before - ingest.cpu_excluded_seconds).max(0.0));
        Ok(IngestReport {
            ingest,
            disk_bytes: allocated_bytes(dir)?,
            table_bytes: allocated_bytes(&dir.join("keyspaces")).ok(),
            write_bytes,
            cpu_seconds,
            peak_rss_bytes: proc_kb_line("/proc/self/status", "VmHWM"),
        })
    }
}

/// What the ingest itself knows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ingest {
    /// Measurements stored.
    pub(crate) measurements: u64,
    /// Measurements the database holds after the ingest, in every collection (those of
    /// earlier ingests too): the disk bytes are the whole database's, so the figures per
    /// measurement divide by this.
    pub(crate) stored: u64,
    /// Field values stored (the fields of those measurements but the time and meta fields).
    pub(crate) field_values: u64,
    /// The timed seconds the rates are computed from.
    pub(crate) seconds: f64,
    /// The durability of the inserts.
    pub(crate) durability: DurabilityArg,
    /// Threads that inserted.
    pub(crate) threads: u32,
    /// Thread time within the measured span that was not spent loading (building documents
    /// in `bench ingest`), taken off the process's CPU time.
    pub(crate) cpu_excluded_seconds: f64,
}

/// The figures of one ingest.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IngestReport {
    /// What the ingest knows.
    pub(crate) ingest: Ingest,
    /// Allocated bytes of the database directory after `close`.
    pub(crate) disk_bytes: u64,
    /// Allocated bytes of fjall's tables (`DIR/keyspaces`): the disk bytes less the journal.
    pub(crate) table_bytes: Option<u64>,
    /// Bytes the process wrote from the start of the ingest to after `close`.
    pub(crate) write_bytes: Option<u64>,
    /// `VmHWM`.
    pub(crate) peak_rss_bytes: Option<u64>,
    /// User + system CPU seconds of the process during the ingest and close, less
    /// [`Ingest::cpu_excluded_seconds`].
    pub(crate) cpu_seconds: Option<f64>,
}

impl IngestReport {
    /// `n` per timed second.
    pub(crate) fn per_second(&self, n: u64) -> f64 {
        n as f64 / self.ingest.seconds.max(1e-9)
    }

    /// Disk bytes per measurement the database holds.
    pub(crate) fn bytes_per_measurement(&self) -> f64 {
        per_measurement(self.disk_bytes, self.ingest.stored)
    }

    /// Bytes written ÷ final disk bytes; `None` when not measurable (no `/proc/self/io`, or
    /// nothing counted although the database is not empty).
    pub(crate) fn write_amplification(&self) -> Option<f64> {
        match self.write_bytes {
            Some(w) if w > 0 && self.disk_bytes > 0 => Some(w as f64 / self.disk_bytes as f64),
            _ => None,
        }
    }

    /// Measurements per CPU-second; `None` when the CPU time is unknown or zero.
    pub(crate) fn measurements_per_cpu_second(&self) -> Option<f64> {
        self.cpu_seconds
            .filter(|&c| c > 0.0)
            .map(|c| self.ingest.measurements as f64 / c)
    }

    /// The keys of the `--json` object: `measurements`, `seconds`, `measurements_per_s`,
    /// `field_values_per_s`, `stored_measurements` (the database's), `disk_bytes`,
    /// `bytes_per_measurement` (per stored measurement), `write_amplification`
    /// and `peak_rss_bytes` (null when unknown), `durability`, `threads`, `cpu_seconds` and
    /// `measurements_per_cpu_s` (null when unknown).
    pub(crate) fn json(&self) -> Map<String, Value> {
        let i = &self.ingest;
        let value = json!({
            "measurements": i.measurements,
            "seconds": i.seconds,
            "measurements_per_s": self.per_second(i.measurements),
            "field_values_per_s": self.per_second(i.field_values),
            "stored_measurements": i.stored,
            "disk_bytes": self.disk_bytes,
            "bytes_per_measurement": self.bytes_per_measurement(),
            "table_bytes": self.table_bytes,
            "table_bytes_per_measurement": self.table_bytes.map(|b| per_measurement(b, i.stored)),
            "write_amplification": self.write_amplification(),
            "peak_rss_bytes": self.peak_rss_bytes,
            "durability": durability_name(i.durability),
            "threads": i.threads,
            "cpu_seconds": self.cpu_seconds,
            "measurements_per_cpu_s": self.measurements_per_cpu_second(),
        });
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    /// The human-readable rows, in the order of [`json`](Self::json); commands add notes
    /// and rows of their own.
    pub(crate) fn table(&self) -> Table {
        let i = &self.ingest;
        let mut t = Table::default();
        t.push("measurements", i.measurements.to_string());
        t.push("seconds", format!("{:.3}", i.seconds));
        t.push(
            "measurements/s",
            format!("{:.0}", self.per_second(i.measurements)),
        );
        t.push(
            "field values/s",
            format!("{:.0}", self.per_second(i.field_values)),
        );
        t.push("disk bytes", self.disk_bytes.to_string());
        t.note(
            "disk bytes",
            format!("{} allocated", human_bytes(self.disk_bytes)),
        );
        t.push(
            "bytes/measurement",
            format!("{:.2}", self.bytes_per_measurement()),
        );
        t.note(
            "bytes/measurement",
            format!("of the {} measurements the database holds", i.stored),
        );
        if let Some(tables) = self.table_bytes {
            t.note(
                "bytes/measurement",
                format!(
                    "{:.2} in fjall's tables, without the journal",
                    per_measurement(tables, i.stored)
                ),
            );
        }
        match self.write_amplification() {
            Some(w) => {
                t.push("write amplification", format!("{w:.2}"));
                t.note(
                    "write amplification",
                    format!(
                        "{} written during ingest and close",
                        human_bytes(self.write_bytes.unwrap_or_default())
                    ),
                );
            }
            None => t.push("write amplification", "n/a".to_owned()),
        }
        match self.peak_rss_bytes {
            Some(peak) => {
                t.push("peak RSS", peak.to_string());
                t.note("peak RSS", human_bytes(peak));
            }
            None => t.push("peak RSS", "n/a".to_owned()),
        }
        t.push("durability", durability_name(i.durability));
        t.push("threads", i.threads.to_string());
        match (self.cpu_seconds, self.measurements_per_cpu_second()) {
            (Some(cpu), Some(per)) => {
                t.push("CPU seconds", format!("{cpu:.3}"));
                t.note(
                    "CPU seconds",
                    format!("user+sys, ingest and close; {per:.0} measurements per CPU-second"),
                );
            }
            _ => t.push("CPU seconds", "n/a".to_owned()),
        }
        t
    }
}

/// Labelled rows, printed as `label   value (note; note)`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Table {
    rows: Vec<Row>,
}

/// One row of a [`Table`].
#[derive(Debug, Clone)]
struct Row {
    label: String,
    value: String,
    notes: Vec<String>,
}

impl Table {
    /// Appends a row.
    pub(crate) fn push(&mut self, label: &str, value: String) {
        self.rows.push(Row {
            label: label.to_owned(),
            value,
            notes: Vec::new(),
        });
    }

    /// Inserts a row right after the row `after` (at the end when there is none).
    pub(crate) fn insert_after(&mut self, after: &str, label: &str, value: String) {
        let at = self
            .rows
            .iter()
            .position(|r| r.label == after)
            .map_or(self.rows.len(), |i| i + 1);
        self.rows.insert(
            at,
            Row {
                label: label.to_owned(),
                value,
                notes: Vec::new(),
            },
        );
    }

    /// Adds a note, shown in parentheses after the value, to the row `label` (if any).
    pub(crate) fn note(&mut self, label: &str, note: String) {
        if let Some(row) = self.rows.iter_mut().find(|r| r.label == label) {
            row.notes.push(note);
        }
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for row in &self.rows {
            write!(f, "{:<20} {}", row.label, row.value)?;
            if !row.notes.is_empty() {
                write!(f, " ({})", row.notes.join("; "))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// The `--durability` value as written on the command line.
pub(crate) fn durability_name(d: DurabilityArg) -> String {
    clap::ValueEnum::to_possible_value(&d).map_or_else(
        || format!("{d:?}").to_lowercase(),
        |v| v.get_name().to_owned(),
    )
}

#[expect(clippy::cast_precision_loss, reason = "a ratio for display")]
fn per_measurement(bytes: u64, measurements: u64) -> f64 {
    bytes as f64 / measurements.max(1) as f64
}

/// The bytes the files under `dir` occupy on disk: allocated blocks (what `du` counts), so
/// a sparse, preallocated journal counts only what was written into it. Not on Unix: the
/// files' lengths.
///
/// # Errors
/// A directory or file cannot be read.
pub(crate) fn allocated_bytes(dir: &Path) -> CmdResult<u64> {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                #[cfg(unix)]
                {
                    total += std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
                }
                #[cfg(not(unix))]
                {
                    total += meta.len();
                }
            }
        }
    }
    Ok(total)
}

/// Bytes this process caused to be sent to the block layer: `write_bytes` of
/// `/proc/self/io` less `cancelled_write_bytes`. Linux counts a page in `write_bytes` when it
/// is dirtied, and in `cancelled_write_bytes` when it is dropped unwritten (a log file
/// removed before the kernel wrote it back). `None` where the file does not exist (not Linux,
/// no task I/O accounting).
fn proc_write_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
    };
    let written = field("write_bytes:")?;
    Some(written.saturating_sub(field("cancelled_write_bytes:").unwrap_or(0)))
}

/// User + system CPU seconds of this process so far, all its threads (living or ended):
/// `utime` and `stime` of `/proc/self/stat`, in clock ticks of 1/100 s (Linux's `USER_HZ`).
/// `None` where the file does not exist.
fn proc_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name, in parentheses, may hold spaces: count fields after it. The first
    // one after it is field 3 (state); utime and stime are fields 14 and 15.
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / 100.0)
}

/// CPU seconds the calling thread has run so far: the first field of
/// `/proc/thread-self/schedstat` (nanoseconds on a CPU). `None` where the file does not
/// exist.
pub(crate) fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// A `KEY: N kB` line of a `/proc` file (`VmHWM` and `VmRSS` of `/proc/self/status`,
/// `MemAvailable` of `/proc/meminfo`), in bytes.
pub(crate) fn proc_kb_line(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read_on_linux() {
        if cfg!(target_os = "linux") {
            for (file, key) in [
                ("/proc/self/status", "VmHWM"),
                ("/proc/self/status", "VmRSS"),
                ("/proc/meminfo", "MemAvailable"),
            ] {
                assert!(proc_kb_line(file, key).is_some_and(|b| b > 0), "{key}");
            }
        }
        assert_eq!(proc_kb_line("/proc/self/status", "NoSuchKey"), None);
    }

    #[test]
    fn cpu_seconds_grow_with_work() {
        if !cfg!(target_os = "linux") {
            return;
        }
        // Spin until this thread has used 50 ms of CPU (however long a loaded machine
        // takes to give it), then the process must show at least that much, less one tick.
        let before = proc_cpu_seconds().expect("cpu");
        let thread_before = thread_cpu_seconds().expect("thread cpu");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut x = 0u64;
        while thread_cpu_seconds().expect("thread cpu") - thread_before < 0.05 {
            assert!(std::time::Instant::now() < deadline, "no CPU time in 60 s");
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        let after = proc_cpu_seconds().expect("cpu");
        assert!(after - before >= 0.04, "{before} {after}");
    }

    #[test]
    fn allocated_bytes_counts_written_blocks_not_lengths() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
        std::fs::write(dir.path().join("sub/a"), vec![1u8; 10_000]).expect("write");
        let sparse = std::fs::File::create(dir.path().join("sparse")).expect("create");
        sparse.set_len(64 << 20).expect("set_len");
        let bytes = allocated_bytes(dir.path()).expect("size");
        assert!(bytes >= 10_000, "{bytes}");
        if cfg!(unix) {
            assert!(bytes < 1 << 20, "{bytes}");
        }
    }

    fn report() -> IngestReport {
        IngestReport {
            ingest: Ingest {
                measurements: 1000,
                stored: 1000,
                field_values: 10_000,
                seconds: 0.5,
                durability: DurabilityArg::Sync,
                threads: 2,
                cpu_excluded_seconds: 0.0,
            },
            disk_bytes: 20_000,
            table_bytes: Some(5_000),
            write_bytes: Some(30_000),
            peak_rss_bytes: Some(1 << 20),
            cpu_seconds: Some(0.25),
        }
    }

    #[test]
    fn figures_and_json_keys() {
        let r = report();
        let j = r.json();
        let keys: Vec<&str> = j.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "measurements",
                "seconds",
                "measurements_per_s",
                "field_values_per_s",
                "stored_measurements",
                "disk_bytes",
                "bytes_per_measurement",
                "table_bytes",
                "table_bytes_per_measurement",
                "write_amplification",
                "peak_rss_bytes",
                "durability",
                "threads",
                "cpu_seconds",
                "measurements_per_cpu_s"
            ]
        );
        assert_eq!(j["measurements_per_s"], 2000.0);
        assert_eq!(j["field_values_per_s"], 20_000.0);
        assert_eq!(j["bytes_per_measurement"], 20.0);
        assert_eq!(j["table_bytes_per_measurement"], 5.0);
        assert_eq!(j["write_amplification"], 1.5);
        assert_eq!(j["durability"], "sync");
        assert_eq!(j["threads"], 2);
        assert_eq!(j["measurements_per_cpu_s"], 4000.0);
        let unknown = IngestReport {
            write_bytes: Some(0),
            peak_rss_bytes: None,
            cpu_seconds: None,
            ..r
        };
        for key in [
            "write_amplification",
            "peak_rss_bytes",
            "measurements_per_cpu_s",
        ] {
            assert_eq!(unknown.json()[key], Value::Null, "{key}");
        }
    }

    #[test]
    fn table_rows_notes_and_insertions() {
        let mut t = report().table();
        t.note("seconds", "timed".to_owned());
        t.insert_after("field values/s", "close", "1 s".to_owned());
        let text = t.to_string();
        let labels: Vec<&str> = text
            .lines()
            .map(|l| l.split("  ").next().unwrap_or_default())
            .collect();
        assert_eq!(labels[3..5], ["field values/s", "close"]);
        assert!(
            text.contains("CPU seconds          0.250 (user+sys"),
            "{text}"
        );
        assert!(
            text.contains("seconds              0.500 (timed)\n"),
            "{text}"
        );
        assert!(
            text.contains("write amplification  1.50 (29.3 KiB written"),
            "{text}"
        );
        assert!(text.contains("threads              2\n"), "{text}");
    }
}
