//! Measurements written as Parquet (arrow-rs' `parquet` crate), row group by row group, in
//! the schema a first pass found: the engine's documents → Arrow mapping
//! (`tscoll_engine::arrow::DocumentShape` and `BatchBuilder`, docs/arrow.md "Documents →
//! Arrow"), read back by [`crate::input::parquet`].

use std::io::Write;

use arrow_schema::SchemaRef;
use bson::Document;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use tscoll_engine::arrow::BatchBuilder;

/// Measurements buffered before they are written as one row group.
pub(crate) const ROWS_PER_GROUP: usize = 64 * 1024;

/// Writes documents of one schema as a Parquet file.
pub(crate) struct ParquetOut<W: Write + Send> {
    writer: ArrowWriter<W>,
    builder: BatchBuilder,
}

impl<W: Write + Send> ParquetOut<W> {
    /// A Parquet file of `schema` (zstd-compressed pages) on `out`.
    ///
    /// # Errors
    /// The schema has no Parquet form, or the header cannot be written.
    pub(crate) fn new(out: W, schema: SchemaRef) -> Result<Self, String> {
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props))
            .map_err(|e| format!("parquet: {e}"))?;
        Ok(Self {
            writer,
            builder: BatchBuilder::new(schema),
        })
    }

    /// Adds one document (writing a row group when enough are buffered).
    ///
    /// # Errors
    /// The document does not fit the schema (the collection changed since the first pass),
    /// or writing fails.
    pub(crate) fn push(&mut self, doc: &Document) -> Result<(), String> {
        self.builder.push(doc).map_err(|e| {
            format!(
                "{e} (found in a first pass): the collection changed during the export; run \
                 it again"
            )
        })?;
        if self.builder.rows() == ROWS_PER_GROUP {
            self.write_batch()?;
        }
        Ok(())
    }

    fn write_batch(&mut self) -> Result<(), String> {
        let batch = self.builder.finish().map_err(|e| format!("parquet: {e}"))?;
        self.writer
            .write(&batch)
            .and_then(|()| self.writer.flush())
            .map_err(|e| format!("parquet: {e}"))
    }

    /// Writes the buffered documents and the file's footer; returns the output.
    ///
    /// # Errors
    /// Writing fails.
    pub(crate) fn finish(mut self) -> Result<W, String> {
        if self.builder.rows() > 0 {
            self.write_batch()?;
        }
        self.writer
            .into_inner()
            .map_err(|e| format!("parquet: {e}"))
    }
}
