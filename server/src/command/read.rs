//! Reads: `find`, `aggregate`, `count`, `distinct`, `explain`, `getMore`, `killCursors`.
//!
//! A read of a collection that does not exist finds nothing, as in MongoDB.

use bson::{Bson, DateTime, Document, RawDocumentBuf, doc};
use tscoll_engine::{Collection, ErrorCode, ExplainVerbosity, FindOptions};

use super::args;
use super::cursor::DocStream;
use super::error::{CommandError, CommandResult};
use crate::namespace;
use crate::state::{Counters, Session, Shared};

/// The fields `find` takes (any other is MongoDB's `IDLUnknownField`, 40415).
const FIND_FIELDS: [&str; 22] = [
    "find",
    "filter",
    "projection",
    "sort",
    "skip",
    "limit",
    "batchSize",
    "singleBatch",
    "hint",
    "let",
    "collation",
    "allowDiskUse",
    "noCursorTimeout",
    "returnKey",
    "showRecordId",
    "tailable",
    "awaitData",
    "allowPartialResults",
    "min",
    "max",
    "readOnce",
    "oplogReplay",
];

/// The collection `cmd` names in `command`, and its namespace; `None` when it does not exist.
fn source(
    shared: &Shared,
    db: &str,
    cmd: &Document,
    command: &str,
) -> Result<(Option<Collection>, String), CommandError> {
    let name = args::collection(cmd, command)?;
    let full = namespace::collection_name(db, name)?;
    Ok((shared.db.collection(&full).ok(), full))
}

fn unsupported(field: &str, command: &str) -> CommandError {
    CommandError::new(
        115,
        "CommandNotSupported",
        format!("'{command}.{field}' is not supported by tscoll"),
    )
}

/// `find`'s options.
fn find_options(
    cmd: &Document,
) -> Result<(Document, FindOptions, Option<u64>, bool), CommandError> {
    for key in cmd.keys() {
        if !FIND_FIELDS.contains(&key.as_str()) && key != "writeConcern" {
            return Err(CommandError::of(
                ErrorCode::IdlUnknownField,
                format!("BSON field 'FindCommandRequest.{key}' is an unknown field."),
            ));
        }
    }
    for flag in ["tailable", "awaitData", "returnKey", "showRecordId"] {
        if args::opt_bool(cmd, flag, false)? {
            return Err(unsupported(flag, "find"));
        }
    }
    for field in ["min", "max", "let"] {
        if args::opt_doc(cmd, field)?.is_some_and(|d| !d.is_empty()) {
            return Err(unsupported(field, "find"));
        }
    }
    let filter = args::opt_doc(cmd, "filter")?.cloned().unwrap_or_default();
    let mut single_batch = args::opt_bool(cmd, "singleBatch", false)?;
    let limit = match args::opt_i64(cmd, "limit")? {
        Some(n) if n < 0 => {
            // The legacy negative limit: that many, in one batch.
            single_batch = true;
            Some(n.unsigned_abs() as usize)
        }
        Some(0) | None => None,
        Some(n) => Some(n as usize),
    };
    let options = FindOptions {
        projection: args::opt_doc(cmd, "projection")?
            .filter(|p| !p.is_empty())
            .cloned(),
        sort_by: args::opt_doc(cmd, "sort")?
            .filter(|s| !s.is_empty())
            .cloned(),
        limit,
        skip: args::opt_count(cmd, "skip")?.unwrap_or(0) as usize,
        ..FindOptions::default()
    };
    let batch_size = args::opt_count(cmd, "batchSize")?;
    Ok((filter, options, batch_size, single_batch))
}

/// `find`: the first batch and a cursor.
pub(crate) fn find(
    shared: &Shared,
    session: &Session,
    db: &str,
    cmd: &Document,
) -> Result<RawDocumentBuf, CommandError> {
    Counters::add(&shared.counters.query, 1);
    let (coll, ns) = source(shared, db, cmd, "find")?;
    let (filter, options, batch_size, mut single_batch) = find_options(cmd)?;
    // A limit that fits the first batch ends the cursor with it.
    if let (Some(limit), Some(b)) = (options.limit, batch_size)
        && limit as u64 <= b
    {
        single_batch = true;
    }
    let docs: DocStream = match coll {
        Some(c) => Box::new(c.find_cursor(&filter, &options)?),
        None => Box::new(std::iter::empty()),
    };
    let batch_size = match (batch_size, options.limit) {
        (None, Some(limit)) if single_batch => Some(limit as u64),
        (b, _) => b,
    };
    shared
        .cursors
        .first_batch(ns, docs, batch_size, single_batch, session.user.clone())
}

/// The batch size of an aggregate's `cursor: {batchSize}` (required unless `explain`).
fn aggregate_batch_size(cmd: &Document) -> Result<Option<u64>, CommandError> {
    match cmd.get("cursor") {
        Some(Bson::Document(c)) => args::opt_count(c, "batchSize"),
        Some(_) => Err(CommandError::type_mismatch("cursor", "object")),
        None => Err(CommandError::failed_to_parse(
            "The 'cursor' option is required, except for aggregate with the explain argument",
        )),
    }
}

/// `aggregate`: the first batch and a cursor; `explain: true` for the plan. A leading
/// `$collStats` or `$indexStats` makes the stage's documents, which the rest of the
/// pipeline reads.
pub(crate) fn aggregate(
    shared: &Shared,
    session: &Session,
    db: &str,
    cmd: &Document,
) -> Result<RawDocumentBuf, CommandError> {
    Counters::add(&shared.counters.command, 1);
    let first_stage_name = args::opt_doc_array(cmd, "pipeline")?
        .and_then(|p| p.first().and_then(|s| s.keys().next().cloned()));
    if matches!(
        cmd.get("aggregate"),
        Some(Bson::Int32(1) | Bson::Int64(1) | Bson::Double(_))
    ) && first_stage_name.as_deref() == Some("$currentOp")
    {
        // Commands run to their end on the blocking pool, each alone in its connection: none
        // is listed (no `killOp` could stop it).
        return shared.cursors.first_batch(
            format!("{db}.$cmd.aggregate"),
            Box::new(std::iter::empty()),
            None,
            true,
            session.user.clone(),
        );
    }
    if !matches!(cmd.get("aggregate"), Some(Bson::String(_))) {
        return Err(CommandError::invalid_namespace(
            "{aggregate: 1} (a pipeline with no collection, as $currentOp) is not supported by tscoll",
        ));
    }
    let (coll, ns) = source(shared, db, cmd, "aggregate")?;
    let pipeline = args::opt_doc_array(cmd, "pipeline")?.ok_or_else(|| {
        CommandError::failed_to_parse(
            "BSON field 'aggregate.pipeline' is missing but a required field",
        )
    })?;
    if args::opt_doc(cmd, "let")?.is_some_and(|d| !d.is_empty()) {
        return Err(unsupported("let", "aggregate"));
    }
    if args::opt_bool(cmd, "explain", false)? {
        let plan = match &coll {
            Some(c) => c.explain_aggregate(&pipeline, ExplainVerbosity::QueryPlanner)?,
            None => doc! { "queryPlanner": { "namespace": ns.as_str(), "winningPlan": "EOF" } },
        };
        let mut plan = plan;
        plan.insert("ok", 1.0);
        return RawDocumentBuf::try_from(&plan).map_err(|e| {
            CommandError::of(
                ErrorCode::InternalError,
                format!("cannot encode the plan: {e}"),
            )
        });
    }
    let batch_size = aggregate_batch_size(cmd)?;
    let first_stage = pipeline
        .first()
        .and_then(|s| s.keys().next())
        .map(String::as_str);
    let docs: DocStream = match (first_stage, &coll) {
        (Some("$collStats" | "$indexStats"), None) => {
            return Err(CommandError::of(
                ErrorCode::NamespaceNotFound,
                format!(
                    "Unable to retrieve storageStats in $collStats stage :: caused by :: Collection [{ns}] not found."
                ),
            ));
        }
        (Some("$collStats"), Some(c)) => {
            let stage = match pipeline[0].get("$collStats") {
                Some(Bson::Document(d)) => d.clone(),
                _ => return Err(CommandError::type_mismatch("$collStats", "object")),
            };
            let input = vec![coll_stats_document(shared, c, &ns, &stage)?];
            Box::new(c.aggregate_documents(input, &pipeline[1..])?)
        }
        (Some("$indexStats"), Some(c)) => {
            let input = index_stats_documents(shared, c)?;
            Box::new(c.aggregate_documents(input, &pipeline[1..])?)
        }
        (_, Some(c)) => Box::new(c.aggregate_cursor(&pipeline)?),
        (_, None) => Box::new(std::iter::empty()),
    };
    shared
        .cursors
        .first_batch(ns, docs, batch_size, false, session.user.clone())
}

/// `$collStats`'s document: `{ns, host, localTime}` and, as asked, `storageStats`,
/// `count`, `latencyStats` (empty: tscoll keeps no latency histograms).
fn coll_stats_document(
    shared: &Shared,
    coll: &Collection,
    ns: &str,
    stage: &Document,
) -> Result<Document, CommandError> {
    let mut out = doc! {
        "ns": ns,
        "host": shared.local_addr.to_string(),
        "localTime": DateTime::now(),
    };
    for (k, v) in stage {
        match k.as_str() {
            "storageStats" => {
                let scale = match v {
                    Bson::Document(d) => super::status::scale(d)?,
                    _ => return Err(CommandError::type_mismatch("storageStats", "object")),
                };
                out.insert(
                    "storageStats",
                    super::status::storage_stats(coll, ns, scale)?,
                );
            }
            "count" => {
                out.insert("count", coll.count(&Document::new())? as i64);
            }
            "latencyStats" => {
                out.insert("latencyStats", doc! {});
            }
            "queryExecStats" => {
                out.insert("queryExecStats", doc! {});
            }
            other => {
                return Err(CommandError::bad_value(format!(
                    "unrecognized option to $collStats: {other}"
                )));
            }
        }
    }
    Ok(out)
}

/// `$indexStats`'s documents: one per index, `{name, key, host, accesses, spec}` (accesses
/// are not counted: `ops` is 0).
fn index_stats_documents(
    shared: &Shared,
    coll: &Collection,
) -> Result<Vec<Document>, CommandError> {
    let since = DateTime::from_system_time(std::time::SystemTime::now() - shared.started.elapsed());
    Ok(coll
        .list_indexes()?
        .into_iter()
        .map(|spec| {
            doc! {
                "name": spec.get("name").cloned().unwrap_or(Bson::Null),
                "key": spec.get("key").cloned().unwrap_or(Bson::Null),
                "host": shared.local_addr.to_string(),
                "accesses": { "ops": 0_i64, "since": since },
                "spec": spec,
            }
        })
        .collect())
}

/// `count`: `{n}` of `query`, after `skip`, at most `limit`.
pub(crate) fn count(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    Counters::add(&shared.counters.command, 1);
    let (coll, _) = source(shared, db, cmd, "count")?;
    let query = args::opt_doc(cmd, "query")?.cloned().unwrap_or_default();
    let skip = args::opt_count(cmd, "skip")?.unwrap_or(0);
    let limit = args::opt_i64(cmd, "limit")?
        .map(i64::unsigned_abs)
        .filter(|&l| l > 0);
    let all = match coll {
        Some(c) => c.count(&query)?,
        None => 0,
    };
    let n = all.saturating_sub(skip).min(limit.unwrap_or(u64::MAX));
    Ok(doc! { "n": super::write::int32(n as i64), "ok": 1.0 })
}

/// `distinct`: the distinct values of `key` among the measurements matching `query`
/// (an array's elements each count, as MongoDB's).
pub(crate) fn distinct(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    Counters::add(&shared.counters.command, 1);
    let (coll, _) = source(shared, db, cmd, "distinct")?;
    let key = args::string(cmd, "key")?;
    if key.is_empty() || key.starts_with('$') {
        return Err(CommandError::bad_value(format!(
            "invalid distinct key '{key}'"
        )));
    }
    let query = args::opt_doc(cmd, "query")?.cloned().unwrap_or_default();
    let values: Vec<Bson> = match coll {
        None => Vec::new(),
        Some(c) => {
            let path = format!("${key}");
            let pipeline = [
                doc! { "$match": query },
                doc! { "$project": { "_id": 0, "v": path } },
                doc! { "$unwind": "$v" },
                doc! { "$group": { "_id": "$v" } },
            ];
            c.aggregate_cursor(&pipeline)?
                .map(|d| d.map(|mut d| d.remove("_id").unwrap_or(Bson::Null)))
                .collect::<tscoll_engine::Result<_>>()?
        }
    };
    Ok(doc! { "values": values, "ok": 1.0 })
}

/// `explain`: the plan of a `find`, `aggregate`, `count` or `distinct`, at the verbosity
/// asked (`queryPlanner`, `executionStats`; `allPlansExecution` is `executionStats`, as
/// tscoll considers one plan).
pub(crate) fn explain(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let inner = match cmd.get("explain") {
        Some(Bson::Document(d)) => d,
        _ => return Err(CommandError::type_mismatch("explain", "object")),
    };
    let verbosity = match cmd.get("verbosity") {
        None => ExplainVerbosity::ExecutionStats,
        Some(Bson::String(s)) if s == "queryPlanner" => ExplainVerbosity::QueryPlanner,
        Some(Bson::String(s)) if s == "executionStats" || s == "allPlansExecution" => {
            ExplainVerbosity::ExecutionStats
        }
        Some(v) => {
            return Err(CommandError::bad_value(format!(
                "unrecognized verbosity {v}"
            )));
        }
    };
    let command = inner.keys().next().map(String::as_str).unwrap_or_default();
    let (coll, ns) = match command {
        "find" | "aggregate" | "count" | "distinct" => source(shared, db, inner, command)?,
        other => {
            return Err(CommandError::illegal_operation(format!(
                "Explain is not supported for the command {other}"
            )));
        }
    };
    let Some(coll) = coll else {
        return Ok(doc! {
            "queryPlanner": { "namespace": ns, "winningPlan": { "stage": "EOF" } },
            "ok": 1.0,
        });
    };
    let mut plan = match command {
        "find" => {
            let (filter, options, _, _) = find_options(inner)?;
            coll.explain_find(&filter, &options, verbosity)?
        }
        "aggregate" => {
            let pipeline = args::opt_doc_array(inner, "pipeline")?.unwrap_or_default();
            coll.explain_aggregate(&pipeline, verbosity)?
        }
        _ => {
            let query = args::opt_doc(inner, "query")?.cloned().unwrap_or_default();
            coll.explain_find(&query, &FindOptions::default(), verbosity)?
        }
    };
    plan.insert("command", inner.clone());
    plan.insert("ok", 1.0);
    Ok(plan)
}

/// `getMore`: `{getMore: <id>, collection, batchSize}`.
pub(crate) fn get_more(
    shared: &Shared,
    session: &Session,
    db: &str,
    cmd: &Document,
) -> Result<RawDocumentBuf, CommandError> {
    Counters::add(&shared.counters.getmore, 1);
    let id = match cmd.get("getMore") {
        Some(Bson::Int64(id)) => *id,
        Some(Bson::Int32(id)) => i64::from(*id),
        _ => return Err(CommandError::type_mismatch("getMore", "long")),
    };
    let coll = args::string(cmd, "collection")?;
    let ns = namespace::collection_name(db, coll)?;
    let batch_size = args::opt_count(cmd, "batchSize")?;
    shared
        .cursors
        .get_more(id, &ns, batch_size, session.user.as_deref())
}

/// `killCursors`: `{killCursors: <collection>, cursors: [<id>, …]}`.
pub(crate) fn kill_cursors(
    shared: &Shared,
    session: &Session,
    db: &str,
    cmd: &Document,
) -> CommandResult {
    let coll = args::collection(cmd, "killCursors")?;
    let ns = namespace::collection_name(db, coll)?;
    let ids: Vec<i64> = match cmd.get("cursors") {
        Some(Bson::Array(items)) => items
            .iter()
            .map(|v| {
                args::number(v)
                    .ok_or_else(|| CommandError::type_mismatch("cursors", "array of longs"))
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(CommandError::type_mismatch("cursors", "array")),
    };
    let mut out = shared.cursors.kill(&ns, &ids, session.user.as_deref());
    out.insert("ok", 1.0);
    Ok(out)
}
