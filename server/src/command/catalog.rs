//! Databases and collections: `listDatabases`, `dropDatabase`, `listCollections`, `create`,
//! `drop`, `collMod`.

use bson::{Bson, Document, doc};
use tscoll_engine::{DocumentFilter, TimeseriesOptions};

use super::args;
use super::error::{CommandError, CommandResult};
use crate::namespace;
use crate::state::Shared;

/// The databases: the prefixes of the collection names, each with its collections.
fn databases(shared: &Shared) -> Result<Vec<(String, Vec<String>)>, CommandError> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut names: Vec<String> = shared
        .db
        .list_collections()?
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    names.sort();
    for name in names {
        if let Some((db, _)) = namespace::split(&name) {
            match out.last_mut() {
                Some((last, colls)) if last == db => colls.push(name.clone()),
                _ => out.push((db.to_owned(), vec![name.clone()])),
            }
        }
    }
    Ok(out)
}

/// `listDatabases`: `{databases: [{name, sizeOnDisk, empty}], totalSize, totalSizeMb}`;
/// `nameOnly` and `filter` (on those fields) as MongoDB.
pub(crate) fn list_databases(shared: &Shared, cmd: &Document) -> CommandResult {
    let name_only = args::opt_bool(cmd, "nameOnly", false)?;
    let filter = args::opt_doc(cmd, "filter")?
        .map(DocumentFilter::new)
        .transpose()?;
    let mut list = Vec::new();
    let mut total = 0_i64;
    for (db, colls) in databases(shared)? {
        let mut entry = doc! { "name": db.as_str() };
        if !name_only {
            let mut size = 0_i64;
            for c in &colls {
                size += shared.db.collection(c)?.stats()?.stored_bytes as i64;
            }
            total += size;
            entry.insert("sizeOnDisk", size);
            entry.insert("empty", false);
        }
        if let Some(f) = &filter
            && !f.matches(&entry)?
        {
            continue;
        }
        list.push(entry);
    }
    let mut out = doc! { "databases": list };
    if !name_only {
        out.insert("totalSize", total);
        out.insert("totalSizeMb", total / (1024 * 1024));
    }
    out.insert("ok", 1.0);
    Ok(out)
}

/// `dropDatabase`: drops every collection of the database.
pub(crate) fn drop_database(shared: &Shared, db: &str) -> CommandResult {
    namespace::check_db(db)?;
    let prefix = format!("{db}.");
    shared.cursors.close_matching(|ns| ns.starts_with(&prefix));
    for (name, _) in shared.db.list_collections()? {
        if name.starts_with(&prefix) {
            shared.db.drop_collection(&name)?;
        }
    }
    Ok(doc! { "dropped": db, "ok": 1.0 })
}

/// `listCollections`: one batch of `{name, type: "timeseries", options, info}` (or
/// `{name, type}` with `nameOnly`), filtered by `filter`.
pub(crate) fn list_collections(
    shared: &Shared,
    db: &str,
    cmd: &Document,
) -> Result<bson::RawDocumentBuf, CommandError> {
    namespace::check_db(db)?;
    let name_only = args::opt_bool(cmd, "nameOnly", false)?;
    let filter = args::opt_doc(cmd, "filter")?
        .map(DocumentFilter::new)
        .transpose()?;
    let prefix = format!("{db}.");
    let mut docs = Vec::new();
    let mut all = shared.db.list_collections()?;
    all.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, spec) in all {
        let Some(coll) = name.strip_prefix(&prefix) else {
            continue;
        };
        let mut entry = doc! { "name": coll, "type": "timeseries" };
        if !name_only {
            entry.insert("options", spec.to_document());
            entry.insert("info", doc! { "readOnly": shared.db.read_only().is_some() });
        }
        if let Some(f) = &filter
            && !f.matches(&entry)?
        {
            continue;
        }
        docs.push(entry);
    }
    super::cursor::single_batch(&format!("{db}.$cmd.listCollections"), docs)
}

/// `create`: a time-series collection (`timeseries` required; `expireAfterSeconds`).
pub(crate) fn create(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let name = args::collection(cmd, "create")?;
    let full = namespace::collection_name(db, name)?;
    if cmd.get("timeseries").is_none() {
        let what = if cmd.contains_key("viewOn") {
            "views"
        } else if matches!(cmd.get("capped"), Some(Bson::Boolean(true))) {
            "capped collections"
        } else {
            "collections that are not time-series collections"
        };
        return Err(CommandError::new(
            115,
            "CommandNotSupported",
            format!(
                "tscoll stores time-series collections only, not {what}: create '{name}' with \
                 {{timeseries: {{timeField: \"<field>\", metaField: \"<field>\"}}}}"
            ),
        ));
    }
    let mut command = cmd.clone();
    command.remove("writeConcern");
    let options = TimeseriesOptions::from_create_command(&command)?;
    shared.db.create_collection(&full, &options)?;
    Ok(doc! { "ok": 1.0 })
}

/// `drop`: `{nIndexesWas, ns}`; a collection that does not exist is no error (MongoDB 7.0+).
pub(crate) fn drop(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let name = args::collection(cmd, "drop")?;
    let full = namespace::collection_name(db, name)?;
    let indexes = match shared.db.collection(&full) {
        Ok(c) => c.list_indexes()?.len() as i32,
        Err(_) => return Ok(doc! { "ok": 1.0 }),
    };
    shared.cursors.close_matching(|ns| ns == full);
    shared.db.drop_collection(&full)?;
    Ok(doc! { "nIndexesWas": indexes, "ns": full, "ok": 1.0 })
}

/// `collMod`: `timeseries` (granularity, bucket spans), `expireAfterSeconds`, `index`
/// (hidden).
pub(crate) fn coll_mod(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let name = args::collection(cmd, "collMod")?;
    let full = namespace::collection_name(db, name)?;
    let coll = shared.db.collection(&full).map_err(|_| {
        CommandError::of(
            tscoll_engine::ErrorCode::NamespaceNotFound,
            format!("ns does not exist: {full}"),
        )
    })?;
    let mut command = cmd.clone();
    command.remove("writeConcern");
    coll.coll_mod(&command)?;
    Ok(doc! { "ok": 1.0 })
}
