//! `tscoll bench codec`: the codec side by side with pcodec and zstd on real data.
//!
//! Every file is read as NDJSON (MongoDB Extended JSON, plain or compressed), grouped by
//! series (the meta field) and cut into 1000-row chunks per field; see
//! [`tscoll_benches::codec`] for what is measured.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tscoll_benches::codec::{Corpus, MeasureOptions, measure};

use crate::cmd::CmdResult;
use crate::cmd::demo::data_dir;
use crate::input::ndjson::NdjsonReader;
use crate::input::open::{open_input, strip_compression_suffix};

/// Arguments of `tscoll bench codec`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// NDJSON files (plain, .xz, .gz, .zst); default: every `*.ndjson*` file of the bundled
    /// data folder (or of `--data`).
    pub(crate) files: Vec<PathBuf>,
    /// Folder whose `*.ndjson*` files are measured when no file is given.
    #[arg(long, value_name = "DIR")]
    pub(crate) data: Option<PathBuf>,
    /// Time field name.
    #[arg(long, default_value = "ts")]
    pub(crate) time_field: String,
    /// Meta field name (series key).
    #[arg(long, default_value = "meta")]
    pub(crate) meta_field: String,
    /// Print one JSON object per column kind, then a `"kind": "pooled"` line.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also print sizes per data set and field.
    #[arg(long)]
    pub(crate) detail: bool,
    /// Least time spent timing encode (and decode) of each kind, in ms.
    #[arg(long, default_value_t = 300, value_name = "MS")]
    pub(crate) min_time_ms: u64,
    /// Rows per chunk (a full bucket); 360 matches the hour buckets of 10-second data such as
    /// `tscoll bench gen` writes (read it with `--time-field time --meta-field tags`).
    #[arg(
        long,
        default_value_t = tscoll_benches::codec::CHUNK_ROWS,
        value_name = "ROWS",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000)
    )]
    pub(crate) chunk_rows: usize,
}

fn input_files(args: &Args) -> CmdResult<Vec<PathBuf>> {
    if !args.files.is_empty() {
        return Ok(args.files.clone());
    }
    // Any folder given (`benches/corpus`, say); else the bundled data.
    let dir = match &args.data {
        Some(dir) => dir.clone(),
        None => data_dir(None)?,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".ndjson"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no *.ndjson* files in {}", dir.display()).into());
    }
    Ok(files)
}

/// Runs `tscoll bench codec`.
///
/// # Errors
/// A file cannot be read or holds a malformed line (named with its line number).
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let mut corpus = Corpus::with_chunk_rows(args.chunk_rows);
    for path in input_files(args)? {
        let display = path.display().to_string();
        let input = open_input(&display)?;
        let source = path
            .file_name()
            .and_then(|n| n.to_str())
            .map_or(display.clone(), |n| {
                strip_compression_suffix(n)
                    .trim_end_matches(".ndjson")
                    .to_owned()
            });
        let mut builder = corpus.builder(&source, &args.time_field, &args.meta_field);
        for record in NdjsonReader::new(input.reader) {
            let record = record.map_err(|e| format!("{display}: {e}"))?;
            let doc = record
                .doc
                .map_err(|e| format!("{display}:{}: {e}", record.line))?;
            builder.add(&doc);
        }
        builder.finish();
        if !args.json {
            errln!("read {display}");
        }
    }
    let report = measure(
        &corpus,
        MeasureOptions {
            min_time: Duration::from_millis(args.min_time_ms),
            ..MeasureOptions::default()
        },
    );
    let mut out = std::io::stdout().lock();
    if args.json {
        for line in report.json_lines() {
            writeln!(out, "{line}")?;
        }
    } else {
        write!(out, "{}", report.table(args.detail))?;
        if corpus.skipped > 0 {
            writeln!(
                out,
                "({} documents without a date-typed '{}' skipped)",
                corpus.skipped, args.time_field
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(data: Option<PathBuf>) -> Args {
        Args {
            files: Vec::new(),
            data,
            time_field: "ts".to_owned(),
            meta_field: "meta".to_owned(),
            json: false,
            detail: false,
            min_time_ms: 1,
            chunk_rows: 1000,
        }
    }

    #[test]
    fn data_takes_any_folder_of_ndjson_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("b.ndjson"), "").expect("write");
        std::fs::write(dir.path().join("a.ndjson.xz"), "").expect("write");
        std::fs::write(dir.path().join("notes.md"), "").expect("write");
        let files = input_files(&args(Some(dir.path().to_path_buf()))).expect("files");
        let names: Vec<_> = files
            .iter()
            .filter_map(|p| p.file_name()?.to_str())
            .collect();
        assert_eq!(names, ["a.ndjson.xz", "b.ndjson"]);
        let empty = tempfile::tempdir().expect("tempdir");
        assert!(input_files(&args(Some(empty.path().to_path_buf()))).is_err());
        // Without --data: the bundled data.
        assert!(!input_files(&args(None)).expect("bundled").is_empty());
    }
}
