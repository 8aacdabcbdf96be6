//! `tscoll salvage`: copies every readable measurement of a damaged database into a new one
//! and lists what was lost (like `sqlite3 .recover`).

use std::path::PathBuf;
use std::process::ExitCode;

use tscoll_engine::{Database, DatabaseOptions, SalvageReport};

use super::verify::DAMAGE_FOUND;
use super::{CmdResult, DbArgs, open_readable_db};

/// Arguments of `tscoll salvage`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The new database to copy into: a directory that does not exist yet or is empty.
    #[arg(long, value_name = "NEWDIR")]
    pub(crate) to: PathBuf,
}

/// Runs `tscoll salvage`: creates every collection of `--db` in `--to` with the same options
/// and indexes and copies every measurement of every segment that decodes; prints what was
/// copied and every bucket not copied whole. Exits with [`DAMAGE_FOUND`] when something was
/// lost.
///
/// # Errors
/// A missing source database, one that cannot be opened (a damaged journal without
/// `--recover`), a `--to` directory that is not empty, storage errors in the new database.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let src = &args.db.db;
    let to = &args.to;
    if to.exists() {
        let empty = to.is_dir()
            && std::fs::read_dir(to)
                .map_err(|e| format!("--to {}: {e}", to.display()))?
                .next()
                .is_none();
        if !empty {
            return Err(format!(
                "--to {}: not an empty directory; salvage writes into a new database",
                to.display()
            )
            .into());
        }
    }
    if let (Ok(a), Ok(b)) = (src.canonicalize(), to.canonicalize())
        && a == b
    {
        return Err("--to must be another directory than --db".into());
    }
    let source = open_readable_db(src)?;
    let target = Database::open(to, DatabaseOptions::default())
        .map_err(|e| format!("cannot create database {}: {e}", to.display()))?;
    let report = source.salvage_into(&target)?;
    outln!("{}", report_text(&report, &to.display().to_string()));
    Ok(if report.is_complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(DAMAGE_FOUND)
    })
}

/// One line per write-ahead log the open of the database dropped records from (`damaged
/// write-ahead log: ...` or `torn write-ahead log tail: ...`), for `verify` and `salvage`.
pub(crate) fn log_lines(log: &[tscoll_engine::LogRecovery]) -> String {
    log.iter()
        .map(|l| {
            let what = if l.damaged {
                "damaged write-ahead log"
            } else {
                "torn write-ahead log tail"
            };
            format!("{what}: {l}\n")
        })
        .collect()
}

/// The report as text: what each collection got, every loss, the totals.
pub(crate) fn report_text(r: &SalvageReport, to: &str) -> String {
    let mut out = String::new();
    if let Some(j) = &r.recovery {
        out.push_str(&format!("damaged journal: {j}\n"));
    }
    out.push_str(&log_lines(&r.log));
    for c in &r.collections {
        out.push_str(&format!(
            "{}: copied {} measurement(s) of {} segment(s) from {} bucket(s), {} secondary \
             index(es) created again\n",
            c.name, c.measurements, c.segments, c.buckets, c.indexes
        ));
    }
    for l in &r.lost {
        out.push_str(&format!("lost: {l}\n"));
    }
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out.push_str(&format!(
        "salvaged {} measurement(s) of {} collection(s) into {to}",
        r.measurements(),
        r.collections.len()
    ));
    if !r.lost.is_empty() {
        out.push_str(&format!(
            "; {} bucket(s) not copied whole, {} measurement(s) lost as their control records \
             tell",
            r.lost.len(),
            r.measurements_lost()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use bson::{DateTime, doc};
    use tscoll_engine::{FindOptions, InsertOptions, TimeseriesOptions};

    use super::*;

    #[test]
    fn salvage_copies_into_a_new_directory_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (src, to) = (dir.path().join("src"), dir.path().join("to"));
        {
            let db = Database::open(&src, DatabaseOptions::default()).expect("open");
            let coll = db
                .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
                .expect("create");
            coll.insert_many(
                &[doc! { "t": DateTime::from_millis(0), "m": 1, "v": 1 }],
                &InsertOptions::default(),
            )
            .expect("insert");
        }
        let args = |to: &std::path::Path| Args {
            db: DbArgs::new(src.clone()),
            to: to.to_path_buf(),
        };
        assert_eq!(run(&args(&to)).expect("salvage"), ExitCode::SUCCESS);
        let err = run(&args(&to)).expect_err("not empty");
        assert!(err.to_string().contains("not an empty directory"), "{err}");
        let copy = Database::open(&to, DatabaseOptions::default()).expect("open");
        let found = copy
            .collection("c")
            .expect("c")
            .find(&doc! {}, &FindOptions::default())
            .expect("find");
        assert_eq!(found.len(), 1);
    }
}
