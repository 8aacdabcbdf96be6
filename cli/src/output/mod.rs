//! Output formats of `find` and `aggregate`: relaxed Extended JSON lines, CSV and Parquet.
//! CSV and Parquet need every field (and its type) before the first row, so the
//! measurements are read twice: a first pass finds the columns, a second writes them; memory
//! stays one row group.

pub(crate) mod csv;
pub(crate) mod parquet;
#[cfg(test)]
mod parquet_roundtrip_tests;

use std::io::{self, Write};

use bson::Document;

use crate::cmd::{CmdResult, stdout_result, write_extjson_doc};

/// The format measurements are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum OutputFormat {
    /// One relaxed Extended JSON document per line.
    #[default]
    Ndjson,
    /// A header of field paths, one row per measurement (as `mongoexport --type=csv`).
    Csv,
    /// Apache Parquet (zstd), one column per field.
    Parquet,
}

/// Writes the documents `pass` yields in `format` to the output `open` gives (called once
/// the columns are known: nothing is created when the first pass fails); `pass` is called
/// once for NDJSON and twice for CSV and Parquet (the first pass finds the columns). A
/// closed pipe ends the output quietly.
///
/// # Errors
/// A query fails, a document does not fit the columns the first pass found (the collection
/// changed between the passes; the field is named), or writing fails.
pub(crate) fn export<I>(
    format: OutputFormat,
    open: impl FnOnce() -> CmdResult<Box<dyn Write + Send>>,
    mut pass: impl FnMut() -> CmdResult<I>,
) -> CmdResult<()>
where
    I: Iterator<Item = CmdResult<Document>>,
{
    match format {
        OutputFormat::Ndjson => {
            let docs = pass()?;
            let mut out = io::BufWriter::with_capacity(256 * 1024, open()?);
            for doc in docs {
                if let Err(e) = write_extjson_doc(&mut out, &doc?) {
                    return stdout_result(Err(e));
                }
            }
            stdout_result(out.flush())
        }
        OutputFormat::Csv => {
            let mut columns = csv::CsvColumns::default();
            for doc in pass()? {
                columns.add(&doc?);
            }
            let out = io::BufWriter::with_capacity(256 * 1024, open()?);
            let mut writer = match csv::CsvOut::new(out, columns) {
                Ok(w) => w,
                Err(e) => return stdout_result(Err(e)),
            };
            for doc in pass()? {
                if let Err(e) = writer.push(&doc?) {
                    return stdout_result(Err(e));
                }
            }
            stdout_result(writer.finish().and_then(|mut w| w.flush()))
        }
        OutputFormat::Parquet => {
            let mut shape = tscoll_engine::arrow::DocumentShape::new();
            for doc in pass()? {
                shape.add(&doc?);
            }
            let notes = shape.notes();
            if !notes.is_empty() {
                let line = notes.join("; ");
                crate::cmd::write_stderr(
                    format_args!("note: written to Parquet with {line}"),
                    true,
                );
            }
            let schema = shape.schema();
            let out = io::BufWriter::with_capacity(256 * 1024, open()?);
            let mut writer = parquet::ParquetOut::new(out, schema)?;
            for doc in pass()? {
                writer.push(&doc?)?;
            }
            let mut out = writer.finish()?;
            stdout_result(out.flush())
        }
    }
}
