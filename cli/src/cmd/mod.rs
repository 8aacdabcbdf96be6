//! One module per command, plus helpers they share: opening the database, parsing JSON
//! arguments, printing documents as Extended JSON, writing to stderr and stdout without
//! panicking when they are closed.

/// `eprintln!` that ignores write errors: a closed stderr (`tscoll ... 2>&1 | head -1`) must
/// not end the command with a panic.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cmd::write_stderr(format_args!($($arg)*), true)
    };
}

/// `eprint!` that ignores write errors (see `errln!`).
macro_rules! errprint {
    ($($arg:tt)*) => {
        $crate::cmd::write_stderr(format_args!($($arg)*), false)
    };
}

/// `println!` that ignores write errors: a closed stdout (`tscoll ... | head -1`) must not end
/// the command with a panic.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cmd::write_stdout(format_args!($($arg)*), true)
    };
}

/// `print!` that ignores write errors (see `outln!`).
macro_rules! outprint {
    ($($arg:tt)*) => {
        $crate::cmd::write_stdout(format_args!($($arg)*), false)
    };
}

pub(crate) mod aggregate;
pub(crate) mod bench;
pub(crate) mod buckets;
#[cfg(feature = "cluster")]
pub(crate) mod cluster;
#[cfg(feature = "cluster")]
pub(crate) mod cluster_ingest;
pub(crate) mod collmod;
pub(crate) mod compact;
pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod demo;
pub(crate) mod drop;
pub(crate) mod expire;
pub(crate) mod find;
pub(crate) mod index;
pub(crate) mod ingest;
pub(crate) mod list;
pub(crate) mod report;
pub(crate) mod salvage;
pub(crate) mod serve;
#[cfg(feature = "sql")]
pub(crate) mod sql;
pub(crate) mod stats;
pub(crate) mod update;
pub(crate) mod user;
pub(crate) mod verify;
#[cfg(feature = "cluster")]
pub(crate) mod worker;

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bson::{Bson, Document};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use tscoll_engine::{Access, CatalogOptions, Collection, Database, DatabaseOptions, LogOptions};

/// Error type of the commands: anything displayable.
pub(crate) type CmdError = Box<dyn std::error::Error + Send + Sync>;

/// Result type of the commands.
pub(crate) type CmdResult<T> = Result<T, CmdError>;

/// The `--db DIR` option of every command that opens a database (all but `demo` and
/// `bench`), with the options of opening it, shown under their own heading.
#[derive(Debug, clap::Args)]
pub(crate) struct DbArgs {
    /// Database directory (created by `create` when missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) db: PathBuf,
    /// Open a database whose journal is damaged: keep every write before the damage, drop
    /// the rest (the original journal files are kept in the database directory) and say what
    /// was dropped.
    #[arg(long, help_heading = DB_OPTIONS)]
    pub(crate) recover: bool,
    /// Bytes each collection's write-ahead log may grow by before a checkpoint bounds it
    /// (recovery after a crash replays at most about this much).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_CHECKPOINT_BYTES, help_heading = DB_OPTIONS)]
    pub(crate) checkpoint_bytes: u64,
    /// Bytes of blobs that buckets leaving memory together must reach to be written straight
    /// into a table rather than through fjall's journal (0: always, slow when buckets leave
    /// one at a time; a huge value: never).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_INGEST_MIN_BYTES, help_heading = DB_OPTIONS)]
    pub(crate) ingest_min_bytes: u64,
    /// Bytes of rows a sort holds in memory (`find --sort` on fields other than time, a
    /// pipeline's `$sort` and `$setWindowFields`) before it writes them, sorted, to a
    /// temporary file, merged with the others as the result is printed.
    #[arg(long, value_name = "BYTES", default_value_t = tscoll_engine::SORT_MEMORY_LIMIT, help_heading = DB_OPTIONS)]
    pub(crate) sort_memory_bytes: u64,
    /// Bytes the bucket catalog of each collection may hold (open buckets' rows, min/max,
    /// staged batches) before idle buckets are archived or closed and stored (MongoDB's
    /// `timeseriesIdleBucketExpiryMemoryUsageThreshold`, SPEC §6.9). Default: 5 % of the
    /// memory this process may use (its cgroup's limit, else the machine's), as MongoDB's;
    /// 64 MiB where that is unknown.
    #[arg(long, value_name = "BYTES", help_heading = DB_OPTIONS)]
    pub(crate) catalog_memory: Option<u64>,
}

/// The help heading of the options of opening a database.
const DB_OPTIONS: &str = "Database options";
/// The default `--checkpoint-bytes`: 64 MiB.
const DEFAULT_CHECKPOINT_BYTES: u64 = 64 << 20;
/// The default `--ingest-min-bytes`: 128 KiB.
const DEFAULT_INGEST_MIN_BYTES: u64 = 128 << 10;

impl DbArgs {
    /// `--db dir` with the default options of opening it.
    #[cfg(test)]
    pub(crate) fn new(dir: impl Into<PathBuf>) -> DbArgs {
        DbArgs {
            db: dir.into(),
            recover: false,
            checkpoint_bytes: DEFAULT_CHECKPOINT_BYTES,
            ingest_min_bytes: DEFAULT_INGEST_MIN_BYTES,
            sort_memory_bytes: tscoll_engine::SORT_MEMORY_LIMIT,
            catalog_memory: None,
        }
    }

    /// Makes its options those every database of the process is opened with (from `main`).
    pub(crate) fn apply(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        RECOVER.store(self.recover, Relaxed);
        CHECKPOINT_BYTES.store(self.checkpoint_bytes, Relaxed);
        INGEST_MIN_BYTES.store(self.ingest_min_bytes, Relaxed);
        SORT_MEMORY_BYTES.store(self.sort_memory_bytes, Relaxed);
        CATALOG_MEMORY.store(self.catalog_memory.unwrap_or(0), Relaxed);
    }
}

/// Whether `--recover` was given: databases are opened with `Database::open_recovering`.
static RECOVER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// `--checkpoint-bytes` (bytes logged between checkpoints of a collection's log).
static CHECKPOINT_BYTES: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(DEFAULT_CHECKPOINT_BYTES);
/// `--ingest-min-bytes` ([`LogOptions::ingest_min_bytes`]).
static INGEST_MIN_BYTES: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(DEFAULT_INGEST_MIN_BYTES);
/// `--sort-memory-bytes` ([`DatabaseOptions::sort_memory_bytes`]).
static SORT_MEMORY_BYTES: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(tscoll_engine::SORT_MEMORY_LIMIT);

/// `--catalog-memory` ([`CatalogOptions::idle_bucket_expiry_memory_usage_threshold_bytes`]);
/// 0 when not given.
static CATALOG_MEMORY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The catalog options of a database opened with `--catalog-memory` bytes, or with the
/// default: 5 % of the memory this process may use
/// ([`tscoll_engine::machine_memory_bytes`], [`CatalogOptions::for_memory`]), the library's
/// 64 MiB where that is unknown.
pub(crate) fn catalog_options(catalog_memory: Option<u64>) -> CatalogOptions {
    match catalog_memory {
        Some(bytes) => CatalogOptions {
            idle_bucket_expiry_memory_usage_threshold_bytes: bytes,
            ..CatalogOptions::default()
        },
        None => tscoll_engine::machine_memory_bytes()
            .map(CatalogOptions::for_memory)
            .unwrap_or_default(),
    }
}

/// The options databases are opened with: the defaults, with `--checkpoint-bytes`,
/// `--ingest-min-bytes`, `--sort-memory-bytes` and `--catalog-memory`.
pub(crate) fn db_options() -> DatabaseOptions {
    DatabaseOptions {
        catalog: catalog_options(
            Some(CATALOG_MEMORY.load(std::sync::atomic::Ordering::Relaxed)).filter(|b| *b > 0),
        ),
        log: LogOptions {
            checkpoint_bytes: CHECKPOINT_BYTES.load(std::sync::atomic::Ordering::Relaxed),
            ingest_min_bytes: INGEST_MIN_BYTES.load(std::sync::atomic::Ordering::Relaxed),
            ..LogOptions::default()
        },
        sort_memory_bytes: SORT_MEMORY_BYTES.load(std::sync::atomic::Ordering::Relaxed),
        ..DatabaseOptions::default()
    }
}

/// Opens (or creates) the database in `dir`; with `--recover`, even when its journal or a
/// write-ahead log is damaged. Warns on stderr of what the repair dropped, and of a torn
/// last log record the open dropped (one line each).
///
/// # Errors
/// The engine cannot open it (e.g. another process holds it, or its journal is damaged and
/// `--recover` was not given).
pub(crate) fn open_db(dir: &Path) -> CmdResult<Database> {
    open_with(dir, db_options())
}

/// Opens an existing database (one that `create` made): a directory that holds none is an
/// error, and nothing is written into it.
///
/// # Errors
/// No database at `dir`, or it cannot be opened.
pub(crate) fn open_existing_db(dir: &Path) -> CmdResult<Database> {
    open_with(
        dir,
        DatabaseOptions {
            create: false,
            ..db_options()
        },
    )
}

/// Opens an existing database for a command that only reads: read-only when writing is
/// impossible (a full disk), warning on stderr of what its reads miss then.
///
/// # Errors
/// As [`open_existing_db`].
pub(crate) fn open_readable_db(dir: &Path) -> CmdResult<Database> {
    open_readable_db_with(dir, db_options())
}

/// [`open_readable_db`] with `options` (from [`db_options`]).
///
/// # Errors
/// As [`open_existing_db`].
pub(crate) fn open_readable_db_with(dir: &Path, options: DatabaseOptions) -> CmdResult<Database> {
    let db = open_with(
        dir,
        DatabaseOptions {
            create: false,
            access: Access::ReadWriteOrReadOnly,
            ..options
        },
    )?;
    if let Some(r) = db.read_only() {
        errln!("tscoll: warning: {}: {r}", dir.display());
    }
    Ok(db)
}

fn open_with(dir: &Path, options: DatabaseOptions) -> CmdResult<Database> {
    let db = if RECOVER.load(std::sync::atomic::Ordering::Relaxed) {
        Database::open_recovering(dir, options)
    } else {
        Database::open(dir, options)
    }
    .map_err(|e| match e {
        // The message names the directory and says what to do.
        tscoll_engine::Error::NotADatabase { .. } => e.to_string(),
        e => format!("cannot open database {}: {e}", dir.display()),
    })?;
    if let Some(r) = db.recovery_report() {
        errln!("tscoll: warning: {r}");
    }
    for l in db.log_recovery() {
        errln!("tscoll: warning: {l}");
    }
    Ok(db)
}

/// Opens an existing database and one of its collections.
///
/// # Errors
/// The directory does not exist, cannot be opened, or has no such collection.
pub(crate) fn open_collection(dir: &Path, name: &str) -> CmdResult<(Database, Collection)> {
    collection_of(open_existing_db(dir)?, name)
}

/// Opens an existing database ([`open_readable_db`]) and one of its collections, to read.
///
/// # Errors
/// As [`open_collection`].
pub(crate) fn open_readable_collection(
    dir: &Path,
    name: &str,
) -> CmdResult<(Database, Collection)> {
    collection_of(open_readable_db(dir)?, name)
}

fn collection_of(db: Database, name: &str) -> CmdResult<(Database, Collection)> {
    let coll = db
        .collection(name)
        .map_err(|e| format!("collection '{name}': {e}"))?;
    Ok((db, coll))
}

/// Parses a command-line JSON argument (`--filter`, `--projection`) as Extended JSON.
///
/// # Errors
/// Malformed JSON, not an object, or bad Extended JSON; the message names the option.
pub(crate) fn parse_json_arg(option: &str, text: &str) -> CmdResult<Document> {
    crate::input::ndjson::parse_document(text).map_err(|e| format!("{option}: {e}").into())
}

/// Writes `args` (and a line break when `newline`) to stderr, ignoring write errors: what
/// `errln!` and `errprint!` expand to.
pub(crate) fn write_stderr(args: fmt::Arguments<'_>, newline: bool) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args);
    if newline {
        let _ = err.write_all(b"\n");
    }
}

/// Writes `args` (and a line break when `newline`) to stdout, ignoring write errors: what
/// `outln!` and `outprint!` expand to.
pub(crate) fn write_stdout(args: fmt::Arguments<'_>, newline: bool) {
    let mut out = io::stdout().lock();
    let _ = out.write_fmt(args);
    if newline {
        let _ = out.write_all(b"\n");
    }
}

/// The relaxed Extended JSON text of a document (one line), for people to read: an int64
/// that fits in 32 bits is a plain number.
pub(crate) fn to_extjson(doc: Document) -> String {
    extjson_text(&Bson::Document(doc))
}

/// The relaxed Extended JSON text of any BSON value (one line).
pub(crate) fn extjson_text(value: &Bson) -> String {
    serde_json::to_string(&RelaxedExtJson::readable(value)).unwrap_or_default()
}

/// A BSON value as a relaxed Extended JSON value, for JSON objects built by the commands.
pub(crate) fn extjson_value(value: &Bson) -> serde_json::Value {
    serde_json::to_value(RelaxedExtJson::readable(value)).unwrap_or(serde_json::Value::Null)
}

/// Writes a document as one line of relaxed Extended JSON that reads back (`tscoll ingest`)
/// to the identical document: every type kept, an int64 that fits in 32 bits included.
///
/// # Errors
/// The writer fails (e.g. a closed pipe).
pub(crate) fn write_extjson_line(out: &mut impl Write, doc: Document) -> io::Result<()> {
    write_extjson_doc(out, &doc)
}

/// Writes a borrowed document as one line of relaxed Extended JSON (as
/// [`write_extjson_line`]).
///
/// # Errors
/// The writer fails (e.g. a closed pipe).
pub(crate) fn write_extjson_doc(out: &mut impl Write, doc: &Document) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &RelaxedDocument(doc, true))?;
    out.write_all(b"\n")
}

/// The last millisecond relaxed Extended JSON writes as text: 9999-12-31T23:59:59.999Z.
/// Dates after it, and dates before 1970, are written in canonical form,
/// `{"$date":{"$numberLong":"..."}}` (MongoDB's Extended JSON specification).
pub(crate) const LAST_RELAXED_DATE_MS: i64 = 253_402_300_799_999;

/// A BSON value serialized as relaxed Extended JSON, straight into the serializer (no
/// intermediate `serde_json::Value` for documents, arrays, numbers, strings and dates).
///
/// Dates are written as `{"$date":"YYYY-MM-DDTHH:MM:SS.mmmZ"}` (always three millisecond
/// digits, as `mongoexport` writes them) for years 1970 to 9999, and as
/// `{"$date":{"$numberLong":"MS"}}` otherwise, so that every `i64` millisecond value reads
/// back as the same instant. An int64 that fits in 32 bits is written as
/// `{"$numberLong":"N"}` (a plain number would read back as an int32). The other types the
/// bson crate converts (`Bson::into_relaxed_extjson`). The second field keeps int64s that fit
/// in 32 bits typed (`{"$numberLong": ...}`): on for data that is read back, off for figures
/// people read.
pub(crate) struct RelaxedExtJson<'a>(&'a Bson, bool);

impl<'a> RelaxedExtJson<'a> {
    /// For data that is read back: every value keeps its type.
    pub(crate) fn exact(value: &'a Bson) -> Self {
        RelaxedExtJson(value, true)
    }

    /// For figures people read: every integer a plain number.
    fn readable(value: &'a Bson) -> Self {
        RelaxedExtJson(value, false)
    }
}

/// A document serialized as relaxed Extended JSON (see [`RelaxedExtJson`]).
struct RelaxedDocument<'a>(&'a Document, bool);

impl Serialize for RelaxedDocument<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, &RelaxedExtJson(value, self.1))?;
        }
        map.end()
    }
}

impl Serialize for RelaxedExtJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Bson::Document(doc) => RelaxedDocument(doc, self.1).serialize(serializer),
            Bson::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&RelaxedExtJson(item, self.1))?;
                }
                seq.end()
            }
            Bson::DateTime(t) => {
                let ms = t.timestamp_millis();
                let mut map = serializer.serialize_map(Some(1))?;
                if (0..=LAST_RELAXED_DATE_MS).contains(&ms) {
                    map.serialize_entry("$date", &Collect(IsoMillis(ms)))?;
                } else {
                    map.serialize_entry("$date", &NumberLong(ms))?;
                }
                map.end()
            }
            Bson::Int32(i) => serializer.serialize_i32(*i),
            // A plain number that fits in 32 bits reads back as an int32, so such an int64
            // keeps its type as `{"$numberLong": ...}`; larger ones read back as int64.
            Bson::Int64(i) if self.1 && i32::try_from(*i).is_ok() => {
                NumberLong(*i).serialize(serializer)
            }
            Bson::Int64(i) => serializer.serialize_i64(*i),
            // NaN and the infinities are `{"$numberDouble": ...}`: the bson crate below.
            Bson::Double(d) if d.is_finite() => serializer.serialize_f64(*d),
            Bson::String(s) => serializer.serialize_str(s),
            Bson::Boolean(b) => serializer.serialize_bool(*b),
            Bson::Null => serializer.serialize_unit(),
            // The scope is a document: its dates (and int64s) follow the rules above.
            Bson::JavaScriptCodeWithScope(code) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("$code", &code.code)?;
                map.serialize_entry("$scope", &RelaxedDocument(&code.scope, self.1))?;
                map.end()
            }
            other => other.clone().into_relaxed_extjson().serialize(serializer),
        }
    }
}

/// Serializes a value's `Display` text as a JSON string without building a `String`.
struct Collect<T>(T);

impl<T: fmt::Display> Serialize for Collect<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// `{"$numberLong": "MS"}`.
struct NumberLong(i64);

impl Serialize for NumberLong {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("$numberLong", &Collect(self.0))?;
        map.end()
    }
}

/// Milliseconds since the Unix epoch shown as `YYYY-MM-DDTHH:MM:SS.mmmZ` (RFC 3339) for the
/// years 0 to 9999; other years are ISO 8601 expanded years, a sign and at least six digits
/// (`+010000-01-01T00:00:00.000Z`, `-000001-12-31T23:59:59.999Z`), as JavaScript's
/// `Date.toISOString` writes them, so that every `i64` has a text.
pub(crate) struct IsoMillis(pub(crate) i64);

impl fmt::Display for IsoMillis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(86_400_000);
        let ms_of_day = self.0.rem_euclid(86_400_000);
        let (year, month, day) = civil_from_days(days);
        let (seconds, ms) = (ms_of_day / 1000, ms_of_day % 1000);
        if (0..=9999).contains(&year) {
            write!(f, "{year:04}")?;
        } else {
            let sign = if year < 0 { '-' } else { '+' };
            write!(f, "{sign}{:06}", year.unsigned_abs())?;
        }
        write!(
            f,
            "-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60
        )
    }
}

/// The proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Turns the error of writing to stdout into the command's outcome: a closed pipe (`| head`)
/// ends the command quietly with success.
pub(crate) fn stdout_result(result: io::Result<()>) -> CmdResult<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(|e| format!("writing to stdout: {e}").into()),
    }
}

/// The median of times sorted ascending (the mean of the middle two for an even count).
///
/// # Panics
/// When `sorted` is empty.
pub(crate) fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        f64::midpoint(sorted[n / 2 - 1], sorted[n / 2])
    }
}

/// Formats a duration in seconds compactly: `90 ms`, `45 s`, `5 min`, `3.5 h`, `2 d`.
pub(crate) fn human_seconds(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1000.0)
    } else if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 3_600.0 {
        format!("{:.1} min", seconds / 60.0)
    } else if seconds < 86_400.0 {
        format!("{:.1} h", seconds / 3_600.0)
    } else {
        format!("{:.1} d", seconds / 86_400.0)
    }
}

/// Formats a byte count: `512 B`, `1.5 KiB`, `3.2 MiB`, `1.1 GiB`.
pub(crate) fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b < 1024.0 {
        format!("{bytes} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_formats() {
        assert_eq!(human_seconds(0.09), "90 ms");
        assert_eq!(human_seconds(45.0), "45 s");
        assert_eq!(human_seconds(300.0), "5.0 min");
        assert_eq!(human_seconds(86_400.0 * 3.0), "3.0 d");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn json_args_are_extended_json() {
        let filter = parse_json_arg(
            "--filter",
            r#"{"ts":{"$gte":{"$date":"2016-01-01T00:00:00Z"}}}"#,
        )
        .expect("parse");
        let ts = filter.get_document("ts").expect("ts");
        assert!(matches!(ts.get("$gte"), Some(Bson::DateTime(_))));
        let err = parse_json_arg("--filter", "{").expect_err("bad");
        assert!(
            err.to_string().starts_with("--filter: malformed JSON"),
            "{err}"
        );
    }

    #[test]
    fn extjson_lines() {
        let mut out = Vec::new();
        let doc = bson::doc! {
            "ts": bson::DateTime::from_millis(0), "n": 3_i32, "l": 3_i64, "big": 1_i64 << 40,
        };
        write_extjson_line(&mut out, doc).expect("write");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "{\"ts\":{\"$date\":\"1970-01-01T00:00:00.000Z\"},\"n\":3,\
             \"l\":{\"$numberLong\":\"3\"},\"big\":1099511627776}\n"
        );
    }

    /// The bson crate's relaxed form of the other types is kept (and field order).
    #[test]
    fn extjson_other_types_as_the_bson_crate_writes_them() {
        let oid = bson::oid::ObjectId::parse_str("5f1d7b3c9d8e4a2b1c0f3e4d").expect("oid");
        let doc = bson::doc! {
            "z": 1.5, "a": -0.0, "nan": f64::NAN, "inf": f64::NEG_INFINITY, "s": "q\"\n",
            "b": true, "n": null, "i": 2_i32, "l": 3_000_000_000_i64, "id": oid,
            "arr": [1, "x", { "d": bson::DateTime::from_millis(-5) }],
            "ts": bson::Timestamp { time: 1, increment: 2 },
        };
        let text = to_extjson(doc.clone());
        let mut want = Bson::Document(doc.clone()).into_relaxed_extjson();
        want["arr"][2]["d"] = serde_json::json!({ "$date": { "$numberLong": "-5" } });
        assert_eq!(text, want.to_string());
        assert_eq!(extjson_value(&Bson::Document(doc)), want);
    }

    #[test]
    fn extjson_dates_beyond_year_9999_round_trip() {
        let cases: [(i64, &str); 8] = [
            (i64::MIN, r#"{"$numberLong":"-9223372036854775808"}"#),
            (-1, r#"{"$numberLong":"-1"}"#),
            (0, r#""1970-01-01T00:00:00.000Z""#),
            (20, r#""1970-01-01T00:00:00.020Z""#),
            (1_709_210_096_789, r#""2024-02-29T12:34:56.789Z""#),
            (253_402_300_799_999, r#""9999-12-31T23:59:59.999Z""#),
            (253_402_300_800_000, r#"{"$numberLong":"253402300800000"}"#),
            (i64::MAX, r#"{"$numberLong":"9223372036854775807"}"#),
        ];
        let mut out = Vec::new();
        for (ms, want) in cases {
            let doc = bson::doc! { "ts": bson::DateTime::from_millis(ms) };
            let line = to_extjson(doc.clone());
            assert_eq!(line, format!(r#"{{"ts":{{"$date":{want}}}}}"#), "{ms}");
            write_extjson_line(&mut out, doc).expect("write");
        }
        let read: Vec<i64> = crate::input::ndjson::NdjsonReader::new(out.as_slice())
            .map(|r| {
                let doc = r.expect("io").doc.expect("valid line");
                doc.get_datetime("ts").expect("date").timestamp_millis()
            })
            .collect();
        assert_eq!(read, cases.map(|(ms, _)| ms));
    }

    /// Every day boundary from 1970 to 9999 against the bson crate's own RFC 3339 text.
    #[test]
    fn extjson_relaxed_dates_match_rfc3339() {
        let mut ms = 0_i64;
        while ms <= LAST_RELAXED_DATE_MS {
            let t = bson::DateTime::from_millis(ms + 86_399_123);
            let want = t.try_to_rfc3339_string().expect("rfc3339");
            let got = IsoMillis(t.timestamp_millis()).to_string();
            assert_eq!(got, want);
            assert_eq!(bson::DateTime::parse_rfc3339_str(&got).expect("parse"), t);
            ms += 86_400_000;
        }
    }
}
