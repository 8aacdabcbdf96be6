//! An insert's measurements column by column, grouped by series: the columnar input of
//! staging ([`crate::BucketCatalog::stage_rows`]). Staging appends runs of a series' rows to
//! its open bucket column by column, with one rollover check per run instead of one walk of
//! every measurement's fields.

use std::ops::Range;

use bson::Document;
use tscoll_codec::{Column, RowStart};

use crate::catalog::Measurement;
use crate::value::{element_size, push_value, to_bson};

/// Measurements column by column, grouped by series, each group in time order.
///
/// Every per-row vector has one entry per row and every column one value per row (a skip
/// where the row lacks the field). [`crate::BucketCatalog::stage_rows`] reads them with bounds
/// checks: rows past the shortest vector are not staged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeasurementColumns {
    /// Time of each row (ms since the epoch), non-decreasing within a group (SPEC ).
    pub times: Vec<i64>,
    /// Position of each row in the caller's input (reported back with errors).
    pub indices: Vec<usize>,
    /// Every field but the meta field, time field included, in the order the rows list
    /// them.
    pub fields: Vec<(String, Column)>,
    /// Per row: BSON bytes of its fields' elements, meta left out (SPEC §6.4 `size(elem)`).
    pub raw: Vec<u64>,
    /// Per row: `Σ (name bytes + 1)` over its present fields.
    pub names: Vec<u64>,
    /// Per row: number of present fields.
    pub present: Vec<u32>,
    /// The rows of each group (series).
    pub groups: Vec<Range<usize>>,
    /// Where each group's first row starts in each column: `fields.len()` entries per group.
    pub starts: Vec<RowStart>,
}

impl MeasurementColumns {
    /// Number of rows (the shortest per-row vector).
    #[must_use]
    pub fn len(&self) -> usize {
        [
            self.times.len(),
            self.indices.len(),
            self.raw.len(),
            self.names.len(),
            self.present.len(),
        ]
        .into_iter()
        .min()
        .unwrap_or(0)
    }

    /// Whether there is no row.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The columns of `groups` (the measurements of each series, in time order), meta field
    /// left out, when every measurement lists the same fields in the same order (a generated
    /// `_id` first); `None` otherwise, and then the measurements are staged one by one
    /// ([`crate::BucketCatalog::stage`]), which keeps each one's field order where it opens
    /// a bucket.
    #[must_use]
    pub fn from_measurements(
        groups: &[Vec<Measurement<'_>>],
        meta_field: Option<&str>,
    ) -> Option<MeasurementColumns> {
        let first = groups.iter().find_map(|g| g.first())?;
        let n: usize = groups.iter().map(Vec::len).sum();
        let mut fields: Vec<(String, Column)> = first
            .fields()
            .filter(|(name, _)| Some(*name) != meta_field)
            .map(|(name, _)| (name.to_owned(), Column::with_capacity(n)))
            .collect();
        let names_bytes: u64 = fields.iter().map(|(name, _)| name.len() as u64 + 1).sum();
        let present = u32::try_from(fields.len()).ok()?;
        let mut out = MeasurementColumns {
            times: Vec::with_capacity(n),
            indices: Vec::with_capacity(n),
            fields: Vec::new(),
            raw: Vec::with_capacity(n),
            names: vec![names_bytes; n],
            present: vec![present; n],
            groups: Vec::with_capacity(groups.len()),
            starts: Vec::with_capacity(groups.len() * fields.len()),
        };
        let mut scratch = Vec::new();
        for group in groups {
            let start = out.times.len();
            out.starts.extend(fields.iter().map(|(_, c)| c.end()));
            for m in group {
                let mut k = 0;
                let mut raw = 0;
                for (name, v) in m.fields() {
                    if Some(name) == meta_field {
                        continue;
                    }
                    let (expected, column) = fields.get_mut(k)?;
                    if expected != name {
                        return None;
                    }
                    raw += element_size(name, v);
                    push_value(column, v, &mut scratch);
                    k += 1;
                }
                if k != fields.len() {
                    return None;
                }
                out.times.push(m.time);
                out.indices.push(m.index);
                out.raw.push(raw);
            }
            out.groups.push(start..out.times.len());
        }
        out.fields = fields;
        Some(out)
    }

    /// Row `row` as a document: its present fields in column order.
    ///
    /// # Errors
    /// A message when a value cannot be rebuilt (a malformed payload).
    pub fn row_document(&self, row: usize) -> Result<Document, String> {
        let starts: Vec<RowStart> = self.fields.iter().map(|(_, c)| c.row_start(row)).collect();
        self.row_document_at(&starts)
    }

    /// As [`MeasurementColumns::row_document`] for the row where `starts` (one per column)
    /// point.
    ///
    /// # Errors
    /// As [`MeasurementColumns::row_document`].
    pub fn row_document_at(&self, starts: &[RowStart]) -> Result<Document, String> {
        let mut doc = Document::new();
        for ((name, column), start) in self.fields.iter().zip(starts) {
            if let Some(v) = column.iter_from(*start, start.row + 1).next()
                && let Some(b) = to_bson(v)?
            {
                doc.insert(name.clone(), b);
            }
        }
        Ok(doc)
    }
}
