//! Staging columnar rows ([`MeasurementColumns`]): while the series' open bucket takes the next rows
//! as they are — no rollover reason of SPEC §6.3, no field new to the bucket, values of the
//! kind its schema holds (§5), the classic estimate within the limit of §6.5 — they are
//! appended to its batch as one run, column by column; their values reach the fields' min/max
//! when the bucket's control is next read ([`Bucket::fold_pending`]). Any other row is placed
//! alone, exactly as [`BucketCatalog::stage`] places a measurement.

use tscoll_codec::{RowStart, tag};

use super::*;
use crate::columns::MeasurementColumns;
use crate::value::decimal_digits;

/// What staging a group reuses from the group before.
struct GroupScratch {
    /// Where the current row starts in each column.
    cursors: Vec<RowStart>,
    /// The position of each column's name in the field names `mapped_for`: the bucket
    /// field of each column of a bucket with those names (a field past the bucket's own
    /// count is not in the bucket). The buckets of a call mostly share one list of names
    /// ([`BucketFields::following`]), so the columns are mapped once, not bucket by bucket.
    map: Vec<Option<usize>>,
    /// The names `map` was made for (kept alive, so another list cannot take its address).
    mapped_for: Option<Arc<FieldNames>>,
    /// The type code of every row of each column, when they have one
    /// ([`Column::single_type`]): such a column's rows are checked against a bucket's schema
    /// once, not row by row.
    single: Vec<Option<u8>>,
}

impl GroupScratch {
    fn for_call(rows: &MeasurementColumns) -> Self {
        GroupScratch {
            cursors: Vec::with_capacity(rows.fields.len()),
            map: Vec::with_capacity(rows.fields.len()),
            mapped_for: None,
            single: rows.fields.iter().map(|(_, c)| c.single_type()).collect(),
        }
    }
}

/// Rows an open bucket takes as they are, from a given row on.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    rows: usize,
    /// The classic estimate's increment (SPEC §6.4, bytes).
    delta: u64,
    /// BSON bytes of the rows' elements.
    raw: u64,
}

impl BucketCatalog {
    /// Stages the measurements of one series given column by column — group `group` of
    /// `rows`, in time order (SPEC) — with the outcome [`BucketCatalog::stage`] gives
    /// for the same measurements. `measurements`, when given, are the group's rows as
    /// documents, in the same order: a row placed alone is taken from them, and otherwise
    /// rebuilt from the columns.
    pub fn stage_rows(
        &self,
        writer: WriterId,
        key: &BucketKey,
        rows: &MeasurementColumns,
        group: usize,
        measurements: Option<&[Measurement<'_>]>,
        source: &dyn BucketSource,
    ) -> StageOutcome {
        let mut scratch = GroupScratch::for_call(rows);
        self.with_staging(writer, key, source, |stripe, st| {
            self.stage_group(stripe, st, rows, group, measurements, &mut scratch);
        })
    }

    /// Stages every group of `rows` — group `g` the measurements of series `keys[g]`, in
    /// time order — with the outcome [`BucketCatalog::stage_rows`] gives group by group, in
    /// one pass per stripe: each stripe is locked once for all of its series in the call,
    /// and the catalog's parameters are read once. Batches come out stripe by stripe
    /// (SPEC §6.2–§6.5 per series; the order of series does not matter to them).
    /// `measurements`, when given, are each group's rows as documents, in the same order.
    /// Groups without rows, and groups past `keys`, are skipped; nothing panics on a
    /// mismatch of `keys`, `rows.groups` and `measurements`. A series new to the catalog keeps
    /// its key of `keys` (shared, not copied).
    pub fn stage_call(
        &self,
        writer: WriterId,
        keys: &[Arc<BucketKey>],
        rows: &MeasurementColumns,
        measurements: Option<&[Vec<Measurement<'_>>]>,
        source: &dyn BucketSource,
    ) -> StageOutcome {
        let (spec, options) = (self.spec(), self.options());
        // The groups with rows, stripe by stripe.
        let mut order: Vec<(usize, usize)> = keys
            .iter()
            .enumerate()
            .filter(|(g, _)| rows.groups.get(*g).is_some_and(|r| !r.is_empty()))
            .map(|(g, key)| (Self::stripe_of(key), g))
            .collect();
        order.sort_unstable();
        let mut out = StageOutcome::default();
        let mut scratch = GroupScratch::for_call(rows);
        for run in order.chunk_by(|a, b| a.0 == b.0) {
            let Some(&(stripe_no, _)) = run.first() else {
                continue;
            };
            let mut guard = lock(&self.stripes[stripe_no]);
            let stripe: &mut Stripe = &mut guard;
            for &(_, g) in run {
                let Some(key) = keys.get(g) else {
                    continue;
                };
                let mut st = self.staging(
                    stripe,
                    writer,
                    stripe_no,
                    key,
                    Some(key),
                    source,
                    (&spec, &options),
                );
                let ms = measurements.and_then(|m| m.get(g)).map(Vec::as_slice);
                self.stage_group(stripe, &mut st, rows, g, ms, &mut scratch);
                let part = self.finish_staging(stripe, st);
                out.batches.extend(part.batches);
                out.closed.extend(part.closed);
                out.rejected.extend(part.rejected);
            }
        }
        out
    }

    /// The body of [`BucketCatalog::stage_rows`] on the locked stripe.
    fn stage_group(
        &self,
        stripe: &mut Stripe,
        st: &mut Staging<'_>,
        rows: &MeasurementColumns,
        group: usize,
        measurements: Option<&[Measurement<'_>]>,
        scratch: &mut GroupScratch,
    ) {
        let nf = rows.fields.len();
        let (Some(range), Some(starts)) = (
            rows.groups.get(group),
            rows.starts.get(group * nf..(group + 1) * nf),
        ) else {
            return;
        };
        let end = range.end.min(rows.len());
        let GroupScratch {
            cursors,
            map,
            mapped_for,
            single,
        } = scratch;
        // Where the current row starts in each column.
        cursors.clear();
        cursors.extend_from_slice(starts);
        // The series' open bucket, when no bucket of it is rolling over, is where its rows go
        // first (as placement would choose it).
        st.only_open = stripe
            .series
            .get(&st.key)
            .filter(|s| s.rolling.is_empty())
            .and_then(|s| s.open);
        let mut row = range.start;
        while row < end {
            let mut next = row + 1;
            let mut placed = false;
            if let Some(id) = st.only_open
                && let Some(bucket) = stripe.buckets.get_mut(&id)
            {
                let names = bucket.fields.shared_names();
                if !mapped_for.as_ref().is_some_and(|m| Arc::ptr_eq(m, names)) {
                    map.clear();
                    let mut hint = 0;
                    map.extend(
                        rows.fields
                            .iter()
                            .map(|(name, _)| names.find(name, &mut hint)),
                    );
                    *mapped_for = Some(Arc::clone(names));
                }
                let derived = derived_max_size(st.options, self.active_buckets());
                let run = fast_run(bucket, rows, (map, single), cursors, end, st, derived);
                if run.rows > 0 {
                    // Using an idle bucket takes it off the idle list.
                    if bucket.idle_seq.take().is_some() {
                        stripe.idle.left();
                    }
                    let batch = self.append_run(bucket, rows, (map, single), cursors, run, st);
                    st.out.staged_bytes += run.raw;
                    st.note_batch(batch);
                    next = row + run.rows;
                    placed = true;
                }
            }
            if !placed {
                // The row may add fields to the bucket (its names then change) or open another.
                self.stage_alone(stripe, st, rows, cursors, measurements, range.start);
            }
            if !placed {
                // (A run's rows moved the cursors past them as they were appended.)
                for ((_, column), cursor) in rows.fields.iter().zip(cursors.iter_mut()) {
                    *cursor = column.row_start_after(*cursor, next);
                }
            }
            row = next;
        }
    }

    /// Places row `row` alone, as [`BucketCatalog::stage`] places a measurement: taken from
    /// `measurements` (the group's rows from `first` on) or rebuilt from the columns.
    fn stage_alone(
        &self,
        stripe: &mut Stripe,
        st: &mut Staging<'_>,
        rows: &MeasurementColumns,
        cursors: &[RowStart],
        measurements: Option<&[Measurement<'_>]>,
        first: usize,
    ) {
        let Some(row) = cursors.first().map(|c| c.row) else {
            return;
        };
        if let Some(m) = measurements.and_then(|ms| ms.get(row - first)) {
            self.stage_one(stripe, st, m);
            return;
        }
        let index = rows.indices.get(row).copied().unwrap_or_default();
        match rows.row_document_at(cursors) {
            Ok(doc) => {
                let m = Measurement {
                    index,
                    time: rows.times.get(row).copied().unwrap_or_default(),
                    doc: &doc,
                    generated_id: None,
                };
                self.stage_one(stripe, st, &m);
            }
            Err(reason) => st.out.rejected.push((index, StageError::BadValue(reason))),
        }
    }
}

/// How many rows from the cursors' row on (up to `end`) the open `bucket` takes as they are
/// (see the module docs).
fn fast_run(
    bucket: &Bucket,
    rows: &MeasurementColumns,
    (map, single): (&[Option<usize>], &[Option<u8>]),
    cursors: &[RowStart],
    end: usize,
    st: &Staging<'_>,
    derived: u64,
) -> Run {
    let none = Run::default();
    if bucket.state != BucketState::Normal || bucket.rollover.is_some() {
        return none;
    }
    let Some(from) = cursors.first().map(|c| c.row) else {
        return none;
    };
    let Some(times) = rows.times.get(from..end) else {
        return none;
    };
    // Time backward and forward (SPEC §6.3): the rows are in time order.
    if times.first().is_none_or(|&t| t < bucket.min_time) {
        return none;
    }
    let span = st.spec.max_span_ms;
    let mut end = from + times.partition_point(|&t| t.saturating_sub(bucket.min_time) < span);
    // Count.
    let room = st.options.bucket_max_count.saturating_sub(bucket.count) as usize;
    end = end.min(from.saturating_add(room));
    // Schema (SPEC §5): no new field, every value of the kind the bucket holds.
    for ((((_, column), field), cursor), &single) in
        rows.fields.iter().zip(map).zip(cursors).zip(single)
    {
        if end <= from {
            return none;
        }
        let field = field.and_then(|i| bucket.fields.minmax(i));
        let limit = match (field, single) {
            // Rows of one type: all of them or none.
            (_, Some(tag::MISSING)) => end,
            (None, Some(_)) => from,
            (Some(f), Some(t)) if compatible(f, t) => end,
            (Some(_), Some(_)) => from,
            (None, None) => first_present(column, *cursor, end),
            (Some(f), None) => first_incompatible(f, column, *cursor, end),
        };
        end = end.min(limit);
    }
    // Size (SPEC §6.5: only rows that fit; the others go through the full rule) and the
    // 16 MiB check.
    let eff_max = st.options.bucket_max_size.min(derived);
    let key_len = st.key.bytes.len() as u64;
    let mut count = u64::from(bucket.count);
    let mut run = Run::default();
    let mut row = from;
    while row < end {
        let (Some(&raw), Some(&names), Some(&present)) = (
            rows.raw.get(row),
            rows.names.get(row),
            rows.present.get(row),
        ) else {
            break;
        };
        let present = u64::from(present);
        if 12 * present + 3 * raw + key_len > MAX_BSON_OBJECT_SIZE {
            break;
        }
        // assess(): per field, size − (name + 1) + digits(count) + 1.
        let delta = raw.saturating_sub(names) + present * (decimal_digits(count) + 1);
        if bucket.size + run.delta + delta > eff_max {
            break;
        }
        run.delta += delta;
        run.raw += raw;
        count += 1;
        row += 1;
    }
    run.rows = row - from;
    run
}

/// The first row in `from..end` where `column` has a value (`end` when none).
fn first_present(column: &Column, from: RowStart, end: usize) -> usize {
    column
        .types_from(from, end)
        .iter()
        .position(|&t| t != tag::MISSING)
        .map_or(end, |p| from.row + p)
}

/// The first row in `from..end` whose value the field's schema does not take, as
/// [`MinMax::compatible`] says: a scalar of the type or canonical rank of the field's
/// values (objects and arrays are placed alone).
fn first_incompatible(minmax: &MinMax, column: &Column, from: RowStart, end: usize) -> usize {
    let MinMax::Scalar(s) = minmax else {
        return first_present(column, from, end);
    };
    let (code, rank) = s.min_type();
    column
        .types_from(from, end)
        .iter()
        .position(|&t| {
            t != tag::MISSING
                && t != code
                && (t == tag::DOCUMENT || t == tag::ARRAY || rank_of_code(t) != Some(rank))
        })
        .map_or(end, |p| from.row + p)
}

/// Whether the field's schema takes a value of type `t` as [`first_incompatible`] says.
fn compatible(minmax: &MinMax, t: u8) -> bool {
    let MinMax::Scalar(s) = minmax else {
        return false;
    };
    let (code, rank) = s.min_type();
    t == code || (t != tag::DOCUMENT && t != tag::ARRAY && rank_of_code(t) == Some(rank))
}

/// [`canonical_rank`] of a value of BSON type `code`.
fn rank_of_code(code: u8) -> Option<i32> {
    Some(match code {
        tag::MIN_KEY => -1,
        tag::UNDEFINED => 0,
        tag::NULL => 5,
        tag::DOUBLE | tag::INT32 | tag::INT64 | tag::DECIMAL128 => 10,
        tag::STRING | tag::SYMBOL => 15,
        tag::DOCUMENT => 20,
        tag::ARRAY => 25,
        tag::BINARY => 30,
        tag::OBJECT_ID => 35,
        tag::BOOLEAN => 40,
        tag::DATETIME => 45,
        tag::TIMESTAMP => 47,
        tag::REGEX => 50,
        tag::DB_POINTER => 55,
        tag::JAVASCRIPT => 60,
        tag::JAVASCRIPT_WITH_SCOPE => 65,
        tag::MAX_KEY => 127,
        _ => return None,
    })
}

impl BucketCatalog {
    /// Appends rows `from..from + run.rows` to the bucket's active batch: values to the
    /// bucket's columns (min/max folded later, [`Bucket::fold_pending`]), count, size,
    /// sortedness; moves `cursors` past them. Returns the batch.
    fn append_run(
        &self,
        bucket: &mut Bucket,
        rows: &MeasurementColumns,
        (map, single): (&[Option<usize>], &[Option<u8>]),
        cursors: &mut [RowStart],
        run: Run,
        st: &Staging<'_>,
    ) -> Arc<WriteBatch> {
        let from = cursors.first().map_or(0, |c| c.row);
        let to = from + run.rows;
        let batch = bucket.active_batch(st.stripe_no);
        let mut data = lock(&batch.data);
        let row0 = (bucket.count - bucket.rows_base) as usize;
        let hint = bucket.rows_hint as usize;
        // Control min/max take the run's values when they are next read
        // ([`Bucket::fold_pending`]), once for every run appended meanwhile.
        bucket.pending_from.get_or_insert(row0);
        for ((((_, column), field), cursor), &single) in
            rows.fields.iter().zip(map).zip(cursors).zip(single)
        {
            let start = *cursor;
            // A column without a bucket field has no value in the run (see `fast_run`).
            cursor.row = to;
            let Some(i) = *field else { continue };
            if i >= bucket.fields.len() {
                *cursor = column.row_start_after(start, to);
                continue;
            }
            // A call column of one type needs no count of its type codes.
            let lanes = match single {
                Some(t) => column.row_lanes_single(start, to, t),
                None => column.row_lanes(start, to),
            };
            cursor.int += lanes.ints.len();
            cursor.float += lanes.floats.len();
            cursor.bytes += lanes.bytes;
            let into = bucket.rows.column_at(bucket.fields.len(), i, row0);
            let room = hint.saturating_sub(into.len());
            if room > lanes.types.len() {
                into.reserve_like(room, column, &lanes);
            }
            into.extend_from_lanes(column, &lanes);
        }
        data.rows += run.rows;
        data.indices
            .extend_from_slice(rows.indices.get(from..to).unwrap_or_default());
        data.owners.extend(std::iter::repeat_n(st.writer, run.rows));
        data.uncompressed_bytes += run.raw;
        data.accounted += run.raw;
        drop(data);
        if let (Some(&first), Some(&last)) = (rows.times.get(from), rows.times.get(to - 1)) {
            if first < bucket.last_time && bucket.sorted {
                bucket.sorted = false;
                ExecutionStats::bump(&self.stats.num_compressed_buckets_converted_to_unsorted);
            }
            bucket.last_time = last;
            bucket.max_time = bucket.max_time.max(last);
        }
        bucket.count += u32::try_from(run.rows).unwrap_or(u32::MAX);
        bucket.size += run.delta;
        batch
    }
}
