//! The commands a worker runs on its shard for the coordinator, as MongoDB command documents
//! (the first field names the command and its collection) answered with MongoDB's replies:
//! `{ok: 1, ...}`, or `{ok: 0, errmsg, code, codeName}`.
//!
//! | command | engine call | reply |
//! |---|---|---|
//! | `{create: C, timeseries: {...}, expireAfterSeconds?}` | `Database::create_collection` | `{ok}` |
//! | `{collMod: C, timeseries?: {...}, expireAfterSeconds?}` | `Collection::coll_mod` | `{ok, options}` |
//! | `{createIndex: C, key: {...}, name?, sparse?, partialFilterExpression?}` | `Collection::create_index` | `{ok, name}` |
//! | `{dropIndex: C, index: NAME or {...}}` | `Collection::drop_index(_by_key)` | `{ok}` |
//! | `{listIndexes: C}` | `Collection::list_indexes` | `{ok, indexes}` |
//! | `{drop: C}` | `Database::drop_collection` | `{ok, dropped}` |
//! | `{listCollections: 1}` | `Database::list_collections` | `{ok, collections: [{name, options}]}` |
//! | `{collStats: C}` | `Collection::stats` | `{ok, stats}` |

use bson::{Bson, Document, doc};
use tscoll_engine::{Database, Error, ErrorCode, IndexOptions, TimeseriesOptions};

/// Runs `command` on `db` and returns its reply.
pub(crate) fn run(db: &Database, command: &Document) -> Document {
    match dispatch(db, command) {
        Ok(mut reply) => {
            reply.insert("ok", 1.0);
            reply
        }
        Err(e) => error_reply(&e),
    }
}

/// MongoDB's error reply of `e`.
pub(crate) fn error_reply(e: &Error) -> Document {
    let code = e.code();
    doc! { "ok": 0.0, "errmsg": e.to_string(), "code": code.code(), "codeName": code.name().as_ref() }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::Rejected {
        code: ErrorCode::BadValue,
        message: message.into(),
    }
}

fn dispatch(db: &Database, command: &Document) -> Result<Document, Error> {
    let Some((name, target)) = command.iter().next() else {
        return Err(invalid("an empty command"));
    };
    let coll_name = || match target {
        Bson::String(s) if !s.is_empty() => Ok(s.as_str()),
        _ => Err(invalid(format!(
            "{name} names its collection: {{{name}: \"name\"}}"
        ))),
    };
    match name.as_str() {
        "create" => {
            let options = TimeseriesOptions::from_create_command(command)?;
            db.create_collection(coll_name()?, &options)?;
            Ok(Document::new())
        }
        "collMod" => {
            let coll = db.collection(coll_name()?)?;
            let mut changes = command.clone();
            changes.remove("collMod");
            let spec = coll.coll_mod(&changes)?;
            Ok(doc! { "options": spec.to_document() })
        }
        "createIndex" => {
            let coll = db.collection(coll_name()?)?;
            let keys = command
                .get_document("key")
                .map_err(|_| invalid("createIndex needs a key document"))?;
            let options = IndexOptions {
                name: command.get_str("name").ok().map(str::to_owned),
                sparse: command.get_bool("sparse").unwrap_or(false),
                partial_filter_expression: command
                    .get_document("partialFilterExpression")
                    .ok()
                    .cloned(),
                ..IndexOptions::default()
            };
            let name = coll.create_index(keys, &options)?;
            Ok(doc! { "name": name })
        }
        "dropIndex" => {
            let coll = db.collection(coll_name()?)?;
            match command.get("index") {
                Some(Bson::String(n)) => coll.drop_index(n)?,
                Some(Bson::Document(k)) => coll.drop_index_by_key(k)?,
                _ => return Err(invalid("dropIndex needs an index name or key document")),
            }
            Ok(Document::new())
        }
        "listIndexes" => {
            let coll = db.collection(coll_name()?)?;
            Ok(doc! { "indexes": coll.list_indexes()? })
        }
        "drop" => {
            let dropped = db.drop_collection(coll_name()?)?;
            Ok(doc! { "dropped": dropped })
        }
        "listCollections" => {
            let collections: Vec<Bson> = db
                .list_collections()?
                .into_iter()
                .map(|(name, spec)| {
                    Bson::Document(doc! { "name": name, "options": spec.to_document() })
                })
                .collect();
            Ok(doc! { "collections": collections })
        }
        "collStats" => {
            let coll = db.collection(coll_name()?)?;
            Ok(doc! { "stats": coll.stats()?.to_document() })
        }
        other => Err(Error::Rejected {
            code: ErrorCode::Location(59),
            message: format!("no such command: '{other}'"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tscoll_engine::DatabaseOptions;

    #[test]
    fn commands_run_on_the_shard_and_fail_as_mongodb_replies() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), DatabaseOptions::default()).unwrap();
        let ok = |r: &Document| r.get_f64("ok").ok() == Some(1.0);
        let r = run(
            &db,
            &doc! { "create": "cpu", "timeseries": { "timeField": "t", "metaField": "m" } },
        );
        assert!(ok(&r), "{r}");
        let r = run(&db, &doc! { "listCollections": 1 });
        assert_eq!(r.get_array("collections").unwrap().len(), 1, "{r}");
        let r = run(
            &db,
            &doc! { "collMod": "cpu", "timeseries": { "granularity": "minutes" } },
        );
        assert!(ok(&r), "{r}");
        let r = run(&db, &doc! { "createIndex": "cpu", "key": { "m.host": 1 } });
        let name = r.get_str("name").unwrap().to_owned();
        let r = run(&db, &doc! { "listIndexes": "cpu" });
        // The default meta+time index and the new one.
        assert_eq!(r.get_array("indexes").unwrap().len(), 2, "{r}");
        assert!(ok(&run(&db, &doc! { "dropIndex": "cpu", "index": name })));
        assert!(
            run(&db, &doc! { "collStats": "cpu" })
                .get_document("stats")
                .is_ok()
        );
        let r = run(
            &db,
            &doc! { "create": "cpu", "timeseries": { "timeField": "t" } },
        );
        assert_eq!(r.get_f64("ok").ok(), Some(0.0), "{r}");
        assert!(r.get_i32("code").is_ok(), "{r}");
        let r = run(&db, &doc! { "nope": "cpu" });
        assert_eq!(r.get_i32("code").ok(), Some(59), "{r}");
        assert_eq!(
            run(&db, &doc! { "drop": "cpu" }).get_bool("dropped").ok(),
            Some(true)
        );
    }
}
