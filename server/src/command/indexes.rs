//! Secondary indexes: `createIndexes`, `listIndexes`, `dropIndexes`.

use bson::{Bson, Document, doc};
use tscoll_engine::{Collection, ErrorCode, IndexOptions};

use super::args;
use super::error::{CommandError, CommandResult};
use crate::namespace;
use crate::state::Shared;

/// Index specification fields accepted and not used (they change nothing in tscoll).
const IGNORED: [&str; 3] = ["v", "background", "ns"];

fn collection(
    shared: &Shared,
    db: &str,
    cmd: &Document,
    command: &str,
) -> Result<(Collection, String), CommandError> {
    let name = args::collection(cmd, command)?;
    let full = namespace::collection_name(db, name)?;
    let coll = shared.db.collection(&full).map_err(|_| {
        CommandError::of(
            ErrorCode::NamespaceNotFound,
            format!("ns does not exist: {full}"),
        )
    })?;
    Ok((coll, full))
}

/// The options of one index specification of `createIndexes`.
fn index_options(spec: &Document) -> Result<IndexOptions, CommandError> {
    let mut options = IndexOptions::default();
    for (k, v) in spec {
        match k.as_str() {
            "key" => {}
            "name" => match v {
                Bson::String(s) => options.name = Some(s.clone()),
                _ => return Err(CommandError::type_mismatch("name", "string")),
            },
            "unique" => options.unique = args::opt_bool(spec, k, false)?,
            "sparse" => options.sparse = args::opt_bool(spec, k, false)?,
            "hidden" => options.hidden = args::opt_bool(spec, k, false)?,
            "partialFilterExpression" => {
                options.partial_filter_expression = args::opt_doc(spec, k)?.cloned();
            }
            "expireAfterSeconds" => options.expire_after_seconds = args::opt_i64(spec, k)?,
            k if IGNORED.contains(&k) => {}
            other => {
                return Err(CommandError::of(
                    ErrorCode::CannotCreateIndex,
                    format!("The field '{other}' is not valid for an index specification"),
                ));
            }
        }
    }
    Ok(options)
}

/// `createIndexes`: `{numIndexesBefore, numIndexesAfter, createdCollectionAutomatically}`.
pub(crate) fn create_indexes(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let (coll, _) = collection(shared, db, cmd, "createIndexes")?;
    let specs = args::opt_doc_array(cmd, "indexes")?.ok_or_else(|| {
        CommandError::failed_to_parse(
            "BSON field 'createIndexes.indexes' is missing but a required field",
        )
    })?;
    if specs.is_empty() {
        return Err(CommandError::bad_value(
            "Must specify at least one index to create",
        ));
    }
    let before = coll.list_indexes()?.len() as i32;
    for spec in &specs {
        let keys = match spec.get("key") {
            Some(Bson::Document(k)) => k,
            _ => {
                return Err(CommandError::failed_to_parse(
                    "The 'key' field is a required property of an index specification",
                ));
            }
        };
        coll.create_index(keys, &index_options(spec)?)?;
    }
    let after = coll.list_indexes()?.len() as i32;
    let mut out = doc! {
        "numIndexesBefore": before,
        "numIndexesAfter": after,
        "createdCollectionAutomatically": false,
    };
    if before == after {
        out.insert("note", "all indexes already exist");
    }
    out.insert("ok", 1.0);
    Ok(out)
}

/// `listIndexes`: one batch of the index documents (`{v, key, name, …}`).
pub(crate) fn list_indexes(
    shared: &Shared,
    db: &str,
    cmd: &Document,
) -> Result<bson::RawDocumentBuf, CommandError> {
    let (coll, full) = collection(shared, db, cmd, "listIndexes")?;
    super::cursor::single_batch(&full, coll.list_indexes()?)
}

/// `dropIndexes`: `index` is a name, a key document, `"*"` (every index but `_id`'s) or an
/// array of names. `{nIndexesWas}`.
pub(crate) fn drop_indexes(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let (coll, _) = collection(shared, db, cmd, "dropIndexes")?;
    let was = coll.list_indexes()?;
    match cmd.get("index") {
        Some(Bson::String(s)) if s == "*" => {
            for ix in &was {
                if let Some(Bson::String(name)) = ix.get("name")
                    && name != "_id_"
                {
                    coll.drop_index(name)?;
                }
            }
        }
        Some(Bson::String(name)) => coll.drop_index(name)?,
        Some(Bson::Document(keys)) => coll.drop_index_by_key(keys)?,
        Some(Bson::Array(names)) => {
            for n in names {
                let Bson::String(name) = n else {
                    return Err(CommandError::type_mismatch("index", "array of strings"));
                };
                coll.drop_index(name)?;
            }
        }
        Some(_) => {
            return Err(CommandError::type_mismatch(
                "index",
                "string, object or array",
            ));
        }
        None => {
            return Err(CommandError::failed_to_parse(
                "BSON field 'dropIndexes.index' is missing but a required field",
            ));
        }
    }
    Ok(doc! { "nIndexesWas": was.len() as i32, "ok": 1.0 })
}
