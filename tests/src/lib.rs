//! Shared helpers of the end-to-end tests: loading the bundled real data sets.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use bson::{Bson, Document};

/// The repository's bundled data folder (`data/`).
#[must_use]
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("data")
}

/// Reads a newline-delimited Extended JSON file (`.xz` compressed or plain) into documents.
///
/// # Panics
/// When the file cannot be read or a line is not an Extended JSON document (test data only).
#[must_use]
pub fn load_ndjson(path: &Path) -> Vec<Document> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader: Box<dyn std::io::Read> = if path.extension().is_some_and(|e| e == "xz") {
        Box::new(liblzma::read::XzDecoder::new(file))
    } else {
        Box::new(file)
    };
    BufReader::new(reader)
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let line = line.unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            let value: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            match Bson::try_from(value) {
                Ok(Bson::Document(d)) => d,
                other => panic!("{}:{}: not a document: {other:?}", path.display(), i + 1),
            }
        })
        .collect()
}

/// Whether two values are identical: same BSON types and values, doubles compared bit for bit,
/// documents with the same fields in the same order.
#[must_use]
pub fn identical(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => x.to_bits() == y.to_bits(),
        (Bson::Document(x), Bson::Document(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
        }
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical(p, q))
        }
        _ => a == b,
    }
}
