//! Last point per series (SPEC R-14.4.7 "last-point queries"): for each series, the
//! measurement with the greatest time, reading O(series) buckets instead of O(buckets).
//!
//! The meta+time index is read backwards, one hash prefix at a time: the newest entry of a
//! prefix is found with a reverse scan, and the scan then jumps to the previous prefix with a
//! new reverse range ending before it. Within a series, buckets may overlap in time (a
//! measurement older than its bucket's start goes to another bucket), so earlier buckets are
//! looked at while their possible rows (`min time + span`) could still beat the best time
//! found; their control records (`control.max`) usually settle it, and only the bucket
//! holding the best measurement is unpacked. A series' buckets, stored ones merged with
//! those in memory, go through the in-order walk every query kind makes ([`super::walk`])
//! as they are read from the index, with a collector ([`Latest`]) that closes the walk once
//! no earlier bucket can win. Series that share a meta hash (a collision
//! record says so, `docs/keys.md`) have the entries of their prefix grouped by meta bytes.

use std::collections::HashMap;

use bson::{Bson, Document};
use tscoll_catalog::BucketId;
use tscoll_catalog::value::compare;

use tscoll_codec::Bucket;

use super::QueryStats;
use super::control_view::ControlView;
use super::memory::{MemoryView, Reader};
use super::plan::{Candidate, Plan, Series, Verdict, prefix_hashes};
use super::rowfilter::RowFilter;
use super::unpack::{SegmentView, Shape, build_row};
use super::walk::{Collector, Take};
use crate::collection::Collection;
use crate::error::Result;
use crate::mql::expr::EvalError;
use crate::storage::IndexRow;
use crate::storage::keys::{hash_prefix, hash_time_range};

pub(crate) fn last_points(coll: &Collection, filter: &Document) -> Result<Vec<Document>> {
    coll.last_points_with_stats(filter).map(|(docs, _)| docs)
}

pub(crate) fn last_points_with_stats(
    coll: &Collection,
    filter: &Document,
) -> Result<(Vec<Document>, QueryStats)> {
    let mut stats = QueryStats::default();
    let plan = Plan::new(&coll.inner, filter)?;
    let memory = MemoryView::capture(&coll.inner, &plan, &|_| true);
    let docs = Reader::new(&coll.inner, &memory).last_points(&plan, &mut stats)?;
    Ok((docs, stats))
}

/// One index entry.
struct Entry {
    id: BucketId,
    min_time: i64,
    hash: u64,
    meta: fjall::Slice,
}

/// The best measurement of a series so far.
enum Best {
    /// The latest measurement of a bucket that matches whole: its time is `control.max`.
    Bucket {
        id: BucketId,
        time: i64,
        /// The bucket's rows are in time order (`control`).
        sorted: bool,
        /// The bucket's fields (`control`).
        fields: Vec<String>,
    },
    /// A measurement found by unpacking a bucket that did not match whole.
    Row { time: i64, doc: Document },
}

impl Best {
    fn time(&self) -> i64 {
        match self {
            Best::Bucket { time, .. } | Best::Row { time, .. } => *time,
        }
    }
}

/// The last point of one series, collected by the in-order walk ([`super::walk`]) from its
/// buckets newest min time first: a bucket that matches whole offers its `control.max`
/// (its row is read at the end, from the winner only), one that does not is unpacked for
/// its latest matching row, and the walk closes once no earlier bucket can hold a later
/// measurement.
struct Latest<'a, 'r> {
    reader: &'a Reader<'r>,
    plan: &'a Plan,
    rows: &'a RowFilter<'a>,
    meta: Option<&'a Bson>,
    /// The candidate the walk is at.
    current: Option<BucketId>,
    best: Option<Best>,
}

impl Collector for Latest<'_, '_> {
    fn closed(&mut self, cand: &Candidate) -> bool {
        self.current = Some(cand.id);
        self.best
            .as_ref()
            .is_some_and(|b| self.plan.last_possible_time(cand.min_time) <= b.time())
    }

    fn control(
        &mut self,
        _k: usize,
        control: &ControlView<'_>,
        verdict: Verdict,
        stats: &mut QueryStats,
    ) -> Result<Take> {
        if self
            .best
            .as_ref()
            .is_some_and(|b| control.max_time <= b.time())
        {
            stats.buckets_skipped += 1;
            return Ok(Take::Done);
        }
        if verdict != Verdict::Whole {
            return Ok(Take::Unpack);
        }
        if let Some(id) = self.current {
            self.best = Some(Best::Bucket {
                id,
                time: control.max_time,
                sorted: control.sorted,
                fields: control.field_names().map(str::to_owned).collect(),
            });
        }
        Ok(Take::Done)
    }

    fn reads(&self, _field: &str, _whole: bool) -> bool {
        true
    }

    fn bucket(
        &mut self,
        _k: usize,
        segments: Vec<Bucket>,
        control: Option<(&ControlView<'_>, Verdict)>,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let (Some(id), Some((control, _))) = (self.current, control) else {
            return Ok(());
        };
        let time_field = self.plan.spec.time_field.as_str();
        let corrupt = |r| self.reader.corrupt_data(&id, r);
        let mut views = Vec::with_capacity(segments.len());
        for seg in &segments {
            views.push(SegmentView::lazy(seg, time_field).map_err(corrupt)?);
        }
        let mut found: Option<(usize, usize, i64)> = None;
        for (s, view) in views.iter_mut().enumerate() {
            let bound = self.rows.bind(view, time_field, self.meta);
            let view = &*view;
            stats.rows_examined += view.rows() as u64;
            stats.rows_filtered += view.rows() as u64;
            for row in 0..view.rows() {
                let t = view.times[row];
                if found.is_some_and(|(_, _, b)| t < b) {
                    continue;
                }
                if bound
                    .matches(view, row)
                    .map_err(|e| e.into_error("", corrupt))?
                {
                    found = Some((s, row, t));
                }
            }
        }
        let Some((s, row, time)) = found else {
            return Ok(());
        };
        if self.best.as_ref().is_none_or(|b| time > b.time()) {
            let fields: Vec<&str> = control.field_names().collect();
            let doc = shape_row(self.plan, &views[s], row, &fields, self.meta).map_err(corrupt)?;
            self.best = Some(Best::Row { time, doc });
        }
        Ok(())
    }
}

/// The candidates of one series, newest min time first: its stored entries (as the index
/// scan yields them) merged with its buckets in memory, a bucket in both taken once.
struct Newest<I> {
    stored: I,
    /// The next stored entry, read ahead.
    next_stored: Option<Entry>,
    /// The series' buckets in memory, oldest first.
    memory: Vec<Entry>,
    /// Whether stored entries are counted as index entries scanned (`scanned`).
    count: bool,
    scanned: u64,
}

impl<I: Iterator<Item = Result<Entry>>> Iterator for Newest<I> {
    type Item = Result<Candidate>;

    fn next(&mut self) -> Option<Result<Candidate>> {
        if self.next_stored.is_none() {
            match self.stored.next() {
                Some(Ok(e)) => {
                    self.scanned += u64::from(self.count);
                    self.next_stored = Some(e);
                }
                Some(Err(e)) => return Some(Err(e)),
                None => {}
            }
        }
        let newer_in_memory = match (&self.next_stored, self.memory.last()) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(s), Some(m)) => (m.min_time, m.id) >= (s.min_time, s.id),
        };
        let e = if newer_in_memory {
            let m = self.memory.pop()?;
            if self.next_stored.as_ref().is_some_and(|s| s.id == m.id) {
                self.next_stored = None;
            }
            m
        } else {
            self.next_stored.take()?
        };
        Some(Ok(Candidate {
            id: e.id,
            min_time: e.min_time,
            series: 0,
        }))
    }
}

/// The query's state.
struct Scan<'p> {
    plan: &'p Plan,
    rows: RowFilter<'p>,
    bounds: (i64, i64),
    /// `(meta value, last point)` per series.
    out: Vec<(Option<Bson>, Document)>,
    /// The entries of the buckets in memory by series (meta bytes), oldest first; a series'
    /// are taken when its stored entries are read, the rest read at the end.
    memory: HashMap<Vec<u8>, Vec<Entry>>,
}

impl Reader<'_> {
    fn last_points(&self, plan: &Plan, stats: &mut QueryStats) -> Result<Vec<Document>> {
        let secondary = self.secondary_candidates(&plan.filter)?;
        let Some(bounds) = plan.min_time_bounds() else {
            return Ok(Vec::new());
        };
        let mut memory: HashMap<Vec<u8>, Vec<Entry>> = HashMap::new();
        for (id, m) in self.memory().iter() {
            memory
                .entry(m.key().bytes.clone())
                .or_default()
                .push(Entry {
                    id: *id,
                    min_time: m.min_time(),
                    hash: m.key().hash,
                    meta: fjall::Slice::from(&m.key().bytes[..]),
                });
        }
        for entries in memory.values_mut() {
            entries.sort_unstable_by_key(|e| (e.min_time, e.id));
        }
        let mut scan = Scan {
            plan,
            rows: RowFilter::new(&plan.filter, &plan.spec.time_field),
            bounds,
            out: Vec::new(),
            memory,
        };
        let indexes = self.indexes();
        let prefix_usable = !indexes.default_dropped && !indexes.default_hidden;
        if let Some(entries) = secondary {
            stats.index_entries_scanned += entries.len() as u64;
            let entries = entries.into_iter().map(|e| Entry {
                id: e.id,
                min_time: e.min_time,
                hash: e.key.hash,
                meta: fjall::Slice::from(&e.key.bytes[..]),
            });
            self.grouped(&mut scan, entries, stats)?;
        } else if !prefix_usable {
            // without the default index (or with it hidden), read the whole bucket
            // directory.
            let mut entries = Vec::new();
            for item in self.store.index_scan_all() {
                if let Some(e) = index_item(item)? {
                    stats.index_entries_scanned += 1;
                    entries.push(e);
                }
            }
            self.grouped(&mut scan, entries.into_iter(), stats)?;
        } else if let Some(hashes) = prefix_hashes(plan) {
            for hash in hashes {
                self.one_hash(&mut scan, hash, stats)?;
            }
        } else {
            self.every_hash(&mut scan, stats)?;
        }
        // Series with buckets in memory whose stored entries were not read.
        let rest: Vec<Entry> = std::mem::take(&mut scan.memory)
            .into_values()
            .flatten()
            .collect();
        if !rest.is_empty() {
            self.grouped(&mut scan, rest.into_iter(), stats)?;
        }
        let mut out = scan.out;
        out.sort_by(|(a, _), (b, _)| match (a, b) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(a), Some(b)) => compare(a, b),
        });
        stats.rows_returned = out.len() as u64;
        Ok(out.into_iter().map(|(_, d)| d).collect())
    }

    /// Every hash prefix, newest first, jumping from one prefix to the previous one.
    fn every_hash(&self, scan: &mut Scan<'_>, stats: &mut QueryStats) -> Result<()> {
        let mut upper: Option<[u8; 8]> = None;
        loop {
            let mut iter = match upper {
                None => self.store.index_scan_all().rev(),
                Some(p) => self.store.index_scan(..p).rev(),
            };
            let mut first = None;
            for item in iter.by_ref() {
                if let Some(e) = index_item(item)? {
                    first = Some(e);
                    break;
                }
            }
            let Some(first) = first else {
                return Ok(());
            };
            let hash = first.hash;
            upper = Some(hash_prefix(hash));
            let (lo, hi) = scan.bounds;
            if self.store.hash_shared(hash)? || first.min_time > hi {
                drop(iter);
                self.one_hash(scan, hash, stats)?;
                continue;
            }
            // Continue the same scan through this prefix.
            let rest = iter.map(index_item).filter_map(Result::transpose);
            let entries = std::iter::once(Ok(first))
                .chain(rest)
                .take_while(|e| match e {
                    Ok(e) => e.hash == hash && e.min_time >= lo,
                    Err(_) => true,
                });
            self.series_last(scan, entries, true, stats)?;
        }
    }

    /// The series of one hash prefix.
    fn one_hash(&self, scan: &mut Scan<'_>, hash: u64, stats: &mut QueryStats) -> Result<()> {
        let (lo, hi) = scan.bounds;
        let (a, b) = hash_time_range(hash, lo, hi);
        let range = self.store.index_scan(&a[..]..=&b[..]);
        if self.store.hash_shared(hash)? {
            let mut entries = Vec::new();
            for item in range {
                if let Some(e) = index_item(item)? {
                    stats.index_entries_scanned += 1;
                    entries.push(e);
                }
            }
            return self.grouped(scan, entries.into_iter(), stats);
        }
        let entries = range.rev().map(index_item).filter_map(Result::transpose);
        self.series_last(scan, entries, true, stats)
    }

    /// Entries in any order: grouped by series, each group newest first.
    fn grouped(
        &self,
        scan: &mut Scan<'_>,
        entries: impl Iterator<Item = Entry>,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let mut groups: Vec<Vec<Entry>> = Vec::new();
        let mut by_meta: HashMap<fjall::Slice, usize> = HashMap::new();
        let (lo, hi) = scan.bounds;
        for e in entries.filter(|e| e.min_time >= lo && e.min_time <= hi) {
            let g = *by_meta.entry(e.meta.clone()).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(e);
        }
        for mut group in groups {
            group.sort_unstable_by_key(|e| std::cmp::Reverse((e.min_time, e.id)));
            self.series_last(scan, group.into_iter().map(Ok), false, stats)?;
        }
        Ok(())
    }

    /// The last point of one series from its entries, newest min time first; `count` = the
    /// entries are read from the index as they are consumed (counted here).
    fn series_last(
        &self,
        scan: &mut Scan<'_>,
        entries: impl Iterator<Item = Result<Entry>>,
        count: bool,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let plan = scan.plan;
        let mut entries = entries.fuse();
        let Some(first) = entries.next().transpose()? else {
            return Ok(());
        };
        stats.index_entries_scanned += u64::from(count);
        let series = Series::new(first.meta.to_vec(), first.hash);
        let meta = series.meta(self)?;
        if plan.filter.has_meta_preds()
            && !plan
                .filter
                .try_matches_meta(meta)
                .map_err(EvalError::into_query_error)?
        {
            return Ok(());
        }
        let mut newest = Newest {
            stored: entries,
            next_stored: Some(first),
            memory: scan.memory.remove(&series.bytes).unwrap_or_default(),
            count,
            scanned: 0,
        };
        let mut latest = Latest {
            reader: self,
            plan,
            rows: &scan.rows,
            meta,
            current: None,
            best: None,
        };
        self.collect_in_order(plan, &mut newest, false, &mut latest, stats)?;
        stats.index_entries_scanned += newest.scanned;
        let Some(best) = latest.best else {
            return Ok(());
        };
        let doc = match best {
            Best::Row { doc, .. } => doc,
            Best::Bucket {
                id,
                time,
                sorted,
                fields,
            } => {
                let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
                match self.row_at(plan, &id, time, sorted, &fields, meta, stats)? {
                    Some(doc) => doc,
                    None => return Ok(()), // the bucket was removed meanwhile
                }
            }
        };
        scan.out.push((meta.cloned(), doc));
        Ok(())
    }

    /// The (last stored) measurement at `time` (the bucket's `control.max`) of a bucket: for a
    /// time-sorted bucket only its last segment is decoded. `None` when the bucket is gone.
    #[expect(clippy::too_many_arguments, reason = "one bucket's context")]
    fn row_at(
        &self,
        plan: &Plan,
        id: &BucketId,
        time: i64,
        sorted: bool,
        fields: &[&str],
        meta: Option<&Bson>,
        stats: &mut QueryStats,
    ) -> Result<Option<Document>> {
        let time_field = plan.spec.time_field.as_str();
        let corrupt = |r| self.corrupt_data(id, r);
        if sorted && let Some(seg) = self.decode_last_segment(id, stats)? {
            let view = SegmentView::lazy(&seg, time_field).map_err(corrupt)?;
            stats.rows_examined += view.rows() as u64;
            if let Some(row) = view.times.iter().rposition(|&t| t == time) {
                return Ok(Some(
                    shape_row(plan, &view, row, fields, meta).map_err(corrupt)?,
                ));
            }
            stats.buckets_unpacked -= 1; // decoded again below
        }
        // Every segment: the row at `time`, or, if the bucket changed since its control
        // record was read (a concurrent delete), its latest row up to `time` now.
        let segments = self.decode_bucket(id, &mut |_| true, stats)?;
        let mut views = Vec::with_capacity(segments.len());
        for seg in &segments {
            views.push(SegmentView::lazy(seg, time_field).map_err(corrupt)?);
        }
        let mut latest: Option<(usize, usize, i64)> = None;
        for (s, view) in views.iter().enumerate() {
            stats.rows_examined += view.rows() as u64;
            for (row, &t) in view.times.iter().enumerate() {
                if t <= time && latest.is_none_or(|(_, _, b)| t >= b) {
                    latest = Some((s, row, t));
                }
            }
        }
        let Some((s, row, _)) = latest else {
            return Ok(None); // removed since the index was read
        };
        Ok(Some(
            shape_row(plan, &views[s], row, fields, meta).map_err(corrupt)?,
        ))
    }
}

/// A whole measurement (SPEC ).
fn shape_row(
    plan: &Plan,
    view: &SegmentView<'_>,
    row: usize,
    fields: &[&str],
    meta: Option<&Bson>,
) -> std::result::Result<Document, String> {
    let spec = &plan.spec;
    let time_field = spec.time_field.as_str();
    let shape = Shape {
        time: Some(time_field),
        meta: meta.zip(spec.meta_field.as_deref()).map(|(m, n)| (n, m)),
    };
    let cols = view.positions(fields.iter().copied().filter(|n| *n != time_field));
    build_row(view, row, shape, &cols)
}

/// One item of an index scan; `None` for a series record.
fn index_item(row: Result<IndexRow>) -> Result<Option<Entry>> {
    Ok(match row? {
        IndexRow::Bucket(item) => Some(Entry {
            id: item.id,
            min_time: item.min_time,
            hash: item.hash,
            meta: item.meta,
        }),
        IndexRow::Series { .. } => None,
    })
}
