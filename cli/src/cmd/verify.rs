//! `tscoll verify`: checks every bucket of every collection and lists what is damaged.

use std::process::ExitCode;

use tscoll_engine::VerifyReport;

use super::{CmdResult, DbArgs, open_readable_db};

/// Exit status of `verify` and `salvage` when damage was found (1 is a failed command).
pub(crate) const DAMAGE_FOUND: u8 = 2;

/// Arguments of `tscoll verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
}

/// Runs `tscoll verify`: prints one line per problem (collection, bucket id in hex, what is
/// wrong) and a summary; exits with [`DAMAGE_FOUND`] when anything is damaged.
///
/// # Errors
/// A missing database, one that cannot be opened (a damaged journal without `--recover`).
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let db = open_readable_db(&args.db.db)?;
    let report = db.verify()?;
    outln!(
        "{}",
        report_text(&report, &args.db.db.display().to_string())
    );
    Ok(if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(DAMAGE_FOUND)
    })
}

/// The report of database `db` as text: problems, then the totals and what to run.
pub(crate) fn report_text(r: &VerifyReport, db: &str) -> String {
    let mut out = String::new();
    if let Some(j) = &r.recovery {
        out.push_str(&format!("damaged journal: {j}\n"));
    }
    out.push_str(&super::salvage::log_lines(&r.log));
    for p in &r.problems {
        out.push_str(&format!("damaged: {p}\n"));
    }
    out.push_str(&format!(
        "checked {} collection(s), {} bucket(s), {} segment(s), {} measurement(s), {} index \
         entries: {}",
        r.collections,
        r.buckets,
        r.segments,
        r.measurements,
        r.index_entries,
        match (r.problems.len(), r.recovery.is_some()) {
            (0, false) if r.log.is_empty() => "no problem found".to_owned(),
            (0, false) =>
                "no problem found in what the write-ahead log kept (see above)".to_owned(),
            (0, true) => "no problem found in what the journal repair kept".to_owned(),
            (1, _) => "1 problem".to_owned(),
            (n, _) => format!("{n} problems"),
        }
    ));
    if !r.is_ok() {
        out.push_str(&format!(
            "\nrun `tscoll salvage --db {db} --to NEWDIR` to copy every readable measurement \
             into a new database in NEWDIR, a new directory"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use bson::{DateTime, doc};
    use tscoll_engine::{Database, DatabaseOptions, InsertOptions, TimeseriesOptions};

    use super::*;

    #[test]
    fn intact_database_verifies() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
            let coll = db
                .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
                .expect("create");
            coll.insert_many(
                &[doc! { "t": DateTime::from_millis(0), "m": 1, "v": 1 }],
                &InsertOptions::default(),
            )
            .expect("insert");
        }
        let code = run(&Args {
            db: DbArgs::new(dir.path()),
        })
        .expect("verify");
        assert_eq!(code, ExitCode::SUCCESS);
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
        let text = report_text(&db.verify().expect("verify"), "db");
        assert!(
            text.ends_with(
                "1 bucket(s), 1 segment(s), 1 measurement(s), 1 index entries: no problem found"
            ),
            "{text}"
        );
    }
}
