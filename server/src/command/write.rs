//! Writes: `insert`, `update`, `delete`, `findAndModify`.
//!
//! The write concern's `j: true` (or `fsync: true`) acknowledges once the write is fsync'ed
//! ([`Durability::Sync`]); otherwise once it is written to the operating system
//! ([`Durability::Flush`]): it survives a crash of the server, not of the machine, as
//! MongoDB's `w: 1` without `j`, whose journal is written every 100 ms.

use bson::{Bson, Document, doc};
use tscoll_engine::{
    Collection, Durability, ErrorCode, FindOptions, InsertOptions, Update, UpdateOptions,
};

use super::args;
use super::error::{CommandError, CommandResult};
use super::handshake::MAX_WRITE_BATCH_SIZE;
use super::request::Request;
use crate::namespace;
use crate::state::{Counters, Shared};

/// The durability a write concern asks for.
pub(crate) fn durability(cmd: &Document) -> Result<Durability, CommandError> {
    let Some(wc) = args::opt_doc(cmd, "writeConcern")? else {
        return Ok(Durability::Flush);
    };
    if args::opt_bool(wc, "j", false)? || args::opt_bool(wc, "fsync", false)? {
        Ok(Durability::Sync)
    } else {
        Ok(Durability::Flush)
    }
}

/// The collection a write names; a write to a collection that does not exist fails (a
/// time-series collection needs its options: MongoDB's implicit creation would make a
/// collection of another kind).
fn target(
    shared: &Shared,
    db: &str,
    cmd: &Document,
    command: &str,
) -> Result<Collection, CommandError> {
    let name = args::collection(cmd, command)?;
    let full = namespace::collection_name(db, name)?;
    shared.db.collection(&full).map_err(|_| {
        CommandError::of(
            ErrorCode::NamespaceNotFound,
            format!(
                "collection {full} does not exist: tscoll does not create collections \
                 implicitly; create it first with db.createCollection(\"{name}\", \
                 {{timeseries: {{timeField: \"<field>\", metaField: \"<field>\"}}}})"
            ),
        )
    })
}

fn check_batch(n: usize) -> Result<(), CommandError> {
    if n == 0 || n > MAX_WRITE_BATCH_SIZE {
        return Err(CommandError::new(
            16,
            "InvalidLength",
            format!(
                "Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}. Got {n} operations."
            ),
        ));
    }
    Ok(())
}

/// A count as MongoDB sends it: an int32 (shells show an int64 as a `Long`), an int64 past it.
pub(crate) fn int32(n: i64) -> Bson {
    i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32)
}

/// A `writeErrors` entry.
fn write_error(index: usize, e: &CommandError) -> Document {
    doc! {
        "index": index as i32,
        "code": e.code,
        "codeName": e.code_name.as_ref(),
        "errmsg": e.message.as_str(),
    }
}

/// `insert`: `{n, writeErrors?}`; each rejected measurement is a write error with its
/// position; `ordered` (default true) stops at the first.
pub(crate) fn insert(shared: &Shared, db: &str, req: &mut Request) -> CommandResult {
    let docs = req.take_documents("documents")?;
    let cmd = &req.body;
    check_batch(docs.len())?;
    let coll = target(shared, db, cmd, "insert")?;
    let options = InsertOptions {
        ordered: args::opt_bool(cmd, "ordered", true)?,
        durability: durability(cmd)?,
    };
    // An ordered insert that stopped is reported as writeErrors, as an unordered one.
    let result = coll
        .insert_many(&docs, &options)
        .or_else(tscoll_engine::Error::into_insert_result)?;
    Counters::add(&shared.counters.insert, result.inserted as u64);
    let mut out = doc! { "n": result.inserted as i32 };
    if !result.errors.is_empty() {
        let errors: Vec<Document> = result
            .errors
            .iter()
            .map(|e| write_error(e.index, &CommandError::of(e.code, e.message.clone())))
            .collect();
        out.insert("writeErrors", errors);
    }
    out.insert("ok", 1.0);
    Ok(out)
}

/// An update given as `field`: operators or a replacement (a document), or a pipeline (an
/// array of stages); `None` when absent or null.
fn update_of(value: Option<&Bson>, field: &str) -> Result<Option<Update>, CommandError> {
    match value {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Document(d)) => Ok(Some(Update::Document(d.clone()))),
        Some(Bson::Array(stages)) => stages
            .iter()
            .map(|s| match s {
                Bson::Document(d) => Ok(d.clone()),
                _ => Err(CommandError::type_mismatch(field, "array of objects")),
            })
            .collect::<Result<_, _>>()
            .map(|stages| Some(Update::Pipeline(stages))),
        Some(_) => Err(CommandError::type_mismatch(field, "object or array")),
    }
}

/// One statement of `update`: `{q, u, upsert, multi, arrayFilters, c}`.
fn update_one_statement(
    coll: &Collection,
    stmt: &Document,
    let_vars: Option<&Document>,
) -> Result<(tscoll_engine::UpdateResult, bool), CommandError> {
    let filter = args::opt_doc(stmt, "q")?.cloned().unwrap_or_default();
    let update = update_of(stmt.get("u"), "u")?.ok_or_else(|| {
        CommandError::failed_to_parse(
            "BSON field 'update.updates.u' is missing but a required field",
        )
    })?;
    let multi = args::opt_bool(stmt, "multi", false)?;
    let options = UpdateOptions {
        upsert: args::opt_bool(stmt, "upsert", false)?,
        array_filters: args::opt_doc_array(stmt, "arrayFilters")?.unwrap_or_default(),
        let_vars: args::opt_doc(stmt, "c")?.or(let_vars).cloned(),
    };
    let result = if multi {
        coll.update_many_with(&filter, update, &options)?
    } else {
        coll.update_one(&filter, update, &options)?
    };
    Ok((result, multi))
}

/// `update`: `{n, nModified, upserted?, writeErrors?}`.
pub(crate) fn update(shared: &Shared, db: &str, req: &mut Request) -> CommandResult {
    let statements = req.take_documents("updates")?;
    let cmd = &req.body;
    check_batch(statements.len())?;
    let coll = target(shared, db, cmd, "update")?;
    let ordered = args::opt_bool(cmd, "ordered", true)?;
    let let_vars = args::opt_doc(cmd, "let")?;
    let mut n = 0_i64;
    let mut modified = 0_i64;
    let mut upserted = Vec::new();
    let mut errors = Vec::new();
    for (i, stmt) in statements.iter().enumerate() {
        Counters::add(&shared.counters.update, 1);
        match update_one_statement(&coll, stmt, let_vars) {
            Ok((r, _)) => {
                n += r.matched as i64;
                modified += r.modified as i64;
                if let Some(id) = r.upserted_id {
                    n += 1;
                    upserted.push(doc! { "index": i as i32, "_id": id });
                }
            }
            Err(e) => {
                errors.push(write_error(i, &e));
                if ordered {
                    break;
                }
            }
        }
    }
    let mut out = doc! { "n": int32(n), "nModified": int32(modified) };
    if !upserted.is_empty() {
        out.insert("upserted", upserted);
    }
    if !errors.is_empty() {
        out.insert("writeErrors", errors);
    }
    out.insert("ok", 1.0);
    Ok(out)
}

/// `delete`: statements `{q, limit: 0 | 1}`; `{n, writeErrors?}`.
pub(crate) fn delete(shared: &Shared, db: &str, req: &mut Request) -> CommandResult {
    let statements = req.take_documents("deletes")?;
    let cmd = &req.body;
    check_batch(statements.len())?;
    let coll = target(shared, db, cmd, "delete")?;
    let ordered = args::opt_bool(cmd, "ordered", true)?;
    let mut n = 0_i64;
    let mut errors = Vec::new();
    for (i, stmt) in statements.iter().enumerate() {
        Counters::add(&shared.counters.delete, 1);
        let outcome = (|| {
            let filter = args::opt_doc(stmt, "q")?.cloned().ok_or_else(|| {
                CommandError::failed_to_parse(
                    "BSON field 'delete.deletes.q' is missing but a required field",
                )
            })?;
            let r = match args::opt_i64(stmt, "limit")? {
                Some(1) => coll.delete_one(&filter)?,
                Some(0) | None => coll.delete_many(&filter)?,
                Some(other) => {
                    return Err(CommandError::failed_to_parse(format!(
                        "The limit field in delete objects must be 0 or 1. Got {other}"
                    )));
                }
            };
            Ok::<_, CommandError>(r.deleted as i64)
        })();
        match outcome {
            Ok(k) => n += k,
            Err(e) => {
                errors.push(write_error(i, &e));
                if ordered {
                    break;
                }
            }
        }
    }
    let mut out = doc! { "n": int32(n) };
    if !errors.is_empty() {
        out.insert("writeErrors", errors);
    }
    out.insert("ok", 1.0);
    Ok(out)
}

/// The measurement `filter` and `sort` pick first, if any.
fn first(
    coll: &Collection,
    filter: &Document,
    sort: Option<&Document>,
) -> Result<Option<Document>, CommandError> {
    let options = FindOptions {
        sort_by: sort.filter(|s| !s.is_empty()).cloned(),
        limit: Some(1),
        ..FindOptions::default()
    };
    Ok(coll.find(filter, &options)?.into_iter().next())
}

/// `filter` narrowed to the measurement with `_id` `id`.
fn with_id(filter: &Document, id: &Bson) -> Document {
    doc! { "$and": [filter.clone(), { "_id": id.clone() }] }
}

/// `fields` applied to `doc` (a `$project` stage).
fn project(
    coll: &Collection,
    doc: Document,
    fields: Option<&Document>,
) -> Result<Document, CommandError> {
    let Some(fields) = fields.filter(|f| !f.is_empty()) else {
        return Ok(doc);
    };
    let out = coll
        .aggregate_documents(vec![doc], &[doc! { "$project": fields.clone() }])?
        .next()
        .transpose()?;
    Ok(out.unwrap_or_default())
}

/// `findAndModify`: removes or updates the first measurement `query` and `sort` pick, and
/// returns it (as it was, or with `new: true` as it is after the update; `fields` projects
/// it): `{lastErrorObject: {n, updatedExisting, upserted?}, value}`. The measurement is
/// found, then changed by its `_id` and the query: a concurrent write between the two may
/// make the change miss it (then `n` is 0).
pub(crate) fn find_and_modify(shared: &Shared, db: &str, cmd: &Document) -> CommandResult {
    let name = match cmd.keys().next() {
        Some(n) => n.clone(),
        None => "findAndModify".to_owned(),
    };
    let coll = target(shared, db, cmd, &name)?;
    let query = args::opt_doc(cmd, "query")?.cloned().unwrap_or_default();
    let sort = args::opt_doc(cmd, "sort")?;
    let fields = args::opt_doc(cmd, "fields")?;
    let remove = args::opt_bool(cmd, "remove", false)?;
    let return_new = args::opt_bool(cmd, "new", false)?;
    let upsert = args::opt_bool(cmd, "upsert", false)?;
    let update = update_of(cmd.get("update"), "update")?;
    match (remove, &update) {
        (true, Some(_)) => {
            return Err(CommandError::failed_to_parse(
                "Cannot specify both an update and remove=true",
            ));
        }
        (false, None) => {
            return Err(CommandError::failed_to_parse(
                "Either an update or remove=true must be specified",
            ));
        }
        (true, None) if upsert || return_new => {
            return Err(CommandError::failed_to_parse(
                "Cannot specify both upsert=true and remove=true, or new=true and remove=true",
            ));
        }
        _ => {}
    }
    let found = first(&coll, &query, sort)?;
    let id_of = |d: &Document| d.get("_id").cloned().unwrap_or(Bson::Null);
    if remove {
        Counters::add(&shared.counters.delete, 1);
        let Some(doc) = found else {
            return Ok(doc! { "lastErrorObject": { "n": 0 }, "value": Bson::Null, "ok": 1.0 });
        };
        let n = coll.delete_one(&with_id(&query, &id_of(&doc)))?.deleted as i32;
        let value = project(&coll, doc, fields)?;
        return Ok(doc! { "lastErrorObject": { "n": n }, "value": value, "ok": 1.0 });
    }
    Counters::add(&shared.counters.update, 1);
    let update = update.unwrap_or_else(|| Update::Document(Document::new()));
    let options = UpdateOptions {
        upsert: false,
        array_filters: args::opt_doc_array(cmd, "arrayFilters")?.unwrap_or_default(),
        let_vars: args::opt_doc(cmd, "let")?.cloned(),
    };
    match found {
        Some(old) => {
            let id = id_of(&old);
            let r = coll.update_one(&with_id(&query, &id), update, &options)?;
            let value = if r.matched == 0 {
                Bson::Null
            } else if return_new {
                match first(&coll, &doc! { "_id": id }, None)? {
                    Some(d) => Bson::Document(project(&coll, d, fields)?),
                    None => Bson::Null,
                }
            } else {
                Bson::Document(project(&coll, old, fields)?)
            };
            Ok(doc! {
                "lastErrorObject": { "n": r.matched as i32, "updatedExisting": r.matched > 0 },
                "value": value,
                "ok": 1.0,
            })
        }
        None if upsert => {
            let options = UpdateOptions {
                upsert: true,
                ..options
            };
            let r = coll.update_one(&query, update, &options)?;
            let id = r.upserted_id.unwrap_or(Bson::Null);
            let value = if return_new {
                match first(&coll, &doc! { "_id": id.clone() }, None)? {
                    Some(d) => Bson::Document(project(&coll, d, fields)?),
                    None => Bson::Null,
                }
            } else {
                Bson::Null
            };
            Ok(doc! {
                "lastErrorObject": { "n": 1, "updatedExisting": false, "upserted": id },
                "value": value,
                "ok": 1.0,
            })
        }
        None => Ok(doc! {
            "lastErrorObject": { "n": 0, "updatedExisting": false },
            "value": Bson::Null,
            "ok": 1.0,
        }),
    }
}
