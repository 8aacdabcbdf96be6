//! Input readers shared by `ingest` and `demo`: opening (decompression, stdin), NDJSON
//! (MongoDB Extended JSON) and CSV.

pub(crate) mod batches;
pub(crate) mod columns;
pub(crate) mod csv;
#[cfg(test)]
mod formats_agree_tests;
pub(crate) mod ndjson;
pub(crate) mod ndjson_columns;
pub(crate) mod open;
pub(crate) mod parquet;
#[cfg(test)]
mod roundtrip_tests;
pub(crate) mod times;

use std::fmt;
use std::io;

use bson::Document;

/// Where a measurement is in its input: the 1-based number of the line it starts on in the
/// (decompressed) input (a row number for Parquet), and for an element of a JSON array its
/// index in the array (from 0), as several may share a line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Position {
    /// 1-based line number.
    pub(crate) line: u64,
    /// Index in the JSON array the input is, from 0.
    pub(crate) element: Option<u64>,
}

impl From<u64> for Position {
    fn from(line: u64) -> Self {
        Position {
            line,
            element: None,
        }
    }
}

impl fmt::Display for Position {
    /// `LINE`, or `LINE: element [INDEX]` for an element of a JSON array.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.element {
            Some(i) => write!(f, "{}: element [{i}]", self.line),
            None => write!(f, "{}", self.line),
        }
    }
}

/// One input line (or CSV record) and what it parsed to.
#[derive(Debug)]
pub(crate) struct Record {
    /// Where it is in the input.
    pub(crate) line: Position,
    /// The measurement, or why the line is bad.
    pub(crate) doc: Result<Document, String>,
}

/// A read error of an input with the line where the data that could not be read begins
/// (every line before it was yielded).
#[derive(Debug)]
pub(crate) struct LineError {
    /// 1-based line number in the (decompressed) input.
    pub(crate) line: u64,
    /// What went wrong.
    pub(crate) source: io::Error,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.source)
    }
}

impl std::error::Error for LineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// `error`, marked as happening at `line` (see [`describe_read_error`]).
pub(crate) fn at_line(line: u64, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        LineError {
            line,
            source: error,
        },
    )
}

/// The message of a read error of input `name`: `NAME:LINE: reason` when the error knows
/// its line ([`at_line`]), `NAME: reason` otherwise.
pub(crate) fn describe_read_error(name: &str, error: &io::Error) -> String {
    match error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<LineError>())
    {
        Some(e) => format!("{name}:{}: {}", e.line, e.source),
        None => format!("{name}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_errors_name_file_and_line() {
        let e = at_line(7, io::Error::new(io::ErrorKind::UnexpectedEof, "cut"));
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(describe_read_error("a.gz", &e), "a.gz:7: cut");
        assert_eq!(e.to_string(), "line 7: cut");
        let plain = io::Error::other("boom");
        assert_eq!(describe_read_error("a.gz", &plain), "a.gz: boom");
    }
}
