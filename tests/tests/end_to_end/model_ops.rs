//! Model-based test of the engine (SPEC §10 TTL, §11 deletes and updates, §12 collMod, §14
//! queries, recovery from the write-ahead log after a crash): random sequences of operations
//! run against a collection and against an in-memory model, which must agree after every
//! operation. The operations and the checks live in `fuzz/common/engine_ops.rs`, shared with
//! the cargo-fuzz target `engine_ops`; the committed fuzz corpus `fuzz/corpus/engine_ops/` is
//! replayed here on stable.

#[path = "../../../fuzz/common/engine_ops.rs"]
mod engine_ops;

use std::cell::RefCell;
use std::path::PathBuf;

use bson::{Bson, DateTime, Document, doc};
use engine_ops::{
    Avoid, BAD_EXPIRES, BAD_UPDATES, BINARY_SUBTYPES, BUCKETINGS, Bucketing, CHARS, CREATE_EXPIRES,
    Change, CollModOp, DATES, DOUBLES, EXPIRES, Filter, INT32S, INT64S, MAX_BINARY, MAX_COUNTS,
    MAX_DEPTH, MAX_ENTRIES, MAX_FIELDS, MAX_INSERT, MAX_NAME_CHARS, MAX_OPS, MAX_STRING_CHARS,
    MEMORY_THRESHOLDS, MINUTES, Meas, MetaPred, NAMES, Op, Proj, SERIES, SPANS, Setup, Summary,
    TimeKind, TimePred, VALUE_RANGE, Val, ValPred, Value, decimals, decode, encode, regex_options,
    run_ops, run_ops_avoiding, unique,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use tscoll_engine::{
    Database, DatabaseOptions, FindOptions, Granularity, InsertOptions, TimeseriesOptions,
};

fn setup() -> impl Strategy<Value = Setup> {
    (
        0..MAX_COUNTS.len(),
        0..BUCKETINGS.len(),
        0..CREATE_EXPIRES.len(),
        0..MEMORY_THRESHOLDS.len(),
    )
        .prop_map(|(c, b, e, m)| Setup {
            max_count: MAX_COUNTS[c],
            bucketing: BUCKETINGS[b],
            expire: CREATE_EXPIRES[e],
            memory_threshold: MEMORY_THRESHOLDS[m],
        })
}

/// Minute offsets: mostly within a few hours (several measurements per bucket), sometimes
/// anywhere in the four days.
fn minute() -> impl Strategy<Value = u16> {
    prop_oneof![3 => 0..240u16, 1 => 0..MINUTES]
}

fn value() -> impl Strategy<Value = i16> {
    -VALUE_RANGE..=VALUE_RANGE
}

fn series() -> impl Strategy<Value = u8> {
    0..SERIES
}

fn cmp() -> impl Strategy<Value = engine_ops::Cmp> {
    use engine_ops::Cmp;
    prop_oneof![
        Just(Cmp::Eq),
        Just(Cmp::Gt),
        Just(Cmp::Gte),
        Just(Cmp::Lt),
        Just(Cmp::Lte)
    ]
}

/// A date of the whole 64-bit range: mostly the edges of [`DATES`].
fn date() -> impl Strategy<Value = i64> {
    prop_oneof![3 => prop::sample::select(DATES.to_vec()), 1 => any::<i64>()]
}

fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![3 => prop::sample::select(CHARS.to_vec()), 1 => any::<char>()]
}

fn text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(any_char(), 0..=max).prop_map(|c| c.into_iter().collect())
}

/// A field name: one of [`NAMES`] (empty, dotted, `$`, NUL, the model's own) or any short
/// UTF-8 text.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop::sample::select(NAMES.to_vec()).prop_map(str::to_owned),
        1 => text(MAX_NAME_CHARS),
    ]
}

/// A value of any BSON type; documents, arrays and code with scope nest `depth` levels.
fn any_value(depth: u8) -> BoxedStrategy<Value> {
    let scalar = prop_oneof![
        2 => prop_oneof![prop::sample::select(DOUBLES.to_vec()), any::<u64>()].prop_map(Value::Double),
        2 => text(MAX_STRING_CHARS).prop_map(Value::String),
        1 => (
            prop::sample::select(BINARY_SUBTYPES.to_vec()),
            prop::collection::vec(any::<u8>(), 0..=MAX_BINARY),
        )
            .prop_map(|(s, b)| Value::Binary(s, b)),
        1 => Just(Value::Undefined),
        1 => any::<[u8; 12]>().prop_map(Value::ObjectId),
        1 => any::<bool>().prop_map(Value::Bool),
        2 => date().prop_map(Value::Date),
        1 => Just(Value::Null),
        1 => (text(MAX_STRING_CHARS), any::<u8>())
            .prop_map(|(p, o)| Value::Regex(p.replace('\0', ""), regex_options(o))),
        1 => (text(MAX_STRING_CHARS), any::<[u8; 12]>()).prop_map(|(n, id)| Value::DbPointer(n, id)),
        1 => text(MAX_STRING_CHARS).prop_map(Value::Code),
        1 => text(MAX_STRING_CHARS).prop_map(Value::Symbol),
        1 => prop_oneof![prop::sample::select(INT32S.to_vec()), any::<i32>()].prop_map(Value::Int32),
        1 => any::<(u32, u32)>().prop_map(|(t, i)| Value::Timestamp(t, i)),
        1 => prop_oneof![prop::sample::select(INT64S.to_vec()), any::<i64>()].prop_map(Value::Int64),
        1 => prop_oneof![prop::sample::select(decimals().to_vec()), any::<[u8; 16]>()]
            .prop_map(Value::Decimal128),
        1 => Just(Value::MinKey),
        1 => Just(Value::MaxKey),
    ];
    if depth == 0 {
        return scalar.boxed();
    }
    let inner = any_value(depth - 1);
    let fields = prop::collection::vec((name(), inner.clone()), 0..=MAX_ENTRIES)
        .prop_map(unique)
        .boxed();
    prop_oneof![
        6 => scalar,
        2 => fields.clone().prop_map(Value::Document),
        1 => prop::collection::vec(inner, 0..=MAX_ENTRIES).prop_map(Value::Array),
        1 => (text(MAX_STRING_CHARS), fields).prop_map(|(c, s)| Value::CodeWithScope(c, s)),
    ]
    .boxed()
}

fn meas() -> impl Strategy<Value = Meas> {
    let val = prop_oneof![
        8 => value().prop_map(Val::Int),
        2 => value().prop_map(Val::Double),
        1 => (0..4u8).prop_map(Val::Str),
        1 => Just(Val::Missing),
    ];
    let time = prop_oneof![
        14 => Just(TimeKind::Date),
        1 => Just(TimeKind::Missing),
        1 => Just(TimeKind::NotADate),
        1 => date().prop_map(TimeKind::At),
    ];
    let extra = prop_oneof![
        3 => Just(Vec::new()),
        1 => prop::collection::vec((name(), any_value(MAX_DEPTH)), 1..=MAX_FIELDS).prop_map(unique),
    ];
    let meta = prop::option::weighted(0.15, any_value(MAX_DEPTH));
    (series(), minute(), 0..60u8, val, time, extra, meta).prop_map(
        |(series, minute, second, value, time, extra, meta)| Meas {
            series,
            minute,
            second,
            value,
            time,
            extra,
            meta,
        },
    )
}

fn meta_pred() -> impl Strategy<Value = MetaPred> {
    prop_oneof![
        3 => series().prop_map(MetaPred::Eq),
        1 => (series(), series()).prop_map(|(a, b)| MetaPred::In(a, b)),
        1 => Just(MetaPred::Sub),
    ]
}

fn filter() -> impl Strategy<Value = Filter> {
    use engine_ops::Cmp;
    // Range operators mostly: an equality on a time rarely matches.
    let time_op = prop_oneof![
        1 => Just(Cmp::Eq),
        3 => Just(Cmp::Gt),
        3 => Just(Cmp::Gte),
        3 => Just(Cmp::Lt),
        3 => Just(Cmp::Lte)
    ];
    let time = (
        time_op,
        minute(),
        any::<bool>(),
        prop::bool::weighted(0.05),
        prop::option::weighted(0.05, date()),
    )
        .prop_map(|(op, minute, half, number, at)| TimePred {
            op,
            minute,
            half,
            number,
            at,
        })
        .boxed();
    let value = prop_oneof![
        4 => (cmp(), value(), prop::bool::weighted(0.25)).prop_map(|(o, v, d)| ValPred::Cmp(o, v, d)),
        1 => prop::collection::vec(value(), 1..=3).prop_map(ValPred::In),
        1 => value().prop_map(ValPred::Ne),
        1 => any::<bool>().prop_map(ValPred::Exists),
        1 => (value(), value()).prop_map(|(a, b)| ValPred::Outside(a, b)),
        1 => (0..4u8).prop_map(ValPred::Type),
        1 => (0..4u8).prop_map(ValPred::Regex),
    ];
    (
        prop::option::weighted(0.5, meta_pred()),
        prop_oneof![2 => Just(0usize), 2 => Just(1), 1 => Just(2)]
            .prop_flat_map(move |n| prop::collection::vec(time.clone(), n)),
        prop::option::weighted(0.3, value),
    )
        .prop_map(|(meta, time, value)| Filter { meta, time, value })
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        2 => (-3i16..=3).prop_map(Change::IncV),
        2 => prop_oneof![
            (-3i16..=3).prop_map(Val::Int),
            (-3i16..=3).prop_map(Val::Double),
            (0u8..4).prop_map(Val::Str),
            Just(Val::Missing),
        ]
        .prop_map(Change::SetV),
        1 => series().prop_map(Change::SetMeta),
        1 => (0..MINUTES).prop_map(Change::SetTime),
    ]
}

fn coll_mod() -> impl Strategy<Value = CollModOp> {
    prop_oneof![
        1 => Just(CollModOp::Granularity(Granularity::Seconds)),
        1 => Just(CollModOp::Granularity(Granularity::Minutes)),
        1 => Just(CollModOp::Granularity(Granularity::Hours)),
        2 => prop::sample::select(SPANS.to_vec()).prop_map(CollModOp::Span),
        2 => prop::sample::select(EXPIRES.to_vec()).prop_map(CollModOp::Expire),
        1 => Just(CollModOp::ExpireOff),
        1 => (0..BAD_EXPIRES).prop_map(CollModOp::BadExpire),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (prop::collection::vec(meas(), 1..=MAX_INSERT), prop::bool::weighted(0.7))
            .prop_map(|(docs, ordered)| Op::Insert { docs, ordered }),
        5 => (
            filter(),
            prop::option::of(any::<bool>()),
            prop::option::of(0..=6u8),
            prop::sample::select(vec![Proj::All, Proj::ExcludeV, Proj::IncludeV, Proj::IncludeMeta]),
        )
            .prop_map(|(filter, sort, limit, projection)| Op::Find {
                filter,
                sort,
                limit,
                projection,
            }),
        2 => (filter(), any::<bool>(), prop::option::of(0..=6u8))
            .prop_map(|(filter, desc, limit)| Op::FindBy { filter, desc, limit }),
        2 => filter().prop_map(|filter| Op::Count { filter }),
        2 => filter().prop_map(|filter| Op::LastPoints { filter }),
        3 => (filter(), any::<bool>()).prop_map(|(filter, one)| Op::Delete { filter, one }),
        2 => (prop::option::weighted(0.8, meta_pred()), series())
            .prop_map(|(filter, to)| Op::UpdateMeta { filter, to }),
        2 => (filter(), change()).prop_map(|(filter, change)| Op::Update { filter, change }),
        1 => (any::<u8>(), change()).prop_map(|(pick, change)| Op::UpdateOne { pick, change }),
        1 => (0..BAD_UPDATES).prop_map(Op::BadUpdate),
        3 => prop_oneof![3 => 0..8_000u16, 1 => any::<u16>()].prop_map(|minute| Op::Expire { minute }),
        1 => date().prop_map(Op::ExpireAt),
        3 => coll_mod().prop_map(Op::CollMod),
        2 => any::<bool>().prop_map(|clean| Op::CloseReopen { clean }),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::CrashRestart),
    ]
}

fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..=max)
}

fn run(setup: &Setup, ops: &[Op]) -> Result<Summary, String> {
    let dir = engine_ops::temp_dir();
    run_ops(dir.path(), setup, ops)
}

/// Random sequences of up to 40 operations agree with the model after every operation; taken
/// together, the sequences reach every behaviour the model checks (a generator that stopped
/// producing deletes, expiries or refusals would fail the coverage assertions).
#[test]
fn engine_agrees_with_the_model() {
    // TSCOLL_MODEL_CASES runs more sequences (a longer search). The default takes about 1 s
    // in a debug build with the databases in /dev/shm, about 30 s on a disk (fsyncs).
    let cases = std::env::var("TSCOLL_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..ProptestConfig::default()
    });
    let total = RefCell::new((0usize, Summary::default()));
    let result = runner.run(&(setup(), ops(MAX_OPS)), |(setup, ops)| {
        let summary = run(&setup, &ops).map_err(TestCaseError::fail)?;
        let mut t = total.borrow_mut();
        t.0 += 1;
        t.1.add(&summary);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (cases, sum) = total.into_inner();
    eprintln!("{cases} sequences: {sum:?}");
    assert!(sum.inserted > 0 && sum.rejected > 0, "{sum:?}");
    assert!(sum.nul_rejected > 0 && sum.with_fields > 0, "{sum:?}");
    assert!(sum.any_meta > 0 && sum.far_times > 0, "{sum:?}");
    assert!(
        sum.found > 0 && sum.deleted > 0 && sum.updated > 0,
        "{sum:?}"
    );
    assert!(sum.expired > 0 && sum.expire_uncertain > 0, "{sum:?}");
    assert!(sum.collmods_changed > 0 && sum.refused > 0, "{sum:?}");
    assert!(sum.reopens > 0 && sum.max_buckets > 1, "{sum:?}");
    assert!(sum.checkpoints > 0 && sum.crash_restarts > 0, "{sum:?}");
    assert!(
        sum.buckets_reopened > 0 && sum.buckets_evicted > 0,
        "{sum:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Encoding operations as fuzz input bytes and decoding them gives them back, so seeds
    /// and regression inputs written with `encode` replay the intended sequence.
    #[test]
    fn fuzz_input_encoding_round_trips(setup in setup(), ops in ops(MAX_OPS)) {
        let bytes = encode(&setup, &ops);
        prop_assert_eq!(decode(&bytes), (setup, ops));
    }
}

/// Replays the committed fuzz corpus (`fuzz/corpus/engine_ops/`) with the fuzz target's logic.
#[test]
fn engine_ops_corpus_replays() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/engine_ops");
    let mut n = 0;
    let mut sum = Summary::default();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("corpus entry").path();
        if path.is_file() {
            let data = std::fs::read(&path).expect("corpus file");
            let name = path.display().to_string();
            let summary = std::panic::catch_unwind(|| engine_ops::run_bytes(&data))
                .unwrap_or_else(|_| panic!("{name} diverges"));
            sum.add(&summary);
            n += 1;
        }
    }
    assert!(n >= 10, "{}: only {n} corpus files", dir.display());
    assert!(sum.ops > 0 && sum.inserted > 0, "{sum:?}");
}

// ---------------------------------------------------------------------------------------------
// Engine bugs found by the model: the minimal sequences, run with nothing stepped around.

fn replay(setup: Setup, ops: &[Op]) {
    let dir = engine_ops::temp_dir();
    if let Err(e) = run_ops_avoiding(dir.path(), &setup, ops, Avoid::NOTHING) {
        panic!("{e}");
    }
}

fn seconds() -> Setup {
    Setup {
        max_count: 1000,
        bucketing: Bucketing::Granularity(Granularity::Seconds),
        expire: None,
        memory_threshold: MEMORY_THRESHOLDS[0],
    }
}

/// One measurement of `series` at `T0`.
fn one(series: u8) -> Op {
    at(series, 0)
}

fn on_meta(p: MetaPred) -> Filter {
    Filter {
        meta: Some(p),
        ..Filter::default()
    }
}

/// `{m: null}` matches a missing meta field (SPEC §14.2; `delete_many` and `update_many` do
/// match it), and `find` must not scan only the index prefix of the `null` value's hash (a
/// regression test: that missed the no-meta series).
#[test]
fn find_null_meta_matches_no_meta_series() {
    let find = Op::Find {
        filter: on_meta(MetaPred::Eq(3)),
        sort: None,
        limit: None,
        projection: Proj::All,
    };
    replay(seconds(), &[one(3), find]);
}

/// As above for `count`, through `$in`: `count({m: {$in: [null, "b"]}})` must be 1
/// (`count({m: null})` likewise; a regression test).
#[test]
fn count_null_meta_matches_no_meta_series() {
    let count = Op::Count {
        filter: on_meta(MetaPred::In(3, 1)),
    };
    replay(seconds(), &[one(3), count]);
}

/// As above for `last_points`: `last_points({m: null})` must give the no-meta series'
/// measurement (a regression test).
#[test]
fn last_points_null_meta_matches_no_meta_series() {
    let last = Op::LastPoints {
        filter: on_meta(MetaPred::Eq(4)),
    };
    replay(seconds(), &[one(3), last]);
}

/// One measurement of `series` at `T0 + minute`.
fn at(series: u8, minute: u16) -> Op {
    at_minutes(series, &[minute])
}

/// One insert of a measurement of `series` at each of `minutes`.
fn at_minutes(series: u8, minutes: &[u16]) -> Op {
    Op::Insert {
        docs: minutes
            .iter()
            .map(|&minute| Meas {
                series,
                minute,
                second: 0,
                value: Val::Int(0),
                time: TimeKind::Date,
                extra: Vec::new(),
                meta: None,
            })
            .collect(),
        ordered: true,
    }
}

/// `last_points` with a time bound: series 0 gets 0:09 (bucket A, min 0:09), then 0:00
/// (time-backward: bucket B, min 0:00), then 0:30 (joins B). `last_points({t: {$lt: 0:09:30}})`
/// must give 0:09 (A matches whole), although B is visited next since it could hold later
/// rows (its max 0:30 straddles the bound) and its latest match is only 0:00 (a regression
/// test: that match once replaced the better one).
#[test]
fn last_points_keeps_the_latest_across_overlapping_buckets() {
    let last = Op::LastPoints {
        filter: Filter {
            time: vec![TimePred {
                op: engine_ops::Cmp::Lt,
                minute: 9,
                half: true,
                number: false,
                at: None,
            }],
            ..Filter::default()
        },
    };
    replay(seconds(), &[at(0, 9), at(0, 0), at(0, 30), last]);
}

// ---------------------------------------------------------------------------------------------
// Recovery from the write-ahead log after a crash.

/// One insert of a measurement of each series at each of `minutes` (`value` in `v`).
fn every_series(minutes: &[u16], value: i16) -> Op {
    let docs = (0..SERIES)
        .flat_map(|series| {
            minutes.iter().map(move |&minute| Meas {
                series,
                minute,
                second: series,
                value: Val::Int(value),
                time: TimeKind::Date,
                extra: Vec::new(),
                meta: None,
            })
        })
        .collect();
    Op::Insert {
        docs,
        ordered: true,
    }
}

/// Every measurement, oldest first.
fn find_all() -> Op {
    Op::Find {
        filter: Filter::default(),
        sort: Some(false),
        limit: None,
        projection: Proj::All,
    }
}

/// Setups with open buckets only (a large bucket count) and with buckets that fill up and
/// leave memory (two measurements each, or every idle bucket evicted by a 1-byte threshold).
fn crash_setups() -> [Setup; 3] {
    [
        seconds(),
        Setup {
            max_count: 2,
            ..seconds()
        },
        Setup {
            memory_threshold: 1,
            ..seconds()
        },
    ]
}

/// Measurements of every series inserted before a crash are all there, once each, after the
/// reopen (recovered from the write-ahead log), and the collection takes more afterwards.
#[test]
fn a_crash_keeps_every_acknowledged_measurement() {
    for setup in crash_setups() {
        let ops = [
            every_series(&[0, 1, 2], 1),
            every_series(&[3, 90], 2),
            Op::CrashRestart,
            find_all(),
            Op::Count {
                filter: Filter::default(),
            },
            every_series(&[4], 3),
        ];
        replay(setup, &ops);
    }
}

/// Inserts before and after a checkpoint and between two crashes: each crash recovers what
/// the checkpoint holds plus the log written after it, and a second crash recovers what the
/// first recovery and the inserts after it left (nothing lost, nothing twice).
#[test]
fn crashes_after_a_checkpoint_keep_every_measurement() {
    for setup in crash_setups() {
        let ops = [
            every_series(&[0, 1], 1),
            Op::Checkpoint,
            every_series(&[2, 60], 2),
            Op::CrashRestart,
            every_series(&[3, 61, 200], 3),
            Op::CrashRestart,
            find_all(),
            Op::LastPoints {
                filter: Filter::default(),
            },
        ];
        replay(setup, &ops);
    }
}

fn delete_all() -> Op {
    Op::Delete {
        filter: Filter::default(),
        one: false,
    }
}

/// A deletion before a crash stays done: `delete_many({})` removes the only bucket, and
/// recovery must not store its logged rows again (they came back: the store no longer holds
/// the bucket, so every logged row looked unstored).
#[test]
fn a_crash_keeps_a_deletion() {
    replay(seconds(), &[at(0, 0), delete_all(), Op::CrashRestart]);
}

/// A deletion of some rows of a bucket before a crash: `delete_one({})` rewrites the bucket
/// with one row, and recovery must not store the logged rows past that count again (the
/// measurement kept came back twice).
#[test]
fn a_crash_keeps_a_partial_deletion() {
    let two = at_minutes(0, &[0, 1]);
    let delete_one = Op::Delete {
        filter: Filter::default(),
        one: true,
    };
    replay(seconds(), &[two, delete_one, Op::CrashRestart]);
}

/// A TTL pass before a crash stays done: the expired bucket must not come back from the log.
#[test]
fn a_crash_keeps_an_expiry() {
    let setup = Setup {
        bucketing: Bucketing::Fixed(60),
        expire: Some(0),
        ..seconds()
    };
    replay(
        setup,
        &[at(0, 0), Op::Expire { minute: 2 }, Op::CrashRestart],
    );
}

/// A bucket logged by a checkpoint and by an insert after it, then deleted: the database must
/// open after a crash (recovery refused it as corrupt, the insert's log entry naming a bucket
/// the store no longer holds without its series).
#[test]
fn a_crash_after_a_checkpoint_and_a_deletion_reopens() {
    replay(
        seconds(),
        &[
            at(0, 0),
            Op::Checkpoint,
            at(0, 5),
            delete_all(),
            Op::CrashRestart,
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Field names BSON cannot store, and values at the edges of their types.

/// A measurement of series 0 at `T0 + minute` with arbitrary fields and meta value.
fn with_fields(minute: u16, extra: Vec<(&str, Value)>, meta: Option<Value>) -> Meas {
    Meas {
        series: 0,
        minute,
        second: 0,
        value: Val::Int(1),
        time: TimeKind::Date,
        extra: extra.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        meta,
    }
}

fn fields(fields: Vec<(&str, Value)>) -> Vec<(String, Value)> {
    fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// A NUL in a field name (BSON writes names as C strings) — at the top level, in a
/// sub-document, in a document inside an array, in a meta sub-document, in the scope of code
/// with scope — rejects that measurement alone with `BadValue` at its index: the others of the
/// batch are stored exactly (unordered) or those before it (ordered), later inserts into the
/// same series are intact, and the collection reads back after a reopen (a regression test:
/// such a name once corrupted its whole batch, and in a meta value made the collection
/// unreadable).
#[test]
fn a_nul_in_a_field_name_rejects_the_measurement_alone() {
    let good = |minute| {
        with_fields(
            minute,
            vec![("x", Value::Int32(7)), ("", Value::Null)],
            None,
        )
    };
    let bad = [
        with_fields(1, vec![("a\0b", Value::Int32(1))], None),
        with_fields(
            2,
            vec![("d", Value::Document(fields(vec![("k\0", Value::Null)])))],
            None,
        ),
        with_fields(
            3,
            vec![(
                "arr",
                Value::Array(vec![Value::Document(fields(vec![(
                    "\0",
                    Value::Bool(true),
                )]))]),
            )],
            None,
        ),
        with_fields(
            4,
            Vec::new(),
            Some(Value::Document(fields(vec![(
                "s",
                Value::Document(fields(vec![("x\0", Value::Int32(2))])),
            )]))),
        ),
        with_fields(
            5,
            vec![(
                "c",
                Value::CodeWithScope("f()".into(), fields(vec![("\0\0", Value::Int32(3))])),
            )],
            None,
        ),
    ];
    for ordered in [false, true] {
        for b in &bad {
            let ops = [
                Op::Insert {
                    docs: vec![good(0), b.clone(), good(10)],
                    ordered,
                },
                Op::Insert {
                    docs: vec![good(20)],
                    ordered,
                },
                Op::CloseReopen { clean: true },
                Op::Find {
                    filter: Filter::default(),
                    sort: Some(false),
                    limit: None,
                    projection: Proj::All,
                },
            ];
            replay(seconds(), &ops);
        }
    }
}

/// Times and date fields at both ends of the 64-bit range (years before 0 and after 9999,
/// the first and last milliseconds) are stored and read back exactly, every bucket holds its
/// measurements in `[min, min + span)`, and TTL passes at both ends remove exactly the
/// buckets says.
#[test]
fn dates_of_the_whole_range_round_trip() {
    let docs: Vec<Meas> = engine_ops::DATES
        .iter()
        .map(|t| Meas {
            time: TimeKind::At(*t),
            ..with_fields(0, vec![("d", Value::Date(*t))], None)
        })
        .collect();
    let setup = Setup {
        expire: Some(60),
        ..seconds()
    };
    for chunk in docs.chunks(MAX_INSERT) {
        let ops = [
            Op::Insert {
                docs: chunk.to_vec(),
                ordered: true,
            },
            Op::Find {
                filter: Filter::default(),
                sort: Some(true),
                limit: None,
                projection: Proj::All,
            },
            Op::CloseReopen { clean: false },
            Op::ExpireAt(i64::MIN),
            Op::ExpireAt(0),
            Op::ExpireAt(i64::MAX),
        ];
        replay(setup, &ops);
    }
}

/// One measurement with a field of every BSON type at the edges of its values (NaN payloads,
/// negative zero, extreme integers and dates, every binary subtype, non-canonical Decimal128,
/// empty and odd names) reads back exactly, also as a meta value.
#[test]
fn every_type_round_trips() {
    let mut all: Vec<(String, Value)> = Vec::new();
    let mut add = |v: Value| all.push((format!("f{}", all.len()), v));
    DOUBLES.iter().for_each(|b| add(Value::Double(*b)));
    DATES.iter().for_each(|t| add(Value::Date(*t)));
    INT32S.iter().for_each(|i| add(Value::Int32(*i)));
    INT64S.iter().for_each(|i| add(Value::Int64(*i)));
    decimals().iter().for_each(|d| add(Value::Decimal128(*d)));
    add(Value::Decimal128([0xff; 16]));
    BINARY_SUBTYPES
        .iter()
        .for_each(|s| add(Value::Binary(*s, vec![0, 1, 2])));
    for v in [
        Value::String("a\0b\u{10ffff}".into()),
        Value::String(String::new()),
        Value::Undefined,
        Value::ObjectId([0xab; 12]),
        Value::Bool(false),
        Value::Null,
        Value::Regex("^a.*$".into(), "imsx".into()),
        Value::DbPointer("db.c".into(), [1; 12]),
        Value::Code("x\0".into()),
        Value::Symbol("s".into()),
        Value::CodeWithScope("f()".into(), fields(vec![("$", Value::MinKey)])),
        Value::Timestamp(u32::MAX, 0),
        Value::MinKey,
        Value::MaxKey,
        Value::Array(vec![Value::Array(Vec::new()), Value::Document(Vec::new())]),
        Value::Document(fields(vec![
            ("z", Value::Int32(1)),
            ("a.b", Value::Int32(2)),
        ])),
    ] {
        add(v);
    }
    let mut ops = Vec::new();
    for (i, chunk) in all.chunks(MAX_FIELDS).enumerate() {
        let minute = u16::try_from(i).unwrap_or(0);
        let extra: Vec<(&str, Value)> =
            chunk.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let meta = Value::Document(chunk.to_vec());
        ops.push(Op::Insert {
            docs: vec![
                with_fields(minute, extra, None),
                with_fields(minute, Vec::new(), Some(meta)),
            ],
            ordered: true,
        });
    }
    ops.push(Op::CloseReopen { clean: true });
    replay(seconds(), &ops);
}

// ---------------------------------------------------------------------------------------------
// Meta equality on array values: divergences from MongoDB's matching, stepped around by the
// generated meta values (`engine_ops::meta_of`) and kept here as ignored tests.

/// A collection holding one measurement per meta value of `metas`, at `T0`.
fn with_metas(dir: &std::path::Path, metas: Vec<Bson>) -> tscoll_engine::Collection {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let coll = db
        .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
        .expect("create");
    let t = DateTime::from_millis(engine_ops::T0);
    let docs: Vec<Document> = metas.into_iter().map(|m| doc! { "t": t, "m": m }).collect();
    let r = coll
        .insert_many(&docs, &InsertOptions::default())
        .expect("insert");
    assert_eq!(r.inserted, docs.len());
    coll
}

fn matches(coll: &tscoll_engine::Collection, filter: &Document) -> (usize, u64) {
    let found = coll.find(filter, &FindOptions::default()).expect("find");
    (found.len(), coll.count(filter).expect("count"))
}

/// An equality on the whole meta value matches an array holding the operand (MongoDB: an
/// array matches when one of its elements does, SPEC §14.2): `{m: null}` finds `m: [null]`,
/// `{m: "b"}` finds `m: ["b", 1]`, for `find` and `count` alike. (`{m: 0}` does find
/// `m: [0]`: number operands are not looked up by their series.)
#[test]
#[ignore = "whole-meta equality on null or a string looks up the operand's own series only"]
fn meta_equality_matches_array_elements() {
    let dir = engine_ops::temp_dir();
    let coll = with_metas(
        dir.path(),
        vec![
            Bson::Array(vec![Bson::Null]),
            Bson::Array(vec![Bson::String("b".into()), Bson::Int32(1)]),
            Bson::Array(vec![Bson::Int32(0)]),
        ],
    );
    for (filter, n) in [
        (doc! { "m": 0 }, 1),
        (doc! { "m": null }, 1),
        (doc! { "m": "b" }, 1),
        (doc! { "m": { "$in": [null, "b"] } }, 2),
    ] {
        assert_eq!(matches(&coll, &filter), (n, n as u64), "{filter}");
    }
}

/// An equality does not look into arrays nested in the meta value (MongoDB traverses one
/// level of arrays): `{m: 0}` and `{m: null}` do not find `m: [[0]]` or `m: [[null]]`.
#[test]
#[ignore = "meta equality matches elements of nested arrays"]
fn meta_equality_does_not_look_into_nested_arrays() {
    let dir = engine_ops::temp_dir();
    let coll = with_metas(
        dir.path(),
        vec![
            Bson::Array(vec![Bson::Array(vec![Bson::Int32(0)])]),
            Bson::Array(vec![Bson::Array(vec![Bson::Null])]),
        ],
    );
    for filter in [doc! { "m": 0 }, doc! { "m": null }] {
        assert_eq!(matches(&coll, &filter), (0, 0), "{filter}");
    }
}
