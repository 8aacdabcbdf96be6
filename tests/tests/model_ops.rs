//! Model-based test of the engine (SPEC §10 TTL, §11 deletes and updates, §12 collMod, §14
//! queries): random sequences of operations run against a collection and against an in-memory
//! model, which must agree after every operation. The operations and the checks live in
//! `fuzz/common/engine_ops.rs`, shared with the cargo-fuzz target `engine_ops`; the committed
//! fuzz corpus `fuzz/corpus/engine_ops/` is replayed here on stable.

#[path = "../../fuzz/common/engine_ops.rs"]
mod engine_ops;

use std::cell::RefCell;
use std::path::PathBuf;

use engine_ops::{
    Avoid, BAD_EXPIRES, BAD_UPDATES, BUCKETINGS, Bucketing, CREATE_EXPIRES, CollModOp, EXPIRES,
    Filter, MAX_COUNTS, MAX_INSERT, MAX_OPS, MEMORY_THRESHOLDS, MINUTES, Meas, MetaPred, Op, Proj,
    SERIES, SPANS, Setup, Summary, TimeKind, TimePred, VALUE_RANGE, Val, ValPred, decode, encode,
    run_ops, run_ops_avoiding,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use tscoll_engine::Granularity;

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
    ];
    (series(), minute(), 0..60u8, val, time).prop_map(|(series, minute, second, value, time)| {
        Meas {
            series,
            minute,
            second,
            value,
            time,
        }
    })
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
    let time = (time_op, minute(), any::<bool>(), prop::bool::weighted(0.05))
        .prop_map(|(op, minute, half, number)| TimePred {
            op,
            minute,
            half,
            number,
        })
        .boxed();
    let value = prop_oneof![
        4 => (cmp(), value(), prop::bool::weighted(0.25)).prop_map(|(o, v, d)| ValPred::Cmp(o, v, d)),
        1 => prop::collection::vec(value(), 1..=3).prop_map(ValPred::In),
    ];
    (
        prop::option::weighted(0.5, meta_pred()),
        prop_oneof![2 => Just(0usize), 2 => Just(1), 1 => Just(2)]
            .prop_flat_map(move |n| prop::collection::vec(time.clone(), n)),
        prop::option::weighted(0.3, value),
    )
        .prop_map(|(meta, time, value)| Filter { meta, time, value })
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
        2 => filter().prop_map(|filter| Op::Count { filter }),
        2 => filter().prop_map(|filter| Op::LastPoints { filter }),
        3 => (filter(), any::<bool>()).prop_map(|(filter, one)| Op::Delete { filter, one }),
        2 => (prop::option::weighted(0.8, meta_pred()), series())
            .prop_map(|(filter, to)| Op::UpdateMeta { filter, to }),
        1 => (0..BAD_UPDATES).prop_map(Op::BadUpdate),
        3 => prop_oneof![3 => 0..8_000u16, 1 => any::<u16>()].prop_map(|minute| Op::Expire { minute }),
        3 => coll_mod().prop_map(Op::CollMod),
        2 => any::<bool>().prop_map(|clean| Op::CloseReopen { clean }),
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
    assert!(
        sum.found > 0 && sum.deleted > 0 && sum.updated > 0,
        "{sum:?}"
    );
    assert!(sum.expired > 0 && sum.expire_uncertain > 0, "{sum:?}");
    assert!(sum.collmods_changed > 0 && sum.refused > 0, "{sum:?}");
    assert!(sum.reopens > 0 && sum.max_buckets > 1, "{sum:?}");
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
    Op::Insert {
        docs: vec![Meas {
            series,
            minute,
            second: 0,
            value: Val::Int(0),
            time: TimeKind::Date,
        }],
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
            }],
            ..Filter::default()
        },
    };
    replay(seconds(), &[at(0, 9), at(0, 0), at(0, 30), last]);
}
