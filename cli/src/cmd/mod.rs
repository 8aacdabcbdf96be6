//! One module per command, plus helpers they share: opening the database, parsing JSON
//! arguments, printing documents as Extended JSON.

pub(crate) mod aggregate;
pub(crate) mod bench;
pub(crate) mod buckets;
pub(crate) mod collmod;
pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod demo;
pub(crate) mod expire;
pub(crate) mod find;
pub(crate) mod index;
pub(crate) mod ingest;
pub(crate) mod report;
pub(crate) mod stats;
pub(crate) mod update;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bson::{Bson, Document};
use tscoll_engine::{Collection, Database, DatabaseOptions};

/// Error type of the commands: anything displayable.
pub(crate) type CmdError = Box<dyn std::error::Error + Send + Sync>;

/// Result type of the commands.
pub(crate) type CmdResult<T> = Result<T, CmdError>;

/// The `--db DIR` option every command but `demo` takes.
#[derive(Debug, clap::Args)]
pub(crate) struct DbArgs {
    /// Database directory (created by `create` when missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) db: PathBuf,
}

/// Opens (or creates) the database in `dir`.
///
/// # Errors
/// The engine cannot open it (e.g. another process holds it).
pub(crate) fn open_db(dir: &Path) -> CmdResult<Database> {
    Database::open(dir, DatabaseOptions::default())
        .map_err(|e| format!("cannot open database {}: {e}", dir.display()).into())
}

/// Opens an existing database and one of its collections.
///
/// # Errors
/// The directory does not exist, cannot be opened, or has no such collection.
pub(crate) fn open_collection(dir: &Path, name: &str) -> CmdResult<(Database, Collection)> {
    if !dir.is_dir() {
        return Err(format!(
            "no database at {} (create a collection first: tscoll create --db {} ...)",
            dir.display(),
            dir.display()
        )
        .into());
    }
    let db = open_db(dir)?;
    let coll = db
        .collection(name)
        .map_err(|e| format!("collection '{name}': {e}"))?;
    Ok((db, coll))
}

/// Parses a command-line JSON argument (`--filter`, `--projection`) as Extended JSON.
///
/// # Errors
/// Malformed JSON, not an object, or bad Extended JSON; the message names the option.
pub(crate) fn parse_json_arg(option: &str, text: &str) -> CmdResult<Document> {
    crate::input::ndjson::parse_document(text).map_err(|e| format!("{option}: {e}").into())
}

/// The relaxed Extended JSON text of a document (one line).
pub(crate) fn to_extjson(doc: Document) -> String {
    Bson::Document(doc).into_relaxed_extjson().to_string()
}

/// Writes a document as one line of relaxed Extended JSON.
///
/// # Errors
/// The writer fails (e.g. a closed pipe).
pub(crate) fn write_extjson_line(out: &mut impl Write, doc: Document) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &Bson::Document(doc).into_relaxed_extjson())?;
    out.write_all(b"\n")
}

/// Turns the error of writing to stdout into the command's outcome: a closed pipe (`| head`)
/// ends the command quietly with success.
pub(crate) fn stdout_result(result: io::Result<()>) -> CmdResult<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(|e| format!("writing to stdout: {e}").into()),
    }
}

/// Formats a duration in seconds compactly: `90 ms`, `45 s`, `5 min`, `3.5 h`, `2 d`.
pub(crate) fn human_seconds(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1000.0)
    } else if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 3_600.0 {
        format!("{:.1} min", seconds / 60.0)
    } else if seconds < 86_400.0 {
        format!("{:.1} h", seconds / 3_600.0)
    } else {
        format!("{:.1} d", seconds / 86_400.0)
    }
}

/// Formats a byte count: `512 B`, `1.5 KiB`, `3.2 MiB`, `1.1 GiB`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b < 1024.0 {
        format!("{bytes} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_formats() {
        assert_eq!(human_seconds(0.09), "90 ms");
        assert_eq!(human_seconds(45.0), "45 s");
        assert_eq!(human_seconds(300.0), "5.0 min");
        assert_eq!(human_seconds(86_400.0 * 3.0), "3.0 d");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn json_args_are_extended_json() {
        let filter = parse_json_arg(
            "--filter",
            r#"{"ts":{"$gte":{"$date":"2016-01-01T00:00:00Z"}}}"#,
        )
        .expect("parse");
        let ts = filter.get_document("ts").expect("ts");
        assert!(matches!(ts.get("$gte"), Some(Bson::DateTime(_))));
        let err = parse_json_arg("--filter", "{").expect_err("bad");
        assert!(
            err.to_string().starts_with("--filter: malformed JSON"),
            "{err}"
        );
    }

    #[test]
    fn extjson_lines() {
        let mut out = Vec::new();
        let doc = bson::doc! { "ts": bson::DateTime::from_millis(0), "n": 3_i64 };
        write_extjson_line(&mut out, doc).expect("write");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "{\"ts\":{\"$date\":\"1970-01-01T00:00:00Z\"},\"n\":3}\n"
        );
    }
}
