//! Monitoring: `serverStatus`, `collStats` (and the `$collStats` stage), `dbStats`.

use bson::{Bson, DateTime, Document, doc};
use tscoll_engine::Collection;

use super::error::{CommandError, CommandResult};
use super::handshake::MONGODB_VERSION;
use crate::namespace;
use crate::state::{Counters, Shared};

/// `serverStatus`: the process, connections, network, opcounters, and the bucket catalog
/// under `bucketCatalog` as MongoDB reports it.
pub(crate) fn server_status(shared: &Shared) -> CommandResult {
    let c = &shared.counters;
    let uptime = shared.started.elapsed();
    let current = Counters::get(&c.connections_current);
    let mut out = doc! {
        "host": shared.local_addr.to_string(),
        "version": MONGODB_VERSION,
        "process": "tscoll",
        "pid": i64::from(std::process::id()),
        "uptime": uptime.as_secs_f64().floor(),
        "uptimeMillis": uptime.as_millis() as i64,
        "uptimeEstimate": uptime.as_secs() as i64,
        "localTime": DateTime::now(),
        "connections": {
            "current": current as i64,
            "available": shared.options.max_connections.saturating_sub(current as usize) as i64,
            "totalCreated": Counters::get(&c.connections_total) as i64,
            "rejected": Counters::get(&c.connections_rejected) as i64,
        },
        "network": {
            "bytesIn": Counters::get(&c.bytes_in) as i64,
            "bytesOut": Counters::get(&c.bytes_out) as i64,
            "numRequests": Counters::get(&c.requests) as i64,
        },
        "opcounters": {
            "insert": Counters::get(&c.insert) as i64,
            "query": Counters::get(&c.query) as i64,
            "update": Counters::get(&c.update) as i64,
            "delete": Counters::get(&c.delete) as i64,
            "getmore": Counters::get(&c.getmore) as i64,
            "command": Counters::get(&c.command) as i64,
        },
        "metrics": { "cursor": { "open": { "total": shared.cursors.len() as i64 } } },
    };
    if let Ok(rss) = resident_mib() {
        out.insert(
            "mem",
            doc! { "bits": 64, "resident": rss, "supported": true },
        );
    }
    let catalog = shared
        .db
        .catalog_stats()
        .map_or_else(Document::new, |s| s.to_document());
    out.insert("bucketCatalog", catalog);
    out.insert("ok", 1.0);
    Ok(out)
}

/// The process's resident memory, in MiB (Linux's `/proc/self/status`).
fn resident_mib() -> std::io::Result<i64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        .map(|kib| kib / 1024)
        .ok_or_else(|| std::io::Error::other("no VmRSS"))
}

/// The storage figures of a collection, scaled: `collStats`'s reply without `ok`, and
/// `$collStats`'s `storageStats`.
pub(crate) fn storage_stats(
    coll: &Collection,
    ns: &str,
    scale: i64,
) -> Result<Document, CommandError> {
    let stats = coll.stats()?;
    let indexes = coll.list_indexes()?;
    let scaled = |bytes: u64| (bytes as i64) / scale;
    let mut index_sizes = Document::new();
    for ix in &indexes {
        if let Some(Bson::String(name)) = ix.get("name") {
            index_sizes.insert(name.clone(), 0_i64);
        }
    }
    Ok(doc! {
        "ns": ns,
        "size": scaled(stats.uncompressed_bytes),
        "timeseries": stats.to_document(),
        "count": stats.measurement_count as i64,
        "avgObjSize": stats
            .uncompressed_bytes
            .checked_div(stats.measurement_count)
            .unwrap_or(0) as i64,
        "storageSize": scaled(stats.stored_bytes),
        "freeStorageSize": 0_i64,
        "capped": false,
        "nindexes": indexes.len() as i32,
        "indexSizes": index_sizes,
        "totalIndexSize": 0_i64,
        "totalSize": scaled(stats.stored_bytes),
        "scaleFactor": scale,
    })
}

/// The `scale` option (default 1).
pub(crate) fn scale(cmd: &Document) -> Result<i64, CommandError> {
    match super::args::opt_i64(cmd, "scale")? {
        None => Ok(1),
        Some(n) if n >= 1 => Ok(n),
        Some(_) => Err(CommandError::bad_value(
            "Scale factor must be greater than zero",
        )),
    }
}

/// `collStats`.
pub(crate) fn coll_stats(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let name = super::args::collection(cmd, "collStats")?;
    let full = namespace::collection_name(db, name)?;
    let coll = shared.db.collection(&full).map_err(|_| {
        CommandError::of(
            tscoll_engine::ErrorCode::NamespaceNotFound,
            format!("Collection [{full}] not found."),
        )
    })?;
    let mut out = storage_stats(&coll, &full, scale(cmd)?)?;
    out.insert("ok", 1.0);
    Ok(out)
}

/// `dbStats`: the sums over the database's collections.
pub(crate) fn db_stats(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    namespace::check_db(db)?;
    let scale = scale(cmd)?;
    let mut collections = 0_i64;
    let mut objects = 0_i64;
    let mut data = 0_i64;
    let mut storage = 0_i64;
    let mut indexes = 0_i64;
    for (name, _) in shared.db.list_collections()? {
        if namespace::split(&name).is_some_and(|(d, _)| d == db) {
            let coll = shared.db.collection(&name)?;
            let stats = coll.stats()?;
            collections += 1;
            objects += stats.measurement_count as i64;
            data += stats.uncompressed_bytes as i64;
            storage += stats.stored_bytes as i64;
            indexes += coll.list_indexes()?.len() as i64;
        }
    }
    Ok(doc! {
        "db": db,
        "collections": collections,
        "views": 0_i64,
        "objects": objects,
        "avgObjSize": if objects > 0 { data as f64 / objects as f64 } else { 0.0 },
        "dataSize": data / scale,
        "storageSize": storage / scale,
        "indexes": indexes,
        "indexSize": 0_i64,
        "totalSize": storage / scale,
        "scaleFactor": scale,
        "ok": 1.0,
    })
}
