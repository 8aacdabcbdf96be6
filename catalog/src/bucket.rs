//! An open bucket's in-memory state (SPEC) and the rollover decision (SPEC §6.3–§6.5).

use bson::{Bson, Document};
use tscoll_codec::Column;

use crate::catalog::Measurement;
use crate::key::BucketKey;
use crate::minmax::MinMax;
use crate::names::NameIndex;
use crate::options::{CatalogOptions, LARGE_MEASUREMENTS_MAX_BUCKET_SIZE};
use crate::sums::BucketSums;
use crate::sync::Arc;
use crate::value::{decimal_digits, element_size};
use crate::write_batch::WriteBatch;

/// A bucket `_id`: 4-byte big-endian seconds of the rounded min time, then 8 bytes of a
/// PRNG-seeded counter (SPEC §4.9).
pub type BucketId = [u8; 12];

/// Why a bucket stops taking measurements (SPEC §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RolloverReason {
    /// `time − minTime ≥ span`: soft close.
    TimeForward,
    /// `time < minTime`: archive.
    TimeBackward,
    /// Full by count: hard close.
    Count,
    /// Full by size: hard close.
    Size,
    /// Full by the cache-derived size: hard close.
    CachePressure,
    /// Schema change: hard close.
    SchemaChange,
}

/// What happens to a bucket that rolls over (SPEC ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RolloverAction {
    /// Leaves memory; eligible for query-based reopening.
    SoftClose,
    /// Leaves memory; an archived record allows archive-based reopening.
    Archive,
    /// Leaves memory; not archived.
    HardClose,
}

impl RolloverReason {
    /// The action of this reason (SPEC §6.3 table).
    #[must_use]
    pub fn action(self) -> RolloverAction {
        match self {
            RolloverReason::TimeForward => RolloverAction::SoftClose,
            RolloverReason::TimeBackward => RolloverAction::Archive,
            _ => RolloverAction::HardClose,
        }
    }
}

/// Registry state of a bucket (SPEC §6.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketState {
    /// Takes inserts.
    Normal,
    /// Must not take inserts; removed when its prepared batch finishes.
    Cleared,
    /// Never takes inserts again (e.g. after a decoding failure, SPEC §6.10).
    Frozen,
}

/// One data field of a bucket: its name and min/max (which is also its schema).
#[derive(Clone, Debug)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) minmax: MinMax,
}

/// Makes `control.min.<time>` the bucket's rounded min time (`min_time`, ms), as it is for
/// a bucket opened here (SPEC ); call on the time field's min/max.
pub(crate) fn set_rounded_min_time(minmax: &mut MinMax, min_time: i64) {
    if let MinMax::Scalar(s) = minmax {
        s.set_min(&Bson::DateTime(bson::DateTime::from_millis(min_time)));
    }
}

/// The names of a bucket's data fields, in first-appearance order, indexed by name once they
/// are more than a few ([`NameIndex`]). One list is shared by the buckets whose fields came in
/// the same order (most buckets of a collection, [`BucketFields::following`]): a bucket's
/// fields are the first names of its list, as many as it has min/max. A list is never changed
/// once shared; a bucket that adds a field its list does not have next gets a list of its own.
#[derive(Clone, Debug, Default)]
pub(crate) struct FieldNames {
    list: Vec<Box<str>>,
    index: NameIndex,
}

impl FieldNames {
    /// Position of field `name` in the list.
    fn position(&self, name: &str) -> Option<usize> {
        self.index.position(&self.list, |n| n, name)
    }

    /// Position of field `name`, trying the slot at `hint` first (see [`find_field`]); a
    /// match moves `hint` past it.
    pub(crate) fn find(&self, name: &str, hint: &mut usize) -> Option<usize> {
        let i = match self.list.get(*hint) {
            Some(n) if &**n == name => *hint,
            _ => self.position(name)?,
        };
        *hint = i + 1;
        Some(i)
    }

    /// Appends `name` (not already in the list).
    fn push(&mut self, name: &str) {
        self.list.push(name.into());
        self.index.pushed(&self.list, |n| n);
    }

    /// Heap bytes of the list, its names and its index.
    fn heap_bytes(&self) -> usize {
        let names: usize = self.list.iter().map(|n| n.len()).sum();
        self.list.capacity() * std::mem::size_of::<Box<str>>() + names + self.index.heap_bytes()
    }
}

/// The data fields of a bucket, in first-appearance order: their names (a prefix of a shared
/// [`FieldNames`]) and each one's min/max, which is also its schema.
#[derive(Clone, Debug, Default)]
pub(crate) struct BucketFields {
    names: Arc<FieldNames>,
    minmax: Vec<MinMax>,
}

impl BucketFields {
    /// No field yet, following `names`: while the bucket's fields come in that list's order
    /// it shares the list.
    pub(crate) fn following(names: &Arc<FieldNames>) -> Self {
        BucketFields {
            names: Arc::clone(names),
            minmax: Vec::new(),
        }
    }

    /// The list the bucket's names are a prefix of (shared with other buckets).
    pub(crate) fn shared_names(&self) -> &Arc<FieldNames> {
        &self.names
    }

    /// Whether the bucket has no field yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.minmax.is_empty()
    }

    /// Number of fields.
    pub(crate) fn len(&self) -> usize {
        self.minmax.len()
    }

    /// The fields' names, in order.
    pub(crate) fn names(&self) -> &[Box<str>] {
        self.names.list.get(..self.minmax.len()).unwrap_or_default()
    }

    /// Min/max of field `i`.
    pub(crate) fn minmax(&self, i: usize) -> Option<&MinMax> {
        self.minmax.get(i)
    }

    /// Min/max of field `i`, to update.
    pub(crate) fn minmax_mut(&mut self, i: usize) -> Option<&mut MinMax> {
        self.minmax.get_mut(i)
    }

    /// Each field's name and min/max, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &MinMax)> {
        self.names.list.iter().map(|n| &**n).zip(&self.minmax)
    }

    /// Each field's name and min/max, to update in place.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut MinMax)> {
        self.names.list.iter().map(|n| &**n).zip(&mut self.minmax)
    }

    /// Appends field `name` (not already in the bucket); returns its position. The bucket
    /// keeps sharing its list when the list's next name is `name`.
    pub(crate) fn push(&mut self, name: &str, minmax: MinMax) -> usize {
        let n = self.minmax.len();
        if self.names.list.get(n).is_none_or(|next| &**next != name) {
            match Arc::get_mut(&mut self.names) {
                Some(own) if own.list.len() == n => own.push(name),
                _ => {
                    let mut own = FieldNames::default();
                    own.list.reserve_exact(n + 1);
                    for prior in self.names() {
                        own.push(prior);
                    }
                    own.push(name);
                    self.names = Arc::new(own);
                }
            }
        }
        self.minmax.push(minmax);
        n
    }

    /// Makes room for `n` more fields, exactly.
    pub(crate) fn reserve_exact(&mut self, n: usize) {
        self.minmax.reserve_exact(n);
    }

    /// Heap bytes the fields hold besides their min/max's own: the min/max slots, and the
    /// bucket's share of its names' list (the list's bytes over the buckets sharing it).
    fn heap_bytes(&self) -> usize {
        let share = self.names.heap_bytes() / Arc::strong_count(&self.names).max(1);
        self.minmax.capacity() * std::mem::size_of::<MinMax>() + share
    }

    /// `fields` in order, following `names` as [`BucketFields::push`] does.
    pub(crate) fn from_fields(fields: Vec<Field>, names: &Arc<FieldNames>) -> Self {
        let mut out = BucketFields::following(names);
        out.minmax.reserve_exact(fields.len());
        for f in fields {
            out.push(&f.name, f.minmax);
        }
        out
    }
}

/// The in-memory state of an open bucket (SPEC ).
#[derive(Debug)]
pub(crate) struct Bucket {
    pub(crate) id: BucketId,
    pub(crate) key: Arc<BucketKey>,
    pub(crate) min_time: i64,
    pub(crate) max_time: i64,
    pub(crate) last_time: i64,
    pub(crate) count: u32,
    pub(crate) committed_count: u32,
    /// BSON bytes of the committed measurements (for compression statistics).
    pub(crate) committed_uncompressed: u64,
    pub(crate) size: u64,
    pub(crate) fields: BucketFields,
    pub(crate) sorted: bool,
    pub(crate) rollover: Option<RolloverReason>,
    pub(crate) kept_open_large: bool,
    /// Commit sequence: the number the next prepared batch of the bucket gets.
    pub(crate) next_segment: u32,
    /// Rows stored in the engine's segments (the rest are only in the write-ahead log and in
    /// `rows`).
    pub(crate) stored_count: u32,
    /// Segments stored: the number the next stored part is written as.
    pub(crate) stored_segments: u32,
    pub(crate) active: Option<Arc<WriteBatch>>,
    pub(crate) prepared: bool,
    pub(crate) state: BucketState,
    pub(crate) opened_due_to_metadata: bool,
    pub(crate) idle_seq: Option<u64>,
    pub(crate) memory: u64,
    /// The committed rows from position `rows_base` on (every row of a bucket opened here;
    /// those committed since it was reopened otherwise).
    pub(crate) rows: BucketRows,
    /// Position in the bucket of the first row of `rows`.
    pub(crate) rows_base: u32,
    /// Rows the bucket is expected to reach (the count of its series' bucket before it, 0
    /// when unknown): its columns make room for that many at their first append instead of
    /// growing by doubling.
    pub(crate) rows_hint: u32,
    /// The first row of `rows` (a position in its columns) whose values the fields'
    /// min/max may not hold yet: rows appended as runs are folded in when control is next
    /// read ([`Bucket::fold_pending`]), once for every run appended meanwhile. `None`: every
    /// row is folded.
    pub(crate) pending_from: Option<usize>,
    /// The sums of the fields over the stored rows (`..stored_count`); `None` when unknown
    /// (reopened from a control record without them).
    pub(crate) sums: Option<BucketSums>,
    /// The control state the bucket was reopened with (`None`: opened here), which
    /// [`Bucket::drop_rows_from`] starts from when it rebuilds control without aborted rows.
    pub(crate) reopened: Option<Box<ReopenedControl>>,
}

/// A reopened bucket's control state as stored: what its rows before `rows_base` contribute.
#[derive(Debug)]
pub(crate) struct ReopenedControl {
    /// `control.min`/`max` of the stored rows, in field order.
    pub(crate) fields: Vec<Field>,
    /// `control.max.<time>` of the stored rows (ms).
    pub(crate) max_time: i64,
    /// Whether the stored rows are in time order.
    pub(crate) sorted: bool,
}

/// The rows of an open bucket held in memory, column by column (`docs/architecture.md`, write
/// path: open buckets are in memory), counted in the catalog's memory usage (SPEC ).
/// Staging appends a measurement's values here at once; the rows past the bucket's committed
/// count belong to its prepared and active batches, in that order, and go when their batch is
/// aborted. When the bucket leaves memory the engine encodes its blob from these columns,
/// without reading back and decoding what it stored before.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BucketRows {
    /// A column per field, in the bucket's field order (the order of `control.min`): column
    /// `i` holds the values of the bucket's field `i` (its name is the field's, not repeated
    /// here), from the bucket's row `rows_base` on. A column may be shorter than the bucket's
    /// rows: its field has no value after its last one. There may be fewer columns than
    /// fields: the fields past the last column have no value in the rows held here (a
    /// reopened bucket's stored fields, until a row gives them one).
    pub(crate) columns: Vec<Column>,
}

impl BucketRows {
    /// The column of field `i` of a bucket of `fields` fields, made to hold every row before
    /// `row` (missing values where the field had none). Creates the columns of fields `..=i`.
    pub(crate) fn column_at(&mut self, fields: usize, i: usize, row: usize) -> &mut Column {
        if self.columns.len() <= i {
            let missing = fields.max(i + 1) - self.columns.len();
            if self.columns.is_empty() {
                // Room for a column per field the bucket has, not a doubling of the vector.
                self.columns.reserve_exact(missing);
            } else {
                // Fields added one at a time later: amortized growth, not one slot per field.
                self.columns.reserve(missing);
            }
        }
        while self.columns.len() <= i {
            self.columns.push(Column::new());
        }
        let c = &mut self.columns[i];
        if c.len() < row {
            c.push_missing_n(row - c.len());
        }
        c
    }

    /// Each column with its name, the name of the bucket's field of its position (`names`).
    pub(crate) fn named<'a>(
        &'a self,
        names: &'a [Box<str>],
    ) -> impl Iterator<Item = (&'a str, &'a Column)> + 'a {
        names.iter().map(|n| &**n).zip(&self.columns)
    }

    /// Rows `from..to` (of a bucket whose fields are named `names`), each column as long as
    /// the rows; fields with no value in them are left out.
    pub(crate) fn slice(
        &self,
        names: &[Box<str>],
        from: usize,
        to: usize,
    ) -> Vec<(String, Column)> {
        self.slice_where(names, from, to, &mut |_| true)
    }

    /// As [`BucketRows::slice`], of the columns `keep` accepts only.
    pub(crate) fn slice_where(
        &self,
        names: &[Box<str>],
        from: usize,
        to: usize,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Vec<(String, Column)> {
        let mut out = Vec::with_capacity(self.columns.len());
        for (name, c) in self.named(names) {
            if !keep(name) {
                continue;
            }
            let mut part = c.rows(from, to);
            if part.all_missing() {
                continue;
            }
            part.push_missing_n((to - from).saturating_sub(part.len()));
            out.push((name.to_owned(), part));
        }
        out
    }

    /// Keeps the first `rows` rows (the others belonged to a batch that was aborted).
    pub(crate) fn truncate(&mut self, rows: usize) {
        for c in &mut self.columns {
            c.truncate(rows);
        }
    }

    /// Bytes the columns hold.
    pub(crate) fn heap_bytes(&self) -> usize {
        let columns: usize = self.columns.iter().map(Column::heap_bytes).sum();
        self.columns.capacity() * std::mem::size_of::<Column>() + columns
    }
}

/// What placing a measurement in a bucket would do: the classic estimate's increment
/// (SPEC §6.4, bytes) and whether every field is schema-compatible (SPEC §5).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Assessment {
    pub(crate) delta: u64,
    pub(crate) compatible: bool,
    /// The increment `m` alone would make in a new bucket (every field new), for the
    /// 16 MiB check (SPEC ).
    pub(crate) alone: u64,
}

/// Assesses measurement `m` against `bucket` (`None`: a new, empty bucket) in one pass over
/// its fields; the meta field is left out.
pub(crate) fn assess(
    bucket: Option<&Bucket>,
    m: &Measurement<'_>,
    meta_field: Option<&str>,
) -> Assessment {
    let n = bucket.map_or(0, |b| u64::from(b.count));
    let digits = decimal_digits(n);
    let empty = BucketFields::default();
    let fields = bucket.map_or(&empty, |b| &b.fields);
    let mut out = Assessment {
        delta: 0,
        compatible: true,
        alone: 0,
    };
    let mut hint = 0;
    for (name, v) in m.fields() {
        if Some(name) == meta_field {
            continue;
        }
        let size = element_size(name, v);
        out.alone += 12 + 3 * size;
        match find_field(fields, name, &mut hint) {
            Some(i) => {
                out.compatible =
                    out.compatible && fields.minmax(i).is_some_and(|f| f.compatible(v));
            }
            None => out.delta += 12 + name.len() as u64 + 2 * size,
        }
        out.delta += size - (name.len() as u64 + 1) + digits + 1;
    }
    out
}

/// Position of field `name` in `fields`. The slot after the previous match (`hint`) is tried
/// first: measurements from one source list their fields in one order, so a lookup is
/// usually one comparison; otherwise the bucket's index finds it. A match moves `hint` past
/// it.
pub(crate) fn find_field(fields: &BucketFields, name: &str, hint: &mut usize) -> Option<usize> {
    // The shared list's position, when it is one of the bucket's own fields.
    let mut next = *hint;
    let i = fields
        .names
        .find(name, &mut next)
        .filter(|&i| i < fields.len())?;
    *hint = next;
    Some(i)
}

/// Outcome of the size rule (SPEC §6.5).
pub(crate) enum SizeVerdict {
    Fits,
    KeepOpenLarge,
    Roll(RolloverReason),
}

/// The cache-derived size limit (SPEC §6.6).
pub(crate) fn derived_max_size(options: &CatalogOptions, active_buckets: u64) -> u64 {
    if active_buckets == 0 {
        return i32::MAX as u64;
    }
    (options.cache_size_bytes / (2 * active_buckets))
        .min(i32::MAX as u64)
        .max(options.bucket_min_size)
}

impl Bucket {
    /// The bucket's active batch (SPEC §7.1), created when it has none.
    pub(crate) fn active_batch(&mut self, stripe_no: usize) -> Arc<WriteBatch> {
        match &self.active {
            Some(b) => Arc::clone(b),
            None => {
                let b = Arc::new(WriteBatch::new(self.id, Arc::clone(&self.key), stripe_no));
                self.active = Some(Arc::clone(&b));
                b
            }
        }
    }

    pub(crate) fn size_verdict(
        &self,
        delta: u64,
        options: &CatalogOptions,
        derived: u64,
    ) -> SizeVerdict {
        let eff_max = options.bucket_max_size.min(derived);
        let ceiling = LARGE_MEASUREMENTS_MAX_BUCKET_SIZE.min(derived);
        let total = self.size + delta;
        if total <= eff_max {
            SizeVerdict::Fits
        } else if self.count < options.bucket_min_count {
            if total > ceiling {
                SizeVerdict::Roll(if ceiling < LARGE_MEASUREMENTS_MAX_BUCKET_SIZE {
                    RolloverReason::CachePressure
                } else {
                    RolloverReason::Size
                })
            } else {
                SizeVerdict::KeepOpenLarge
            }
        } else if eff_max == options.bucket_max_size {
            SizeVerdict::Roll(RolloverReason::Size)
        } else {
            SizeVerdict::Roll(RolloverReason::CachePressure)
        }
    }

    /// Makes room for `n` fields and their columns, exactly (a new bucket, before its first
    /// measurement's fields are added).
    pub(crate) fn reserve_fields(&mut self, n: usize) {
        self.fields.reserve_exact(n);
        self.rows.columns.reserve_exact(n);
    }

    /// Folds the rows appended as runs since control was last read into the fields'
    /// min/max ([`Bucket::pending_from`]), column by column. Min/max do not depend on the
    /// order values are folded in but for ties of values of different types (first writer
    /// wins, SPEC ), so a value folded one at a time comes after this.
    pub(crate) fn fold_pending(&mut self) {
        let Some(from) = self.pending_from.take() else {
            return;
        };
        for ((_, minmax), column) in self.fields.iter_mut().zip(&self.rows.columns) {
            if column.len() > from {
                let lanes = column.row_lanes_from_end(from, column.len());
                minmax.update_rows(column, &lanes);
            }
        }
    }

    /// `control.min` and `control.max` documents (SPEC §4.3), fields in first-appearance order
    /// (pending rows folded in first).
    pub(crate) fn control_min_max(&mut self) -> (Document, Document) {
        self.fold_pending();
        let mut min = Document::new();
        let mut max = Document::new();
        for (name, minmax) in self.fields.iter() {
            min.insert(name, minmax.min());
            max.insert(name, minmax.max());
        }
        (min, max)
    }

    /// Drops the rows from position `end` on (those of aborted batches) and brings the
    /// control state back to the rows kept ([`Bucket::control_through`]): a field only the
    /// dropped rows held leaves. The size estimate keeps the dropped rows' bytes (it only
    /// brings the bucket's rollover forward).
    pub(crate) fn drop_rows_from(&mut self, end: u32, time_field: &str) {
        if end >= self.count || end < self.rows_base {
            return;
        }
        let kept = self.control_through(end, time_field);
        self.count = end;
        self.rows.truncate((end - self.rows_base) as usize);
        let mut columns = std::mem::take(&mut self.rows.columns).into_iter();
        let mut fields = BucketFields::following(self.fields.shared_names());
        for field in kept.fields {
            // Column `i` holds field `i`.
            let column = columns.next();
            let Some(field) = field else {
                continue;
            };
            fields.push(&field.name, field.minmax);
            if let Some(column) = column {
                self.rows.columns.push(column);
            }
        }
        self.fields = fields;
        // Rebuilt from the rows kept: nothing is pending.
        self.pending_from = None;
        if let Some(last) = kept.last_time {
            self.last_time = last;
            self.max_time = kept.max_time;
        }
        self.sorted = kept.sorted;
    }

    /// The control state of the bucket's first `end` rows (`rows_base ≤ end ≤ count`), rebuilt
    /// from the stored state the bucket was reopened with and the rows it holds in memory, in
    /// their order: what staging only those rows would have left. Per field of the bucket, in
    /// order, its min/max (`None` when only later rows hold it).
    fn control_through(&self, end: u32, time_field: &str) -> ControlThrough {
        let kept = end.saturating_sub(self.rows_base) as usize;
        let base = self.reopened.as_deref();
        let mut max_time = base.map_or(i64::MIN, |b| b.max_time);
        let mut last_time = base.map(|b| b.max_time);
        let mut sorted = base.is_none_or(|b| b.sorted);
        let mut fields = Vec::with_capacity(self.fields.len());
        for (i, (name, _)) in self.fields.iter().enumerate() {
            let mut minmax = base.and_then(|b| b.fields.get(i)).map(|f| f.minmax.clone());
            if let Some(c) = self.rows.columns.get(i) {
                for v in c.iter_rows(0, kept.min(c.len())) {
                    let Ok(Some(v)) = crate::value::to_bson(v) else {
                        continue;
                    };
                    if name == time_field
                        && let Bson::DateTime(t) = &v
                    {
                        let t = t.timestamp_millis();
                        sorted &= last_time.is_none_or(|last| t >= last);
                        last_time = Some(t);
                        max_time = max_time.max(t);
                    }
                    match &mut minmax {
                        Some(m) => m.update(&v),
                        None => minmax = Some(MinMax::new(&v)),
                    }
                }
            }
            fields.push(minmax.map(|minmax| {
                let mut field = Field {
                    name: name.to_owned(),
                    minmax,
                };
                if base.is_none() && field.name == time_field {
                    set_rounded_min_time(&mut field.minmax, self.min_time);
                }
                field
            }));
        }
        ControlThrough {
            fields,
            max_time,
            last_time,
            sorted,
        }
    }

    /// The control state of the committed rows, for a part to store: `control.min`,
    /// `control.max`, the max time (ms) and sortedness. While a batch is staged the bucket's
    /// own state holds its rows too (staging updates it), so then it is rebuilt from the
    /// committed rows ([`Bucket::control_through`]); `time_field` is asked for only then.
    pub(crate) fn committed_control(
        &mut self,
        time_field: impl FnOnce() -> String,
    ) -> (ControlMinMax, i64, bool) {
        if self.count <= self.committed_count {
            self.fold_pending();
            return (
                ControlMinMax(self.fields.clone()),
                self.max_time,
                self.sorted,
            );
        }
        let kept = self.control_through(self.committed_count, &time_field());
        let fields = kept.fields.into_iter().flatten().collect();
        let fields = BucketFields::from_fields(fields, self.fields.shared_names());
        let max_time = if kept.last_time.is_some() {
            kept.max_time
        } else {
            self.max_time
        };
        (ControlMinMax(fields), max_time, kept.sorted)
    }

    /// Recomputes the bytes this bucket holds (SPEC ), returning the new value.
    pub(crate) fn measure_memory(&mut self) -> u64 {
        let reopened = self.reopened.as_ref().map_or(0, |r| {
            r.fields
                .iter()
                .map(|f| std::mem::size_of::<Field>() + f.name.capacity() + f.minmax.heap_bytes())
                .sum::<usize>()
        });
        let fields = reopened
            + self.fields.heap_bytes()
            + self
                .fields
                .iter()
                .map(|(_, minmax)| minmax.heap_bytes())
                .sum::<usize>();
        let rows = self.rows.heap_bytes();
        // The statistics of a reopened bucket's stored rows (empty for a new bucket until it
        // is stored).
        let sums = self.sums.as_ref().map_or(0, |s| {
            s.fields.capacity() * std::mem::size_of::<Option<crate::sums::FieldSums>>()
        });
        // The bucket itself, in its stripe's map (a slot and its control bytes), beside what
        // its fields and rows hold.
        let slot = std::mem::size_of::<(BucketId, Bucket)>() + 16;
        self.memory = (slot + self.key.bytes.len() + fields + rows + sums) as u64;
        self.memory
    }

    /// The sums of the fields over rows `..count` (the stored ones and those after them in
    /// `rows`); `None` when unknown.
    pub(crate) fn sums_through(&self, count: u32) -> Option<BucketSums> {
        let mut sums = self.sums.clone()?;
        let from = self.stored_count.saturating_sub(self.rows_base) as usize;
        let to = count.saturating_sub(self.rows_base) as usize;
        if to > from {
            sums.add_rows(&self.rows.columns, from, to);
        }
        Some(sums)
    }

    /// Whether the bucket has uncommitted or preparing batches.
    pub(crate) fn has_pending(&self) -> bool {
        self.active.is_some() || self.prepared
    }
}

/// `control.min` and `control.max` of a bucket (SPEC §4.3) as its fields' min/max, in field
/// order: a part leaving for storage holds them so, not as documents (two documents of a
/// dozen fields take about 2.5 KB, a min/max 32 bytes), and they become documents when its
/// control record is written.
#[derive(Clone, Debug, Default)]
pub struct ControlMinMax(BucketFields);

impl ControlMinMax {
    /// `control.min`: each field's minimum, in field order.
    #[must_use]
    pub fn min(&self) -> Document {
        self.0
            .iter()
            .map(|(n, m)| (n.to_owned(), m.min()))
            .collect()
    }

    /// `control.max`: each field's maximum, in field order.
    #[must_use]
    pub fn max(&self) -> Document {
        self.0
            .iter()
            .map(|(n, m)| (n.to_owned(), m.max()))
            .collect()
    }

    /// Number of fields.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no field.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for ControlMinMax {
    fn eq(&self, other: &Self) -> bool {
        self.0.iter().eq(other.0.iter())
    }
}

/// The control state of a bucket's first rows ([`Bucket::control_through`]).
struct ControlThrough {
    /// Per field of the bucket, in order: its min/max over those rows, `None` when they do
    /// not hold it.
    fields: Vec<Option<Field>>,
    /// The max time (ms) of those rows, meaningful when `last_time` is `Some`.
    max_time: i64,
    /// The time of the last of those rows (`None`: none has a time).
    last_time: Option<i64>,
    /// Whether those rows are in time order.
    sorted: bool,
}

/// The stored control state of a bucket, as the engine reads it back for reopening (SPEC §6.8).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredBucket {
    /// Bucket `_id`.
    pub id: BucketId,
    /// Normalized meta bytes (see [`BucketKey::bytes`]).
    pub key_bytes: Vec<u8>,
    /// `control.min.<time>`: the rounded min time (ms).
    pub min_time: i64,
    /// `control.max.<time>` (ms).
    pub max_time: i64,
    /// `control.count`.
    pub count: u32,
    /// BSON bytes of the stored measurements (for compression statistics).
    pub uncompressed_bytes: u64,
    /// The classic size estimate at the last commit (bytes, SPEC §6.4).
    pub size_estimate: u64,
    /// Whether rows are in time order (v2) or not (v3) (SPEC §4.2).
    pub sorted: bool,
    /// Number of the next segment to write.
    pub next_segment: u32,
    /// `control.closed` (SPEC §4.6).
    pub closed: bool,
    /// `control.min`.
    pub min: Document,
    /// `control.max`.
    pub max: Document,
    /// The sums of the fields (in the order of `min`); `None` when the record has none.
    pub sums: Option<BucketSums>,
}

impl StoredBucket {
    /// Rebuilds the fields (min/max and schema) from control (SPEC ); `None` when
    /// control is empty or does not hold the time field.
    pub(crate) fn fields(&self, time_field: &str) -> Option<Vec<Field>> {
        if !matches!(self.min.get(time_field), Some(Bson::DateTime(_))) {
            return None;
        }
        Some(
            self.min
                .iter()
                .map(|(name, min)| Field {
                    name: name.clone(),
                    minmax: MinMax::from_stored(min, self.max.get(name).unwrap_or(min)),
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mm(n: i32) -> MinMax {
        MinMax::new(&Bson::Int32(n))
    }

    fn position(f: &BucketFields, name: &str) -> Option<usize> {
        find_field(f, name, &mut 0)
    }

    fn names(f: &BucketFields) -> Vec<&str> {
        f.names().iter().map(|n| &**n).collect()
    }

    #[test]
    fn buckets_of_one_field_order_share_their_names() {
        let template = Arc::new(FieldNames::default());
        let mut a = BucketFields::following(&template);
        for (i, n) in ["t", "x", "y"].into_iter().enumerate() {
            assert_eq!(a.push(n, mm(i as i32)), i);
        }
        // `a` had the template's list shared: it got a list of its own.
        assert!(!Arc::ptr_eq(a.shared_names(), &template));
        let shape = Arc::clone(a.shared_names());
        let mut b = BucketFields::following(&shape);
        b.push("t", mm(0));
        b.push("x", mm(1));
        // A prefix of the list: shared, and the third name is not `b`'s.
        assert!(Arc::ptr_eq(b.shared_names(), &shape));
        assert_eq!(names(&b), ["t", "x"]);
        assert_eq!(position(&b, "y"), None);
        assert_eq!(b.names().get(2), None);
        assert_eq!(b.iter().count(), 2);
        b.push("y", mm(2));
        assert!(Arc::ptr_eq(b.shared_names(), &shape));
        assert_eq!(position(&b, "y"), Some(2));
        assert_eq!(b.minmax(2), Some(&mm(2)));
    }

    #[test]
    fn a_bucket_that_leaves_the_order_gets_its_own_list() {
        let mut a = BucketFields::following(&Arc::new(FieldNames::default()));
        a.push("t", mm(0));
        a.push("x", mm(1));
        a.push("y", mm(2));
        let shape = Arc::clone(a.shared_names());
        let mut b = BucketFields::following(&shape);
        b.push("t", mm(0));
        b.push("y", mm(5));
        assert!(!Arc::ptr_eq(b.shared_names(), &shape));
        assert_eq!(names(&b), ["t", "y"]);
        assert_eq!(position(&b, "y"), Some(1));
        assert_eq!(position(&b, "x"), None);
        // The shared list is left as it was.
        assert_eq!(names(&a), ["t", "x", "y"]);
        assert_eq!(position(&a, "x"), Some(1));
        // A list no other bucket holds grows in place.
        let own = Arc::as_ptr(b.shared_names());
        drop(shape);
        b.push("z", mm(6));
        assert_eq!(Arc::as_ptr(b.shared_names()), own);
        assert_eq!(names(&b), ["t", "y", "z"]);
        // A bucket at the end of a shared list it does not own copies it.
        let mut c = BucketFields::following(a.shared_names());
        for n in ["t", "x", "y", "w"] {
            c.push(n, mm(0));
        }
        assert!(!Arc::ptr_eq(c.shared_names(), a.shared_names()));
        assert_eq!(names(&a), ["t", "x", "y"]);
        assert_eq!(names(&c), ["t", "x", "y", "w"]);
    }

    #[test]
    fn many_fields_are_found_through_the_shared_index() {
        let mut a = BucketFields::following(&Arc::new(FieldNames::default()));
        for i in 0..40 {
            a.push(&format!("f{i}"), mm(i));
        }
        let mut b = BucketFields::following(a.shared_names());
        for i in 0..20 {
            b.push(&format!("f{i}"), mm(i));
        }
        assert!(Arc::ptr_eq(a.shared_names(), b.shared_names()));
        for i in 0..40 {
            let name = format!("f{i}");
            assert_eq!(position(&a, &name), Some(i));
            assert_eq!(position(&b, &name), (i < 20).then_some(i));
            let mut hint = 0;
            assert_eq!(b.shared_names().find(&name, &mut hint), Some(i));
            assert_eq!(hint, i + 1);
        }
        // Memory: each bucket counts its share of the list once.
        let shared = a.shared_names().heap_bytes();
        assert!(a.heap_bytes() < 40 * std::mem::size_of::<MinMax>() + shared);
    }
}
