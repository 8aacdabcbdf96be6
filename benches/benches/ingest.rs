//! Criterion benches of the hot parts of the ingest path (`docs/architecture.md`, "Write
//! path"), on TSBS's cpu-only workload ([`tscoll_benches::tsbs`]): 100 hosts (one series
//! each), seed 1, batches of 5000 measurements in time-major order, i.e. 50 rows of every host
//! (500 s) per batch. Every measurement gets a generated `_id`, as `insert_many` gives it
//! (deterministic here, see [`generated_id`]). Throughput is in measurements: criterion's
//! `elem/s` reads as measurements/s.
//!
//! * `catalog_placement`: `BucketCatalog::stage` of one batch, one call per series as the
//!   write path makes it (grouping by series and sorting by time are done before the clock
//!   starts), with a `BucketSource` that finds nothing (`NoStorage`), so no I/O. Placement
//!   (SPEC §6.2), rollover checks, min/max, schema, size estimate and the pivot into columns.
//!   Every iteration starts from a catalog built for it:
//!   - `new_buckets`: an empty catalog; the batch allocates 100 buckets of 50 rows.
//!   - `open_buckets`: a catalog whose 100 buckets hold the previous batch (committed); every
//!     measurement goes to its series' open bucket.
//!   - `open_buckets_commit`: as `open_buckets`, plus the catalog's side of the commit: claim
//!     of the commit rights, prepare and finish of the 100 write batches (no
//!     encoding, no fjall).
//! * `column_pivot/push_value`: documents to columns alone: every field value of one batch
//!   pushed into the typed lanes of its series' `tscoll_codec::Column` by
//!   `tscoll_catalog::value::push_value`, with the catalog's field lookup; 12 columns per
//!   series (`_id`, `time`, 10 int32 fields), fresh columns every iteration.
//! * `encode`: `tscoll_codec::encode_bucket` of one host's columns (the function the engine
//!   encodes a commit's segment and a merged bucket with): `rows_50` is the segment one commit
//!   writes, `rows_360` a whole one-hour bucket (10 s interval) as the merge of its segments
//!   writes it. Throughput in the bucket's rows (measurements); the blob sizes go to stderr.
//! * `insert_many/buffered`: the engine end to end: `Collection::insert_many` (unordered,
//!   buffered) of consecutive batches into a collection with timeField `time` and metaField
//!   `tags` (granularity seconds), as `tscoll bench ingest` makes it, in a temporary
//!   directory: validation, grouping, placement, encoding, commit, and the merge of a bucket's
//!   segments when it closes (a host's hour is full every 7.2 batches). Each batch is built
//!   before its clock starts and dropped after it stops.
//!
//! `cargo bench -p tscoll-benches --bench ingest [-- <filter>]`; with `-- --quick` the whole
//! target runs in about a minute.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{Bson, Document, doc};
use criterion::measurement::WallTime;
use criterion::{
    BatchSize, BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main,
};
use tscoll_benches::tsbs::{self, Generator, Workload};
use tscoll_catalog::value::push_value;
use tscoll_catalog::{
    BucketCatalog, BucketKey, BucketingSpec, CatalogOptions, Measurement, NoStorage, Prepared,
    StageOutcome, WriterId, write_normalized,
};
use tscoll_codec::{Column, encode_bucket};
use tscoll_engine::{
    Collection, Database, DatabaseOptions, Durability, InsertOptions, TimeseriesOptions,
};

/// Hosts (series) of the workload.
const HOSTS: usize = 100;

/// Measurements per `insert_many` call (the default of `tscoll bench ingest`).
const BATCH: usize = 5000;

/// Rows of one host in one batch: the rows of one commit's segment.
const ROWS_PER_BATCH: usize = BATCH / HOSTS;

/// Rows of a full bucket: one hour (the span of granularity seconds) at 10 s.
const BUCKET_ROWS: usize = 360;

/// The workload every group draws from.
fn workload() -> Workload {
    Workload::new(HOSTS, 1.0, tsbs::DEFAULT_SEED)
}

/// A group with short timings, so the whole target runs in a couple of minutes.
fn group<'a>(c: &'a mut Criterion, name: &str, elements: usize) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(elements as u64));
    g
}

/// The `_id` `insert_many` generates for measurement `n` of the workload (time-major order),
/// made deterministic: an ObjectId whose seconds advance once per batch, with a fixed
/// process part and `n` as the counter, as the ids of one call are.
fn generated_id(n: u64) -> Bson {
    let mut bytes = [0u8; 12];
    let secs = 1_700_000_000 + u32::try_from(n / BATCH as u64).unwrap_or(u32::MAX);
    bytes[..4].copy_from_slice(&secs.to_be_bytes());
    bytes[4..9].copy_from_slice(&[0x5e, 0x11, 0xa7, 0x3c, 0x42]);
    bytes[9..].copy_from_slice(&n.to_be_bytes()[5..]);
    Bson::ObjectId(ObjectId::from_bytes(bytes))
}

/// One `insert_many` batch: documents and the `_id` generated for each.
struct Batch {
    docs: Vec<Document>,
    ids: Vec<Bson>,
}

impl Batch {
    /// The next [`BATCH`] measurements of `generator`, the first being measurement `first` of
    /// the workload.
    fn next(generator: &mut Generator, first: u64) -> Batch {
        let mut docs = Vec::with_capacity(BATCH);
        let n = generator.fill_batch(&mut docs, BATCH);
        assert_eq!(n, BATCH, "workload exhausted");
        let ids = (first..first + BATCH as u64).map(generated_id).collect();
        Batch { docs, ids }
    }

    /// The first `count` batches of the workload.
    fn first(count: usize) -> Vec<Batch> {
        let mut generator = workload().generator();
        (0..count)
            .map(|b| Batch::next(&mut generator, (b * BATCH) as u64))
            .collect()
    }

    /// The measurements grouped by series as the write path groups them: series in
    /// first-seen order, each with its measurements stably sorted by time.
    fn groups(&self) -> (Vec<BucketKey>, Vec<Vec<Measurement<'_>>>) {
        let mut keys = Vec::new();
        let mut groups: Vec<Vec<Measurement<'_>>> = Vec::new();
        let mut group_of: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut scratch = Vec::new();
        for (index, (doc, id)) in self.docs.iter().zip(&self.ids).enumerate() {
            let time = doc
                .get_datetime(tsbs::TIME_FIELD)
                .expect("time field")
                .timestamp_millis();
            scratch.clear();
            write_normalized(doc.get(tsbs::META_FIELD).expect("meta field"), &mut scratch);
            let g = *group_of.entry(scratch.clone()).or_insert_with(|| {
                keys.push(BucketKey::from_bytes(scratch.clone()));
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(Measurement {
                index,
                time,
                doc,
                generated_id: Some(id),
            });
        }
        for g in &mut groups {
            g.sort_by_key(|m| m.time);
        }
        (keys, groups)
    }
}

/// The catalog's bucketing parameters of the benched collection, from the engine's own
/// validation of `{timeField: "time", metaField: "tags"}`.
fn bucketing() -> BucketingSpec {
    let spec = TimeseriesOptions::new(tsbs::TIME_FIELD)
        .meta_field(tsbs::META_FIELD)
        .validate()
        .expect("valid options");
    BucketingSpec {
        time_field: spec.time_field,
        meta_field: spec.meta_field,
        max_span_ms: spec.bucket_max_span_seconds * 1000,
        rounding_ms: spec.bucket_rounding_seconds * 1000,
    }
}

/// An empty catalog for the benched collection.
fn catalog() -> Arc<BucketCatalog> {
    Arc::new(BucketCatalog::new(bucketing(), CatalogOptions::default()))
}

/// Stages every series of a batch, as the write path does.
fn stage_all(
    catalog: &BucketCatalog,
    writer: WriterId,
    keys: &[BucketKey],
    groups: &[Vec<Measurement<'_>>],
) -> Vec<StageOutcome> {
    keys.iter()
        .zip(groups)
        .map(|(key, group)| catalog.stage(writer, key, group, &NoStorage))
        .collect()
}

/// Claims and prepares every write batch of `outcomes` (all of them this writer's).
fn prepare_all(catalog: &Arc<BucketCatalog>, outcomes: &[StageOutcome]) -> Vec<Prepared> {
    let mut prepared = Vec::new();
    for batch in outcomes.iter().flat_map(|o| &o.batches) {
        let rights = catalog.claim(batch).expect("single writer");
        prepared.push(rights.prepare().expect("prepare"));
    }
    prepared
}

/// A catalog whose buckets hold `batch`, committed (no storage): their buckets are open and
/// idle.
fn catalog_holding(batch: &Batch) -> Arc<BucketCatalog> {
    let catalog = catalog();
    let (keys, groups) = batch.groups();
    let outcomes = stage_all(&catalog, WriterId(1), &keys, &groups);
    for p in prepare_all(&catalog, &outcomes) {
        assert!(p.finish().is_empty(), "no bucket closes");
    }
    catalog
}

fn bench_catalog_placement(c: &mut Criterion) {
    let batches = Batch::first(2);
    let (keys, groups) = batches[1].groups();
    let writer = WriterId(2);
    let mut g = group(c, "catalog_placement", BATCH);
    g.bench_function("new_buckets", |b| {
        b.iter_batched(
            catalog,
            |catalog| {
                let outcomes = stage_all(&catalog, writer, &keys, black_box(&groups));
                (catalog, outcomes)
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function("open_buckets", |b| {
        b.iter_batched(
            || catalog_holding(&batches[0]),
            |catalog| {
                let outcomes = stage_all(&catalog, writer, &keys, black_box(&groups));
                (catalog, outcomes)
            },
            BatchSize::LargeInput,
        );
    });
    g.bench_function("open_buckets_commit", |b| {
        b.iter_batched(
            || catalog_holding(&batches[0]),
            |catalog| {
                let outcomes = stage_all(&catalog, writer, &keys, black_box(&groups));
                let prepared = prepare_all(&catalog, &outcomes);
                let closed: usize = prepared.into_iter().map(|p| p.finish().len()).sum();
                (catalog, outcomes, closed)
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

/// The columns of one series' write batch, built as the catalog appends a measurement: the
/// meta field left out, each field found by name (the next position first), a skip for every
/// row a column lacks, then the value pushed into its lane.
#[derive(Default)]
struct SeriesColumns {
    names: Vec<String>,
    columns: Vec<Column>,
    rows: usize,
}

impl SeriesColumns {
    fn append(&mut self, m: &Measurement<'_>, meta_field: &str, scratch: &mut Vec<u8>) {
        let mut hint = 0;
        for (name, v) in m.fields() {
            if name == meta_field {
                continue;
            }
            let idx = match self.names.get(hint) {
                Some(n) if n == name => hint,
                _ => match self.names.iter().position(|n| n == name) {
                    Some(i) => i,
                    None => {
                        self.names.push(name.to_owned());
                        self.columns.push(Column::new());
                        self.names.len() - 1
                    }
                },
            };
            hint = idx + 1;
            let col = &mut self.columns[idx];
            if col.len() < self.rows {
                col.push_missing_n(self.rows - col.len());
            }
            push_value(col, v, scratch);
        }
        self.rows += 1;
    }

    /// The columns of `measurements`.
    fn of(measurements: &[Measurement<'_>]) -> SeriesColumns {
        let mut out = SeriesColumns::default();
        let mut scratch = Vec::new();
        for m in measurements {
            out.append(m, tsbs::META_FIELD, &mut scratch);
        }
        out
    }

    /// `(name, column)` pairs as `encode_bucket` takes them.
    fn named(&self) -> Vec<(&str, &Column)> {
        self.names
            .iter()
            .map(String::as_str)
            .zip(&self.columns)
            .collect()
    }
}

fn bench_column_pivot(c: &mut Criterion) {
    let batch = &Batch::first(1)[0];
    let (_, groups) = batch.groups();
    let mut g = group(c, "column_pivot", BATCH);
    g.bench_function("push_value", |b| {
        b.iter(|| {
            black_box(&groups)
                .iter()
                .map(|group| SeriesColumns::of(group))
                .collect::<Vec<_>>()
        });
    });
    g.finish();
}

fn bench_encode(c: &mut Criterion) {
    let host = 0;
    let docs = workload().host_rows(host, 0..BUCKET_ROWS as u64);
    let ids: Vec<Bson> = (0..BUCKET_ROWS)
        .map(|step| generated_id((step * HOSTS + host) as u64))
        .collect();
    let measurements: Vec<Measurement<'_>> = docs
        .iter()
        .zip(&ids)
        .enumerate()
        .map(|(index, (doc, id))| Measurement {
            index,
            time: doc
                .get_datetime(tsbs::TIME_FIELD)
                .expect("time field")
                .timestamp_millis(),
            doc,
            generated_id: Some(id),
        })
        .collect();
    let mut g = c.benchmark_group("encode");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for rows in [ROWS_PER_BATCH, BUCKET_ROWS] {
        let columns = SeriesColumns::of(&measurements[..rows]);
        let named = columns.named();
        let blob = encode_bucket(rows, &named).expect("encode");
        eprintln!(
            "encode/rows_{rows}: {} columns, {} byte blob ({:.1} bytes/measurement)",
            named.len(),
            blob.len(),
            blob.len() as f64 / rows as f64
        );
        g.throughput(Throughput::Elements(rows as u64));
        g.bench_function(format!("rows_{rows}"), |b| {
            b.iter(|| encode_bucket(rows, black_box(&named)).expect("encode"));
        });
    }
    g.finish();
}

/// A database in a temporary directory with the workload's collection, fed batch by batch.
struct Ingest {
    coll: Collection,
    db: Database,
    generator: Generator,
    /// Collections created so far (`cpu0`, `cpu1`, ...).
    collections: u32,
    /// Declared last, so removed after the database is dropped.
    _dir: tempfile::TempDir,
}

impl Ingest {
    fn new() -> Ingest {
        let dir = tempfile::tempdir().expect("temporary directory");
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open database");
        let coll = Self::create(&db, 0);
        Ingest {
            coll,
            db,
            generator: workload().generator(),
            collections: 1,
            _dir: dir,
        }
    }

    fn create(db: &Database, no: u32) -> Collection {
        let options = TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD);
        db.create_collection(&format!("cpu{no}"), &options)
            .expect("create collection")
    }

    /// The next batch; when the workload runs out, a new collection takes it from the start.
    fn next_batch(&mut self) -> Vec<Document> {
        if self.generator.remaining() < BATCH as u64 {
            self.coll = Self::create(&self.db, self.collections);
            self.collections += 1;
            self.generator = workload().generator();
        }
        let mut docs = Vec::with_capacity(BATCH);
        self.generator.fill_batch(&mut docs, BATCH);
        docs
    }
}

fn bench_insert_many(c: &mut Criterion) {
    let mut ingest = Ingest::new();
    let options = InsertOptions {
        ordered: false,
        durability: Durability::Buffered,
    };
    let mut g = group(c, "insert_many", BATCH);
    g.bench_function("buffered", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let docs = ingest.next_batch();
                let start = Instant::now();
                let result = ingest
                    .coll
                    .insert_many(black_box(&docs), &options)
                    .expect("insert");
                timed += start.elapsed();
                assert_eq!(result.inserted, BATCH, "{:?}", result.errors.first());
            }
            timed
        });
    });
    g.finish();
    ingest.db.close().expect("close");
}

criterion_group!(
    benches,
    bench_catalog_placement,
    bench_column_pivot,
    bench_encode,
    bench_insert_many
);
criterion_main!(benches);
