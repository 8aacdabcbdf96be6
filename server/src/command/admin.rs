//! What the shells ask of a server beyond the data: `getLog`, `usersInfo`, `profile`,
//! `validate`, `$currentOp`, and `renameCollection` (refused, as MongoDB refuses it for a
//! time-series collection).

use bson::{Bson, Document, doc};

use super::args;
use super::error::{CommandError, CommandResult};
use crate::auth::UserStore;
use crate::namespace;
use crate::state::Shared;

/// `getLog`: the server keeps no log in memory: `"*"` names the logs MongoDB has, and each
/// of them is empty (mongosh asks for `startupWarnings` when it connects).
pub(crate) fn get_log(cmd: &Document) -> CommandResult {
    match cmd.get("getLog") {
        Some(Bson::String(s)) if s == "*" => {
            Ok(doc! { "names": ["global", "startupWarnings"], "ok": 1.0 })
        }
        Some(Bson::String(s)) if s == "global" || s == "startupWarnings" => Ok(doc! {
            "totalLinesWritten": 0,
            "log": [],
            "ok": 1.0,
        }),
        Some(Bson::String(s)) => Err(CommandError::of(
            tscoll_engine::ErrorCode::InvalidOptions,
            format!("No log named '{s}'"),
        )),
        _ => Err(CommandError::type_mismatch("getLog", "string")),
    }
}

/// `usersInfo`: the users of the database directory's store (all in `admin`, each with
/// every right: the role `root`).
pub(crate) fn users_info(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let store = UserStore::open(shared.db.path()).map_err(|e| {
        let (code, name) = e.code();
        CommandError::new(code, name, e.to_string())
    })?;
    let wanted: Option<Vec<String>> = match cmd.get("usersInfo") {
        Some(Bson::String(name)) => Some(vec![name.clone()]),
        Some(Bson::Document(d)) => d.get_str("user").ok().map(|u| vec![u.to_owned()]),
        Some(Bson::Array(items)) => Some(
            items
                .iter()
                .filter_map(|v| match v {
                    Bson::String(s) => Some(s.clone()),
                    Bson::Document(d) => d.get_str("user").ok().map(str::to_owned),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    };
    let users: Vec<Document> = if db == "admin" {
        store
            .names()
            .into_iter()
            .filter(|n| wanted.as_ref().is_none_or(|w| w.contains(n)))
            .map(|n| {
                doc! {
                    "_id": format!("admin.{n}"),
                    "user": n.as_str(),
                    "db": "admin",
                    "roles": [{ "role": "root", "db": "admin" }],
                    "mechanisms": ["SCRAM-SHA-256"],
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(doc! { "users": users, "ok": 1.0 })
}

/// `profile`: the profiler is off and stays off (level 0; `-1` reads the settings).
pub(crate) fn profile(cmd: &Document) -> CommandResult {
    match args::opt_i64(cmd, "profile")? {
        Some(-1 | 0) | None => Ok(doc! { "was": 0, "slowms": 100, "sampleRate": 1.0, "ok": 1.0 }),
        Some(_) => Err(CommandError::new(
            115,
            "CommandNotSupported",
            "tscoll has no query profiler: only level 0 (off)",
        )),
    }
}

/// `validate`: the engine's check of every bucket (segment checksums and decoding, control
/// records against the data, index entries; `tscoll verify`) for this collection.
pub(crate) fn validate(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let name = args::collection(cmd, "validate")?;
    let full = namespace::collection_name(db, name)?;
    let coll = shared.db.collection(&full).map_err(|_| {
        CommandError::of(
            tscoll_engine::ErrorCode::NamespaceNotFound,
            format!("Collection '{full}' does not exist to validate."),
        )
    })?;
    let report = shared.db.verify()?;
    let errors: Vec<String> = report
        .problems
        .iter()
        .filter(|p| p.collection == full)
        .map(ToString::to_string)
        .collect();
    Ok(doc! {
        "ns": full.as_str(),
        "nInvalidDocuments": 0,
        "nNonCompliantDocuments": 0,
        "nrecords": coll.count(&Document::new())? as i64,
        "nIndexes": coll.list_indexes()?.len() as i32,
        "valid": errors.is_empty(),
        "repaired": false,
        "warnings": [],
        "errors": errors,
        "extraIndexEntries": [],
        "missingIndexEntries": [],
        "corruptRecords": [],
        "ok": 1.0,
    })
}

/// `renameCollection`: refused, as MongoDB refuses to rename a time-series collection.
pub(crate) fn rename_collection() -> CommandResult {
    Err(CommandError::illegal_operation(
        "Renaming a time-series collection is not allowed",
    ))
}
