//! Parquet input (arrow-rs' `parquet` crate): each record batch goes to
//! `Collection::insert_record_batch_with`, which reads every Arrow type by the engine's one
//! Arrow → BSON mapping (docs/arrow.md: the types other tools write, and the marks
//! [`crate::output::parquet`] writes so that an export reads back as the same BSON values).
//! A column of a type with no BSON form is refused, naming the field, before anything is
//! read.

use std::fs::File;
use std::io;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

/// Opens Parquet file `path` (`-`: stdin, copied to a temporary file first) for reading in
/// record batches of `batch_size` rows.
///
/// # Errors
/// The file cannot be read, is not Parquet, or has a column with no BSON form (named).
pub(crate) fn open(path: &str, batch_size: usize) -> Result<ParquetRecordBatchReader, String> {
    if path == "-" {
        return open_stream("<stdin>", &mut io::stdin().lock(), batch_size);
    }
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    open_file(path, file, batch_size)
}

/// The first bytes of every Parquet file.
pub(crate) const MAGIC: &[u8] = b"PAR1";

/// Opens the Parquet file `reader` streams (input `name`: stdin, a decompressed file),
/// copied to a temporary file first (Parquet is read from its end).
///
/// # Errors
/// As [`open`].
pub(crate) fn open_stream(
    name: &str,
    reader: &mut dyn io::Read,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader, String> {
    let mut file = tempfile::tempfile().map_err(|e| format!("{name}: {e}"))?;
    io::copy(reader, &mut file).map_err(|e| format!("{name}: {e}"))?;
    open_file(name, file, batch_size)
}

fn open_file(
    path: &str,
    file: File,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader, String> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| format!("{path}: not a readable Parquet file: {e}"))?;
    check_schema(builder.schema()).map_err(|e| format!("{path}: {e}"))?;
    builder
        .with_batch_size(batch_size.max(1))
        .build()
        .map_err(|e| format!("{path}: {e}"))
}

/// Checks that every column of `schema` has a BSON form (the engine's mapping,
/// `tscoll_engine::arrow`).
///
/// # Errors
/// The first field (dotted path) of a type tscoll cannot store.
pub(crate) fn check_schema(schema: &Schema) -> Result<(), String> {
    let empty = RecordBatch::new_empty(Arc::new(schema.clone()));
    tscoll_engine::arrow::documents_from_batch(&empty)
        .map(|_| ())
        .map_err(|e| e.to_string())
}
