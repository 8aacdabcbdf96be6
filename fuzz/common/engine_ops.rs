//! Model-based check of the engine: a sequence of operations (inserts, queries, deletes,
//! meta-only updates, TTL passes, collMod, close and reopen, log checkpoints, crash and
//! restart) is applied to one collection and to a plain in-memory model (a map
//! `_id → measurement`), and after every operation the two must agree.
//!
//! What is checked, by SPEC section:
//! * R-2.5: an insert stores exactly the good measurements (ordered: those before the first
//!   bad one) and reports each bad one with its index and `BadValue`: no time field, a time that
//!   is not a date, or a field name holding a NUL byte at any depth (in the measurement's own
//!   fields, in its meta value, in a code-with-scope's scope). BSON writes field names as C
//!   strings, so such a name cannot be stored (the measurement alone is refused; the rest of
//!   the batch is untouched).
//! * R-2.1, R-2.2, §5: besides `_id`, the time, the meta and `v`, a measurement carries up to
//!   [`MAX_FIELDS`] arbitrary fields: any name (empty, with `.`, `$`, NUL or any other UTF-8)
//!   and any BSON type (every type of the BSON spec, nested documents and arrays, doubles of
//!   every class and NaN payload, dates and 64-bit integers at both ends of their range).
//!   The meta value can be such a value too (normalized, R-3.1). The time is any 64-bit
//!   millisecond date. Whatever is stored reads back exactly: the same types, values and bits,
//!   documents and arrays inside a value in their order; only the order of the top-level data
//!   fields after `_id` follows the bucket's columns (R-14.1.2) and is not checked.
//! * §14: `find` returns exactly the model's matches — filters on the meta field (equality,
//!   `$in`, a sub-field, `null` matching both a `null` and a missing meta value), on the time
//!   field (date and non-date operands, R-14.4.3) and on a measurement field (numbers of two
//!   types, strings and missing values, type bracketing R-14.4.1) —, honours `sort`, `limit`
//!   and projections (§14.3), and every result has the shape of R-14.1.2 with the normalized
//!   meta value (R-3.1, R-3.3). `count` (R-14.1.4) and the last point per series (R-14.4.7)
//!   agree with the model.
//! * §11.1: `delete_many` removes exactly the matches and reports their number; `delete_one`
//!   removes one of them.
//! * §11.2: a meta-only update moves exactly the matching measurements to the new (normalized)
//!   series and reports `matched`/`modified`; updates outside the meta field are refused with
//!   `InvalidOptions` and change nothing.
//! * §10: a TTL pass removes whole buckets only. The model cannot know bucket boundaries, so
//!   it checks the guarantees of R-10.1/R-10.2 — every measurement of a bucket lies in
//!   `[min, min + span)` of the bucket's rounded min time, hence a measurement with
//!   `t ≥ now − E` survives and one with `t < now − E − span` is gone (each bound kept one
//!   second away from the cutoff, where R-10.1 leaves the behaviour open) — and resyncs the
//!   model from the engine for the measurements in between. The buckets the engine reports
//!   (`Collection::buckets`) are also checked: each went whole, exactly when its min time is
//!   before the cutoff.
//! * §12: collMod transitions (R-12.1, R-12.2, R-1.5) give the expected options or the
//!   expected typed error (`InvalidOptions`, `TypeMismatch`) with the options unchanged;
//!   options survive a reopen.
//! * Durability (`docs/durability.md`): a checkpoint of the write-ahead log changes nothing
//!   visible; after a crash (`Database::crash`: every log write reached the operating system,
//!   nothing held in memory stored) and a reopen, recovery gives back exactly what was
//!   acknowledged — every measurement the model holds present once, deleted and expired ones
//!   gone, updated ones in their new series, the options of the last collMod.
//! * After every operation: the whole collection (found with an empty filter) equals the
//!   model, and every stored bucket is consistent with it (count, meta, every time in
//!   `[min, min + span)` with the current span, R-6.3.1 and R-12.5).
//!
//! Shared (with `#[path]`) by the cargo-fuzz target `fuzz/fuzz_targets/engine_ops.rs`, which
//! decodes the operations from its input ([`decode`]), and by
//! `tests/tests/end_to_end/model_ops.rs`, which runs random sequences on stable and replays the
//! committed corpus `fuzz/corpus/engine_ops/`.

#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMillisecondType};
use bson::oid::ObjectId;
use bson::raw::CString;
use bson::spec::BinarySubtype;
use bson::{
    Binary, Bson, DateTime, Decimal128, Document, JavaScriptCodeWithScope, Regex, Timestamp, doc,
};
use tscoll_engine::{
    Accumulator, AggregateSpec, ArrowOptions, CatalogOptions, Collection, Database,
    DatabaseOptions, ErrorCode, FindOptions, Granularity, InsertOptions, SortOrder,
    TimeseriesOptions,
};

/// Base time (ms): a midnight UTC, so minute offsets sit on every rounding boundary up to a day.
pub const T0: i64 = 1_700_006_400_000;
const MINUTE_MS: i64 = 60_000;
/// Minute offsets of measurements and query bounds are below this (about four days).
pub const MINUTES: u16 = 6_000;
/// Most operations decoded from one input.
pub const MAX_OPS: usize = 40;
/// Most measurements in one insert call.
pub const MAX_INSERT: usize = 8;
/// Number of series: 0 → `0` (int), 1 → `"b"`, 2 → `{a: 2, b: "x"}` (inserted with its fields
/// in the other order, SPEC R-3.1), 3 → no meta field, 4 → `null` (distinct series, R-2.2).
pub const SERIES: u8 = 5;
/// Measurement values are in `-VALUE_RANGE..=VALUE_RANGE`.
pub const VALUE_RANGE: i16 = 20;

/// `bucket_max_count` choices (SPEC §0): small counts make many buckets.
pub const MAX_COUNTS: [u32; 8] = [1000, 1, 2, 3, 4, 6, 10, 1000];
/// Bucketing choices at creation (SPEC R-1.2.1, R-1.2.3).
pub const BUCKETINGS: [Bucketing; 7] = [
    Bucketing::Granularity(Granularity::Seconds),
    Bucketing::Granularity(Granularity::Minutes),
    Bucketing::Granularity(Granularity::Hours),
    Bucketing::Fixed(60),
    Bucketing::Fixed(600),
    Bucketing::Fixed(3_600),
    Bucketing::Fixed(7_200),
];
/// Catalog memory thresholds (SPEC §6.9, R-0.1): the default, or so low that idle buckets are
/// archived or closed at every insert (and later reopened, §6.8).
pub const MEMORY_THRESHOLDS: [u64; 3] = [64 << 20, 1, 4_096];
/// `expireAfterSeconds` choices at creation.
pub const CREATE_EXPIRES: [Option<i64>; 5] = [None, Some(0), Some(60), Some(3_600), Some(86_400)];
/// `expireAfterSeconds` values collMod sets.
pub const EXPIRES: [i64; 4] = [0, 60, 3_600, 86_400];
/// Fixed-bucketing spans collMod asks for (SPEC R-12.2).
pub const SPANS: [i64; 5] = [60, 600, 3_600, 7_200, 86_400];
/// What an [`Op::Update`] or [`Op::UpdateOne`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// `{$inc: {v: n}}`: a string `v` refuses the whole update (`TypeMismatch`).
    IncV(i16),
    /// `{$set: {v: ...}}` (`$unset` for [`Val::Missing`]).
    SetV(Val),
    /// `{$set: {m: <series>}}` as written (`$unset` for series 3): renormalized (R-3.1).
    SetMeta(u8),
    /// `{$set: {t: T0 + minute}}`: the measurement moves in time, placed again (§6.2).
    SetTime(u16),
}

/// Kinds of refused updates ([`Op::BadUpdate`]).
pub const BAD_UPDATES: u8 = 5;
/// Kinds of refused `expireAfterSeconds` values ([`CollModOp::BadExpire`]).
pub const BAD_EXPIRES: u8 = 3;

/// How the collection buckets at creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bucketing {
    /// A granularity preset.
    Granularity(Granularity),
    /// `bucketMaxSpanSeconds = bucketRoundingSeconds` = this.
    Fixed(i64),
}

/// The database and collection a sequence starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Catalog `bucket_max_count`.
    pub max_count: u32,
    /// Bucketing options of the collection.
    pub bucketing: Bucketing,
    /// `expireAfterSeconds` at creation.
    pub expire: Option<i64>,
    /// Catalog `idle_bucket_expiry_memory_usage_threshold_bytes`.
    pub memory_threshold: u64,
}

/// The `v` field of a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val {
    /// `Int32(n)`.
    Int(i16),
    /// `Double(n + 0.5)`.
    Double(i16),
    /// `"s<n>"`.
    Str(u8),
    /// No `v` field.
    Missing,
}

/// The time field of a measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeKind {
    /// A BSON date: [`T0`] plus the measurement's minute and second.
    Date,
    /// A BSON date at any millisecond of the 64-bit range (the minute and second are unused).
    At(i64),
    /// No time field: rejected (SPEC R-2.1).
    Missing,
    /// A string in the time field: rejected (SPEC R-2.1).
    NotADate,
}

/// One measurement of an insert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meas {
    /// Series (see [`SERIES`]); unused when [`Meas::meta`] is given.
    pub series: u8,
    /// Minutes after [`T0`].
    pub minute: u16,
    /// Seconds within the minute.
    pub second: u8,
    /// The `v` field.
    pub value: Val,
    /// The time field.
    pub time: TimeKind,
    /// Arbitrary fields after `v`, at most [`MAX_FIELDS`] (see [`Harness::measurement`] for
    /// the names the model's own fields keep).
    pub extra: Vec<(String, Value)>,
    /// An arbitrary meta value in place of the series' (see [`meta_of`]).
    pub meta: Option<Value>,
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `$eq`.
    Eq,
    /// `$gt`.
    Gt,
    /// `$gte`.
    Gte,
    /// `$lt`.
    Lt,
    /// `$lte`.
    Lte,
}

const CMPS: [Cmp; 5] = [Cmp::Eq, Cmp::Gt, Cmp::Gte, Cmp::Lt, Cmp::Lte];

impl Cmp {
    fn name(self) -> &'static str {
        match self {
            Cmp::Eq => "$eq",
            Cmp::Gt => "$gt",
            Cmp::Gte => "$gte",
            Cmp::Lt => "$lt",
            Cmp::Lte => "$lte",
        }
    }

    fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Gt => a > b,
            Cmp::Gte => a >= b,
            Cmp::Lt => a < b,
            Cmp::Lte => a <= b,
        }
    }
}

/// A predicate on the time field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimePred {
    /// The operator.
    pub op: Cmp,
    /// Operand: minutes after [`T0`] ...
    pub minute: u16,
    /// ... plus 30 s.
    pub half: bool,
    /// The operand is that time as a number, not a date: matches nothing (SPEC R-14.4.3).
    pub number: bool,
    /// The operand is this millisecond instead (any of the 64-bit range).
    pub at: Option<i64>,
}

/// A predicate on the meta field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaPred {
    /// `{m: <series value>}` (`null` for series 3 and 4: matches both).
    Eq(u8),
    /// `{m: {$in: [a, b]}}`.
    In(u8, u8),
    /// `{"m.a": 2}`: series 2 only.
    Sub,
}

/// A predicate on the measurement field `v`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValPred {
    /// `{v: {op: n}}` (`{v: n}` for `$eq`); with `true` the operand is `Double(n + 0.5)`.
    Cmp(Cmp, i16, bool),
    /// `{v: {$in: [...]}}` of ints.
    In(Vec<i16>),
    /// `{v: {$ne: n}}`: a missing `v` or a string is not equal.
    Ne(i16),
    /// `{v: {$exists: b}}`.
    Exists(bool),
    /// `{$or: [{v: {$lt: a}}, {v: {$gt: b}}]}`: numbers outside `[a, b]`.
    Outside(i16, i16),
    /// `{v: {$type: TYPES[k]}}`.
    Type(u8),
    /// `{v: {$regex: REGEXES[k]}}`.
    Regex(u8),
}

/// `$type` operands of [`ValPred::Type`].
pub const TYPES: [&str; 4] = ["int", "double", "string", "number"];
/// Patterns of [`ValPred::Regex`] (strings are `s0` to `s3`).
pub const REGEXES: [&str; 4] = ["^s", "1$", "s[02]", "^x"];

/// A filter: the conjunction of its parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// On the meta field.
    pub meta: Option<MetaPred>,
    /// On the time field (0 to 2 predicates).
    pub time: Vec<TimePred>,
    /// On `v`.
    pub value: Option<ValPred>,
}

/// A projection (SPEC §14.3); `_id` is always kept so results can be matched to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proj {
    /// Every field.
    All,
    /// `{v: 0}`.
    ExcludeV,
    /// `{v: 1}`: `_id` and `v`.
    IncludeV,
    /// `{m: 1, t: 1}`: time, meta and `_id`.
    IncludeMeta,
}

const PROJS: [Proj; 4] = [Proj::All, Proj::ExcludeV, Proj::IncludeV, Proj::IncludeMeta];

/// A collMod command (SPEC §12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollModOp {
    /// `{timeseries: {granularity}}` (R-12.1).
    Granularity(Granularity),
    /// `{timeseries: {bucketMaxSpanSeconds: s, bucketRoundingSeconds: s}}` (R-12.2).
    Span(i64),
    /// `{expireAfterSeconds: n}` (R-10.3).
    Expire(i64),
    /// `{expireAfterSeconds: "off"}` (R-10.3).
    ExpireOff,
    /// A refused `expireAfterSeconds`: 0 → `-1`, 1 → `"on"` (`InvalidOptions`), 2 → `{}`
    /// (`TypeMismatch`) (SPEC §1.5).
    BadExpire(u8),
}

/// One operation of a sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `insert_many` with fresh `_id`s.
    Insert {
        /// The measurements.
        docs: Vec<Meas>,
        /// `InsertOptions::ordered`.
        ordered: bool,
    },
    /// `find`, compared with the model's matches.
    Find {
        /// The filter.
        filter: Filter,
        /// `None`, `Some(false)` ascending, `Some(true)` descending.
        sort: Option<bool>,
        /// `FindOptions::limit`.
        limit: Option<u8>,
        /// The projection.
        projection: Proj,
    },
    /// `find` sorted by `{v: ±1, _id: 1}` (a sort on a measurement field, a unique order).
    FindBy {
        /// The filter.
        filter: Filter,
        /// `v` descending.
        desc: bool,
        /// `FindOptions::limit` (0: none).
        limit: Option<u8>,
    },
    /// `count`.
    Count {
        /// The filter.
        filter: Filter,
    },
    /// `last_points`.
    LastPoints {
        /// The filter.
        filter: Filter,
    },
    /// `delete_many` or `delete_one`.
    Delete {
        /// The filter.
        filter: Filter,
        /// `delete_one`.
        one: bool,
    },
    /// `update_many(<meta filter>, {$set: {m: <series to>}})` (`$unset` for series 3).
    UpdateMeta {
        /// The filter (`None` = every measurement).
        filter: Option<MetaPred>,
        /// The new series.
        to: u8,
    },
    /// `update_many(<filter>, <change>)` on any field (SPEC §11.2 [8.0+]).
    Update {
        /// The filter.
        filter: Filter,
        /// What the update does.
        change: Change,
    },
    /// `update_one({_id: <id>}, <change>)` on the model's measurement at position
    /// `pick % count` in `_id` order (nothing when the collection is empty).
    UpdateOne {
        /// Which measurement.
        pick: u8,
        /// What the update does.
        change: Change,
    },
    /// An update refused as MongoDB 8.0 refuses it (SPEC §11.2): a measurement left without
    /// a datetime time field (`BadValue`, when anything matches), a replacement with multi
    /// (`FailedToParse`), `$inc` by a string (`TypeMismatch`), two operators on one path
    /// (`ConflictingUpdateOperators`). Nothing changes.
    BadUpdate(u8),
    /// `expire(T0 + minute)`.
    Expire {
        /// Minutes after [`T0`].
        minute: u16,
    },
    /// `expire(now)` at any millisecond of the 64-bit range.
    ExpireAt(i64),
    /// `coll_mod`.
    CollMod(CollModOp),
    /// Drop the database (after `close` when `clean`) and open it again.
    CloseReopen {
        /// Call `Database::close` first.
        clean: bool,
    },
    /// `Collection::checkpoint`: a checkpoint of the write-ahead log (nothing visible changes).
    Checkpoint,
    /// End the database with `Database::crash` (as a process crash once every log write
    /// reached the operating system) and open it again: recovery from the log.
    CrashRestart,
}

// ---------------------------------------------------------------------------------------------
// Arbitrary field names and values.

/// Most arbitrary fields of one measurement.
pub const MAX_FIELDS: usize = 3;
/// Most fields of a document or elements of an array inside an arbitrary value.
pub const MAX_ENTRIES: usize = 3;
/// Most nesting of an arbitrary value (a document holding a document holding scalars).
pub const MAX_DEPTH: u8 = 2;
/// Most characters of a generated field name (other than those of [`NAMES`]).
pub const MAX_NAME_CHARS: usize = 7;
/// Most characters of a string, code, symbol, regular expression or DBPointer namespace.
pub const MAX_STRING_CHARS: usize = 8;
/// Most bytes of a binary value.
pub const MAX_BINARY: usize = 5;
/// A table byte at or above this is followed by raw bytes (any value of the type).
const RAW: u8 = 0xf0;

/// Field names tried often: empty, dotted, `$`-prefixed, with NUL bytes (rejected), the
/// model's own names (kept for its fields at the top level of a measurement, see
/// [`Harness::measurement`]) and paths that look like them, non-ASCII.
pub const NAMES: [&str; 28] = [
    "",
    ".",
    "$",
    "a.b",
    "$x",
    "\0",
    "a\0b",
    "\0\0",
    "x",
    "y",
    "_id",
    "t",
    "m",
    "v",
    "a",
    "b",
    "é",
    "t.x",
    "m.a",
    "v.x",
    "_id.x",
    "$date",
    "$numberLong",
    "0",
    "日本",
    "\u{1}",
    " ",
    "x\0",
];
/// Characters of generated names and strings (any other character is reachable too).
pub const CHARS: [char; 16] = [
    'a',
    'b',
    'x',
    '.',
    '$',
    '\0',
    '_',
    ' ',
    'é',
    '日',
    '\u{1}',
    '\u{7f}',
    '\u{10ffff}',
    '\u{fffd}',
    '"',
    '\\',
];
/// Dates tried often: both ends of the 64-bit range, years 0, 1, 9999 and 10000, JavaScript's
/// range, 32-bit second overflows, around the epoch.
pub const DATES: [i64; 19] = [
    i64::MIN,
    i64::MIN + 1,
    i64::MIN + 999,
    -8_640_000_000_000_001,
    -8_640_000_000_000_000,
    -62_167_219_200_001,
    -62_135_596_800_000,
    -1,
    0,
    1,
    T0,
    2_147_483_648_000,
    4_294_967_296_000,
    253_402_300_799_999,
    253_402_300_800_000,
    8_640_000_000_000_000,
    8_640_000_000_000_001,
    i64::MAX - 1,
    i64::MAX,
];
/// Double bit patterns tried often: zeros of both signs, NaNs (quiet, signalling, negative,
/// with a payload), infinities, extremes, subnormals, integers beyond 2^53.
pub const DOUBLES: [u64; 17] = [
    0,
    0x8000_0000_0000_0000,
    0x3ff8_0000_0000_0000,
    0xc004_0000_0000_0000,
    0x3fb9_9999_9999_999a,
    0x7ff8_0000_0000_0000,
    0xfff8_0000_0000_0000,
    0x7ff0_0000_0000_0001,
    0x7ff8_0000_0000_dead,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7fef_ffff_ffff_ffff,
    0x0010_0000_0000_0000,
    1,
    0x4340_0000_0000_0001,
    0x4000_0000_0000_0000,
    0x3ff0_0000_0000_0000,
];
/// 32-bit integers tried often.
pub const INT32S: [i32; 6] = [0, 1, -1, 2, i32::MIN, i32::MAX];
/// 64-bit integers tried often.
pub const INT64S: [i64; 8] = [
    0,
    2,
    -1,
    i64::MIN,
    i64::MAX,
    1 << 53,
    (1 << 53) + 1,
    1 << 31,
];
/// Binary subtypes: every defined one (old binary and old UUID included), a reserved one and
/// user-defined ones.
pub const BINARY_SUBTYPES: [u8; 14] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x80, 0xc3, 0xff,
];
/// Decimal128 values tried often, as text (their bytes are [`decimals`]); raw bytes give
/// every other encoding, non-canonical ones included.
const DECIMALS: [&str; 10] = [
    "0",
    "-0",
    "1.5",
    "-1E+6144",
    "9.999999999999999999999999999999999E+6144",
    "1E-6176",
    "NaN",
    "Infinity",
    "-Infinity",
    "1234567890123456789012345678901234",
];

/// The bytes of [`DECIMALS`].
#[must_use]
pub fn decimals() -> [[u8; 16]; DECIMALS.len()] {
    DECIMALS.map(|s| s.parse::<Decimal128>().map_or([0; 16], |d| d.bytes()))
}

/// Regular expression options: a subset of `ilmsux`, in order (as BSON stores them), from
/// the bits of `b`.
#[must_use]
pub fn regex_options(b: u8) -> String {
    "ilmsux"
        .chars()
        .enumerate()
        .filter(|(i, _)| b >> i & 1 == 1)
        .map(|(_, c)| c)
        .collect()
}

/// Keeps the first field of each name (a document cannot hold two).
#[must_use]
pub fn unique(fields: Vec<(String, Value)>) -> Vec<(String, Value)> {
    let mut seen = BTreeSet::new();
    fields
        .into_iter()
        .filter(|(k, _)| seen.insert(k.clone()))
        .collect()
}

/// A BSON value of any type, as the generators make it: comparable (`Eq`, doubles by their
/// bits) and encodable as fuzz input. A regular expression never holds a NUL: the bson crate
/// cannot represent one (its pattern and options are C strings), so none can reach the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A double, by its bits.
    Double(u64),
    /// A string (any UTF-8, NUL included).
    String(String),
    /// A document: fields in order, names unique.
    Document(Vec<(String, Value)>),
    /// An array.
    Array(Vec<Value>),
    /// Binary data: subtype and bytes.
    Binary(u8, Vec<u8>),
    /// `undefined` (deprecated).
    Undefined,
    /// An ObjectId.
    ObjectId([u8; 12]),
    /// A boolean.
    Bool(bool),
    /// A UTC datetime (ms).
    Date(i64),
    /// `null`.
    Null,
    /// A regular expression: pattern and options.
    Regex(String, String),
    /// A DBPointer (deprecated): namespace and id.
    DbPointer(String, [u8; 12]),
    /// JavaScript code.
    Code(String),
    /// A symbol (deprecated).
    Symbol(String),
    /// JavaScript code with scope.
    CodeWithScope(String, Vec<(String, Value)>),
    /// A 32-bit integer.
    Int32(i32),
    /// A timestamp: seconds and increment.
    Timestamp(u32, u32),
    /// A 64-bit integer.
    Int64(i64),
    /// A Decimal128, by its bytes.
    Decimal128([u8; 16]),
    /// MinKey.
    MinKey,
    /// MaxKey.
    MaxKey,
}

impl Value {
    /// The BSON value.
    #[must_use]
    pub fn to_bson(&self) -> Bson {
        match self {
            Value::Double(bits) => Bson::Double(f64::from_bits(*bits)),
            Value::String(s) => Bson::String(s.clone()),
            Value::Document(fields) => Bson::Document(document_of(fields)),
            Value::Array(items) => Bson::Array(items.iter().map(Value::to_bson).collect()),
            Value::Binary(subtype, bytes) => Bson::Binary(Binary {
                subtype: BinarySubtype::from(*subtype),
                bytes: bytes.clone(),
            }),
            Value::Undefined => Bson::Undefined,
            Value::ObjectId(b) => Bson::ObjectId(ObjectId::from_bytes(*b)),
            Value::Bool(b) => Bson::Boolean(*b),
            Value::Date(t) => Bson::DateTime(DateTime::from_millis(*t)),
            Value::Null => Bson::Null,
            Value::Regex(pattern, options) => {
                let cstring = |s: &str| CString::try_from(s.replace('\0', "")).ok();
                match (cstring(pattern), cstring(options)) {
                    (Some(pattern), Some(options)) => {
                        Bson::RegularExpression(Regex { pattern, options })
                    }
                    _ => Bson::Null,
                }
            }
            Value::DbPointer(namespace, id) => db_pointer(namespace, *id),
            Value::Code(code) => Bson::JavaScriptCode(code.clone()),
            Value::Symbol(s) => Bson::Symbol(s.clone()),
            Value::CodeWithScope(code, scope) => {
                Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                    code: code.clone(),
                    scope: document_of(scope),
                })
            }
            Value::Int32(i) => Bson::Int32(*i),
            Value::Timestamp(time, increment) => Bson::Timestamp(Timestamp {
                time: *time,
                increment: *increment,
            }),
            Value::Int64(i) => Bson::Int64(*i),
            Value::Decimal128(b) => Bson::Decimal128(Decimal128::from_bytes(*b)),
            Value::MinKey => Bson::MinKey,
            Value::MaxKey => Bson::MaxKey,
        }
    }
}

fn document_of(fields: &[(String, Value)]) -> Document {
    fields
        .iter()
        .map(|(k, v)| (k.clone(), v.to_bson()))
        .collect()
}

/// A DBPointer: the bson crate builds one only by reading BSON, so it reads a one-field
/// document written here.
fn db_pointer(namespace: &str, id: [u8; 12]) -> Bson {
    let mut body = vec![0x0c, b'p', 0];
    body.extend(
        i32::try_from(namespace.len() + 1)
            .unwrap_or(0)
            .to_le_bytes(),
    );
    body.extend(namespace.as_bytes());
    body.push(0);
    body.extend(id);
    let mut bytes = i32::try_from(body.len() + 5)
        .unwrap_or(0)
        .to_le_bytes()
        .to_vec();
    bytes.extend(body);
    bytes.push(0);
    Document::from_reader(&mut bytes.as_slice())
        .ok()
        .and_then(|mut d| d.remove("p"))
        .unwrap_or(Bson::Null)
}

/// Whether a field name holds a NUL byte anywhere in `v` (documents, arrays, the scope of
/// code with scope): BSON cannot store it.
fn has_nul_name(v: &Bson) -> bool {
    match v {
        Bson::Document(d) => document_has_nul_name(d),
        Bson::Array(items) => items.iter().any(has_nul_name),
        Bson::JavaScriptCodeWithScope(c) => document_has_nul_name(&c.scope),
        _ => false,
    }
}

fn document_has_nul_name(d: &Document) -> bool {
    d.iter().any(|(k, v)| k.contains('\0') || has_nul_name(v))
}

/// The meta value of an arbitrary [`Value`] as inserted. Two adjustments keep the model's
/// meta predicates exact without a full implementation of MongoDB's matching: a field `a`
/// of the value or of a document in it (when it is an array) is renamed `a_` (so `{"m.a": 2}`
/// and the document operand `{a: 2, b: "x"}` never match it), and a value (or array element)
/// of a type whose equality with `0`, `"b"` or `null` the model does not decide (Decimal128,
/// undefined, symbol) is wrapped in `{w: ...}`. So is a nested array (the engine matches
/// `{m: 0}` against `m: [[0]]`, MongoDB does not: the ignored test
/// `meta_equality_does_not_look_into_nested_arrays` in `tests/tests/end_to_end/model_ops.rs`).
#[must_use]
pub fn meta_of(v: &Value) -> Bson {
    fn rename(d: Document) -> Document {
        let mut out = Document::new();
        for (k, v) in d {
            let k = if k == "a" { "a_".to_owned() } else { k };
            if !out.contains_key(&k) {
                out.insert(k, v);
            }
        }
        out
    }
    fn settle(v: Bson, top: bool) -> Bson {
        match v {
            Bson::Document(d) => Bson::Document(rename(d)),
            // An array holding `null` or a string is wrapped too: `{m: null}` and `{m: "b"}`
            // do not find it (a divergence kept as an ignored test in
            // `tests/tests/end_to_end/model_ops.rs`, `meta_equality_matches_array_elements`).
            Bson::Array(items)
                if top
                    && !items
                        .iter()
                        .any(|i| matches!(i, Bson::Null | Bson::String(_))) =>
            {
                Bson::Array(items.into_iter().map(|i| settle(i, false)).collect())
            }
            v @ (Bson::Decimal128(_) | Bson::Undefined | Bson::Symbol(_) | Bson::Array(_)) => {
                Bson::Document(doc! { "w": v })
            }
            v => v,
        }
    }
    settle(v.to_bson(), true)
}

/// The meta value as stored and returned (SPEC R-3.1, R-3.3): the fields of every document,
/// at every depth (inside arrays too), sorted by name bytes; everything else as it is.
fn normalized(v: &Bson) -> Bson {
    match v {
        Bson::Document(d) => {
            let mut fields: Vec<(&String, &Bson)> = d.iter().collect();
            fields.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            Bson::Document(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.clone(), normalized(v)))
                    .collect(),
            )
        }
        Bson::Array(items) => Bson::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

/// The BSON bytes of a value (`None` for no value, or one BSON cannot encode): values are
/// equal when these are (types, values, bits, order of nested fields).
fn bytes_of(v: Option<&Bson>) -> Option<Vec<u8>> {
    let mut d = Document::new();
    d.insert("", v?.clone());
    d.to_vec().ok()
}

fn same_value(a: Option<&Bson>, b: Option<&Bson>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(_), Some(_)) => bytes_of(a).is_some_and(|x| Some(x) == bytes_of(b)),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding from bytes (the fuzz input) and encoding back (for seeds and regression inputs).

/// Reads bytes; past the end every byte is 0, so any input decodes.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn pick(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n
    }

    fn flag(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }

    fn minute(&mut self) -> u16 {
        self.u16() % MINUTES
    }

    fn series(&mut self) -> u8 {
        self.byte() % SERIES
    }

    fn value(&mut self) -> i16 {
        let span = u8::try_from(2 * VALUE_RANGE + 1).unwrap_or(u8::MAX);
        i16::from(self.byte() % span) - VALUE_RANGE
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        std::array::from_fn(|_| self.byte())
    }

    /// A table entry, or (first byte ≥ [`RAW`]) `N` raw bytes.
    fn pick_or<T: Copy, const N: usize>(
        &mut self,
        table: &[T],
        raw: impl FnOnce([u8; N]) -> T,
    ) -> T {
        let b = self.byte();
        if b >= RAW {
            raw(self.array())
        } else {
            table[usize::from(b) % table.len()]
        }
    }

    fn date(&mut self) -> i64 {
        self.pick_or(&DATES, i64::from_be_bytes)
    }

    fn char(&mut self) -> char {
        let b = self.byte();
        if b >= RAW {
            let [x, y, z] = self.array();
            let code = u32::from_be_bytes([0, x, y, z]) % 0x11_0000;
            char::from_u32(code).unwrap_or('\u{fffd}')
        } else {
            CHARS[usize::from(b) % CHARS.len()]
        }
    }

    fn string(&mut self, max: usize) -> String {
        let n = self.pick(max + 1);
        (0..n).map(|_| self.char()).collect()
    }

    /// A field name: one of [`NAMES`], or (first byte with the high bit) up to
    /// [`MAX_NAME_CHARS`] characters.
    fn name(&mut self) -> String {
        let b = self.byte();
        if b & 0x80 == 0 {
            NAMES[usize::from(b) % NAMES.len()].to_owned()
        } else {
            let n = usize::from(b & 0x7f) % (MAX_NAME_CHARS + 1);
            (0..n).map(|_| self.char()).collect()
        }
    }

    fn fields(&mut self, depth: u8) -> Vec<(String, Value)> {
        let n = self.pick(MAX_ENTRIES + 1);
        unique((0..n).map(|_| (self.name(), self.any(depth))).collect())
    }

    /// A value of any type; documents, arrays and code with scope only while `depth > 0`.
    fn any(&mut self, depth: u8) -> Value {
        let nested = depth > 0;
        match self.byte() % 24 {
            0 | 1 => Value::Double(self.pick_or(&DOUBLES, u64::from_be_bytes)),
            2 | 3 => Value::String(self.string(MAX_STRING_CHARS)),
            4 if nested => Value::Document(self.fields(depth - 1)),
            5 if nested => {
                let n = self.pick(MAX_ENTRIES + 1);
                Value::Array((0..n).map(|_| self.any(depth - 1)).collect())
            }
            6 => {
                let subtype = BINARY_SUBTYPES[self.pick(BINARY_SUBTYPES.len())];
                let n = self.pick(MAX_BINARY + 1);
                Value::Binary(subtype, (0..n).map(|_| self.byte()).collect())
            }
            7 => Value::Undefined,
            8 => Value::ObjectId(self.array()),
            9 => Value::Bool(self.flag()),
            10 | 11 => Value::Date(self.date()),
            13 => {
                let pattern = self.string(MAX_STRING_CHARS).replace('\0', "");
                Value::Regex(pattern, regex_options(self.byte()))
            }
            14 => Value::DbPointer(self.string(MAX_STRING_CHARS), self.array()),
            15 => Value::Code(self.string(MAX_STRING_CHARS)),
            16 => Value::Symbol(self.string(MAX_STRING_CHARS)),
            17 if nested => {
                Value::CodeWithScope(self.string(MAX_STRING_CHARS), self.fields(depth - 1))
            }
            18 => Value::Int32(self.pick_or(&INT32S, i32::from_be_bytes)),
            19 => {
                let [a, b, c, d, e, f, g, h] = self.array();
                Value::Timestamp(
                    u32::from_be_bytes([a, b, c, d]),
                    u32::from_be_bytes([e, f, g, h]),
                )
            }
            20 => Value::Int64(self.pick_or(&INT64S, i64::from_be_bytes)),
            21 => Value::Decimal128(self.pick_or(&decimals(), |b| b)),
            22 => Value::MinKey,
            23 => Value::MaxKey,
            _ => Value::Null,
        }
    }
}

/// Decodes a setup and up to [`MAX_OPS`] operations from arbitrary bytes.
#[must_use]
pub fn decode(data: &[u8]) -> (Setup, Vec<Op>) {
    let mut r = Reader { data, pos: 0 };
    let setup = Setup {
        max_count: MAX_COUNTS[r.pick(MAX_COUNTS.len())],
        bucketing: BUCKETINGS[r.pick(BUCKETINGS.len())],
        expire: CREATE_EXPIRES[r.pick(CREATE_EXPIRES.len())],
        memory_threshold: MEMORY_THRESHOLDS[r.pick(MEMORY_THRESHOLDS.len())],
    };
    let mut ops = Vec::new();
    while !r.done() && ops.len() < MAX_OPS {
        ops.push(decode_op(&mut r));
    }
    (setup, ops)
}

/// An operation: its kind in the low 5 bits of the first byte (the high bits pick a variant
/// of some kinds: 23 to 25 with the top 3 bits set `ExpireAt`, 29 and 30 with them set
/// `Checkpoint` and `CrashRestart`), then its operands.
fn decode_op(r: &mut Reader<'_>) -> Op {
    let b = r.byte();
    match b % 32 {
        0..=7 => {
            let n = 1 + r.pick(MAX_INSERT);
            let ordered = r.flag();
            Op::Insert {
                docs: (0..n).map(|_| decode_meas(r)).collect(),
                ordered,
            }
        }
        31 if b >= 0xe0 => Op::FindBy {
            filter: decode_filter(r),
            desc: r.flag(),
            limit: {
                let b = r.byte() % 8;
                (b > 0).then(|| b - 1)
            },
        },
        8..=12 | 31 => Op::Find {
            filter: decode_filter(r),
            sort: [None, Some(false), Some(true)][r.pick(3)],
            limit: {
                let b = r.byte() % 8;
                (b > 0).then(|| b - 1)
            },
            projection: PROJS[r.pick(PROJS.len())],
        },
        13..=14 => Op::Count {
            filter: decode_filter(r),
        },
        15..=16 => Op::LastPoints {
            filter: decode_filter(r),
        },
        17..=19 => Op::Delete {
            filter: decode_filter(r),
            one: r.flag(),
        },
        20 => Op::UpdateMeta {
            filter: decode_meta_pred(r),
            to: r.series(),
        },
        21 => Op::Update {
            filter: decode_filter(r),
            change: decode_change(r),
        },
        22 if b >= 0xe0 => Op::BadUpdate(r.byte() % BAD_UPDATES),
        22 => Op::UpdateOne {
            pick: r.byte(),
            change: decode_change(r),
        },
        23..=25 if b >= 0xe0 => Op::ExpireAt(r.date()),
        23..=25 => Op::Expire { minute: r.u16() },
        26..=28 => Op::CollMod(match r.byte() % 8 {
            0 => CollModOp::Granularity(Granularity::Seconds),
            1 => CollModOp::Granularity(Granularity::Minutes),
            2 => CollModOp::Granularity(Granularity::Hours),
            3 | 7 => CollModOp::Span(SPANS[r.pick(SPANS.len())]),
            4 => CollModOp::Expire(EXPIRES[r.pick(EXPIRES.len())]),
            5 => CollModOp::ExpireOff,
            _ => CollModOp::BadExpire(r.byte() % BAD_EXPIRES),
        }),
        29 if b >= 0xe0 => Op::Checkpoint,
        30 if b >= 0xe0 => Op::CrashRestart,
        _ => Op::CloseReopen { clean: r.flag() },
    }
}

/// A measurement: series, minute (2 bytes), second, the `v` byte (low 4 bits: its kind; bit 4:
/// arbitrary fields follow the time; bit 5: an arbitrary meta value follows them) with its
/// operand, the time byte (low 4 bits: its kind; high 4 bits all set: a date of the whole
/// range follows).
fn decode_meas(r: &mut Reader<'_>) -> Meas {
    let series = r.series();
    let minute = r.minute();
    let second = r.byte() % 60;
    let vb = r.byte();
    let value = match vb % 16 {
        0..=11 => Val::Int(r.value()),
        12 | 13 => Val::Double(r.value()),
        14 => Val::Str(r.byte() % 4),
        _ => Val::Missing,
    };
    let tb = r.byte();
    let time = match tb % 16 {
        0 => TimeKind::Missing,
        1 => TimeKind::NotADate,
        _ if tb >> 4 == 0xf => TimeKind::At(r.date()),
        _ => TimeKind::Date,
    };
    let extra = if vb & 0x10 == 0 {
        Vec::new()
    } else {
        let n = 1 + r.pick(MAX_FIELDS);
        unique((0..n).map(|_| (r.name(), r.any(MAX_DEPTH))).collect())
    };
    let meta = (vb & 0x20 != 0).then(|| r.any(MAX_DEPTH));
    Meas {
        series,
        minute,
        second,
        value,
        time,
        extra,
        meta,
    }
}

/// A change: its kind byte, then its operand.
fn decode_change(r: &mut Reader<'_>) -> Change {
    match r.byte() % 4 {
        0 => Change::IncV(r.value()),
        1 => Change::SetV(match r.byte() % 4 {
            0 => Val::Int(r.value()),
            1 => Val::Double(r.value()),
            2 => Val::Str(r.byte() % 4),
            _ => Val::Missing,
        }),
        2 => Change::SetMeta(r.series()),
        _ => Change::SetTime(r.minute()),
    }
}

fn encode_change(w: &mut Vec<u8>, c: Change) {
    match c {
        Change::IncV(n) => w.extend([0, value_byte(n)]),
        Change::SetV(v) => {
            w.push(1);
            match v {
                Val::Int(n) => w.extend([0, value_byte(n)]),
                Val::Double(n) => w.extend([1, value_byte(n)]),
                Val::Str(k) => w.extend([2, k]),
                Val::Missing => w.push(3),
            }
        }
        Change::SetMeta(to) => w.extend([2, to]),
        Change::SetTime(minute) => {
            w.push(3);
            w.extend(minute.to_be_bytes());
        }
    }
}

fn decode_meta_pred(r: &mut Reader<'_>) -> Option<MetaPred> {
    match r.byte() % 4 {
        0 => None,
        1 => Some(MetaPred::Eq(r.series())),
        2 => {
            let a = r.series();
            Some(MetaPred::In(a, r.series()))
        }
        _ => Some(MetaPred::Sub),
    }
}

fn decode_filter(r: &mut Reader<'_>) -> Filter {
    let meta = decode_meta_pred(r);
    let n = r.pick(3);
    let time = (0..n)
        .map(|_| {
            let op = CMPS[r.pick(CMPS.len())];
            let minute = r.minute();
            let flags = r.byte();
            TimePred {
                op,
                minute,
                half: flags & 1 == 1,
                number: (flags >> 1) % 8 == 7,
                at: (flags >> 4 == 0xf).then(|| r.date()),
            }
        })
        .collect();
    let value = match r.byte() % 9 {
        0 => None,
        1 | 2 => {
            let double = r.byte() % 4 == 3;
            let op = CMPS[r.pick(CMPS.len())];
            Some(ValPred::Cmp(op, r.value(), double))
        }
        3 => {
            let n = 1 + r.pick(3);
            Some(ValPred::In((0..n).map(|_| r.value()).collect()))
        }
        4 => Some(ValPred::Ne(r.value())),
        5 => Some(ValPred::Exists(r.byte().is_multiple_of(2))),
        7 => Some(ValPred::Type(r.byte() % 4)),
        8 => Some(ValPred::Regex(r.byte() % 4)),
        _ => Some(ValPred::Outside(r.value(), r.value())),
    };
    Filter { meta, time, value }
}

/// Encodes a setup and operations so that [`decode`] gives them back (for seed and regression
/// inputs). Values must lie in the decoded ranges (series < [`SERIES`], minutes < [`MINUTES`],
/// ...) and there must be at most [`MAX_OPS`] operations.
#[must_use]
pub fn encode(setup: &Setup, ops: &[Op]) -> Vec<u8> {
    let index = |found: Option<usize>| u8::try_from(found.unwrap_or(0)).unwrap_or(0);
    let mut w = vec![
        index(MAX_COUNTS.iter().position(|c| *c == setup.max_count)),
        index(BUCKETINGS.iter().position(|b| *b == setup.bucketing)),
        index(CREATE_EXPIRES.iter().position(|e| *e == setup.expire)),
        index(
            MEMORY_THRESHOLDS
                .iter()
                .position(|m| *m == setup.memory_threshold),
        ),
    ];
    for op in ops {
        encode_op(&mut w, op);
    }
    w
}

fn cmp_index(c: Cmp) -> u8 {
    match c {
        Cmp::Eq => 0,
        Cmp::Gt => 1,
        Cmp::Gte => 2,
        Cmp::Lt => 3,
        Cmp::Lte => 4,
    }
}

fn value_byte(v: i16) -> u8 {
    u8::try_from(v + VALUE_RANGE).unwrap_or(0)
}

fn small(n: usize) -> u8 {
    u8::try_from(n).unwrap_or(0)
}

fn encode_op(w: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Insert { docs, ordered } => {
            w.extend([0, small(docs.len().saturating_sub(1)), u8::from(*ordered)]);
            for m in docs {
                w.push(m.series);
                w.extend(m.minute.to_be_bytes());
                w.push(m.second);
                let flags = if m.extra.is_empty() { 0 } else { 0x10 }
                    | if m.meta.is_some() { 0x20 } else { 0 };
                match m.value {
                    Val::Int(v) => w.extend([flags, value_byte(v)]),
                    Val::Double(v) => w.extend([12 | flags, value_byte(v)]),
                    Val::Str(k) => w.extend([14 | flags, k]),
                    Val::Missing => w.push(15 | flags),
                }
                match m.time {
                    TimeKind::Missing => w.push(0),
                    TimeKind::NotADate => w.push(1),
                    TimeKind::Date => w.push(2),
                    TimeKind::At(t) => {
                        w.push(0xf2);
                        put_date(w, t);
                    }
                }
                if !m.extra.is_empty() {
                    w.push(small(m.extra.len() - 1));
                    for (name, v) in &m.extra {
                        put_name(w, name);
                        put_value(w, v);
                    }
                }
                if let Some(meta) = &m.meta {
                    put_value(w, meta);
                }
            }
        }
        Op::Find {
            filter,
            sort,
            limit,
            projection,
        } => {
            w.push(8);
            encode_filter(w, filter);
            w.push(match sort {
                None => 0,
                Some(false) => 1,
                Some(true) => 2,
            });
            w.push(limit.map_or(0, |l| l + 1));
            w.push(small(
                PROJS.iter().position(|p| p == projection).unwrap_or(0),
            ));
        }
        Op::FindBy {
            filter,
            desc,
            limit,
        } => {
            w.push(0xe0 | 31);
            encode_filter(w, filter);
            w.push(u8::from(*desc));
            w.push(limit.map_or(0, |l| l + 1));
        }
        Op::Count { filter } => {
            w.push(13);
            encode_filter(w, filter);
        }
        Op::LastPoints { filter } => {
            w.push(15);
            encode_filter(w, filter);
        }
        Op::Delete { filter, one } => {
            w.push(17);
            encode_filter(w, filter);
            w.push(u8::from(*one));
        }
        Op::UpdateMeta { filter, to } => {
            w.push(20);
            encode_meta_pred(w, filter.as_ref());
            w.push(*to);
        }
        Op::Update { filter, change } => {
            w.push(21);
            encode_filter(w, filter);
            encode_change(w, *change);
        }
        Op::UpdateOne { pick, change } => {
            w.extend([22, *pick]);
            encode_change(w, *change);
        }
        Op::BadUpdate(k) => w.extend([0xe0 | 22, *k]),
        Op::Expire { minute } => {
            w.push(23);
            w.extend(minute.to_be_bytes());
        }
        Op::ExpireAt(now) => {
            w.push(0xe0 | 23);
            put_date(w, *now);
        }
        Op::CollMod(c) => {
            w.push(26);
            match c {
                CollModOp::Granularity(Granularity::Seconds) => w.push(0),
                CollModOp::Granularity(Granularity::Minutes) => w.push(1),
                CollModOp::Granularity(Granularity::Hours) => w.push(2),
                CollModOp::Span(s) => {
                    w.extend([3, small(SPANS.iter().position(|x| x == s).unwrap_or(0))]);
                }
                CollModOp::Expire(e) => {
                    w.extend([4, small(EXPIRES.iter().position(|x| x == e).unwrap_or(0))]);
                }
                CollModOp::ExpireOff => w.push(5),
                CollModOp::BadExpire(k) => w.extend([6, *k]),
            }
        }
        Op::CloseReopen { clean } => w.extend([29, u8::from(*clean)]),
        Op::Checkpoint => w.push(0xe0 | 29),
        Op::CrashRestart => w.push(0xe0 | 30),
    }
}

fn encode_meta_pred(w: &mut Vec<u8>, p: Option<&MetaPred>) {
    match p {
        None => w.push(0),
        Some(MetaPred::Eq(s)) => w.extend([1, *s]),
        Some(MetaPred::In(a, b)) => w.extend([2, *a, *b]),
        Some(MetaPred::Sub) => w.push(3),
    }
}

fn encode_filter(w: &mut Vec<u8>, f: &Filter) {
    encode_meta_pred(w, f.meta.as_ref());
    w.push(small(f.time.len()));
    for p in &f.time {
        w.push(cmp_index(p.op));
        w.extend(p.minute.to_be_bytes());
        let at = if p.at.is_some() { 0xf0 } else { 0 };
        w.push(u8::from(p.half) | if p.number { 14 } else { 0 } | at);
        if let Some(t) = p.at {
            put_date(w, t);
        }
    }
    match &f.value {
        None => w.push(0),
        Some(ValPred::Cmp(op, v, double)) => {
            w.extend([
                1,
                if *double { 3 } else { 0 },
                cmp_index(*op),
                value_byte(*v),
            ]);
        }
        Some(ValPred::In(vs)) => {
            w.extend([3, small(vs.len().saturating_sub(1))]);
            w.extend(vs.iter().map(|v| value_byte(*v)));
        }
        Some(ValPred::Ne(v)) => w.extend([4, value_byte(*v)]),
        Some(ValPred::Exists(e)) => w.extend([5, u8::from(!*e)]),
        Some(ValPred::Outside(a, b)) => w.extend([6, value_byte(*a), value_byte(*b)]),
        Some(ValPred::Type(k)) => w.extend([7, *k]),
        Some(ValPred::Regex(k)) => w.extend([8, *k]),
    }
}

/// A table entry's index, or [`RAW`] and the raw bytes.
fn put_or<T: PartialEq, const N: usize>(w: &mut Vec<u8>, table: &[T], v: &T, raw: [u8; N]) {
    match table.iter().position(|x| x == v) {
        Some(i) => w.push(small(i)),
        None => {
            w.push(RAW);
            w.extend(raw);
        }
    }
}

fn put_date(w: &mut Vec<u8>, t: i64) {
    put_or(w, &DATES, &t, t.to_be_bytes());
}

fn put_char(w: &mut Vec<u8>, c: char) {
    match CHARS.iter().position(|x| *x == c) {
        Some(i) => w.push(small(i)),
        None => {
            w.push(RAW);
            w.extend(&u32::from(c).to_be_bytes()[1..]);
        }
    }
}

/// A string of at most `max` characters (more are cut).
fn put_string(w: &mut Vec<u8>, s: &str, max: usize) {
    let chars: Vec<char> = s.chars().take(max).collect();
    w.push(small(chars.len()));
    chars.into_iter().for_each(|c| put_char(w, c));
}

/// A name of [`NAMES`] or of at most [`MAX_NAME_CHARS`] characters (more are cut).
fn put_name(w: &mut Vec<u8>, name: &str) {
    if let Some(i) = NAMES.iter().position(|n| *n == name) {
        w.push(small(i));
    } else {
        let chars: Vec<char> = name.chars().take(MAX_NAME_CHARS).collect();
        w.push(0x80 | small(chars.len()));
        chars.into_iter().for_each(|c| put_char(w, c));
    }
}

fn put_fields(w: &mut Vec<u8>, fields: &[(String, Value)]) {
    w.push(small(fields.len()));
    for (name, v) in fields {
        put_name(w, name);
        put_value(w, v);
    }
}

/// A value as [`Reader::any`] reads it (within its limits: sizes, depth).
fn put_value(w: &mut Vec<u8>, v: &Value) {
    let s = MAX_STRING_CHARS;
    match v {
        Value::Double(bits) => {
            w.push(0);
            put_or(w, &DOUBLES, bits, bits.to_be_bytes());
        }
        Value::String(x) => {
            w.push(2);
            put_string(w, x, s);
        }
        Value::Document(fields) => {
            w.push(4);
            put_fields(w, fields);
        }
        Value::Array(items) => {
            w.extend([5, small(items.len())]);
            items.iter().for_each(|i| put_value(w, i));
        }
        Value::Binary(subtype, bytes) => {
            let k = BINARY_SUBTYPES.iter().position(|x| x == subtype);
            w.extend([6, small(k.unwrap_or(0)), small(bytes.len())]);
            w.extend(bytes);
        }
        Value::Undefined => w.push(7),
        Value::ObjectId(b) => {
            w.push(8);
            w.extend(b);
        }
        Value::Bool(b) => w.extend([9, u8::from(*b)]),
        Value::Date(t) => {
            w.push(10);
            put_date(w, *t);
        }
        Value::Null => w.push(12),
        Value::Regex(pattern, options) => {
            w.push(13);
            put_string(w, pattern, s);
            let mask = "ilmsux"
                .chars()
                .enumerate()
                .filter(|(_, c)| options.contains(*c))
                .fold(0u8, |m, (i, _)| m | 1 << i);
            w.push(mask);
        }
        Value::DbPointer(namespace, id) => {
            w.push(14);
            put_string(w, namespace, s);
            w.extend(id);
        }
        Value::Code(code) => {
            w.push(15);
            put_string(w, code, s);
        }
        Value::Symbol(x) => {
            w.push(16);
            put_string(w, x, s);
        }
        Value::CodeWithScope(code, scope) => {
            w.push(17);
            put_string(w, code, s);
            put_fields(w, scope);
        }
        Value::Int32(i) => {
            w.push(18);
            put_or(w, &INT32S, i, i.to_be_bytes());
        }
        Value::Timestamp(time, increment) => {
            w.push(19);
            w.extend(time.to_be_bytes());
            w.extend(increment.to_be_bytes());
        }
        Value::Int64(i) => {
            w.push(20);
            put_or(w, &INT64S, i, i.to_be_bytes());
        }
        Value::Decimal128(b) => {
            w.push(21);
            put_or(w, &decimals(), b, *b);
        }
        Value::MinKey => w.push(22),
        Value::MaxKey => w.push(23),
    }
}

// ---------------------------------------------------------------------------------------------
// Values of the model and the documents they stand for.

/// The stored (normalized, SPEC R-3.1) meta value of a series; `None` = no meta field.
fn meta_value(series: u8) -> Option<Bson> {
    match series {
        0 => Some(Bson::Int32(0)),
        1 => Some(Bson::String("b".to_owned())),
        2 => Some(Bson::Document(doc! { "a": 2, "b": "x" })),
        3 => None,
        _ => Some(Bson::Null),
    }
}

/// The meta value as inserted or `$set`: series 2 with its fields out of order (SPEC R-3.1).
fn meta_written(series: u8) -> Option<Bson> {
    match series {
        2 => Some(Bson::Document(doc! { "b": "x", "a": 2 })),
        s => meta_value(s),
    }
}

/// The operand a filter uses for a series: `null` for series 3 and 4 (it matches a missing
/// field and a `null` value alike).
fn meta_operand(series: u8) -> Bson {
    meta_value(series).unwrap_or(Bson::Null)
}

/// A number equal to `n` (of any of the three types [`meta_of`] leaves unwrapped).
fn number_is(v: &Bson, n: i32) -> bool {
    match v {
        Bson::Int32(i) => *i == n,
        Bson::Int64(i) => *i == i64::from(n),
        Bson::Double(d) => *d == f64::from(n),
        _ => false,
    }
}

/// Whether the equality `{m: <operand of series>}` matches a stored meta value (`None`:
/// no meta field), by MongoDB's rules (SPEC §14.2): `null` matches a missing field and `null`;
/// numbers compare across types; an array matches when one of its elements does. The values
/// [`meta_of`] makes never need more (no `a` field, no Decimal128 or nested array there).
fn meta_operand_matches(meta: Option<&Bson>, operand_series: u8) -> bool {
    let scalar = |v: &Bson| match operand_series {
        0 => number_is(v, 0),
        1 => matches!(v, Bson::String(s) if s == "b"),
        2 => match v {
            Bson::Document(d) => {
                let keys: Vec<&str> = d.keys().map(String::as_str).collect();
                keys == ["a", "b"]
                    && d.get("a").is_some_and(|a| number_is(a, 2))
                    && matches!(d.get("b"), Some(Bson::String(s)) if s == "x")
            }
            _ => false,
        },
        _ => matches!(v, Bson::Null),
    };
    match meta {
        None => operand_series == 3 || operand_series == 4,
        Some(Bson::Array(items)) => items.iter().any(scalar),
        Some(v) => scalar(v),
    }
}

/// Last-point order of the fixed series: no meta first, then by BSON order of the meta values
/// (null < numbers < strings < objects).
const SERIES_ORDER: [u8; 5] = [3, 4, 0, 1, 2];

/// The position in [`SERIES_ORDER`] of a stored meta value that is one of the fixed series'.
fn series_rank(meta: Option<&Bson>) -> Option<usize> {
    SERIES_ORDER
        .iter()
        .position(|s| same_value(meta, meta_value(*s).as_ref()))
}

fn val_bson(v: Val) -> Option<Bson> {
    match v {
        Val::Int(i) => Some(Bson::Int32(i32::from(i))),
        Val::Double(i) => Some(Bson::Double(f64::from(i) + 0.5)),
        Val::Str(k) => Some(Bson::String(format!("s{k}"))),
        Val::Missing => None,
    }
}

fn val_number(v: Val) -> Option<f64> {
    match v {
        Val::Int(i) => Some(f64::from(i)),
        Val::Double(i) => Some(f64::from(i) + 0.5),
        Val::Str(_) | Val::Missing => None,
    }
}

fn time_ms(minute: u16, second: u8) -> i64 {
    T0 + i64::from(minute) * MINUTE_MS + i64::from(second) * 1000
}

impl TimePred {
    fn operand_ms(&self) -> i64 {
        self.at
            .unwrap_or_else(|| time_ms(self.minute, if self.half { 30 } else { 0 }))
    }

    fn operand(&self) -> Bson {
        if self.number {
            Bson::Int64(self.operand_ms())
        } else {
            Bson::DateTime(DateTime::from_millis(self.operand_ms()))
        }
    }
}

impl MetaPred {
    fn to_doc(self) -> Document {
        match self {
            MetaPred::Eq(s) => doc! { "m": meta_operand(s) },
            MetaPred::In(a, b) => doc! { "m": { "$in": [meta_operand(a), meta_operand(b)] } },
            MetaPred::Sub => doc! { "m.a": 2 },
        }
    }

    /// Whether an operand is `null` (series 3 or 4).
    #[must_use]
    pub fn has_null_operand(self) -> bool {
        let null = |s: u8| s == 3 || s == 4;
        match self {
            MetaPred::Eq(s) => null(s),
            MetaPred::In(a, b) => null(a) || null(b),
            MetaPred::Sub => false,
        }
    }

    fn matches(self, meta: Option<&Bson>) -> bool {
        match self {
            MetaPred::Eq(s) => meta_operand_matches(meta, s),
            MetaPred::In(a, b) => meta_operand_matches(meta, a) || meta_operand_matches(meta, b),
            MetaPred::Sub => match meta {
                Some(Bson::Document(d)) => match d.get("a") {
                    Some(Bson::Array(items)) => items.iter().any(|i| number_is(i, 2)),
                    Some(a) => number_is(a, 2),
                    None => false,
                },
                _ => false,
            },
        }
    }
}

impl Filter {
    /// The filter document (SPEC §14).
    #[must_use]
    pub fn to_doc(&self) -> Document {
        let mut d = self.meta.map(MetaPred::to_doc).unwrap_or_default();
        let distinct: BTreeSet<&str> = self.time.iter().map(|p| p.op.name()).collect();
        if distinct.len() == self.time.len() {
            if !self.time.is_empty() {
                let mut t = Document::new();
                for p in &self.time {
                    t.insert(p.op.name(), p.operand());
                }
                d.insert("t", t);
            }
        } else {
            let parts: Vec<Bson> = self
                .time
                .iter()
                .map(|p| {
                    let mut t = Document::new();
                    t.insert(p.op.name(), p.operand());
                    Bson::Document(doc! { "t": t })
                })
                .collect();
            d.insert("$and", parts);
        }
        match &self.value {
            None => {}
            Some(ValPred::Cmp(op, v, double)) => {
                let operand = if *double {
                    Bson::Double(f64::from(*v) + 0.5)
                } else {
                    Bson::Int32(i32::from(*v))
                };
                if *op == Cmp::Eq {
                    d.insert("v", operand);
                } else {
                    let mut v = Document::new();
                    v.insert(op.name(), operand);
                    d.insert("v", v);
                }
            }
            Some(ValPred::In(vs)) => {
                let vs: Vec<Bson> = vs.iter().map(|v| Bson::Int32(i32::from(*v))).collect();
                d.insert("v", doc! { "$in": vs });
            }
            Some(ValPred::Ne(n)) => {
                d.insert("v", doc! { "$ne": i32::from(*n) });
            }
            Some(ValPred::Exists(e)) => {
                d.insert("v", doc! { "$exists": *e });
            }
            Some(ValPred::Type(k)) => {
                d.insert("v", doc! { "$type": TYPES[usize::from(*k) % TYPES.len()] });
            }
            Some(ValPred::Regex(k)) => {
                d.insert(
                    "v",
                    doc! { "$regex": REGEXES[usize::from(*k) % REGEXES.len()] },
                );
            }
            Some(ValPred::Outside(a, b)) => {
                d.insert(
                    "$or",
                    vec![
                        Bson::Document(doc! { "v": { "$lt": i32::from(*a) } }),
                        Bson::Document(doc! { "v": { "$gt": i32::from(*b) } }),
                    ],
                );
            }
        }
        d
    }

    fn matches(&self, row: &Row) -> bool {
        if let Some(m) = self.meta
            && !m.matches(row.meta.as_ref())
        {
            return false;
        }
        if !self
            .time
            .iter()
            .all(|p| !p.number && p.op.holds(row.t, p.operand_ms()))
        {
            return false;
        }
        match &self.value {
            None => true,
            Some(ValPred::Cmp(op, v, double)) => {
                let operand = f64::from(*v) + if *double { 0.5 } else { 0.0 };
                val_number(row.v).is_some_and(|x| op.holds(x, operand))
            }
            Some(ValPred::In(vs)) => {
                val_number(row.v).is_some_and(|x| vs.iter().any(|v| f64::from(*v) == x))
            }
            Some(ValPred::Ne(n)) => val_number(row.v) != Some(f64::from(*n)),
            Some(ValPred::Exists(e)) => !matches!(row.v, Val::Missing) == *e,
            Some(ValPred::Outside(a, b)) => {
                val_number(row.v).is_some_and(|x| x < f64::from(*a) || x > f64::from(*b))
            }
            Some(ValPred::Type(k)) => matches!(
                (TYPES[usize::from(*k) % TYPES.len()], row.v),
                ("int" | "number", Val::Int(_))
                    | ("double" | "number", Val::Double(_))
                    | ("string", Val::Str(_))
            ),
            Some(ValPred::Regex(k)) => match row.v {
                Val::Str(n) => match usize::from(*k) % REGEXES.len() {
                    0 => true,
                    1 => n == 1,
                    2 => n == 0 || n == 2,
                    _ => false,
                },
                _ => false,
            },
        }
    }
}

impl Proj {
    fn to_doc(self) -> Option<Document> {
        match self {
            Proj::All => None,
            Proj::ExcludeV => Some(doc! { "v": 0 }),
            Proj::IncludeV => Some(doc! { "v": 1 }),
            Proj::IncludeMeta => Some(doc! { "m": 1, "t": 1 }),
        }
    }

    fn keeps(self, field: &str) -> bool {
        match self {
            Proj::All => true,
            Proj::ExcludeV => field != "v",
            Proj::IncludeV => field == "v" || field == "_id",
            Proj::IncludeMeta => matches!(field, "t" | "m" | "_id"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The model.

/// One stored measurement of the model.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    t: i64,
    /// The stored (normalized) meta value; `None`: no meta field.
    meta: Option<Bson>,
    v: Val,
    /// The arbitrary fields, as inserted.
    extra: Vec<(String, Bson)>,
}

impl Row {
    /// The measurement as `find` returns it (SPEC R-14.1.2): time, meta, `_id`, `v`, the
    /// arbitrary fields.
    fn document(&self, id: i64) -> Document {
        let mut d = doc! { "t": DateTime::from_millis(self.t) };
        if let Some(m) = &self.meta {
            d.insert("m", m.clone());
        }
        d.insert("_id", id);
        if let Some(v) = val_bson(self.v) {
            d.insert("v", v);
        }
        for (k, v) in &self.extra {
            d.insert(k.clone(), v.clone());
        }
        d
    }
}

/// The collection options the model expects (SPEC §1.2, §12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SpecModel {
    granularity: Option<Granularity>,
    span: i64,
    rounding: i64,
    expire: Option<i64>,
}

fn rank(g: Granularity) -> u8 {
    match g {
        Granularity::Seconds => 0,
        Granularity::Minutes => 1,
        Granularity::Hours => 2,
    }
}

fn presets(g: Granularity) -> (i64, i64) {
    match g {
        Granularity::Seconds => (3_600, 60),
        Granularity::Minutes => (86_400, 3_600),
        Granularity::Hours => (2_592_000, 86_400),
    }
}

impl SpecModel {
    fn new(setup: &Setup) -> Self {
        let (granularity, span, rounding) = match setup.bucketing {
            Bucketing::Granularity(g) => {
                let (s, r) = presets(g);
                (Some(g), s, r)
            }
            Bucketing::Fixed(s) => (None, s, s),
        };
        SpecModel {
            granularity,
            span,
            rounding,
            expire: setup.expire,
        }
    }

    /// The options after a collMod, or the error it must give (SPEC R-12.1, R-12.2, §1.5).
    fn after(self, op: CollModOp) -> Result<SpecModel, ErrorCode> {
        let mut next = self;
        match op {
            CollModOp::Granularity(g) => {
                let (span, rounding) = presets(g);
                let allowed = match self.granularity {
                    Some(c) if c == g => return Ok(self),
                    Some(c) => rank(c) < rank(g),
                    None => span >= self.span && rounding >= self.rounding,
                };
                if !allowed {
                    return Err(ErrorCode::InvalidOptions);
                }
                next.granularity = Some(g);
                next.span = span;
                next.rounding = rounding;
            }
            CollModOp::Span(s) => {
                if s < self.span || s < self.rounding {
                    return Err(ErrorCode::InvalidOptions);
                }
                if s == self.span && s == self.rounding {
                    return Ok(self);
                }
                next.granularity = None;
                next.span = s;
                next.rounding = s;
            }
            CollModOp::Expire(e) => next.expire = Some(e),
            CollModOp::ExpireOff => next.expire = None,
            CollModOp::BadExpire(2) => return Err(ErrorCode::TypeMismatch),
            CollModOp::BadExpire(_) => return Err(ErrorCode::InvalidOptions),
        }
        Ok(next)
    }

    fn check(&self, coll: &Collection) -> Result<(), String> {
        let s = coll.spec();
        let got = SpecModel {
            granularity: s.granularity,
            span: s.bucket_max_span_seconds,
            rounding: s.bucket_rounding_seconds,
            expire: s.expire_after_seconds,
        };
        if got == *self {
            Ok(())
        } else {
            Err(format!("options: expected {self:?}, got {got:?}"))
        }
    }
}

fn collmod_command(op: CollModOp) -> Document {
    let mut d = doc! { "collMod": "c" };
    match op {
        CollModOp::Granularity(g) => {
            let name = match g {
                Granularity::Seconds => "seconds",
                Granularity::Minutes => "minutes",
                Granularity::Hours => "hours",
            };
            d.insert("timeseries", doc! { "granularity": name });
        }
        CollModOp::Span(s) => {
            d.insert(
                "timeseries",
                doc! { "bucketMaxSpanSeconds": s, "bucketRoundingSeconds": s },
            );
        }
        CollModOp::Expire(e) => {
            d.insert("expireAfterSeconds", e);
        }
        CollModOp::ExpireOff => {
            d.insert("expireAfterSeconds", "off");
        }
        CollModOp::BadExpire(k) => {
            let v = match k {
                0 => Bson::Int64(-1),
                1 => Bson::String("on".to_owned()),
                _ => Bson::Document(Document::new()),
            };
            d.insert("expireAfterSeconds", v);
        }
    }
    d
}

/// Query shapes the checks can step around while a divergence in them is investigated (the
/// regression tests in `tests/tests/end_to_end/model_ops.rs` and every default run use
/// [`Avoid::NOTHING`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avoid {
    /// Skip `find`, `count` and `last_points` with a `null` meta operand (`{m: null}`, or
    /// `null` in `$in`; SPEC §14.2: `null` matches a missing field).
    pub null_meta_queries: bool,
    /// Skip `last_points` with a time or `v` predicate (buckets that do not match whole,
    /// SPEC R-14.4.7).
    pub last_points_row_filters: bool,
}

impl Avoid {
    /// Nothing stepped around: every operation is checked.
    pub const NOTHING: Avoid = Avoid {
        null_meta_queries: false,
        last_points_row_filters: false,
    };
}

/// What a sequence exercised (to check that random sequences reach every behaviour).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Operations applied.
    pub ops: usize,
    /// Measurements stored by inserts.
    pub inserted: usize,
    /// Measurements rejected by inserts.
    pub rejected: usize,
    /// Of those, measurements rejected for a NUL in a field name.
    pub nul_rejected: usize,
    /// Measurements stored with arbitrary fields.
    pub with_fields: usize,
    /// Measurements stored with an arbitrary meta value.
    pub any_meta: usize,
    /// Measurements stored with a time of the whole 64-bit range ([`TimeKind::At`]).
    pub far_times: usize,
    /// `Find` operations run, and those that returned at least one measurement.
    pub finds: (usize, usize),
    /// Measurements returned by `Find` operations.
    pub found: usize,
    /// Measurements removed by deletes.
    pub deleted: usize,
    /// Measurements moved to another series by updates.
    pub updated: usize,
    /// Measurements removed by TTL passes.
    pub expired: usize,
    /// Measurements a TTL pass could go either way on (between the two bounds).
    pub expire_uncertain: usize,
    /// collMod commands accepted with a change.
    pub collmods_changed: usize,
    /// Commands refused with the expected error (collMod, updates).
    pub refused: usize,
    /// Close-and-reopen cycles.
    pub reopens: usize,
    /// Checkpoints of the write-ahead log taken.
    pub checkpoints: usize,
    /// Crash-and-reopen cycles (recoveries from the write-ahead log).
    pub crash_restarts: usize,
    /// Most buckets stored at once.
    pub max_buckets: usize,
    /// Buckets the catalog reopened (SPEC §6.8).
    pub buckets_reopened: u64,
    /// Buckets the catalog archived or closed for its memory threshold (SPEC §6.9).
    pub buckets_evicted: u64,
    /// Operations skipped because of a known bug ([`Avoid`]).
    pub skipped: usize,
}

impl Summary {
    /// Adds another sequence's figures (`max_buckets` takes the maximum).
    pub fn add(&mut self, o: &Summary) {
        self.ops += o.ops;
        self.inserted += o.inserted;
        self.rejected += o.rejected;
        self.nul_rejected += o.nul_rejected;
        self.with_fields += o.with_fields;
        self.any_meta += o.any_meta;
        self.far_times += o.far_times;
        self.finds.0 += o.finds.0;
        self.finds.1 += o.finds.1;
        self.found += o.found;
        self.deleted += o.deleted;
        self.updated += o.updated;
        self.expired += o.expired;
        self.expire_uncertain += o.expire_uncertain;
        self.collmods_changed += o.collmods_changed;
        self.refused += o.refused;
        self.reopens += o.reopens;
        self.checkpoints += o.checkpoints;
        self.crash_restarts += o.crash_restarts;
        self.max_buckets = self.max_buckets.max(o.max_buckets);
        self.buckets_reopened += o.buckets_reopened;
        self.buckets_evicted += o.buckets_evicted;
        self.skipped += o.skipped;
    }
}

/// A stored bucket as far as the checks need it.
struct BucketView {
    min_t: i64,
    /// `(_id, t)` of each row.
    rows: Vec<(i64, i64)>,
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

fn engine<T>(what: &str, r: tscoll_engine::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what} failed: {e} ({})", e.code()))
}

fn expect_error<T: std::fmt::Debug>(
    what: &str,
    r: tscoll_engine::Result<T>,
    code: ErrorCode,
) -> Result<(), String> {
    match r {
        Ok(v) => Err(format!("{what}: expected {code}, got Ok({v:?})")),
        Err(e) if e.code() == code => Ok(()),
        Err(e) => Err(format!("{what}: expected {code}, got {e}")),
    }
}

/// A returned measurement equals the model's (SPEC R-14.1.2): the time, the meta value and
/// `_id` first and in this order, then the other data fields in any order (the bucket's
/// column order); every value identical (types, values, bits, nested fields in order).
/// Whether an update leaves a measurement as it was (the meta value compared normalized).
fn same_row(a: &Row, b: &Row) -> bool {
    a.t == b.t && a.v == b.v && same_value(a.meta.as_ref(), b.meta.as_ref())
}

fn same(got: &Document, expected: &Document) -> bool {
    let head = |d: &Document| {
        d.iter()
            .take_while(|(k, _)| matches!(k.as_str(), "t" | "m" | "_id"))
            .map(|(k, v)| (k.clone(), bytes_of(Some(v))))
            .collect::<Vec<_>>()
    };
    let (h, e) = (head(got), head(expected));
    got.len() == expected.len()
        && h == e
        && expected
            .iter()
            .skip(e.len())
            .all(|(k, v)| same_value(got.get(k), Some(v)))
}

fn id_of(d: &Document) -> Result<i64, String> {
    d.get_i64("_id")
        .map_err(|_| format!("result without an Int64 _id: {d}"))
}

/// How the database ends before its directory is opened again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shutdown {
    /// The last handle dropped.
    Drop,
    /// `Database::close`, then the last handle dropped.
    Close,
    /// `Database::crash`: nothing held in memory is stored.
    Crash,
}

struct Harness<'a> {
    dir: &'a Path,
    avoid: Avoid,
    options: DatabaseOptions,
    db: Option<Database>,
    coll: Option<Collection>,
    rows: BTreeMap<i64, Row>,
    spec: SpecModel,
    next_id: i64,
    summary: Summary,
}

/// Applies `ops` to a new collection in database directory `dir` (empty or absent) and to the
/// model, checking after each operation, stepping around nothing ([`Avoid::NOTHING`]).
/// Returns what the sequence exercised, or a description of the first divergence (the
/// operation, what was expected and what the engine gave).
///
/// # Errors
/// The first divergence, an engine error where none was expected, or an unexpected error code.
pub fn run_ops(dir: &Path, setup: &Setup, ops: &[Op]) -> Result<Summary, String> {
    run_ops_avoiding(dir, setup, ops, Avoid::NOTHING)
}

/// As [`run_ops`], stepping around the bugs `avoid` names only.
///
/// # Errors
/// As [`run_ops`].
pub fn run_ops_avoiding(
    dir: &Path,
    setup: &Setup,
    ops: &[Op],
    avoid: Avoid,
) -> Result<Summary, String> {
    let options = DatabaseOptions {
        catalog: CatalogOptions {
            bucket_max_count: setup.max_count,
            idle_bucket_expiry_memory_usage_threshold_bytes: setup.memory_threshold,
            ..CatalogOptions::default()
        },
        ..DatabaseOptions::default()
    };
    let db = engine("Database::open", Database::open(dir, options.clone()))?;
    let mut opts = TimeseriesOptions::new("t").meta_field("m");
    opts = match setup.bucketing {
        Bucketing::Granularity(g) => opts.granularity(g),
        Bucketing::Fixed(s) => opts.bucket_seconds(s, s),
    };
    if let Some(e) = setup.expire {
        opts = opts.expire_after_seconds(e);
    }
    let coll = engine("create_collection", db.create_collection("c", &opts))?;
    let mut h = Harness {
        dir,
        avoid,
        options,
        db: Some(db),
        coll: Some(coll),
        rows: BTreeMap::new(),
        spec: SpecModel::new(setup),
        next_id: 0,
        summary: Summary::default(),
    };
    h.spec
        .check(h.coll())
        .map_err(|e| format!("at creation: {e}"))?;
    for (i, op) in ops.iter().enumerate() {
        h.apply(op).map_err(|e| format!("op #{i} {op:?}: {e}"))?;
        h.check_all()
            .map_err(|e| format!("after op #{i} {op:?}: {e}"))?;
        h.summary.ops += 1;
    }
    h.count_catalog()?;
    Ok(h.summary)
}

/// A new temporary database directory: in `/dev/shm` when there is one (a sequence fsyncs
/// several times — creation, collMod, close — and on a RAM file system that costs nothing, ten
/// times more sequences per second), else in the default temporary directory.
///
/// # Panics
/// When no temporary directory can be created.
#[must_use]
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("tscoll-ops-")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("temporary directory")
}

/// Decodes `data` ([`decode`]) and runs it in a new temporary directory; panics on a
/// divergence, naming the setup and the operations.
pub fn run_bytes(data: &[u8]) -> Summary {
    let (setup, ops) = decode(data);
    let dir = temp_dir();
    match run_ops(dir.path(), &setup, &ops) {
        Ok(s) => s,
        Err(e) => panic!("divergence: {e}\nsetup: {setup:?}\nops: {ops:?}"),
    }
}

impl Harness<'_> {
    fn coll(&self) -> &Collection {
        self.coll.as_ref().expect("the collection is open")
    }

    fn matching(&self, filter: &Filter) -> Vec<(i64, Row)> {
        self.rows
            .iter()
            .filter(|(_, r)| filter.matches(r))
            .map(|(id, r)| (*id, r.clone()))
            .collect()
    }

    fn apply(&mut self, op: &Op) -> Result<(), String> {
        if let Op::Find { filter, .. }
        | Op::FindBy { filter, .. }
        | Op::Count { filter }
        | Op::LastPoints { filter } = op
            && self.avoid.null_meta_queries
            && filter.meta.is_some_and(MetaPred::has_null_operand)
        {
            self.summary.skipped += 1;
            return Ok(());
        }
        if let Op::LastPoints { filter } = op
            && self.avoid.last_points_row_filters
            && (!filter.time.is_empty() || filter.value.is_some())
        {
            self.summary.skipped += 1;
            return Ok(());
        }
        match op {
            Op::Insert { docs, ordered } => self.insert(docs, *ordered),
            Op::Find {
                filter,
                sort,
                limit,
                projection,
            } => self.find(filter, *sort, *limit, *projection),
            Op::FindBy {
                filter,
                desc,
                limit,
            } => self.find_by(filter, *desc, *limit),
            Op::Count { filter } => {
                let expected = self.matching(filter).len();
                let got = engine("count", self.coll().count(&filter.to_doc()))?;
                ensure!(
                    got == expected as u64,
                    "count {}: expected {expected}, got {got}",
                    filter.to_doc()
                );
                Ok(())
            }
            Op::LastPoints { filter } => self.last_points(filter),
            Op::Delete { filter, one } => self.delete(filter, *one),
            Op::UpdateMeta { filter, to } => self.update(*filter, *to),
            Op::Update { filter, change } => self.update_many(filter, *change),
            Op::UpdateOne { pick, change } => self.update_one(*pick, *change),
            Op::BadUpdate(k) => {
                let (update, code) = match k {
                    0 => (doc! { "$set": { "t": "x" } }, ErrorCode::BadValue),
                    1 => (doc! { "$unset": { "t": "" } }, ErrorCode::BadValue),
                    2 => (doc! { "m": 1 }, ErrorCode::FailedToParse),
                    3 => (doc! { "$inc": { "v": "a" } }, ErrorCode::TypeMismatch),
                    _ => (
                        doc! { "$set": { "v": 1 }, "$inc": { "v": 1 } },
                        ErrorCode::ConflictingUpdateOperators,
                    ),
                };
                let r = self.coll().update_many(&doc! {}, &update);
                let what = format!("update_many({{}}, {update})");
                if code == ErrorCode::BadValue && self.rows.is_empty() {
                    let r = engine(&what, r)?;
                    ensure!(
                        r.matched == 0,
                        "{what}: matched {r:?} in an empty collection"
                    );
                    return Ok(());
                }
                expect_error(&what, r, code)?;
                self.summary.refused += 1;
                Ok(())
            }
            Op::Expire { minute } => self.expire(T0 + i64::from(*minute) * MINUTE_MS),
            Op::ExpireAt(now) => self.expire(*now),
            Op::CollMod(c) => self.coll_mod(*c),
            Op::CloseReopen { clean } => self.reopen(if *clean {
                Shutdown::Close
            } else {
                Shutdown::Drop
            }),
            Op::Checkpoint => {
                engine("checkpoint", self.coll().checkpoint())?;
                self.summary.checkpoints += 1;
                Ok(())
            }
            Op::CrashRestart => self.reopen(Shutdown::Crash),
        }
    }

    /// The document of measurement `m` with `_id` `id`: `_id`, the time, the meta value, `v`,
    /// then the arbitrary fields; an arbitrary field named like one of the model's own
    /// (`_id`, `t`, `m`, `v`) is renamed with a `_` suffix, and one whose name is taken is
    /// left out. Also the row the model stores when the measurement is good (SPEC R-2.1 and
    /// a NUL in no field name at any depth), or `None`.
    fn measurement(m: &Meas, id: i64) -> (Document, Option<Row>) {
        let mut d = doc! { "_id": id };
        let t = match m.time {
            TimeKind::Date => Some(time_ms(m.minute, m.second)),
            TimeKind::At(t) => Some(t),
            TimeKind::Missing | TimeKind::NotADate => None,
        };
        match (m.time, t) {
            (_, Some(t)) => {
                d.insert("t", DateTime::from_millis(t));
            }
            (TimeKind::NotADate, _) => {
                d.insert("t", format!("{}", time_ms(m.minute, m.second)));
            }
            _ => {}
        }
        let meta = match &m.meta {
            Some(v) => Some(meta_of(v)),
            None => meta_written(m.series),
        };
        if let Some(meta) = &meta {
            d.insert("m", meta.clone());
        }
        if let Some(v) = val_bson(m.value) {
            d.insert("v", v);
        }
        let mut extra = Vec::new();
        for (name, v) in &m.extra {
            let name = if matches!(name.as_str(), "_id" | "t" | "m" | "v") {
                format!("{name}_")
            } else {
                name.clone()
            };
            if !d.contains_key(&name) {
                let v = v.to_bson();
                d.insert(name.clone(), v.clone());
                extra.push((name, v));
            }
        }
        let storable = !document_has_nul_name(&d);
        let row = t.filter(|_| storable).map(|t| Row {
            t,
            meta: meta.as_ref().map(normalized),
            v: m.value,
            extra,
        });
        (d, row)
    }

    fn insert(&mut self, ms: &[Meas], ordered: bool) -> Result<(), String> {
        let mut docs = Vec::with_capacity(ms.len());
        let mut stored = Vec::new();
        let mut bad = Vec::new();
        let mut stopped = false;
        let mut summary = Summary::default();
        for (i, m) in ms.iter().enumerate() {
            let id = self.next_id;
            self.next_id += 1;
            let (d, row) = Self::measurement(m, id);
            let nul = document_has_nul_name(&d);
            docs.push(d);
            if stopped {
                continue;
            }
            match row {
                Some(row) => {
                    summary.with_fields += usize::from(!row.extra.is_empty());
                    summary.any_meta += usize::from(m.meta.is_some());
                    summary.far_times += usize::from(matches!(m.time, TimeKind::At(_)));
                    stored.push((id, row));
                }
                None => {
                    summary.nul_rejected += usize::from(nul);
                    bad.push(i);
                    stopped = ordered; // R-2.5: ordered stops at the first bad measurement
                }
            }
        }
        let options = InsertOptions {
            ordered,
            ..InsertOptions::default()
        };
        let outcome = self.coll().insert_many(&docs, &options);
        // An ordered insert that stopped at a bad measurement is an error holding the result.
        ensure!(
            !ordered || bad.is_empty() == outcome.is_ok(),
            "insert (ordered): errors at {bad:?}, outcome {outcome:?}"
        );
        let r = engine(
            "insert_many",
            outcome.or_else(tscoll_engine::Error::into_insert_result),
        )?;
        let got_bad: Vec<usize> = r.errors.iter().map(|e| e.index).collect();
        ensure!(
            r.inserted == stored.len() && got_bad == bad,
            "insert (ordered {ordered}): expected {} stored and errors at {bad:?}, got {} stored and {:?}",
            stored.len(),
            r.inserted,
            r.errors
        );
        if let Some(e) = r.errors.iter().find(|e| e.code != ErrorCode::BadValue) {
            return Err(format!("insert: error of the wrong kind: {e:?}"));
        }
        summary.inserted = stored.len();
        summary.rejected = bad.len();
        self.summary.add(&summary);
        self.rows.extend(stored);
        Ok(())
    }

    /// `find` sorted by `{v: ±1, _id: 1}`: the exact sequence of `_id`s (a missing `v` sorts
    /// as null, before numbers; numbers by value; strings after them).
    fn find_by(&mut self, filter: &Filter, desc: bool, limit: Option<u8>) -> Result<(), String> {
        let fdoc = filter.to_doc();
        let dir = if desc { -1 } else { 1 };
        let options = FindOptions {
            sort_by: Some(doc! { "v": dir, "_id": 1 }),
            limit: limit.map(usize::from),
            ..FindOptions::default()
        };
        let got = engine("find", self.coll().find(&fdoc, &options))?;
        let key = |v: Val| match v {
            Val::Missing => (0, 0.0),
            Val::Int(_) | Val::Double(_) => (1, val_number(v).unwrap_or(0.0)),
            Val::Str(k) => (2, f64::from(k)),
        };
        let mut rows = self.matching(filter);
        rows.sort_by(|(a_id, a), (b_id, b)| {
            let o = key(a.v)
                .partial_cmp(&key(b.v))
                .unwrap_or(std::cmp::Ordering::Equal);
            let o = if desc { o.reverse() } else { o };
            o.then(a_id.cmp(b_id))
        });
        if let Some(n) = limit.filter(|n| *n > 0) {
            rows.truncate(usize::from(n));
        }
        let ids = got.iter().map(id_of).collect::<Result<Vec<_>, _>>()?;
        let expected: Vec<i64> = rows.iter().map(|(id, _)| *id).collect();
        ensure!(
            ids == expected,
            "find {fdoc} sorted by v {dir}: _ids {ids:?}, expected {expected:?}"
        );
        for (d, (id, row)) in got.iter().zip(&rows) {
            ensure!(
                same(d, &row.document(*id)),
                "find {fdoc}: expected {}, got {d}",
                row.document(*id)
            );
        }
        self.summary.finds.0 += 1;
        if !got.is_empty() {
            self.summary.finds.1 += 1;
        }
        self.summary.found += got.len();
        Ok(())
    }

    #[allow(
        clippy::field_reassign_with_default,
        reason = "FindOptions may gain fields; only these three are set"
    )]
    fn find(
        &mut self,
        filter: &Filter,
        sort: Option<bool>,
        limit: Option<u8>,
        projection: Proj,
    ) -> Result<(), String> {
        let mut options = FindOptions::default();
        options.sort = sort.map(|desc| {
            if desc {
                SortOrder::Descending
            } else {
                SortOrder::Ascending
            }
        });
        options.limit = limit.map(usize::from);
        options.projection = projection.to_doc();
        let fdoc = filter.to_doc();
        let got = engine("find", self.coll().find(&fdoc, &options))?;
        let matches: BTreeMap<i64, Row> = self.matching(filter).into_iter().collect();
        // MongoDB: a limit of 0 is no limit.
        let n = limit
            .filter(|&l| l > 0)
            .map_or(matches.len(), |l| matches.len().min(usize::from(l)));
        let what = || format!("find {fdoc} {options:?}");
        ensure!(
            got.len() == n,
            "{}: expected {n} of {} matches, got {}",
            what(),
            matches.len(),
            got.len()
        );
        let mut seen = BTreeSet::new();
        let mut times = Vec::with_capacity(got.len());
        for d in &got {
            let id = id_of(d)?;
            let Some(row) = matches.get(&id) else {
                return Err(format!("{}: {d} does not match (model)", what()));
            };
            ensure!(seen.insert(id), "{}: _id {id} returned twice", what());
            let expected: Document = row
                .document(id)
                .into_iter()
                .filter(|(k, _)| projection.keeps(k))
                .collect();
            ensure!(
                same(d, &expected),
                "{}: expected {expected}, got {d}",
                what()
            );
            times.push(row.t);
        }
        if let Some(desc) = sort {
            let mut all: Vec<i64> = matches.values().map(|r| r.t).collect();
            all.sort_unstable();
            if desc {
                all.reverse();
            }
            all.truncate(n);
            ensure!(
                times == all,
                "{}: times {times:?}, expected {all:?}",
                what()
            );
        }
        self.check_arrow(&fdoc, &options, &times, sort.is_some())?;
        self.summary.finds.0 += 1;
        self.summary.finds.1 += usize::from(!got.is_empty());
        self.summary.found += got.len();
        Ok(())
    }

    /// The Arrow result of a find holds the rows `find` returned: the same times (in the
    /// same order when sorted) and, when kept, the same `_id`s.
    fn check_arrow(
        &self,
        fdoc: &Document,
        options: &FindOptions,
        times: &[i64],
        sorted: bool,
    ) -> Result<(), String> {
        let what = || format!("find_arrow {fdoc} {options:?}");
        let batches = engine(
            "find_arrow",
            self.coll()
                .find_arrow(fdoc, options, &ArrowOptions::default())
                .and_then(|c| c.collect::<tscoll_engine::Result<Vec<_>>>()),
        )?;
        let mut got_times: Vec<i64> = Vec::new();
        let mut got_ids: BTreeSet<i64> = BTreeSet::new();
        for b in &batches {
            let t = b
                .column(0)
                .as_primitive_opt::<TimestampMillisecondType>()
                .ok_or_else(|| format!("{}: the first column is not a timestamp", what()))?;
            got_times.extend(t.values().iter());
            if let Some(ids) = b.column_by_name("_id") {
                let ids = ids
                    .as_primitive_opt::<Int64Type>()
                    .ok_or_else(|| format!("{}: _id is {}", what(), ids.data_type()))?;
                got_ids.extend(ids.iter().flatten());
            }
        }
        let mut want = times.to_vec();
        if !sorted {
            want.sort_unstable();
            got_times.sort_unstable();
        }
        ensure!(
            got_times == want,
            "{}: times {got_times:?}, find gave {want:?}",
            what()
        );
        let keeps_id = batches
            .first()
            .is_some_and(|b| b.column_by_name("_id").is_some());
        if keeps_id {
            let want_ids: BTreeSet<i64> = engine("find", self.coll().find(fdoc, options))?
                .iter()
                .map(id_of)
                .collect::<Result<_, _>>()?;
            ensure!(got_ids == want_ids, "{}: other _ids than find's", what());
        }
        Ok(())
    }

    fn last_points(&mut self, filter: &Filter) -> Result<(), String> {
        let fdoc = filter.to_doc();
        let got = engine("last_points", self.coll().last_points(&fdoc))?;
        let matches = self.matching(filter);
        // The matches by series (the bytes of the stored meta value; `None`: no meta field).
        let mut groups: BTreeMap<Option<Vec<u8>>, Vec<(i64, Row)>> = BTreeMap::new();
        for (id, row) in matches {
            let key = row
                .meta
                .as_ref()
                .map(|m| bytes_of(Some(m)).unwrap_or_default());
            groups.entry(key).or_default().push((id, row));
        }
        ensure!(
            got.len() == groups.len(),
            "last_points {fdoc}: expected {} series, got {}: {got:?}",
            groups.len(),
            got.len()
        );
        let mut seen = BTreeSet::new();
        let mut last_rank = 0;
        for d in &got {
            let id = id_of(d)?;
            let Some((key, group)) = groups.iter().find(|(_, g)| g.iter().any(|(i, _)| *i == id))
            else {
                return Err(format!("last_points {fdoc}: {d} does not match (model)"));
            };
            ensure!(
                seen.insert(key.clone()),
                "last_points {fdoc}: two results of one series: {got:?}"
            );
            let best = group.iter().map(|(_, r)| r.t).max().unwrap_or(i64::MIN);
            let Some((_, row)) = group.iter().find(|(i, _)| *i == id) else {
                return Err(format!("last_points {fdoc}: {d} not in its series"));
            };
            ensure!(
                row.t == best,
                "last_points {fdoc}: {d} is not the latest of its series (latest at {best})"
            );
            // The fixed series come in BSON order of their meta values (the others anywhere).
            if let Some(rank) = series_rank(row.meta.as_ref()) {
                ensure!(
                    rank >= last_rank,
                    "last_points {fdoc}: series out of order: {got:?}"
                );
                last_rank = rank;
            }
            let expected = row.document(id);
            ensure!(
                same(d, &expected),
                "last_points {fdoc}: expected {expected}, got {d}"
            );
        }
        Ok(())
    }

    fn delete(&mut self, filter: &Filter, one: bool) -> Result<(), String> {
        let fdoc = filter.to_doc();
        let matches = self.matching(filter);
        if !one {
            let r = engine("delete_many", self.coll().delete_many(&fdoc))?;
            ensure!(
                r.deleted == matches.len() as u64,
                "delete_many {fdoc}: expected {} deleted, got {r:?}",
                matches.len()
            );
            ensure!(
                (r.deleted > 0) == (r.buckets_removed + r.buckets_rewritten > 0),
                "delete_many {fdoc}: bucket figures do not fit: {r:?}"
            );
            for (id, _) in &matches {
                self.rows.remove(id);
            }
            self.summary.deleted += matches.len();
            return Ok(());
        }
        let r = engine("delete_one", self.coll().delete_one(&fdoc))?;
        let expected = u64::from(!matches.is_empty());
        ensure!(
            r.deleted == expected && r.buckets_removed + r.buckets_rewritten == expected,
            "delete_one {fdoc}: expected {expected} deleted of {} matches, got {r:?}",
            matches.len()
        );
        if expected == 1 {
            // Which one went is the engine's choice: it must be one of the matches.
            let now = self.engine_ids()?;
            let gone: Vec<i64> = self
                .rows
                .keys()
                .filter(|id| !now.contains(id))
                .copied()
                .collect();
            ensure!(
                gone.len() == 1 && matches.iter().any(|(id, _)| *id == gone[0]),
                "delete_one {fdoc}: removed {gone:?}, expected one of {:?}",
                matches.iter().map(|(id, _)| id).collect::<Vec<_>>()
            );
            self.rows.remove(&gone[0]);
            self.summary.deleted += 1;
        }
        Ok(())
    }

    /// What `change` makes of `row`: `None` when it refuses the update (`$inc` of a string).
    fn changed(row: &Row, change: Change) -> Option<Row> {
        let mut new = row.clone();
        match change {
            Change::IncV(n) => {
                new.v = match row.v {
                    Val::Int(i) => Val::Int(i + n),
                    Val::Double(i) => Val::Double(i + n),
                    Val::Missing => Val::Int(n),
                    Val::Str(_) => return None,
                }
            }
            Change::SetV(v) => new.v = v,
            Change::SetMeta(to) => new.meta = meta_value(to),
            Change::SetTime(minute) => new.t = T0 + i64::from(minute) * MINUTE_MS,
        }
        Some(new)
    }

    fn change_doc(change: Change) -> Document {
        match change {
            Change::IncV(n) => doc! { "$inc": { "v": i32::from(n) } },
            Change::SetV(v) => match val_bson(v) {
                Some(b) => doc! { "$set": { "v": b } },
                None => doc! { "$unset": { "v": "" } },
            },
            Change::SetMeta(to) => match meta_written(to) {
                Some(m) => doc! { "$set": { "m": m } },
                None => doc! { "$unset": { "m": "" } },
            },
            Change::SetTime(minute) => {
                doc! { "$set": { "t": DateTime::from_millis(T0 + i64::from(minute) * MINUTE_MS) } }
            }
        }
    }

    /// Applies `change` to the model's `matched` rows after the engine answered `r` to the
    /// update: every row changes or (a refusal) none does.
    fn check_update(
        &mut self,
        what: &str,
        matched: &[i64],
        change: Change,
        r: Result<tscoll_engine::UpdateResult, tscoll_engine::Error>,
    ) -> Result<(), String> {
        let mut new_rows = Vec::new();
        for id in matched {
            let row = &self.rows[id];
            match Self::changed(row, change) {
                Some(new) => {
                    if !same_row(row, &new) {
                        new_rows.push((*id, new));
                    }
                }
                None => {
                    expect_error(what, r, ErrorCode::TypeMismatch)?;
                    self.summary.refused += 1;
                    return Ok(());
                }
            }
        }
        let r = engine(what, r)?;
        ensure!(
            r.matched == matched.len() as u64 && r.modified == new_rows.len() as u64,
            "{what}: expected matched {} modified {}, got {r:?}",
            matched.len(),
            new_rows.len()
        );
        self.summary.updated += new_rows.len();
        for (id, row) in new_rows {
            self.rows.insert(id, row);
        }
        Ok(())
    }

    fn update_many(&mut self, filter: &Filter, change: Change) -> Result<(), String> {
        let fdoc = filter.to_doc();
        let update = Self::change_doc(change);
        let matched: Vec<i64> = self
            .matching(filter)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let r = self.coll().update_many(&fdoc, &update);
        self.check_update(
            &format!("update_many({fdoc}, {update})"),
            &matched,
            change,
            r,
        )
    }

    fn update_one(&mut self, pick: u8, change: Change) -> Result<(), String> {
        let ids: Vec<i64> = self.rows.keys().copied().collect();
        let Some(id) = (!ids.is_empty()).then(|| ids[usize::from(pick) % ids.len()]) else {
            return Ok(());
        };
        let fdoc = doc! { "_id": id };
        let update = Self::change_doc(change);
        let r = self
            .coll()
            .update_one(&fdoc, &update, &tscoll_engine::UpdateOptions::default());
        self.check_update(&format!("update_one({fdoc}, {update})"), &[id], change, r)
    }

    fn update(&mut self, filter: Option<MetaPred>, to: u8) -> Result<(), String> {
        let fdoc = filter.map(MetaPred::to_doc).unwrap_or_default();
        let update = match meta_written(to) {
            Some(m) => doc! { "$set": { "m": m } },
            None => doc! { "$unset": { "m": "" } },
        };
        let matched: Vec<i64> = self
            .rows
            .iter()
            .filter(|(_, r)| filter.is_none_or(|f| f.matches(r.meta.as_ref())))
            .map(|(id, _)| *id)
            .collect();
        let target = meta_value(to);
        let modified = matched
            .iter()
            .filter(|id| !same_value(self.rows[*id].meta.as_ref(), target.as_ref()))
            .count();
        let r = engine("update_many", self.coll().update_many(&fdoc, &update))?;
        ensure!(
            r.matched == matched.len() as u64 && r.modified == modified as u64,
            "update_many({fdoc}, {update}): expected matched {} modified {modified}, got {r:?}",
            matched.len()
        );
        for id in matched {
            if let Some(row) = self.rows.get_mut(&id) {
                row.meta.clone_from(&target);
            }
        }
        self.summary.updated += modified;
        Ok(())
    }

    /// A TTL pass (SPEC §10); see the module documentation for what is checked.
    /// A TTL pass at `now` (SPEC §10); the bounds are computed without overflow for any
    /// `now` and row time of the 64-bit range (R-10.4).
    fn expire(&mut self, now: i64) -> Result<(), String> {
        let Some(e) = self.spec.expire else {
            let r = engine("expire", self.coll().expire(now))?;
            ensure!(
                r.buckets == 0 && r.measurements == 0,
                "expire without expireAfterSeconds removed {r:?}"
            );
            return Ok(());
        };
        let span_ms = i128::from(self.spec.span) * 1000;
        let young = i128::from(now) - i128::from(e) * 1000;
        let cutoff = young - span_ms;
        let before = self.buckets()?;
        let r = engine("expire", self.coll().expire(now))?;
        let after = self.engine_ids()?;
        let mut removed = 0usize;
        for (id, row) in &self.rows {
            let kept = after.contains(id);
            // Its bucket's min time lies in (t − span, t]: R-10.1 keeps it while t ≥ now − E
            // and removes it once t < now − E − span (one second of slack at the boundary).
            ensure!(
                kept || i128::from(row.t) < young + 1000,
                "expire({now}) with E = {e} s, span {} s removed _id {id} at t = {} (must stay: t ≥ now − E)",
                self.spec.span,
                row.t
            );
            ensure!(
                !kept || i128::from(row.t) >= cutoff - 1000,
                "expire({now}) with E = {e} s, span {} s kept _id {id} at t = {} (must go: t < now − E − span)",
                self.spec.span,
                row.t
            );
            if !kept {
                removed += 1;
            } else if i128::from(row.t) < young + 1000 {
                self.summary.expire_uncertain += 1;
            }
        }
        ensure!(
            after.len() + removed == self.rows.len(),
            "expire({now}): the engine holds measurements the model does not"
        );
        // R-10.1 on the buckets themselves: whole buckets go, those whose min time is before
        // the cutoff (one second of slack either side).
        let mut removed_buckets = 0u64;
        for b in &before {
            let gone = b.rows.iter().filter(|(id, _)| !after.contains(id)).count();
            ensure!(
                gone == 0 || gone == b.rows.len(),
                "expire({now}): a bucket (min {}) lost {gone} of its {} measurements",
                b.min_time_str(),
                b.rows.len()
            );
            let whole = gone > 0 && gone == b.rows.len();
            // `None` within a second of the cutoff, where R-10.1 leaves the outcome open.
            let must_go = if i128::from(b.min_t) < cutoff - 1000 {
                Some(true)
            } else if i128::from(b.min_t) >= cutoff + 1000 {
                Some(false)
            } else {
                None
            };
            ensure!(
                must_go.is_none_or(|g| g == whole),
                "expire({now}): bucket with min {} (cutoff {cutoff}) {}",
                b.min_time_str(),
                if whole { "removed" } else { "kept" }
            );
            removed_buckets += u64::from(whole);
        }
        ensure!(
            r.measurements == removed as u64 && r.buckets == removed_buckets,
            "expire({now}): reported {r:?}, removed {removed} measurements in {removed_buckets} buckets"
        );
        self.rows.retain(|id, _| after.contains(id));
        self.summary.expired += removed;
        Ok(())
    }

    fn coll_mod(&mut self, op: CollModOp) -> Result<(), String> {
        let command = collmod_command(op);
        let r = self.coll().coll_mod(&command);
        match self.spec.after(op) {
            Ok(next) => {
                let spec = engine(&format!("coll_mod {command}"), r)?;
                let got = SpecModel {
                    granularity: spec.granularity,
                    span: spec.bucket_max_span_seconds,
                    rounding: spec.bucket_rounding_seconds,
                    expire: spec.expire_after_seconds,
                };
                ensure!(
                    got == next,
                    "coll_mod {command} on {:?}: expected {next:?}, returned {got:?}",
                    self.spec
                );
                if next != self.spec {
                    self.summary.collmods_changed += 1;
                }
                self.spec = next;
            }
            Err(code) => {
                expect_error(&format!("coll_mod {command} on {:?}", self.spec), r, code)?;
                self.summary.refused += 1;
            }
        }
        self.spec.check(self.coll())
    }

    /// Adds the catalog's reopening and eviction counters (they start at 0 with each open).
    fn count_catalog(&mut self) -> Result<(), String> {
        let e = engine("stats", self.coll().stats())?.execution;
        self.summary.buckets_reopened += e.num_buckets_reopened;
        self.summary.buckets_evicted += e.num_buckets_archived_due_to_memory_threshold
            + e.num_buckets_closed_due_to_memory_threshold;
        Ok(())
    }

    /// Ends the database as `how` says, then opens the directory again.
    fn reopen(&mut self, how: Shutdown) -> Result<(), String> {
        self.count_catalog()?;
        drop(self.coll.take());
        if let Some(db) = self.db.take() {
            match how {
                Shutdown::Drop => drop(db),
                Shutdown::Close => {
                    engine("close", db.close())?;
                    drop(db);
                }
                Shutdown::Crash => engine("crash", db.crash())?,
            }
        }
        let db = engine(
            "Database::open (reopen)",
            Database::open(self.dir, self.options.clone()),
        )?;
        let coll = engine("collection (reopen)", db.collection("c"))?;
        self.db = Some(db);
        self.coll = Some(coll);
        if how == Shutdown::Crash {
            self.summary.crash_restarts += 1;
        } else {
            self.summary.reopens += 1;
        }
        self.spec
            .check(self.coll())
            .map_err(|e| format!("after reopening: {e}"))
    }

    /// Every `_id` the engine holds (an empty filter).
    fn engine_ids(&self) -> Result<BTreeSet<i64>, String> {
        let all = engine(
            "find {}",
            self.coll().find(&doc! {}, &FindOptions::default()),
        )?;
        all.iter().map(id_of).collect()
    }

    /// The stored buckets (`Collection::buckets`), reduced to min time and rows.
    fn buckets(&self) -> Result<Vec<BucketView>, String> {
        let docs = engine("buckets", self.coll().buckets())?;
        let mut out = Vec::with_capacity(docs.len());
        for b in &docs {
            let bad = |what: &str| format!("bucket {what}: {b}");
            let control = b.get_document("control").map_err(|_| bad("no control"))?;
            let min_t = control
                .get_document("min")
                .and_then(|m| m.get_datetime("t"))
                .map_err(|_| bad("no control.min.t"))?
                .timestamp_millis();
            let max_t = control
                .get_document("max")
                .and_then(|m| m.get_datetime("t"))
                .map_err(|_| bad("no control.max.t"))?
                .timestamp_millis();
            let count = control.get_i64("count").map_err(|_| bad("no count"))?;
            let data = b.get_document("data").map_err(|_| bad("no data"))?;
            let ids = data.get_document("_id").map_err(|_| bad("no _id column"))?;
            let ts = data.get_document("t").map_err(|_| bad("no t column"))?;
            ensure!(
                ids.len() == ts.len() && ids.len() as i64 == count,
                "bucket: control.count {count}, {} _id and {} t values: {b}",
                ids.len(),
                ts.len()
            );
            let mut rows = Vec::with_capacity(ids.len());
            for (k, v) in ids {
                let id = match v {
                    Bson::Int64(i) => *i,
                    _ => return Err(bad("non-Int64 _id")),
                };
                let t = ts
                    .get_datetime(k)
                    .map_err(|_| bad("row without a time"))?
                    .timestamp_millis();
                rows.push((id, t));
            }
            let latest = rows.iter().map(|(_, t)| *t).max();
            ensure!(
                latest == Some(max_t),
                "bucket: control.max.t {max_t}, latest row {latest:?}: {b}"
            );
            let meta = b.get("meta");
            for (id, t) in &rows {
                let Some(row) = self.rows.get(id) else {
                    return Err(format!("bucket holds _id {id}, which the model does not"));
                };
                ensure!(row.t == *t, "bucket: _id {id} at {t}, model at {}", row.t);
                ensure!(
                    same_value(meta, row.meta.as_ref()),
                    "bucket meta {meta:?} holds _id {id} of meta {:?}",
                    row.meta
                );
            }
            out.push(BucketView { min_t, rows });
        }
        Ok(out)
    }

    /// After every operation: the collection equals the model, and every bucket is consistent
    /// with it (SPEC R-6.3.1: every time in `[min, min + span)`, with the span now, R-12.5).
    fn check_all(&mut self) -> Result<(), String> {
        let mut all = engine(
            "find {}",
            self.coll().find(&doc! {}, &FindOptions::default()),
        )?;
        let mut keyed = Vec::with_capacity(all.len());
        for d in all.drain(..) {
            keyed.push((id_of(&d)?, d));
        }
        keyed.sort_by_key(|(id, _)| *id);
        let got: Vec<i64> = keyed.iter().map(|(id, _)| *id).collect();
        let expected: Vec<i64> = self.rows.keys().copied().collect();
        if got != expected {
            let missing: Vec<_> = expected.iter().filter(|i| !got.contains(i)).collect();
            let mut seen = BTreeSet::new();
            let extra: Vec<_> = got
                .iter()
                .filter(|i| !seen.insert(**i) || !expected.contains(i))
                .collect();
            return Err(format!(
                "contents: {} measurements, model {}; missing {missing:?}, extra or repeated {extra:?}",
                got.len(),
                expected.len()
            ));
        }
        for (id, d) in &keyed {
            let e = self.rows[id].document(*id);
            ensure!(same(d, &e), "contents: expected {e}, got {d}");
        }
        let n = engine("count {}", self.coll().count(&doc! {}))?;
        ensure!(
            n == self.rows.len() as u64,
            "count {{}}: {n}, model {}",
            self.rows.len()
        );
        let span_ms = i128::from(self.spec.span) * 1000;
        let buckets = self.buckets()?;
        let mut ids = BTreeSet::new();
        for b in &buckets {
            // Whole seconds (R-1.3.1), or the lowest date when the rounded time would be below
            // the range (a measurement in the first second of it).
            ensure!(
                b.min_t % 1000 == 0 || b.min_t == i64::MIN,
                "bucket min time {} is not whole seconds",
                b.min_t
            );
            for (id, t) in &b.rows {
                ensure!(ids.insert(*id), "_id {id} stored in two buckets");
                ensure!(
                    b.min_t <= *t && i128::from(*t) - i128::from(b.min_t) < span_ms,
                    "bucket with min {} holds _id {id} at {t}, outside [min, min + {} s)",
                    b.min_time_str(),
                    self.spec.span
                );
            }
        }
        ensure!(
            ids.len() == self.rows.len(),
            "buckets hold {} measurements, model {}",
            ids.len(),
            self.rows.len()
        );
        self.summary.max_buckets = self.summary.max_buckets.max(buckets.len());
        self.check_sums()
    }

    /// Daily counts, sums, means and standard deviations of `v` equal the model's: whole
    /// buckets inside a day are answered from the sums in their control records (kept
    /// through inserts, deletes, updates, TTL and reopening), the rest decoded.
    fn check_sums(&self) -> Result<(), String> {
        const DAY: i64 = 86_400_000;
        let spec = AggregateSpec {
            window_ms: DAY,
            by_series: false,
            outputs: vec![
                ("n".into(), Accumulator::Count),
                ("nv".into(), Accumulator::CountNumbers("v".into())),
                ("sum".into(), Accumulator::Sum("v".into())),
                ("avg".into(), Accumulator::Avg("v".into())),
                ("sd".into(), Accumulator::StdDevPop("v".into())),
                ("sds".into(), Accumulator::StdDevSamp("v".into())),
            ],
        };
        let got = engine("aggregate", self.coll().aggregate_windows(&doc! {}, &spec))?;
        let mut days: BTreeMap<i64, (i64, Vec<f64>)> = BTreeMap::new();
        for (id, row) in &self.rows {
            // The first day of the date range starts before it: reported at its start.
            let day = days
                .entry(row.t.div_euclid(DAY).saturating_mul(DAY))
                .or_default();
            day.0 += 1;
            match row.document(*id).get("v") {
                Some(Bson::Int32(i)) => day.1.push(f64::from(*i)),
                #[expect(clippy::cast_precision_loss, reason = "as the engine sums")]
                Some(Bson::Int64(i)) => day.1.push(*i as f64),
                Some(Bson::Double(d)) => day.1.push(*d),
                Some(Bson::Decimal128(d)) => day.1.push(d.to_string().parse().unwrap_or(f64::NAN)),
                _ => {}
            }
        }
        ensure!(
            got.len() == days.len(),
            "daily sums: {} days, model {}",
            got.len(),
            days.len()
        );
        let close = |a: Option<f64>, b: Option<f64>, scale: f64| match (a, b) {
            (Some(a), Some(b)) => {
                a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * scale.max(1.0)
            }
            (a, b) => a == b,
        };
        for (g, (day, (n, values))) in got.iter().zip(&days) {
            let num = |k: &str| match g.get(k) {
                Some(Bson::Double(x)) => Some(*x),
                _ => None,
            };
            #[expect(clippy::cast_precision_loss, reason = "counts as doubles")]
            let (count, len) = (values.len() as f64, values.len());
            let sum: f64 = values.iter().sum();
            let scale: f64 = values.iter().map(|x| x.abs()).sum();
            let mean = (len > 0).then(|| sum / count);
            let m2: f64 = values
                .iter()
                .map(|x| (x - mean.unwrap_or(0.0)).powi(2))
                .sum();
            let sd = (len > 0).then(|| (m2 / count).sqrt());
            let sds = (len > 1).then(|| (m2 / (count - 1.0)).sqrt());
            let ok = g
                .get_document("_id")
                .ok()
                .and_then(|i| i.get_datetime("t").ok())
                == Some(&DateTime::from_millis(*day))
                && g.get_i64("n").ok() == Some(*n)
                && g.get_i64("nv").ok() == i64::try_from(len).ok()
                && close(num("sum"), Some(sum), scale)
                && close(num("avg"), mean, scale)
                && close(num("sd"), sd, scale)
                && close(num("sds"), sds, scale);
            ensure!(
                ok,
                "daily sums: got {g}, model: day {day}, n {n}, numbers {len}, sum {sum}, avg {mean:?}, \
                 sd {sd:?}, sds {sds:?}"
            );
        }
        Ok(())
    }
}

impl BucketView {
    fn min_time_str(&self) -> String {
        format!("T0{:+} ms", i128::from(self.min_t) - i128::from(T0))
    }
}
