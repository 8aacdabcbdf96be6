//! Input readers shared by `ingest` and `demo`: opening (decompression, stdin), NDJSON
//! (MongoDB Extended JSON) and CSV.

pub(crate) mod csv;
pub(crate) mod ndjson;
pub(crate) mod open;

use bson::Document;

/// One input line (or CSV record) and what it parsed to.
#[derive(Debug)]
pub(crate) struct Record {
    /// 1-based line number in the (decompressed) input.
    pub(crate) line: u64,
    /// The measurement, or why the line is bad.
    pub(crate) doc: Result<Document, String>,
}
