//! The accumulators that keep up to `n` values of a group (or window): `$firstN`, `$lastN`,
//! `$minN`, `$maxN`, and the ranked ones that pick by a sort order of their own, `$top`,
//! `$bottom`, `$topN` and `$bottomN`.
//!
//! `n` is a constant, checked when the stage is parsed (a positive whole number, MongoDB's
//! codes 5787902, 5787903 and 5787908). Each state holds at most `n` values (a heap for the
//! ones that compare), and fails with `ExceededMemoryLimit` past MongoDB's 100 MiB
//! (`internalQueryTopNAccumulatorBytes`).
//!
//! The ranked ones evaluate one array per document, `[output, sortKey1, sortKey2, ...]` (the
//! `sortBy` paths read as field paths), and compare the keys in BSON order as MongoDB's sort
//! keys (an array by its least element ascending, its greatest descending); ties keep the
//! document seen first, as MongoDB does.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use bson::{Bson, Document};
use tscoll_catalog::value::{compare, value_size};

use super::group::{Key, Op};
use super::stage::{expression, sort_keys};
use super::window_seq::constant;
use crate::error::{Error, ErrorCode, Result};
use crate::mql::expr::Expr;

/// MongoDB's `internalQueryTopNAccumulatorBytes`: what one `n` accumulator may hold.
const MAX_BYTES: u64 = 100 * 1024 * 1024;

/// Which unranked `n` accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `$firstN`: the first `n` values, null for missing.
    FirstN,
    /// `$lastN`: the last `n` values, null for missing.
    LastN,
    /// `$minN`: the `n` least values (null and missing skipped), ascending.
    MinN,
    /// `$maxN`: the `n` greatest values (null and missing skipped), descending.
    MaxN,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::FirstN => "$firstN",
            Kind::LastN => "$lastN",
            Kind::MinN => "$minN",
            Kind::MaxN => "$maxN",
        }
    }
}

/// A `$top`, `$bottom`, `$topN` or `$bottomN`: how many, which end, and the directions of
/// its sort keys (bit `i` set: key `i` descending).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ranked {
    n: u64,
    single: bool,
    bottom: bool,
    desc: u32,
}

/// The most sort keys a `sortBy` may have (MongoDB's limit on a compound sort).
const MAX_KEYS: usize = 32;

fn failed(code: u32, message: String) -> Error {
    Error::rejected(ErrorCode::Location(code), message)
}

fn exceeded(op: &str, bytes: u64) -> Result<()> {
    if bytes > MAX_BYTES {
        return Err(Error::rejected(
            ErrorCode::ExceededMemoryLimit,
            format!("{op} used more than its {MAX_BYTES} bytes of memory"),
        ));
    }
    Ok(())
}

/// MongoDB's checks of `n`: a number (5787902), whole (5787903), above 0 (5787908). `n` must
/// be a constant here.
fn n_of(op: &str, v: &Bson) -> Result<u64> {
    let Some(v) = constant(&expression(v)?)? else {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            format!("{op}: 'n' must be a constant"),
        ));
    };
    #[expect(clippy::cast_precision_loss, reason = "checking a whole number")]
    let x = match v {
        Bson::Int32(n) => f64::from(n),
        Bson::Int64(n) => n as f64,
        Bson::Double(d) => d,
        other => {
            return Err(failed(
                5_787_902,
                format!("{op}: value for 'n' must be of integral type, but found {other}"),
            ));
        }
    };
    if x.fract() != 0.0 || !x.is_finite() {
        return Err(failed(
            5_787_903,
            format!("{op}: value for 'n' must be of integral type, but found {x}"),
        ));
    }
    if x < 1.0 {
        return Err(failed(
            5_787_908,
            format!("{op}: 'n' must be greater than 0, found {x}"),
        ));
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a positive whole number, saturating"
    )]
    Ok(x as u64)
}

/// Parses `{n, input}` of `$firstN`, `$lastN`, `$minN` or `$maxN`.
///
/// # Errors
/// MongoDB's codes: not a document (5787900 for `$minN`/`$maxN`, 5787801 for
/// `$firstN`/`$lastN`), an unknown field (5787901), `n` or `input` missing (5787906,
/// 5787907), `n` not a positive whole number ([`n_of`]).
pub(super) fn parse_n(kind: Kind, arg: &Bson) -> Result<(Op, Option<Expr>)> {
    let op = kind.name();
    let Bson::Document(d) = arg else {
        let code = if matches!(kind, Kind::MinN | Kind::MaxN) {
            5_787_900
        } else {
            5_787_801
        };
        return Err(failed(
            code,
            format!("{op}: specification must be an object; found {arg}"),
        ));
    };
    let (mut n, mut input) = (None, None);
    for (k, v) in d {
        match k.as_str() {
            "n" => n = Some(n_of(op, v)?),
            "input" => input = Some(expression(v)?),
            _ => {
                return Err(failed(
                    5_787_901,
                    format!("{op}: unknown argument for 'n' operator: {k}"),
                ));
            }
        }
    }
    let n = n.ok_or_else(|| failed(5_787_906, format!("{op}: missing value for 'n'")))?;
    let input =
        input.ok_or_else(|| failed(5_787_907, format!("{op}: missing value for 'input'")))?;
    Ok((Op::N(kind, n), Some(input)))
}

/// Parses `{output, sortBy}` of `$top`/`$bottom` (`single`) or `{n, output, sortBy}` of
/// `$topN`/`$bottomN`; the operand becomes `[output, "$key1", "$key2", ...]`.
///
/// # Errors
/// MongoDB's codes: not a document (5788001), an unknown field (5788002), `n`, `output` or
/// `sortBy` missing (5788003, 5788004, 5788005); `BadValue` for a malformed `sortBy`.
pub(super) fn parse_ranked(
    op: &str,
    bottom: bool,
    single: bool,
    arg: &Bson,
) -> Result<(Op, Option<Expr>)> {
    let Bson::Document(d) = arg else {
        return Err(failed(
            5_788_001,
            format!("{op}: specification must be an object; found {arg}"),
        ));
    };
    let (mut n, mut output, mut sort) = (None, None, None);
    for (k, v) in d {
        match k.as_str() {
            "n" if !single => n = Some(n_of(op, v)?),
            "output" => output = Some(expression(v)?),
            "sortBy" => sort = Some(sort_keys(op, v)?),
            _ => {
                return Err(failed(5_788_002, format!("Unknown argument to {op} '{k}'")));
            }
        }
    }
    let n = if single {
        1
    } else {
        n.ok_or_else(|| failed(5_788_003, format!("{op}: missing value for 'n'")))?
    };
    let output =
        output.ok_or_else(|| failed(5_788_004, format!("{op}: missing value for 'output'")))?;
    let sort =
        sort.ok_or_else(|| failed(5_788_005, format!("{op}: missing value for 'sortBy'")))?;
    if sort.len() > MAX_KEYS {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            format!("{op}: sortBy has more than {MAX_KEYS} fields"),
        ));
    }
    let mut desc = 0u32;
    let mut items = vec![output];
    for (i, (path, descending)) in sort.into_iter().enumerate() {
        if descending {
            desc |= 1 << i;
        }
        items.push(expression(&Bson::String(format!("${}", path.join("."))))?);
    }
    Ok((
        Op::Ranked(Ranked {
            n,
            single,
            bottom,
            desc,
        }),
        Some(Expr::Array(items)),
    ))
}

/// The state of `$firstN`, `$lastN`, `$minN` or `$maxN`.
pub(super) enum NState {
    First(u64, Vec<Bson>, u64),
    Last(u64, VecDeque<Bson>, u64),
    /// A max-heap of the least values: its top is the first to leave.
    Min(u64, BinaryHeap<Key>, u64),
    /// A min-heap of the greatest values.
    Max(u64, BinaryHeap<Reverse<Key>>, u64),
}

fn full(n: u64, len: usize) -> bool {
    u64::try_from(len).unwrap_or(u64::MAX) >= n
}

impl NState {
    pub(super) fn new(kind: Kind, n: u64) -> NState {
        match kind {
            Kind::FirstN => NState::First(n, Vec::new(), 0),
            Kind::LastN => NState::Last(n, VecDeque::new(), 0),
            Kind::MinN => NState::Min(n, BinaryHeap::new(), 0),
            Kind::MaxN => NState::Max(n, BinaryHeap::new(), 0),
        }
    }

    /// Adds one document's value (`None`: missing).
    ///
    /// # Errors
    /// `ExceededMemoryLimit` past 100 MiB of values.
    pub(super) fn add(&mut self, v: Option<&Bson>) -> Result<()> {
        match self {
            NState::First(n, items, bytes) => {
                if !full(*n, items.len()) {
                    let x = v.cloned().unwrap_or(Bson::Null);
                    *bytes += value_size(&x);
                    exceeded("$firstN", *bytes)?;
                    items.push(x);
                }
            }
            NState::Last(n, items, bytes) => {
                if full(*n, items.len())
                    && let Some(old) = items.pop_front()
                {
                    *bytes -= value_size(&old);
                }
                let x = v.cloned().unwrap_or(Bson::Null);
                *bytes += value_size(&x);
                exceeded("$lastN", *bytes)?;
                items.push_back(x);
            }
            NState::Min(n, heap, bytes) => {
                let Some(x) = v.filter(|x| !matches!(x, Bson::Null | Bson::Undefined)) else {
                    return Ok(());
                };
                if full(*n, heap.len()) {
                    match heap.peek() {
                        Some(top) if compare(x, &top.0) == Ordering::Less => {
                            if let Some(old) = heap.pop() {
                                *bytes -= value_size(&old.0);
                            }
                        }
                        _ => return Ok(()),
                    }
                }
                *bytes += value_size(x);
                exceeded("$minN", *bytes)?;
                heap.push(Key(x.clone()));
            }
            NState::Max(n, heap, bytes) => {
                let Some(x) = v.filter(|x| !matches!(x, Bson::Null | Bson::Undefined)) else {
                    return Ok(());
                };
                if full(*n, heap.len()) {
                    match heap.peek() {
                        Some(top) if compare(x, &top.0.0) == Ordering::Greater => {
                            if let Some(old) = heap.pop() {
                                *bytes -= value_size(&old.0.0);
                            }
                        }
                        _ => return Ok(()),
                    }
                }
                *bytes += value_size(x);
                exceeded("$maxN", *bytes)?;
                heap.push(Reverse(Key(x.clone())));
            }
        }
        Ok(())
    }

    /// The values: in input order for `$firstN`/`$lastN`, ascending for `$minN`, descending
    /// for `$maxN`.
    pub(super) fn value(&self) -> Bson {
        Bson::Array(match self {
            NState::First(_, items, _) => items.clone(),
            NState::Last(_, items, _) => items.iter().cloned().collect(),
            NState::Min(_, heap, _) => {
                let mut v: Vec<&Key> = heap.iter().collect();
                v.sort();
                v.into_iter().map(|k| k.0.clone()).collect()
            }
            NState::Max(_, heap, _) => {
                let mut v: Vec<&Key> = heap.iter().map(|r| &r.0).collect();
                v.sort_by(|a, b| b.cmp(a));
                v.into_iter().map(|k| k.0.clone()).collect()
            }
        })
    }
}

/// One candidate of a ranked accumulator.
struct Entry {
    keys: Vec<Bson>,
    seq: u64,
    output: Bson,
    spec: Ranked,
}

impl Entry {
    /// The order of the `sortBy`, then the order seen.
    fn sort_order(&self, other: &Entry) -> Ordering {
        for (i, (a, b)) in self.keys.iter().zip(&other.keys).enumerate() {
            let o = compare(a, b);
            let o = if descending(self.spec.desc, i) {
                o.reverse()
            } else {
                o
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// Better first: the least keys for `$top`, the greatest for `$bottom`; of equal keys,
    /// the one seen first.
    fn rank(&self, other: &Entry) -> Ordering {
        let o = self.sort_order(other);
        let o = if self.spec.bottom { o.reverse() } else { o };
        o.then(self.seq.cmp(&other.seq))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.rank(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank(other)
    }
}

/// The state of `$top`, `$bottom`, `$topN` or `$bottomN`: a max-heap (by [`Entry::rank`]) of
/// the best `n` seen, whose top is the first to leave.
pub(super) struct RankedState {
    spec: Ranked,
    seq: u64,
    heap: BinaryHeap<Entry>,
    bytes: u64,
}

impl RankedState {
    pub(super) fn new(spec: Ranked) -> RankedState {
        RankedState {
            spec,
            seq: 0,
            heap: BinaryHeap::new(),
            bytes: 0,
        }
    }

    /// Adds one document's `[output, keys...]`.
    ///
    /// # Errors
    /// `ExceededMemoryLimit` past 100 MiB of values.
    pub(super) fn add(&mut self, v: Option<&Bson>) -> Result<()> {
        let (output, keys) = match v {
            Some(Bson::Array(items)) if !items.is_empty() => (
                items[0].clone(),
                items[1..]
                    .iter()
                    .enumerate()
                    .map(|(i, k)| sort_key(k, descending(self.spec.desc, i)))
                    .collect(),
            ),
            other => (other.cloned().unwrap_or(Bson::Null), Vec::new()),
        };
        let entry = Entry {
            keys,
            seq: self.seq,
            output,
            spec: self.spec,
        };
        self.seq += 1;
        if full(self.spec.n, self.heap.len()) {
            match self.heap.peek() {
                Some(worst) if entry < *worst => {
                    if let Some(old) = self.heap.pop() {
                        self.bytes -= size(&old);
                    }
                }
                _ => return Ok(()),
            }
        }
        self.bytes += size(&entry);
        exceeded(
            if self.spec.bottom {
                "$bottomN"
            } else {
                "$topN"
            },
            self.bytes,
        )?;
        self.heap.push(entry);
        Ok(())
    }

    /// The outputs kept, in `sortBy` order (equal keys in the order seen); for `$top` and
    /// `$bottom` the one value (null when nothing was added, as for an empty window).
    pub(super) fn value(&self) -> Bson {
        let mut v: Vec<&Entry> = self.heap.iter().collect();
        v.sort_by(|a, b| a.sort_order(b).then(a.seq.cmp(&b.seq)));
        if self.spec.single {
            return v.first().map_or(Bson::Null, |e| e.output.clone());
        }
        Bson::Array(v.into_iter().map(|e| e.output.clone()).collect())
    }
}

/// Whether sort key `i` is descending (bit `i` of `desc`).
fn descending(desc: u32, i: usize) -> bool {
    u32::try_from(i)
        .ok()
        .and_then(|i| 1_u32.checked_shl(i))
        .is_some_and(|bit| desc & bit != 0)
}

/// The key a value sorts by, as MongoDB's sort key: of an array, its least element ascending
/// and its greatest descending, an empty array below null (as undefined).
fn sort_key(v: &Bson, descending: bool) -> Bson {
    match v {
        Bson::Array(items) => {
            let pick = if descending {
                items.iter().max_by(|a, b| compare(a, b))
            } else {
                items.iter().min_by(|a, b| compare(a, b))
            };
            pick.cloned().unwrap_or(Bson::Undefined)
        }
        other => other.clone(),
    }
}

fn size(e: &Entry) -> u64 {
    e.keys.iter().map(value_size).sum::<u64>() + value_size(&e.output) + 32
}

/// `$mergeObjects`: merges the documents in order (later fields replace earlier ones), null
/// and missing skipped.
///
/// # Errors
/// `Location40400` for a value that is not a document.
pub(super) fn merge(into: &mut Document, v: Option<&Bson>) -> Result<()> {
    match v {
        None | Some(Bson::Null | Bson::Undefined) => Ok(()),
        Some(Bson::Document(d)) => {
            for (k, x) in d {
                into.insert(k.clone(), x.clone());
            }
            Ok(())
        }
        Some(other) => Err(failed(
            40400,
            format!(
                "$mergeObjects requires object inputs, but input {other} is of type {:?}",
                other.element_type()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use bson::{bson, doc};

    use super::*;

    fn run_n(kind: Kind, n: u64, vals: &[Option<Bson>]) -> Bson {
        let mut st = NState::new(kind, n);
        for v in vals {
            st.add(v.as_ref()).expect("add");
        }
        st.value()
    }

    #[test]
    fn n_accumulators_follow_mongodb_null_rules() {
        let vals = [
            Some(Bson::Int32(3)),
            None,
            Some(Bson::Null),
            Some(Bson::Int32(1)),
            Some(Bson::Double(2.5)),
            Some(Bson::String("a".into())),
        ];
        // $firstN/$lastN keep null and missing (as null).
        assert_eq!(run_n(Kind::FirstN, 3, &vals), bson!([3, null, null]));
        assert_eq!(run_n(Kind::LastN, 2, &vals), bson!([2.5, "a"]));
        // $minN/$maxN skip them; strings sort above numbers.
        assert_eq!(run_n(Kind::MinN, 2, &vals), bson!([1, 2.5]));
        assert_eq!(run_n(Kind::MaxN, 2, &vals), bson!(["a", 3]));
        // n larger than the group: all of them.
        assert_eq!(run_n(Kind::MaxN, 10, &vals), bson!(["a", 3, 2.5, 1]));
        assert_eq!(run_n(Kind::FirstN, 10, &vals[..2]), bson!([3, null]));
        assert_eq!(run_n(Kind::MinN, 3, &[]), bson!([]));
    }

    #[test]
    fn n_must_be_a_positive_whole_number() {
        let code = |spec: Document| match parse_n(Kind::FirstN, &Bson::Document(spec)) {
            Err(Error::Rejected { code, .. }) => Some(code.code()),
            Ok(_) => None,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(code(doc! { "n": 2, "input": "$x" }), None);
        assert_eq!(code(doc! { "n": 2.0, "input": "$x" }), None);
        assert_eq!(code(doc! { "n": { "$add": [1, 1] }, "input": "$x" }), None);
        assert_eq!(code(doc! { "n": "$k", "input": "$x" }), Some(2));
        assert_eq!(code(doc! { "n": "2", "input": "$x" }), Some(5_787_902));
        assert_eq!(code(doc! { "n": 1.5, "input": "$x" }), Some(5_787_903));
        assert_eq!(code(doc! { "n": 0, "input": "$x" }), Some(5_787_908));
        assert_eq!(code(doc! { "n": -3_i64, "input": "$x" }), Some(5_787_908));
        assert_eq!(code(doc! { "input": "$x" }), Some(5_787_906));
        assert_eq!(code(doc! { "n": 1 }), Some(5_787_907));
        assert_eq!(
            code(doc! { "n": 1, "input": "$x", "x": 1 }),
            Some(5_787_901)
        );
        assert!(matches!(
            parse_n(Kind::MinN, &Bson::Int32(1)),
            Err(Error::Rejected {
                code: ErrorCode::Location(5_787_900),
                ..
            })
        ));
    }

    /// Ranks `(output, key)` pairs as `{output: "$o", sortBy: {k: dir}}` would.
    fn ranked(op: &str, spec: Document, docs: &[(Bson, Bson)]) -> Bson {
        let bottom = op.starts_with("$bottom");
        let single = !op.ends_with('N');
        let (Op::Ranked(r), _) =
            parse_ranked(op, bottom, single, &Bson::Document(spec)).expect("parse")
        else {
            panic!("not ranked");
        };
        let mut st = RankedState::new(r);
        for (o, k) in docs {
            st.add(Some(&bson!([o.clone(), k.clone()]))).expect("add");
        }
        st.value()
    }

    #[test]
    fn top_and_bottom_pick_by_their_sort_and_keep_the_first_of_ties() {
        // The manual's game scores: ties at 33 keep the document seen first.
        let docs = [
            (bson!("PlayerA"), bson!(31)),
            (bson!("PlayerB"), bson!(33)),
            (bson!("PlayerC"), bson!(99)),
            (bson!("PlayerD"), bson!(1)),
            (bson!("PlayerE"), bson!(33)),
        ];
        let by = |dir: i32| doc! { "output": "$o", "sortBy": { "score": dir } };
        let by_n = |n: i32, dir: i32| doc! { "n": n, "output": "$o", "sortBy": { "score": dir } };
        assert_eq!(ranked("$top", by(-1), &docs), bson!("PlayerC"));
        assert_eq!(ranked("$bottom", by(-1), &docs), bson!("PlayerD"));
        assert_eq!(
            ranked("$topN", by_n(3, -1), &docs),
            bson!(["PlayerC", "PlayerB", "PlayerE"])
        );
        assert_eq!(
            ranked("$topN", by_n(2, 1), &docs),
            bson!(["PlayerD", "PlayerA"])
        );
        assert_eq!(
            ranked("$bottomN", by_n(3, -1), &docs),
            bson!(["PlayerB", "PlayerA", "PlayerD"])
        );
        // Of the tied 33s, $bottomN keeps the first seen when only one fits.
        assert_eq!(
            ranked("$bottomN", by_n(2, 1), &docs[..3]),
            bson!(["PlayerB", "PlayerC"])
        );
        assert_eq!(
            ranked("$bottomN", by_n(3, 1), &docs),
            bson!(["PlayerB", "PlayerE", "PlayerC"])
        );
        // n larger than the group.
        assert_eq!(
            ranked("$topN", by_n(9, 1), &docs[..2]),
            bson!(["PlayerA", "PlayerB"])
        );
        // Null sorts below numbers.
        assert_eq!(
            ranked(
                "$top",
                by(1),
                &[(bson!("x"), bson!(1)), (bson!("y"), Bson::Null)]
            ),
            bson!("y")
        );
        // An array key sorts by its least element ascending, its greatest descending; an
        // empty one below null.
        let arrays = [
            (bson!("x"), bson!([5, 1])),
            (bson!("y"), bson!(3)),
            (bson!("z"), bson!([])),
            (bson!("w"), Bson::Null),
        ];
        assert_eq!(
            ranked("$topN", by_n(4, 1), &arrays),
            bson!(["z", "w", "x", "y"])
        );
        assert_eq!(
            ranked("$topN", by_n(4, -1), &arrays),
            bson!(["x", "y", "w", "z"])
        );
        // An empty window.
        assert_eq!(ranked("$top", by(1), &[]), Bson::Null);
        assert_eq!(ranked("$topN", by_n(2, 1), &[]), bson!([]));
    }

    #[test]
    fn ranked_specs_are_checked() {
        let code = |op: &str, spec: Bson| match parse_ranked(op, false, !op.ends_with('N'), &spec) {
            Err(Error::Rejected { code, .. }) => Some(code.code()),
            Ok(_) => None,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            code("$top", bson!({ "output": "$o", "sortBy": { "a": 1 } })),
            None
        );
        assert_eq!(code("$top", bson!(1)), Some(5_788_001));
        assert_eq!(
            code(
                "$top",
                bson!({ "n": 1, "output": "$o", "sortBy": { "a": 1 } })
            ),
            Some(5_788_002)
        );
        assert_eq!(
            code("$topN", bson!({ "output": "$o", "sortBy": { "a": 1 } })),
            Some(5_788_003)
        );
        assert_eq!(
            code("$topN", bson!({ "n": 1, "sortBy": { "a": 1 } })),
            Some(5_788_004)
        );
        assert_eq!(
            code("$topN", bson!({ "n": 1, "output": "$o" })),
            Some(5_788_005)
        );
        assert_eq!(
            code(
                "$topN",
                bson!({ "n": 0, "output": "$o", "sortBy": { "a": 1 } })
            ),
            Some(5_787_908)
        );
    }

    #[test]
    fn merge_objects_overrides_in_order_and_rejects_non_documents() {
        let mut d = Document::new();
        merge(&mut d, Some(&bson!({ "a": 1, "b": 1 }))).expect("doc");
        merge(&mut d, None).expect("missing");
        merge(&mut d, Some(&Bson::Null)).expect("null");
        merge(&mut d, Some(&bson!({ "b": 2, "c": 3 }))).expect("doc");
        assert_eq!(d, doc! { "a": 1, "b": 2, "c": 3 });
        assert!(matches!(
            merge(&mut d, Some(&bson!(5))),
            Err(Error::Rejected {
                code: ErrorCode::Location(40400),
                ..
            })
        ));
    }
}
