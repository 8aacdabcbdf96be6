//! Loom model checks of the bucket catalog's write-batch / commit-rights protocol (SPEC §7,
//! R-7.3.3). Compiled only under `--cfg loom`, where `src/sync.rs` hands the catalog loom's
//! mutexes, condition variables and atomics:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p tscoll-catalog --release \
//!     --test loom_commit --target-dir target/loom
//! ```
//!
//! Every writer drives the protocol as `engine/src/write/mod.rs` does: stage, claim the commit
//! rights of each batch, prepare what it won (abort on error), write to storage, finish, then
//! wait on the batches it set aside. Storage is a test double, [`Store`], that records every
//! written segment, checks the control state each commit claims against what is stored, and
//! keeps a trace of the protocol steps that failing assertions print (the interleaving).
//!
//! Measurement ids are unique across the writers of a model and serve as input indices, so
//! each measurement can be followed through batches and storage; writer `wN` is the writer
//! whose first measurement is `N`.
#![cfg(loom)]

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool as StdAtomicBool, Ordering as StdOrdering};
use std::sync::{Mutex as StdMutex, MutexGuard as StdMutexGuard, PoisonError};

use bson::{Bson, DateTime, Document, doc};
use loom::sync::Arc;
use loom::thread;
use tscoll_catalog::{
    BucketCatalog, BucketId, BucketKey, BucketSource, BucketingSpec, CatalogOptions, CommitError,
    CommitRights, Measurement, NoStorage, Prepared, PreparedBatch, QueryOutcome, SourceError,
    StoredBucket, WriteBatch, WriterId,
};

/// The catalog's `Arc` (batches, keys, the catalog itself, which commit rights and prepared
/// batches hold): std's, also under loom (`src/sync.rs`). The threads of a model share the
/// storage double through loom's `Arc`.
type Batch = std::sync::Arc<WriteBatch>;
/// The catalog, shared by the threads of a model (std's `Arc`, see [`Batch`]).
type Catalog = std::sync::Arc<BucketCatalog>;

const HOUR: i64 = 3_600_000;
/// Start of an hour: every measurement of these models falls into one bucket window.
const T0: i64 = 472_222 * HOUR;
/// `_id` of the bucket the storage double holds before a model starts, where one does.
const STORED: BucketId = [7; 12];

/// Runs a model with the environment's loom settings, bounding preemptions to 2 when
/// `LOOM_MAX_PREEMPTIONS` is not set.
fn model<F>(f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(f);
}

fn catalog() -> Catalog {
    Catalog::new(BucketCatalog::new(
        BucketingSpec {
            time_field: "t".to_owned(),
            meta_field: Some("m".to_owned()),
            max_span_ms: HOUR,
            rounding_ms: HOUR,
        },
        CatalogOptions::default(),
    ))
}

/// The one series of every model.
fn series() -> BucketKey {
    BucketKey::from_meta(Some(&Bson::String("sensor".to_owned())))
}

fn time_of(id: usize) -> i64 {
    T0 + i64::try_from(id).expect("small id") * 1000
}

fn value_of(id: usize) -> i32 {
    i32::try_from(id).expect("small id")
}

fn document(id: usize) -> Document {
    doc! { "t": DateTime::from_millis(time_of(id)), "m": "sensor", "v": value_of(id) }
}

fn writer(mine: &[usize]) -> String {
    format!("w{}", mine[0])
}

/// The ids of `batch_indices` that belong to the writer of `mine` (a shared batch also holds
/// other writers' measurements).
fn own(batch_indices: Vec<usize>, mine: &[usize]) -> Vec<usize> {
    batch_indices
        .into_iter()
        .filter(|i| mine.contains(i))
        .collect()
}

// ---- The protocol steps of a writer, each traced ----

/// Stages the measurements `ids` (sorted by time, as the engine sorts them) into the series.
fn stage(
    catalog: &BucketCatalog,
    store: &Store,
    ids: &[usize],
    source: &dyn BucketSource,
) -> Vec<Batch> {
    let docs: Vec<Document> = ids.iter().map(|&id| document(id)).collect();
    let measurements: Vec<Measurement<'_>> = ids
        .iter()
        .zip(&docs)
        .map(|(&index, doc)| Measurement {
            index,
            time: time_of(index),
            doc,
            generated_id: None,
        })
        .collect();
    let writer = WriterId(ids.first().copied().unwrap_or(0) as u64);
    let outcome = catalog.stage(writer, &series(), &measurements, source);
    assert!(outcome.rejected.is_empty(), "{:?}", outcome.rejected);
    for b in &outcome.batches {
        let what = format!("stage {:?} into {}", own(b.indices(), ids), store.name(b));
        store.event(ids, what);
    }
    outcome.batches
}

fn claim(catalog: &Catalog, store: &Store, mine: &[usize], batch: &Batch) -> Option<CommitRights> {
    let won = catalog.claim(batch);
    let verdict = if won.is_some() {
        "won"
    } else {
        "lost: set aside"
    };
    store.event(mine, format!("claim {}: {verdict}", store.name(batch)));
    won
}

/// Prepares a batch whose commit rights `rights` are; an error aborts the batch.
fn prepare(store: &Store, mine: &[usize], rights: CommitRights) -> Result<Prepared, CommitError> {
    let batch = Batch::clone(rights.batch());
    store.event(mine, format!("prepare({}) called", store.name(&batch)));
    let r = rights.prepare();
    let what = match &r {
        Ok(p) => format!(
            "prepare({}) = segment {}, committed_before {}, rows {:?}",
            store.name(&batch),
            p.segment_no,
            p.committed_before,
            batch.indices()
        ),
        Err(e) => format!("prepare({}) = Err({e}), aborted", store.name(&batch)),
    };
    store.event(mine, what);
    r
}

/// Gives up commit rights: the batch fails with `reason`.
fn abort(store: &Store, mine: &[usize], rights: CommitRights, reason: &str) {
    let name = store.name(rights.batch());
    rights.abort(CommitError::WriteFailed(reason.to_owned()));
    store.event(mine, format!("abort({name}, {reason:?})"));
}

/// Aborts a prepared batch whose write failed.
fn abort_prepared(store: &Store, mine: &[usize], p: Prepared, reason: &str) {
    let name = store.name(&p.batch);
    p.abort(CommitError::WriteFailed(reason.to_owned()));
    store.event(mine, format!("abort({name}, {reason:?})"));
}

/// Waits on a batch set aside; `Ok` means its rows were committed by someone else.
fn wait(store: &Store, mine: &[usize], batch: &Batch) -> Result<(), CommitError> {
    let r = batch.wait();
    store.event(mine, format!("wait({}) = {r:?}", store.name(batch)));
    r
}

/// What one writer learnt about its own measurements.
#[derive(Debug, Default)]
struct Report {
    committed: Vec<usize>,
    failed: Vec<usize>,
}

/// The commit half of `engine/src/write/mod.rs` `insert_many`: claim commit rights of every batch,
/// prepare what was won (aborting on error), write the prepared batches, finish them, then wait
/// on the batches set aside.
fn commit(catalog: &Catalog, store: &Store, mine: &[usize], batches: Vec<Batch>) -> Report {
    let mut report = Report::default();
    let mut prepared = Vec::new();
    let mut set_aside = Vec::new();
    for batch in batches {
        match claim(catalog, store, mine, &batch) {
            Some(rights) => match prepare(store, mine, rights) {
                Ok(p) => prepared.push(p),
                Err(_) => report.failed.extend(own(batch.indices(), mine)),
            },
            None => set_aside.push(batch),
        }
    }
    write_and_finish(store, prepared, mine, &mut report);
    for batch in set_aside {
        match wait(store, mine, &batch) {
            Ok(()) => {
                let ids = own(batch.indices(), mine);
                for &id in &ids {
                    // The committer writes before it finishes (fulfils): a waiter must not
                    // proceed before its measurements are stored (R-7.2.1).
                    store.check(
                        store.occurrences(id) == 1,
                        &format!("waiter woke up before {id} was stored"),
                    );
                }
                report.committed.extend(ids);
            }
            Err(_) => report.failed.extend(own(batch.indices(), mine)),
        }
    }
    report
}

/// Writes prepared batches (as one storage transaction) and finishes them.
fn write_and_finish(store: &Store, prepared: Vec<Prepared>, mine: &[usize], report: &mut Report) {
    for p in &prepared {
        store.begin(p);
    }
    // Storage I/O takes time: let other threads run between prepare and the write (the
    // storage double's std mutex is not a scheduling point of loom).
    thread::yield_now();
    for p in &prepared {
        store.write(mine, p, p.stored_state());
    }
    for p in prepared {
        store.end(&p);
        report.committed.extend(own(p.batch.indices(), mine));
        let name = store.name(&p.batch);
        p.finish();
        store.event(mine, format!("finish({name})"));
    }
}

/// Writer w0 stages measurement 0, wins the commit rights of its batch and prepares it: the
/// start of the models where another writer acts while a batch is prepared.
fn prepare_first(catalog: &Catalog, store: &Store, source: &dyn BucketSource) -> Prepared {
    let first = stage(catalog, store, &[0], source);
    let rights = claim(catalog, store, &[0], &first[0]).expect("won");
    prepare(store, &[0], rights).expect("prepare")
}

/// A whole insert of the measurements `ids`.
fn insert(catalog: &Catalog, store: &Store, ids: &[usize], source: &dyn BucketSource) -> Report {
    let batches = stage(catalog, store, ids, source);
    commit(catalog, store, ids, batches)
}

// ---- Storage double ----

/// Storage double. Its critical sections hold no loom operation, so its std mutex never blocks
/// a loom thread; each write is atomic, like the engine's fjall batch.
#[derive(Debug, Default)]
struct Store {
    inner: StdMutex<StoreInner>,
}

#[derive(Debug, Default)]
struct StoreInner {
    buckets: BTreeMap<BucketId, Stored>,
    /// Prepared batches per bucket between `prepare_commit` and `finish`.
    preparing: HashMap<BucketId, usize>,
    /// Protocol steps in execution order.
    events: Vec<String>,
    /// Batches seen, for naming them `B1`, `B2`, ... (kept alive so no address is reused).
    batch_names: Vec<Batch>,
    /// Buckets seen, for naming them `X1`, `X2`, ...
    bucket_names: Vec<BucketId>,
}

#[derive(Debug)]
struct Stored {
    control: StoredBucket,
    /// Segment number → ids of the measurements written in it.
    segments: BTreeMap<u32, Vec<usize>>,
}

impl StoreInner {
    fn bucket_name(&mut self, id: &BucketId) -> String {
        let n = match self.bucket_names.iter().position(|b| b == id) {
            Some(n) => n,
            None => {
                self.bucket_names.push(*id);
                self.bucket_names.len() - 1
            }
        };
        format!("X{}", n + 1)
    }

    fn trace(&self) -> String {
        let mut s = String::from("\ntrace (protocol steps in execution order):");
        for e in &self.events {
            let _ = write!(s, "\n  {e}");
        }
        s
    }

    fn check(&self, ok: bool, what: &str) {
        assert!(ok, "{what}{}", self.trace());
    }
}

impl Store {
    fn lock(&self) -> StdMutexGuard<'_, StoreInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn event(&self, mine: &[usize], what: String) {
        self.lock().events.push(format!("{}: {what}", writer(mine)));
    }

    /// `B<n> (bucket X<m>)`.
    fn name(&self, batch: &Batch) -> String {
        let mut g = self.lock();
        let n = match g.batch_names.iter().position(|b| Batch::ptr_eq(b, batch)) {
            Some(n) => n,
            None => {
                g.batch_names.push(Batch::clone(batch));
                g.batch_names.len() - 1
            }
        };
        let bucket = g.bucket_name(&batch.bucket_id());
        format!("B{} (bucket {bucket})", n + 1)
    }

    /// Asserts `ok`, printing the trace when it does not hold.
    fn check(&self, ok: bool, what: &str) {
        self.lock().check(ok, what);
    }

    /// Stores bucket [`STORED`] of the series holding `ids` (one segment), as an earlier
    /// process would have left it, so that the catalog can reopen it.
    fn seed(&self, ids: &[usize]) {
        let first = ids[0];
        let last = ids[ids.len() - 1];
        let control = StoredBucket {
            id: STORED,
            key_bytes: series().bytes,
            min_time: T0,
            max_time: time_of(last),
            count: u32::try_from(ids.len()).expect("small"),
            uncompressed_bytes: 0,
            size_estimate: 200,
            sorted: true,
            next_segment: 1,
            closed: false,
            min: doc! { "t": DateTime::from_millis(T0), "v": value_of(first) },
            max: doc! { "t": DateTime::from_millis(time_of(last)), "v": value_of(last) },
            // As a record written before bucket sums: the reopened bucket keeps none.
            sums: None,
        };
        let stored = Stored {
            control,
            segments: BTreeMap::from([(0, ids.to_vec())]),
        };
        let mut g = self.lock();
        let name = g.bucket_name(&STORED);
        g.events.push(format!("storage holds {name} = {ids:?}"));
        g.buckets.insert(STORED, stored);
    }

    /// A prepared batch starts its commit: it must be the only one of its bucket (R-7.2.5).
    fn begin(&self, p: &PreparedBatch) {
        let mut g = self.lock();
        let n = *g.preparing.get(&p.bucket_id).unwrap_or(&0);
        let name = g.bucket_name(&p.bucket_id);
        g.check(
            n == 0,
            &format!("two prepared batches of bucket {name} at once (R-7.2.5)"),
        );
        g.preparing.insert(p.bucket_id, n + 1);
    }

    fn end(&self, p: &PreparedBatch) {
        let mut g = self.lock();
        if let Some(n) = g.preparing.get_mut(&p.bucket_id) {
            *n -= 1;
        }
    }

    /// Writes a prepared batch: a new bucket (insert) or a new segment and control (update,
    /// `control` as the catalog describes the bucket after the commit), checking what the
    /// batch claims against what is stored (R-7.2.3).
    fn write(&self, mine: &[usize], p: &PreparedBatch, control: Option<StoredBucket>) {
        let batch = self.name(&p.batch);
        let ids = p.batch.indices();
        let mut g = self.lock();
        g.events.push(format!(
            "{}: write {batch}: segment {} = {ids:?}, control.count {}",
            writer(mine),
            p.segment_no,
            p.count
        ));
        g.check(
            ids.len() == p.rows,
            "prepared rows and staged indices differ",
        );
        let name = g.bucket_name(&p.bucket_id);
        let problem = match g.buckets.get(&p.bucket_id) {
            None if p.committed_before != 0 => {
                Some(format!("update of bucket {name} that was never inserted"))
            }
            None => None,
            Some(s) if p.committed_before != s.control.count => Some(format!(
                "{batch} claims {} committed measurements, storage holds {} (segments {:?})",
                p.committed_before, s.control.count, s.segments
            )),
            Some(s) if s.segments.contains_key(&p.segment_no) => Some(format!(
                "segment {} of {name} overwritten: {:?} is lost",
                p.segment_no, s.segments[&p.segment_no]
            )),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            g.check(false, &problem);
        }
        let Some(control) = control else {
            g.check(
                false,
                "a prepared batch's bucket left the catalog before its write",
            );
            return;
        };
        let stored = g.buckets.entry(p.bucket_id).or_insert_with(|| Stored {
            control: control.clone(),
            segments: BTreeMap::new(),
        });
        stored.segments.insert(p.segment_no, ids);
        stored.control = control;
    }

    /// How many times measurement `id` is stored.
    fn occurrences(&self, id: usize) -> usize {
        self.lock()
            .buckets
            .values()
            .flat_map(|b| b.segments.values())
            .flatten()
            .filter(|&&i| i == id)
            .count()
    }

    fn bucket_count(&self) -> usize {
        self.lock().buckets.len()
    }

    /// Ids stored in bucket `id`, sorted.
    fn contents(&self, id: &BucketId) -> Vec<usize> {
        let mut ids: Vec<usize> = self
            .lock()
            .buckets
            .get(id)
            .map(|b| b.segments.values().flatten().copied().collect())
            .unwrap_or_default();
        ids.sort_unstable();
        ids
    }
}

/// Reopening from the storage double, like the engine's `Reopener`: `fetch` by `_id`, and the
/// query of R-6.8.2 over every stored bucket of the series, whether or not it is open in the
/// catalog (the catalog must recognise duplicates itself, R-6.8.5).
impl BucketSource for Store {
    fn fetch(&self, _: &BucketKey, id: &BucketId) -> Result<Option<StoredBucket>, SourceError> {
        Ok(self.lock().buckets.get(id).map(|b| b.control.clone()))
    }

    fn query(
        &self,
        key: &BucketKey,
        time: i64,
        span_ms: i64,
        max_count: u32,
        max_size: u64,
    ) -> Result<QueryOutcome, SourceError> {
        Ok(self
            .lock()
            .buckets
            .values()
            .map(|b| &b.control)
            .find(|c| {
                c.key_bytes == key.bytes
                    && c.min_time <= time
                    && c.min_time > time - span_ms
                    && !c.closed
                    && c.count < max_count
                    && c.size_estimate < max_size
            })
            .map_or(QueryOutcome::Miss, |c| {
                QueryOutcome::Hit(Box::new(c.clone()))
            }))
    }
}

/// Checks that every writer learnt the fate of each of its measurements exactly once, and
/// that storage agrees: committed ones are stored exactly once, failed ones not at all.
fn check_reports(store: &Store, writers: &[(&[usize], &Report)]) {
    for (mine, report) in writers {
        let mut seen: Vec<usize> = report
            .committed
            .iter()
            .chain(&report.failed)
            .copied()
            .collect();
        seen.sort_unstable();
        store.check(
            seen == *mine,
            &format!("{} reports {report:?}", writer(mine)),
        );
        for &id in &report.committed {
            let n = store.occurrences(id);
            store.check(n == 1, &format!("committed {id} is stored {n} times"));
        }
        for &id in &report.failed {
            let n = store.occurrences(id);
            store.check(n == 0, &format!("failed {id} is stored {n} times"));
        }
    }
}

/// Spawns a writer inserting `ids` (the whole protocol).
fn spawn_insert(
    catalog: &Catalog,
    store: &Arc<Store>,
    ids: &'static [usize],
    reopen: bool,
) -> thread::JoinHandle<Report> {
    let (catalog, store) = (Catalog::clone(catalog), Arc::clone(store));
    thread::spawn(move || {
        let source: &dyn BucketSource = if reopen { &*store } else { &NoStorage };
        insert(&catalog, &store, ids, source)
    })
}

// ---- Models ----

static SEEN_SHARED: StdAtomicBool = StdAtomicBool::new(false);
static SEEN_SEPARATE: StdAtomicBool = StdAtomicBool::new(false);

/// Model 1 (R-7.1.1, R-7.2.1): two writers insert into one series at once (two measurements
/// and one). Whether they share a write batch (group commit) or not, exactly one committer
/// commits each measurement, once, into the one bucket of the series; both outcomes occur.
#[test]
fn two_writers_share_or_split_batches_and_commit_each_measurement_once() {
    SEEN_SHARED.store(false, StdOrdering::Relaxed);
    SEEN_SEPARATE.store(false, StdOrdering::Relaxed);
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        let a = spawn_insert(&catalog, &store, &[0, 1], false);
        let b = spawn_insert(&catalog, &store, &[10], false);
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        check_reports(&store, &[(&[0, 1], &a), (&[10], &b)]);
        store.check(a.failed.is_empty() && b.failed.is_empty(), "no failure");
        store.check(store.bucket_count() == 1, "one series, one bucket");
        let stats = catalog.stats();
        store.check(stats.num_measurements_committed == 3, "3 committed");
        store.check(stats.num_bucket_inserts == 1, "one bucket insert");
        store.check(
            stats.num_bucket_inserts + stats.num_bucket_updates == stats.num_commits,
            "every commit is an insert or an update",
        );
        match stats.num_commits {
            1 => SEEN_SHARED.store(true, StdOrdering::Relaxed),
            2 => SEEN_SEPARATE.store(true, StdOrdering::Relaxed),
            n => store.check(false, &format!("{n} commits for two writers")),
        }
        store.check(
            {
                let g = catalog.gauges();
                (g.open_buckets, g.idle_buckets) == (1, 1)
            },
            "the bucket stays open, idle",
        );
    });
    assert!(
        SEEN_SHARED.load(StdOrdering::Relaxed),
        "no execution shared a batch"
    );
    assert!(
        SEEN_SEPARATE.load(StdOrdering::Relaxed),
        "no execution used two batches"
    );
}

/// Model 1b (R-7.2.1, R-7.2.5): three writers of one measurement each; with up to three
/// batches of one bucket in flight, commits stay serialized and each measurement is stored once.
#[test]
fn three_writers_one_bucket() {
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        let a = spawn_insert(&catalog, &store, &[0], false);
        let b = spawn_insert(&catalog, &store, &[10], false);
        let c = spawn_insert(&catalog, &store, &[20], false);
        let (a, b, c) = (a.join().unwrap(), b.join().unwrap(), c.join().unwrap());
        check_reports(&store, &[(&[0], &a), (&[10], &b), (&[20], &c)]);
        store.check(
            a.failed.is_empty() && b.failed.is_empty() && c.failed.is_empty(),
            "no failure",
        );
        store.check(store.bucket_count() == 1, "one series, one bucket");
        store.check(
            catalog.stats().num_measurements_committed == 3,
            "3 committed",
        );
    });
}

/// Model 2a (R-7.2.1): two writers staged into one shared batch; whichever loses the claim sets
/// the batch aside and waits, and proceeds only once the winner has written and finished it.
#[test]
fn set_aside_writer_waits_for_the_committer() {
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        let first = stage(&catalog, &store, &[0], &NoStorage);
        let second = stage(&catalog, &store, &[10], &NoStorage);
        assert_eq!(first.len(), 1);
        assert!(
            Batch::ptr_eq(&first[0], &second[0]),
            "one batch per bucket (op id 0)"
        );
        let spawn = |ids: &'static [usize], batches: Vec<Batch>| {
            let (catalog, store) = (Catalog::clone(&catalog), Arc::clone(&store));
            thread::spawn(move || commit(&catalog, &store, ids, batches))
        };
        let a = spawn(&[0], first);
        let b = spawn(&[10], second);
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        check_reports(&store, &[(&[0], &a), (&[10], &b)]);
        store.check(a.committed == [0] && b.committed == [10], "both committed");
        let stats = catalog.stats();
        store.check(stats.num_commits == 1, "one committer");
        store.check(stats.num_measurements_committed == 2, "2 committed");
    });
}

/// Model 2b (R-7.2.2, R-7.2.5): while one writer's batch of a bucket is prepared, a second
/// writer stages into a new batch of that bucket, wins its commit rights and prepares: it
/// waits until the first batch finishes, then commits on top of it.
#[test]
fn second_batch_of_a_bucket_waits_for_the_prepared_one() {
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        let p1 = prepare_first(&catalog, &store, &NoStorage);
        let first = Batch::clone(&p1.batch);
        let committer = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let mut report = Report::default();
                write_and_finish(&store, vec![p1], &[0], &mut report);
                report
            })
        };
        let second = {
            let (catalog, store) = (Catalog::clone(&catalog), Arc::clone(&store));
            thread::spawn(move || {
                let batches = stage(&catalog, &store, &[10], &NoStorage);
                assert_eq!(batches.len(), 1);
                assert!(!Batch::ptr_eq(&batches[0], &first));
                let rights = claim(&catalog, &store, &[10], &batches[0]);
                store.check(rights.is_some(), "nobody else claims it");
                let p2 = prepare(&store, &[10], rights.expect("won")).expect("prepare");
                store.check(
                    store.contents(&p2.bucket_id) == [0],
                    "prepared only after the first batch was written",
                );
                store.check(
                    (p2.committed_before, p2.count, p2.segment_no) == (1, 2, 1),
                    "prepared on top of the first batch",
                );
                let mut report = Report::default();
                write_and_finish(&store, vec![p2], &[10], &mut report);
                report
            })
        };
        let (a, b) = (committer.join().unwrap(), second.join().unwrap());
        check_reports(&store, &[(&[0], &a), (&[10], &b)]);
        store.check(store.bucket_count() == 1, "one bucket");
        let stats = catalog.stats();
        store.check(
            (stats.num_commits, stats.num_bucket_updates) == (2, 1),
            "an insert, then an update",
        );
    });
}

/// Model 3 (R-7.3.1, R-7.3.2): a writer aborts its unprepared batch of a bucket while another
/// writer's batch of that bucket is prepared. The aborted measurement is reported as not
/// committed and is not stored; the prepared batch commits normally; the aborted writer
/// re-stages its measurement and it is stored exactly once. No reopening (`NoStorage`); model
/// 5 is the same with reopening.
#[test]
fn abort_while_another_batch_is_prepared() {
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        let p1 = prepare_first(&catalog, &store, &NoStorage);
        let second = stage(&catalog, &store, &[10], &NoStorage);
        assert!(!Batch::ptr_eq(&p1.batch, &second[0]));
        let committer = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let batch = Batch::clone(&p1.batch);
                let mut report = Report::default();
                write_and_finish(&store, vec![p1], &[0], &mut report);
                store.check(
                    wait(&store, &[0], &batch).is_ok(),
                    "the prepared batch commits normally",
                );
                report
            })
        };
        let aborter = {
            let (catalog, store) = (Catalog::clone(&catalog), Arc::clone(&store));
            thread::spawn(move || {
                let batch = &second[0];
                let rights = claim(&catalog, &store, &[10], batch);
                store.check(rights.is_some(), "nobody else claims it");
                abort(&store, &[10], rights.expect("won"), "write conflict");
                store.check(wait(&store, &[10], batch).is_err(), "reported as failed");
                store.check(batch.indices() == [10], "with its measurement");
                store.check(store.occurrences(10) == 0, "which is not stored");
                // The writer retries its measurement (R-7.3.2).
                insert(&catalog, &store, &[10], &NoStorage)
            })
        };
        let (a, b) = (committer.join().unwrap(), aborter.join().unwrap());
        check_reports(&store, &[(&[0], &a), (&[10], &b)]);
        store.check(a.committed == [0] && b.committed == [10], "both stored");
    });
}

/// Model 3b (R-7.3.1): model 3 where the committer abandons its prepared batch (an early
/// return or a panic drops it) instead of writing it. The drop aborts it: the batch fails,
/// the bucket is not left prepared, the other writer's batch fails with it (it was not
/// prepared) and its retry is committed exactly once; nothing of the abandoned batch is
/// stored.
#[test]
fn abandoned_prepared_batch_aborts_itself() {
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        let p1 = prepare_first(&catalog, &store, &NoStorage);
        let second = stage(&catalog, &store, &[10], &NoStorage);
        let abandoner = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let batch = Batch::clone(&p1.batch);
                drop(p1);
                store.event(&[0], "dropped its prepared batch".to_owned());
                store.check(
                    wait(&store, &[0], &batch) == Err(CommitError::Abandoned),
                    "the dropped batch is aborted",
                );
                Report {
                    committed: Vec::new(),
                    failed: vec![0],
                }
            })
        };
        let other = {
            let (catalog, store) = (Catalog::clone(&catalog), Arc::clone(&store));
            thread::spawn(move || {
                let mut report = commit(&catalog, &store, &[10], second);
                if !report.failed.is_empty() {
                    report = insert(&catalog, &store, &[10], &NoStorage);
                }
                report
            })
        };
        let (a, b) = (abandoner.join().unwrap(), other.join().unwrap());
        check_reports(&store, &[(&[0], &a), (&[10], &b)]);
        store.check(
            store.occurrences(0) == 0,
            "nothing of the dropped batch stored",
        );
        store.check(
            b.committed == [10],
            "the other writer's measurement is stored",
        );
    });
}

/// Model 4 (R-6.8.5, R-6.8.7): two writers insert into a series with no open bucket while
/// storage holds a bucket of the series that can take both. It is reopened once and both
/// measurements go to it: no second open bucket of the series, no lost measurement.
#[test]
fn concurrent_reopening_of_one_series() {
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        store.seed(&[100]);
        let a = spawn_insert(&catalog, &store, &[0, 1], true);
        let b = spawn_insert(&catalog, &store, &[10], true);
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        check_reports(&store, &[(&[0, 1], &a), (&[10], &b)]);
        store.check(a.failed.is_empty() && b.failed.is_empty(), "no failure");
        store.check(
            store.bucket_count() == 1,
            "no new bucket next to the reopenable one",
        );
        store.check(store.contents(&STORED) == [0, 1, 10, 100], "all in it");
        store.check(
            {
                let g = catalog.gauges();
                (g.open_buckets, g.idle_buckets) == (1, 1)
            },
            "one open bucket",
        );
        let stats = catalog.stats();
        store.check(stats.num_buckets_reopened == 1, "reopened once");
        store.check(
            stats.num_buckets_opened_due_to_metadata == 0 && stats.num_bucket_inserts == 0,
            "commits update the reopened bucket",
        );
    });
}

/// Model 5 (R-7.3.1, R-7.3.2, R-6.8): model 3 with reopening from storage, as the engine runs.
/// The aborted writer's retry may reopen the very bucket whose other batch is still prepared.
/// A last insert checks that the catalog's state of the bucket agrees with storage.
///
/// Regression: `abort` used to remove the bucket from the catalog at once, although w0's batch
/// of it was prepared (R-7.3.1 wants it marked cleared and removed when that batch finishes). Once w0 has
/// written its segment, w10's retry reopens the bucket from storage as a new in-memory copy with
/// the same `_id`; w0's `finish` then finds that copy by `_id`, adds its rows to the copy's
/// committed count a second time and clears its `prepared` flag. The next commit claims 3
/// committed measurements where storage holds 2 (a wrong `control.count`); had w0's `finish`
/// come while w10's retry batch was prepared, a second batch of the bucket could have been
/// prepared at the same time (R-7.2.5).
#[test]
fn abort_while_another_batch_is_prepared_then_retry_with_reopening() {
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        let p1 = prepare_first(&catalog, &store, &*store);
        let second = stage(&catalog, &store, &[10], &*store);
        let committer = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let mut report = Report::default();
                write_and_finish(&store, vec![p1], &[0], &mut report);
                report
            })
        };
        let aborter = {
            let (catalog, store) = (Catalog::clone(&catalog), Arc::clone(&store));
            thread::spawn(move || {
                let batch = &second[0];
                let rights = claim(&catalog, &store, &[10], batch).expect("won");
                abort(&store, &[10], rights, "write conflict");
                store.check(wait(&store, &[10], batch).is_err(), "reported as failed");
                insert(&catalog, &store, &[10], &*store)
            })
        };
        let (a, b) = (committer.join().unwrap(), aborter.join().unwrap());
        check_reports(&store, &[(&[0], &a), (&[10], &b)]);
        let c = insert(&catalog, &store, &[20], &*store);
        check_reports(&store, &[(&[20], &c)]);
    });
}

/// Model 6 (R-7.2.2, R-7.3.1, R-7.3.2): writer w10 holds the commit rights of a batch that it
/// shares with writer w20 (who set it aside) while writer w0's batch of the same (reopened)
/// bucket is prepared. w0's storage write fails and it aborts: the shared batch fails too, w20
/// learns so and retries, so the shared batch must never be committed afterwards.
///
/// Regression: `prepare_commit` used to look the bucket up by `_id` only, never checking whether
/// its batch was already failed by `abort` (R-7.2.2: "if the batch was aborted meanwhile ... it returns
/// the abort status"). After w20's retry has reopened the bucket from storage, w10 prepares the
/// failed batch on the reopened copy and commits it: w20's measurement is stored twice, and the
/// batch's promise, fulfilled with the error, is fulfilled again with success.
#[test]
fn batch_failed_by_abort_is_not_committed_later() {
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        store.seed(&[100]);
        // w0 reopens the stored bucket and prepares its batch.
        let a_batches = stage(&catalog, &store, &[0], &*store);
        let rights = claim(&catalog, &store, &[0], &a_batches[0]).expect("won");
        let pa = prepare(&store, &[0], rights).expect("prepare");
        assert_eq!(pa.bucket_id, STORED);
        // w10 and w20 share the next batch of the bucket; w10 claims it, w20 sets it aside.
        let b_batches = stage(&catalog, &store, &[10], &*store);
        let c_batches = stage(&catalog, &store, &[20], &*store);
        assert!(Batch::ptr_eq(&b_batches[0], &c_batches[0]));
        let b_rights = claim(&catalog, &store, &[10], &b_batches[0]).expect("won");
        let writer_a = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                // The storage write of w0's batch fails.
                abort_prepared(&store, &[0], pa, "storage failure");
                Report {
                    committed: Vec::new(),
                    failed: vec![0],
                }
            })
        };
        let writer_b = {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let batch = &b_batches[0];
                let mut report = Report::default();
                match prepare(&store, &[10], b_rights) {
                    Ok(p) => write_and_finish(&store, vec![p], &[10], &mut report),
                    Err(_) => report.failed.extend(own(batch.indices(), &[10])),
                }
                report
            })
        };
        // w20 (this thread) waits on the batch it set aside, and retries on failure.
        let mut c = commit(&catalog, &store, &[20], c_batches);
        if !c.failed.is_empty() {
            c = insert(&catalog, &store, &[20], &*store);
        }
        let (a, b) = (writer_a.join().unwrap(), writer_b.join().unwrap());
        check_reports(&store, &[(&[0], &a), (&[10], &b), (&[20], &c)]);
    });
}

/// Model 6 (§6.7, R-7.4.1): a direct write (update, delete, TTL) on a stored bucket runs while
/// a writer inserts into the same series, reopening the bucket from storage. The direct write
/// starts only when no batch of the bucket is prepared, and while it runs no commit changes
/// the bucket; the writer's measurement is committed exactly once (into the bucket before
/// the direct write, or, after a retry, into another one).
#[test]
fn direct_write_while_a_writer_inserts() {
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        store.seed(&[100]);
        let writer = {
            let (catalog, store) = (Catalog::clone(&catalog), Arc::clone(&store));
            thread::spawn(move || {
                let mut report = insert(&catalog, &store, &[0], &*store);
                if !report.failed.is_empty() {
                    report = insert(&catalog, &store, &[0], &*store);
                }
                report
            })
        };
        catalog.direct_write_start(&series(), &STORED);
        let before = store.contents(&STORED);
        thread::yield_now();
        store.check(
            store.contents(&STORED) == before,
            "no commit into a bucket under a direct write",
        );
        catalog.direct_write_finish(&series(), &STORED);
        let report = writer.join().unwrap();
        check_reports(&store, &[(&[0], &report)]);
        let stats = catalog.stats();
        store.check(
            stats.num_measurements_committed == 1,
            "the measurement is committed once",
        );
    });
}

/// A direct write and a writer storing a bucket that left memory (SPEC R-7.4.1, the engine's
/// `direct_write_all`): the bucket's rows are in the leaving queue; either the writer takes
/// them and stores them under the bucket's merge lock, or the direct write does. The direct
/// write takes the merge lock and reads the bucket only once they are stored, whoever stored
/// them, so no part lands after its read (overwriting its control record or putting back
/// rows it removed).
#[test]
fn direct_write_waits_for_a_part_another_writer_stores() {
    /// Parts stored, by bucket id, behind the bucket's merge lock.
    type Stored = Arc<loom::sync::Mutex<Vec<BucketId>>>;
    fn store_parts(catalog: &Catalog, stored: &Stored) {
        for part in catalog.take_leaving() {
            stored
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(part.id);
            catalog.stored(&part.key, &part.id);
        }
    }
    model(|| {
        let catalog = catalog();
        let store = Arc::new(Store::default());
        let report = insert(&catalog, &store, &[0], &NoStorage);
        check_reports(&store, &[(&[0], &report)]);
        let closed = catalog.close_idle();
        let id = closed.first().expect("the bucket left memory").id;
        let stored: Stored = Arc::new(loom::sync::Mutex::new(Vec::new()));
        let writer = {
            let (catalog, stored) = (Catalog::clone(&catalog), Arc::clone(&stored));
            thread::spawn(move || store_parts(&catalog, &stored))
        };
        catalog.direct_write_start(&series(), &id);
        store_parts(&catalog, &stored);
        while !catalog.wait_stored(&series(), &id, std::time::Duration::from_millis(1)) {
            store_parts(&catalog, &stored);
        }
        let seen = stored
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        store.check(
            seen == [id],
            "the part is stored once, before the direct write reads the bucket",
        );
        catalog.direct_write_finish(&series(), &id);
        writer.join().unwrap();
    });
}
