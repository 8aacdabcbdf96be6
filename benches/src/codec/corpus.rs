//! Real columns cut into bucket-sized chunks: measurements are grouped by series (their
//! metaField value), each series' fields become columns in arrival order, and every
//! [`CHUNK_ROWS`] rows of a series make one chunk per field, as a bucket would hold them.

use std::collections::HashMap;

use bson::{Bson, Document};
use tscoll_catalog::value::push_value;
use tscoll_codec::{Column, tag};

use super::classify::classify;
use super::kind::ColumnKind;

/// Rows of a chunk: a full bucket (`bucketMaxCount`, SPEC §6.3).
pub const CHUNK_ROWS: usize = 1000;

/// One chunk of one column: what a bucket would hold of one field.
#[derive(Debug)]
pub struct Chunk {
    /// Data set (file) the chunk came from.
    pub source: String,
    /// Field name.
    pub field: String,
    /// Its class.
    pub kind: ColumnKind,
    /// The column as the catalog builds it (one row per measurement, skips included).
    pub column: Column,
}

/// The columns of one series being filled.
#[derive(Default)]
struct Series {
    rows: usize,
    /// `(field, column)`; the time field is first.
    fields: Vec<(String, Column)>,
}

/// Chunks of the columns of the documents added, by kind.
#[derive(Debug, Default)]
pub struct Corpus {
    /// Every chunk, in the order series filled them.
    pub chunks: Vec<Chunk>,
    /// Documents that were skipped (no time field of type date).
    pub skipped: u64,
    /// Rows of a full chunk; 0 means [`CHUNK_ROWS`].
    pub chunk_rows: usize,
}

/// Collects the documents of one data set into chunks.
pub struct CorpusBuilder<'a> {
    corpus: &'a mut Corpus,
    source: String,
    time_field: String,
    meta_field: String,
    series: HashMap<Vec<u8>, Series>,
    meta_buf: Vec<u8>,
    scratch: Vec<u8>,
}

impl Corpus {
    /// An empty corpus cutting series into chunks of `chunk_rows` rows (e.g. 360 for buckets
    /// of one hour of 10-second measurements).
    #[must_use]
    pub fn with_chunk_rows(chunk_rows: usize) -> Corpus {
        Corpus {
            chunk_rows,
            ..Corpus::default()
        }
    }

    fn full_chunk(&self) -> usize {
        if self.chunk_rows == 0 {
            CHUNK_ROWS
        } else {
            self.chunk_rows
        }
    }

    /// A builder adding the documents of data set `source` (time and meta field names as in
    /// the collection options, SPEC §1).
    pub fn builder(
        &mut self,
        source: &str,
        time_field: &str,
        meta_field: &str,
    ) -> CorpusBuilder<'_> {
        CorpusBuilder {
            corpus: self,
            source: source.to_owned(),
            time_field: time_field.to_owned(),
            meta_field: meta_field.to_owned(),
            series: HashMap::new(),
            meta_buf: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

impl CorpusBuilder<'_> {
    /// Adds one measurement. Documents without a date-typed time field are counted in
    /// [`Corpus::skipped`].
    pub fn add(&mut self, doc: &Document) {
        let Some(Bson::DateTime(time)) = doc.get(&self.time_field) else {
            self.corpus.skipped += 1;
            return;
        };
        self.meta_buf.clear();
        if let Some(meta) = doc.get(&self.meta_field) {
            let mut d = Document::new();
            d.insert("", meta.clone());
            // A valid document always serializes.
            let _ = d.to_writer(&mut self.meta_buf);
        }
        if !self.series.contains_key(&self.meta_buf) {
            self.series.insert(self.meta_buf.clone(), Series::default());
        }
        let Some(series) = self.series.get_mut(&self.meta_buf) else {
            return;
        };
        if series.fields.is_empty() {
            series
                .fields
                .push((self.time_field.clone(), Column::with_capacity(CHUNK_ROWS)));
        }
        let row = series.rows;
        if let Some((_, c)) = series.fields.first_mut() {
            c.push_int(tag::DATETIME, time.timestamp_millis());
        }
        for (name, value) in doc {
            if *name == self.time_field || *name == self.meta_field {
                continue;
            }
            let col = match series.fields.iter().position(|(n, _)| n == name) {
                Some(i) => series.fields.get_mut(i).map(|(_, c)| c),
                None => {
                    let mut c = Column::with_capacity(CHUNK_ROWS);
                    c.push_missing_n(row);
                    series.fields.push((name.clone(), c));
                    series.fields.last_mut().map(|(_, c)| c)
                }
            };
            if let Some(col) = col
                && col.len() == row
            {
                push_value(col, value, &mut self.scratch);
            }
        }
        series.rows += 1;
        for (_, c) in &mut series.fields {
            if c.len() < series.rows {
                c.push_missing();
            }
        }
        if series.rows == self.corpus.full_chunk() {
            flush(self.corpus, &self.source, series);
        }
    }

    /// Flushes every partly filled series (its last, partial chunk).
    pub fn finish(mut self) {
        let mut keys: Vec<Vec<u8>> = self.series.keys().cloned().collect();
        keys.sort();
        for key in keys {
            if let Some(series) = self.series.get_mut(&key) {
                flush(self.corpus, &self.source, series);
            }
        }
    }
}

fn flush(corpus: &mut Corpus, source: &str, series: &mut Series) {
    if series.rows == 0 {
        return;
    }
    for (i, (name, column)) in series.fields.iter_mut().enumerate() {
        let column = std::mem::replace(column, Column::with_capacity(CHUNK_ROWS));
        if let Some(kind) = classify(&column, i == 0) {
            corpus.chunks.push(Chunk {
                source: source.to_owned(),
                field: name.clone(),
                kind,
                column,
            });
        }
    }
    series.rows = 0;
}

#[cfg(test)]
mod tests {
    use bson::{DateTime, doc};

    use super::*;

    #[test]
    fn chunks_follow_series_and_fill_skips() {
        let mut corpus = Corpus::default();
        let mut b = corpus.builder("t", "ts", "meta");
        for i in 0..2500i64 {
            let mut d = doc! {"ts": DateTime::from_millis(1000 * i), "meta": i % 2, "v": 1.5};
            if i % 10 == 0 {
                d.insert("s", "x");
            }
            b.add(&d);
        }
        b.add(&doc! {"no_time": 1});
        b.finish();
        assert_eq!(corpus.skipped, 1);
        // Two series of 1250 rows: one full chunk and a 250-row chunk each, per field.
        let ts: Vec<usize> = corpus
            .chunks
            .iter()
            .filter(|c| c.field == "ts")
            .map(|c| c.column.len())
            .collect();
        assert_eq!(ts.iter().sum::<usize>(), 2500);
        assert_eq!(ts.iter().filter(|&&n| n == CHUNK_ROWS).count(), 2);
        // "s" first appears in row 0 of series 0 only (i % 10 == 0 is always even).
        for c in corpus.chunks.iter().filter(|c| c.field == "s") {
            assert_eq!(c.kind, ColumnKind::StringsTags);
            let present = c
                .column
                .types()
                .iter()
                .filter(|&&t| t != tag::MISSING)
                .count();
            assert_eq!(present * 5, c.column.len());
        }
        assert!(corpus.chunks.iter().all(|c| c.field != "meta"));
    }
}
