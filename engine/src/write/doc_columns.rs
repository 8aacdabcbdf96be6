//! Documents converted into the call's columns as they are validated: each value is read
//! once, in the one walk over its document that checks it (`CollectionInner::validate`),
//! and pushed into its field's column; the columns are then put in series and time order
//! with one gather per column ([`Column::gather`]). A call whose documents do not all list
//! the same fields in the same order (the meta field aside, a generated `_id` first), or that
//! mixes documents with and without an `_id`, gets no columns: its measurements are staged
//! one by one.

use bson::Bson;
use tscoll_catalog::value::{element_size, push_value};
use tscoll_catalog::{Measurement, MeasurementColumns};
use tscoll_codec::Column;

use crate::write::series::same_bytes;

/// The call's accepted documents so far, column by column, in input order.
pub(crate) struct DocColumns {
    /// Whether every accepted document so far lists the same fields in the same order.
    live: bool,
    /// Whether the first accepted document fixed the fields.
    defined: bool,
    /// Whether the document being walked lists other fields (it ends the columns if it is
    /// accepted).
    differs: bool,
    /// The fields, meta field left out, in the documents' order.
    names: Vec<String>,
    columns: Vec<Column>,
    /// Whether the documents carry a generated `_id` (fixed by the first accepted one).
    generated: Option<bool>,
    /// The generated `_id`s.
    ids: Column,
    times: Vec<i64>,
    indices: Vec<usize>,
    raw: Vec<u64>,
    scratch: Vec<u8>,
}

impl DocColumns {
    /// An empty set of columns for a call of `n` documents; with `live` false, nothing is
    /// kept.
    pub(crate) fn new(n: usize, live: bool) -> Self {
        let cap = if live { n } else { 0 };
        DocColumns {
            live,
            defined: false,
            differs: false,
            names: Vec::new(),
            columns: Vec::new(),
            generated: None,
            ids: Column::new(),
            times: Vec::with_capacity(cap),
            indices: Vec::with_capacity(cap),
            raw: Vec::with_capacity(cap),
            scratch: Vec::new(),
        }
    }

    /// Pushes the `pushed`-th field (`name`, `v`) of the document being walked, counting it
    /// in `pushed`. Returns whether `name` is one of the fields an accepted document gave
    /// (then it was checked with that document).
    #[inline]
    pub(crate) fn push(&mut self, name: &str, v: &Bson, pushed: &mut usize) -> bool {
        if !self.live || self.differs {
            return false;
        }
        let j = *pushed;
        let first = !self.defined && j == self.names.len();
        if first {
            self.names.push(name.to_owned());
            self.columns.push(Column::new());
        } else if !self
            .names
            .get(j)
            .is_some_and(|n| same_bytes(n.as_bytes(), name.as_bytes()))
        {
            self.differs = true;
            return false;
        }
        if let Some(column) = self.columns.get_mut(j) {
            push_value(column, v, &mut self.scratch);
            if first {
                // Room for the call's other documents, shaped like the first one's value.
                column.reserve_rows(self.times.capacity());
            }
            *pushed += 1;
        }
        self.defined
    }

    /// Takes back the `pushed` values of a document that was rejected.
    pub(crate) fn reject(&mut self, pushed: usize) {
        self.differs = false;
        if !self.live {
            return;
        }
        if !self.defined {
            self.names.clear();
            self.columns.clear();
            return;
        }
        for column in self.columns.iter_mut().take(pushed) {
            column.pop_row();
        }
    }

    /// Keeps the document walked, of `pushed` values, `raw` BSON bytes (meta left out), at
    /// input position `index`, with its time (ms) and its generated `_id` if any.
    pub(crate) fn accept(
        &mut self,
        pushed: usize,
        index: usize,
        time: i64,
        raw: u64,
        generated_id: Option<&Bson>,
    ) {
        if !self.live {
            return;
        }
        if std::mem::take(&mut self.differs)
            || pushed != self.names.len()
            || *self.generated.get_or_insert(generated_id.is_some()) != generated_id.is_some()
        {
            self.live = false;
            return;
        }
        self.defined = true;
        let mut raw = raw;
        if let Some(id) = generated_id {
            let first = self.ids.is_empty();
            push_value(&mut self.ids, id, &mut self.scratch);
            if first {
                self.ids.reserve_rows(self.times.capacity());
            }
            raw += element_size("_id", id);
        }
        self.times.push(time);
        self.indices.push(index);
        self.raw.push(raw);
    }

    /// The columns of the measurements of `groups` (each group in time order), in that
    /// order: what [`MeasurementColumns::from_measurements`] builds from them, read from the
    /// values kept. `None` when the documents did not all list the same fields, or when a
    /// measurement of `groups` was not kept.
    pub(crate) fn into_columns(
        self,
        groups: &[Vec<Measurement<'_>>],
    ) -> Option<MeasurementColumns> {
        if !self.live || !self.defined {
            return None;
        }
        // Each kept document's row, by input position.
        let last = self.indices.last().copied()?;
        let mut row_of = vec![u32::MAX; last + 1];
        for (row, &index) in self.indices.iter().enumerate() {
            *row_of.get_mut(index)? = u32::try_from(row).ok()?;
        }
        let n: usize = groups.iter().map(Vec::len).sum();
        let mut order = Vec::with_capacity(n);
        let mut ranges = Vec::with_capacity(groups.len());
        for group in groups {
            let start = order.len();
            for m in group {
                let row = row_of.get(m.index).copied().filter(|&r| r != u32::MAX)?;
                order.push(row);
            }
            ranges.push(start..order.len());
        }
        let mut fields: Vec<(String, Column)> = Vec::with_capacity(self.names.len() + 1);
        if self.generated == Some(true) {
            fields.push(("_id".to_owned(), self.ids.gather(&order)));
        }
        fields.extend(
            self.names
                .into_iter()
                .zip(&self.columns)
                .map(|(name, column)| (name, column.gather(&order))),
        );
        let names_bytes: u64 = fields.iter().map(|(name, _)| name.len() as u64 + 1).sum();
        let present = u32::try_from(fields.len()).ok()?;
        let mut starts = Vec::with_capacity(ranges.len() * fields.len());
        let mut at: Vec<_> = fields.iter().map(|_| Default::default()).collect();
        for range in &ranges {
            for ((_, column), at) in fields.iter().zip(&mut at) {
                *at = column.row_start_after(*at, range.start);
                starts.push(*at);
            }
        }
        Some(MeasurementColumns {
            times: pick(&order, &self.times),
            indices: pick(&order, &self.indices),
            raw: pick(&order, &self.raw),
            names: vec![names_bytes; n],
            present: vec![present; n],
            groups: ranges,
            starts,
            fields,
        })
    }
}

/// `values` at the positions `order`, in that order.
fn pick<T: Copy + Default>(order: &[u32], values: &[T]) -> Vec<T> {
    order
        .iter()
        .map(|&r| values.get(r as usize).copied().unwrap_or_default())
        .collect()
}

#[cfg(test)]
mod tests {
    use bson::{Bson, DateTime, Document, doc, oid::ObjectId};
    use proptest::prelude::*;
    use tscoll_catalog::MeasurementColumns;

    use crate::{Database, DatabaseOptions, TimeseriesOptions};

    /// A document: `(has _id, meta position 0..3, field order flipped, bad time, x, s)`.
    type Spec = (bool, u8, bool, bool, Option<f64>, Option<u8>);

    fn document(i: usize, spec: &Spec) -> Document {
        let &(has_id, meta_at, flipped, bad_time, x, s) = spec;
        let mut d = Document::new();
        let mut fields: Vec<(&str, Bson)> = Vec::new();
        if has_id {
            fields.push(("_id", Bson::Int64(i as i64)));
        }
        fields.push(if bad_time {
            ("t", Bson::String("no date".into()))
        } else {
            (
                "t",
                Bson::DateTime(DateTime::from_millis(((i * 7) % 11) as i64 * 1000)),
            )
        });
        let mut rest: Vec<(&str, Bson)> = Vec::new();
        if let Some(x) = x {
            rest.push(("x", Bson::Double(x)));
        }
        if let Some(s) = s {
            rest.push(("s", Bson::String(format!("v{s}"))));
        }
        if flipped {
            rest.reverse();
        }
        fields.extend(rest);
        let meta = ("m", Bson::Document(doc! { "h": (i % 3) as i32 }));
        fields.insert(usize::from(meta_at).min(fields.len()), meta);
        for (k, v) in fields {
            d.insert(k, v);
        }
        d
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The columns built while validating are those `from_measurements` builds from the
        /// validated groups: the same fields, values, sizes and group starts, and none when
        /// the documents do not all list the same fields in the same order.
        #[test]
        fn columns_built_while_validating_are_those_of_the_groups(
            specs in proptest::collection::vec(
                (
                    proptest::bool::weighted(0.9),
                    0u8..4,
                    proptest::bool::weighted(0.1),
                    proptest::bool::weighted(0.1),
                    proptest::option::weighted(0.95, -3.0f64..3.0),
                    proptest::option::weighted(0.95, 0u8..4),
                ),
                0..40,
            ),
            ordered in proptest::bool::ANY,
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
            let coll = db
                .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
                .expect("create");
            let docs: Vec<Document> = specs.iter().enumerate().map(|(i, s)| document(i, s)).collect();
            let ids: Vec<Bson> = docs
                .iter()
                .filter(|d| !d.contains_key("_id"))
                .map(|_| Bson::ObjectId(ObjectId::new()))
                .collect();
            let v = coll.inner.validate(&docs, &ids, ordered, true);
            // A call that mixes generated and given `_id`s is staged one by one.
            let accepted: Vec<bool> =
                v.groups.iter().flatten().map(|m| m.generated_id.is_some()).collect();
            let mixed = accepted.iter().any(|&g| g) && accepted.iter().any(|&g| !g);
            let want = if mixed {
                None
            } else {
                MeasurementColumns::from_measurements(&v.groups, Some("m"))
            };
            prop_assert_eq!(v.columns, want);
            prop_assert!(coll.inner.validate(&docs, &ids, ordered, false).columns.is_none());
        }
    }
}
