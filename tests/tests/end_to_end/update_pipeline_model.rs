//! Model-based test of pipeline-style updates: random measurements, a random filter and a
//! random update pipeline (`$set` of arithmetic and conditional expressions over numeric
//! fields, `$unset`, `$replaceWith` of a document built from fields) run against a
//! collection and against plain documents with a small evaluator of its own; the stored
//! measurements must be the model's.

use bson::{Bson, Document, doc};
use proptest::prelude::*;
use tscoll_engine::{CatalogOptions, Update};
use tscoll_tests::spec::{at, find_sorted, insert_all, options, temp_collection};

/// The numeric fields expressions read and stages write.
const FIELDS: [&str; 4] = ["x", "y", "z", "w"];

/// A numeric expression.
#[derive(Clone, Debug)]
enum E {
    Field(usize),
    Lit(i32),
    Add(Box<E>, Box<E>),
    Sub(Box<E>, Box<E>),
    /// Times a small literal (keeps values far from int64's limits).
    MulLit(Box<E>, i32),
    /// `$cond: [{$gte: [e, lit]}, then, else]`.
    CondGte(Box<E>, i32, Box<E>, Box<E>),
    /// `$ifNull: [e, lit]`.
    IfNull(Box<E>, i32),
}

#[derive(Clone, Debug)]
enum Stage {
    Set(Vec<(usize, E)>),
    Unset(Vec<usize>),
    /// `{t: "$t", m: "$m" (when kept), _id: "$_id" (when kept), fields...}`.
    ReplaceWith {
        meta: bool,
        id: bool,
        fields: Vec<(usize, E)>,
    },
}

fn expr() -> impl Strategy<Value = E> {
    let leaf = prop_oneof![
        (0..FIELDS.len()).prop_map(E::Field),
        (-20..=20i32).prop_map(E::Lit)
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Add(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| E::Sub(Box::new(a), Box::new(b))),
            (inner.clone(), -2..=2i32).prop_map(|(a, k)| E::MulLit(Box::new(a), k)),
            (inner.clone(), -10..=10i32, inner.clone(), inner.clone())
                .prop_map(|(a, k, b, c)| E::CondGte(Box::new(a), k, Box::new(b), Box::new(c))),
            (inner, -5..=5i32).prop_map(|(a, k)| E::IfNull(Box::new(a), k)),
        ]
    })
}

fn assignments() -> impl Strategy<Value = Vec<(usize, E)>> {
    prop::collection::btree_map(0..FIELDS.len(), expr(), 1..=3)
        .prop_map(|m| m.into_iter().collect())
}

fn stage() -> impl Strategy<Value = Stage> {
    prop_oneof![
        3 => assignments().prop_map(Stage::Set),
        1 => prop::collection::btree_set(0..FIELDS.len(), 1..=2)
            .prop_map(|s| Stage::Unset(s.into_iter().collect())),
        1 => (any::<bool>(), any::<bool>(), assignments())
            .prop_map(|(meta, id, fields)| Stage::ReplaceWith { meta, id, fields }),
    ]
}

/// A numeric field value: an int32 (small, or near the ends of int32's range so that sums
/// and differences leave it and become longs), an int64 (small, to catch a long narrowed
/// back to an int32, or large), sometimes a double, null or missing. The magnitudes stay
/// far from int64's limits through the model's few operations.
fn number() -> impl Strategy<Value = Option<Bson>> {
    prop_oneof![
        3 => (-20..=20i32).prop_map(|v| Some(Bson::Int32(v))),
        1 => prop_oneof![i32::MAX - 20..=i32::MAX, i32::MIN..=i32::MIN + 20]
            .prop_map(|v| Some(Bson::Int32(v))),
        1 => (-20..=20i64).prop_map(|v| Some(Bson::Int64(v))),
        1 => (-(1i64 << 40)..=(1i64 << 40)).prop_map(|v| Some(Bson::Int64(v))),
        1 => (-20..=20i32).prop_map(|v| Some(Bson::Double(f64::from(v) + 0.5))),
        1 => Just(Some(Bson::Null)),
        2 => Just(None),
    ]
}

/// Measurements: `_id` i, minute i, series "a" or "b", the numeric fields.
fn measurements() -> impl Strategy<Value = Vec<Document>> {
    prop::collection::vec((any::<bool>(), number(), number(), number()), 1..12).prop_map(|rows| {
        (0i32..)
            .zip(rows)
            .map(|(i, (b, x, y, z))| {
                let mut d =
                    doc! { "_id": i, "t": at(i64::from(i) * 60_000), "m": if b { "b" } else { "a" } };
                for (name, v) in [("x", x), ("y", y), ("z", z)] {
                    if let Some(v) = v {
                        d.insert(name, v);
                    }
                }
                d
            })
            .collect()
    })
}

/// A filter: everything, one series, or a range of `x`.
fn filter() -> impl Strategy<Value = Document> {
    prop_oneof![
        Just(doc! {}),
        Just(doc! { "m": "a" }),
        (-10..=10i32).prop_map(|k| doc! { "x": { "$gte": k } }),
    ]
}

// The update as MongoDB's syntax.

fn syntax(e: &E) -> Bson {
    match e {
        E::Field(f) => Bson::String(format!("${}", FIELDS[*f])),
        E::Lit(v) => Bson::Int32(*v),
        E::Add(a, b) => bson::bson!({ "$add": [syntax(a), syntax(b)] }),
        E::Sub(a, b) => bson::bson!({ "$subtract": [syntax(a), syntax(b)] }),
        E::MulLit(a, k) => bson::bson!({ "$multiply": [syntax(a), *k] }),
        E::CondGte(a, k, b, c) => {
            bson::bson!({ "$cond": [{ "$gte": [syntax(a), *k] }, syntax(b), syntax(c)] })
        }
        E::IfNull(a, k) => bson::bson!({ "$ifNull": [syntax(a), *k] }),
    }
}

fn fields_syntax(fields: &[(usize, E)]) -> Document {
    fields
        .iter()
        .map(|(f, e)| (FIELDS[*f].to_owned(), syntax(e)))
        .collect()
}

fn pipeline(stages: &[Stage]) -> Vec<Document> {
    stages
        .iter()
        .map(|s| match s {
            Stage::Set(fields) => doc! { "$set": fields_syntax(fields) },
            Stage::Unset(names) => doc! {
                "$unset": names.iter().map(|f| Bson::from(FIELDS[*f])).collect::<Vec<_>>()
            },
            Stage::ReplaceWith { meta, id, fields } => {
                let mut d = Document::new();
                if *id {
                    d.insert("_id", "$_id");
                }
                d.insert("t", "$t");
                if *meta {
                    d.insert("m", "$m");
                }
                d.extend(fields_syntax(fields));
                doc! { "$replaceWith": d }
            }
        })
        .collect()
}

// The model: the same update on plain documents.

/// A number of the model: its value and whether it is an int32, an int64 or a double.
#[derive(Clone, Copy, Debug, PartialEq)]
enum N {
    I32(i64),
    I64(i64),
    F(f64),
}

fn to_n(v: &Bson) -> Option<N> {
    match v {
        Bson::Int32(i) => Some(N::I32(i64::from(*i))),
        Bson::Int64(i) => Some(N::I64(*i)),
        Bson::Double(f) => Some(N::F(*f)),
        _ => None,
    }
}

#[expect(
    clippy::cast_precision_loss,
    reason = "the model's values stay below 2^53"
)]
fn as_f(n: N) -> f64 {
    match n {
        N::I32(i) | N::I64(i) => i as f64,
        N::F(f) => f,
    }
}

/// MongoDB's arithmetic typing: int32 with int32 stays int32 when the result fits, else
/// int64; with an int64, int64; with a double, double.
fn arith(a: N, b: N, op: fn(i64, i64) -> i64, fop: fn(f64, f64) -> f64) -> N {
    match (a, b) {
        (N::F(_), _) | (_, N::F(_)) => N::F(fop(as_f(a), as_f(b))),
        (N::I32(x), N::I32(y)) => {
            let r = op(x, y);
            if i32::try_from(r).is_ok() {
                N::I32(r)
            } else {
                N::I64(r)
            }
        }
        (N::I32(x) | N::I64(x), N::I32(y) | N::I64(y)) => N::I64(op(x, y)),
    }
}

fn to_bson(n: N) -> Bson {
    match n {
        N::I32(i) => Bson::Int32(i32::try_from(i).expect("int32")),
        N::I64(i) => Bson::Int64(i),
        N::F(f) => Bson::Double(f),
    }
}

/// The value of `e` on `doc`: `None` missing, `Some(Null)` null.
fn eval(e: &E, doc: &Document) -> Option<Bson> {
    let num = |v: Option<Bson>| v.as_ref().and_then(to_n);
    let binary = |a: &E, b: &E, op: fn(i64, i64) -> i64, fop: fn(f64, f64) -> f64| {
        match (num(eval(a, doc)), num(eval(b, doc))) {
            (Some(x), Some(y)) => Some(to_bson(arith(x, y, op, fop))),
            // A missing or null operand makes the result null.
            _ => Some(Bson::Null),
        }
    };
    match e {
        E::Field(f) => doc.get(FIELDS[*f]).cloned(),
        E::Lit(v) => Some(Bson::Int32(*v)),
        E::Add(a, b) => binary(a, b, |x, y| x + y, |x, y| x + y),
        E::Sub(a, b) => binary(a, b, |x, y| x - y, |x, y| x - y),
        E::MulLit(a, k) => binary(a, &E::Lit(*k), |x, y| x * y, |x, y| x * y),
        E::CondGte(a, k, b, c) => {
            // Missing and null are below every number.
            let holds = num(eval(a, doc)).is_some_and(|x| as_f(x) >= f64::from(*k));
            if holds { eval(b, doc) } else { eval(c, doc) }
        }
        E::IfNull(a, k) => match eval(a, doc) {
            None | Some(Bson::Null) => Some(Bson::Int32(*k)),
            v => v,
        },
    }
}

fn model_apply(stages: &[Stage], original: &Document) -> Document {
    let mut doc = original.clone();
    for s in stages {
        match s {
            Stage::Set(fields) => {
                let values: Vec<_> = fields.iter().map(|(f, e)| (*f, eval(e, &doc))).collect();
                for (f, v) in values {
                    match v {
                        Some(v) => {
                            doc.insert(FIELDS[f], v);
                        }
                        None => {
                            doc.remove(FIELDS[f]);
                        }
                    }
                }
            }
            Stage::Unset(names) => {
                for f in names {
                    doc.remove(FIELDS[*f]);
                }
            }
            Stage::ReplaceWith { meta, id, fields } => {
                let mut new = Document::new();
                for (name, keep) in [("_id", *id), ("t", true), ("m", *meta)] {
                    if let Some(v) = doc.get(name).filter(|_| keep) {
                        new.insert(name, v.clone());
                    }
                }
                for (f, e) in fields {
                    if let Some(v) = eval(e, &doc) {
                        new.insert(FIELDS[*f], v);
                    }
                }
                doc = new;
            }
        }
    }
    // The `_id` is immutable: a document without one gets it back.
    if !doc.contains_key("_id") {
        let mut with_id = doc! { "_id": original.get("_id").cloned().unwrap_or(Bson::Null) };
        with_id.extend(doc);
        doc = with_id;
    }
    doc
}

fn model_matches(filter: &Document, doc: &Document) -> bool {
    if let Some(m) = filter.get("m") {
        return doc.get("m") == Some(m);
    }
    match filter.get_document("x").ok().and_then(|d| d.get("$gte")) {
        Some(Bson::Int32(k)) => doc
            .get("x")
            .and_then(to_n)
            .is_some_and(|x| as_f(x) >= f64::from(*k)),
        _ => true,
    }
}

/// Fields in name order (the store keeps its own column order), documents by `_id`.
fn normalized(docs: Vec<Document>) -> Vec<Vec<(String, Bson)>> {
    let mut out: Vec<Vec<(String, Bson)>> = docs
        .into_iter()
        .map(|d| {
            let mut fields: Vec<(String, Bson)> = d.into_iter().collect();
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            fields
        })
        .collect();
    out.sort_by_key(|d| {
        d.iter()
            .find(|(k, _)| k == "_id")
            .map(|(_, v)| v.to_string())
    });
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn pipeline_updates_agree_with_the_model(
        docs in measurements(),
        filter in filter(),
        stages in prop::collection::vec(stage(), 1..=3),
    ) {
        let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
        insert_all(&coll, &docs);
        let update = pipeline(&stages);
        let r = coll
            .update_many(&filter, Update::Pipeline(update.clone()))
            .map_err(|e| TestCaseError::fail(format!("{update:?}: {e}")))?;
        let mut matched = 0;
        let expected: Vec<Document> = docs
            .iter()
            .map(|d| {
                if model_matches(&filter, d) {
                    matched += 1;
                    model_apply(&stages, d)
                } else {
                    d.clone()
                }
            })
            .collect();
        prop_assert_eq!(r.matched, matched, "{:?}", update);
        prop_assert_eq!(
            normalized(find_sorted(&coll, doc! {})),
            normalized(expected),
            "{:?}",
            update
        );
    }
}
