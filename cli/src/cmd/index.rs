//! `tscoll index`: creates, drops and lists the indexes of a collection (MongoDB's
//! `createIndexes`, `dropIndexes` and `listIndexes` on a time-series collection, SPEC §13).

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use tscoll_engine::IndexOptions;

use super::{
    CmdResult, DbArgs, open_collection, parse_json_arg, stdout_result, write_extjson_line,
};

/// Arguments of `tscoll index`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// What to do.
    #[command(subcommand)]
    pub(crate) action: Action,
}

/// The index actions.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Action {
    /// Create an index; prints its name.
    Create(CreateArgs),
    /// Drop an index by name (`*` = every index) or by key pattern.
    Drop(DropArgs),
    /// Print the indexes, one relaxed Extended JSON document per line.
    List(ListArgs),
}

/// Arguments of `tscoll index create`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct CreateArgs {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster whose shards all run the action (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// Key pattern in Extended JSON, on the collection's fields: e.g. `{"meta.host":1,"ts":-1}`
    /// or `{"temp":1}`.
    pub(crate) key: String,
    /// Index name (default: MongoDB's generated name, e.g. `temp_1`).
    #[arg(long, value_name = "NAME")]
    pub(crate) name: Option<String>,
    /// Skip buckets that lack every indexed meta field (meta and time fields only).
    #[arg(long)]
    pub(crate) sparse: bool,
    /// Index only buckets that may match this filter (Extended JSON); queries use the index
    /// when their filter contains it.
    #[arg(long, value_name = "JSON")]
    pub(crate) partial: Option<String>,
    /// Create the index hidden: maintained, not used by queries.
    #[arg(long)]
    pub(crate) hidden: bool,
    /// `unique` (always rejected on a time-series collection).
    #[arg(long)]
    pub(crate) unique: bool,
    /// `expireAfterSeconds`, a TTL index (rejected: use the collection's
    /// `--expire-after-seconds`).
    #[arg(long, value_name = "N")]
    pub(crate) expire_after_seconds: Option<i64>,
}

/// Arguments of `tscoll index drop`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct DropArgs {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster whose shards all run the action (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// Index name; `*` drops every index.
    #[arg(required_unless_present = "key", conflicts_with = "key")]
    pub(crate) name: Option<String>,
    /// Drop the index with this key pattern (Extended JSON) instead of naming it.
    #[arg(long, value_name = "JSON")]
    pub(crate) key: Option<String>,
}

/// Arguments of `tscoll index list`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster whose shards all run the action (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// Show the bucket form (keys on `meta` and `control.min`/`control.max`).
    #[arg(long)]
    pub(crate) bucket_form: bool,
}

impl Args {
    /// The `--db` options of the action.
    pub(crate) fn db(&self) -> &DbArgs {
        match &self.action {
            Action::Create(a) => &a.db,
            Action::Drop(a) => &a.db,
            Action::List(a) => &a.db,
        }
    }
}

/// Runs `tscoll index`.
///
/// # Errors
/// Bad JSON arguments, no such collection, a request the engine rejects (with MongoDB's error
/// name and code), or storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    match &args.action {
        Action::Create(a) => create(a),
        Action::Drop(a) => drop_index(a),
        Action::List(a) => list(a),
    }
}

fn create(args: &CreateArgs) -> CmdResult<ExitCode> {
    let key = parse_json_arg("KEY", &args.key)?;
    let partial = args
        .partial
        .as_deref()
        .map(|p| parse_json_arg("--partial", p))
        .transpose()?;
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        if args.hidden || args.unique || args.expire_after_seconds.is_some() {
            return Err(
                "--hidden, --unique and --expire-after-seconds are not available on \
                        a cluster"
                    .into(),
            );
        }
        let mut command = bson::doc! { "createIndex": &args.coll, "key": key };
        if let Some(n) = &args.name {
            command.insert("name", n);
        }
        if args.sparse {
            command.insert("sparse", true);
        }
        if let Some(p) = partial {
            command.insert("partialFilterExpression", p);
        }
        return c.broadcast(&command, None, |reply| {
            Ok(vec![
                reply.get_str("name").map_err(|e| e.to_string())?.to_owned(),
            ])
        });
    }
    let (_db, coll) = open_collection(&args.db.db, &args.coll)?;
    let options = IndexOptions {
        name: args.name.clone(),
        unique: args.unique,
        sparse: args.sparse,
        partial_filter_expression: partial,
        expire_after_seconds: args.expire_after_seconds,
        hidden: args.hidden,
    };
    let name = coll
        .create_index(&key, &options)
        .map_err(|e| format!("cannot create index on '{}': {e}", args.coll))?;
    outln!("{name}");
    Ok(ExitCode::SUCCESS)
}

fn drop_index(args: &DropArgs) -> CmdResult<ExitCode> {
    let key = args
        .key
        .as_deref()
        .map(|k| parse_json_arg("--key", k))
        .transpose()?;
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        let index = match (key, &args.name) {
            (Some(k), _) => bson::Bson::Document(k),
            (None, Some(n)) => bson::Bson::String(n.clone()),
            (None, None) => return Err("give an index name or --key".into()),
        };
        let command = bson::doc! { "dropIndex": &args.coll, "index": index };
        return c.broadcast(&command, None, |_| Ok(vec![dropped_line(args)]));
    }
    let (_db, coll) = open_collection(&args.db.db, &args.coll)?;
    let result = match (&key, &args.name) {
        (Some(k), _) => coll.drop_index_by_key(k),
        (None, Some(n)) => coll.drop_index(n),
        (None, None) => return Err("give an index name or --key".into()),
    };
    result.map_err(|e| format!("cannot drop index on '{}': {e}", args.coll))?;
    outln!("{}", dropped_line(args));
    Ok(ExitCode::SUCCESS)
}

/// What `index drop` prints once the index is dropped.
fn dropped_line(args: &DropArgs) -> String {
    match (&args.key, &args.name) {
        (Some(k), _) => format!("dropped the index with key {k} of '{}'", args.coll),
        (None, Some(n)) if n == "*" => format!("dropped every index of '{}'", args.coll),
        (None, Some(n)) => format!("dropped index '{n}' of '{}'", args.coll),
        (None, None) => String::new(),
    }
}

fn list(args: &ListArgs) -> CmdResult<ExitCode> {
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        if args.bucket_form {
            return Err("--bucket-form is not available on a cluster".into());
        }
        return c.broadcast(&bson::doc! { "listIndexes": &args.coll }, None, |reply| {
            let indexes = reply.get_array("indexes").map_err(|e| e.to_string())?;
            Ok(indexes
                .iter()
                .map(|d| {
                    serde_json::to_string(&super::RelaxedExtJson::exact(d)).unwrap_or_default()
                })
                .collect())
        });
    }
    let (_db, coll) = super::open_readable_collection(&args.db.db, &args.coll)?;
    let indexes = if args.bucket_form {
        coll.list_indexes_bucket_form()
    } else {
        coll.list_indexes()
    }
    .map_err(|e| format!("cannot list the indexes of '{}': {e}", args.coll))?;
    let mut out = BufWriter::new(io::stdout().lock());
    stdout_result(
        indexes
            .into_iter()
            .try_for_each(|d| write_extjson_line(&mut out, d))
            .and_then(|()| out.flush()),
    )?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_create(dir: &std::path::Path) {
        let db = tscoll_engine::Database::open(dir, tscoll_engine::DatabaseOptions::default())
            .expect("open");
        db.create_collection(
            "c",
            &tscoll_engine::TimeseriesOptions::new("t").meta_field("m"),
        )
        .expect("create");
    }

    #[test]
    fn create_list_drop() {
        let dir = tempfile::tempdir().expect("tempdir");
        run_create(dir.path());
        let db = || DbArgs::new(dir.path());
        create(&CreateArgs {
            db: db(),
            #[cfg(feature = "cluster")]
            cluster: crate::cmd::cluster::ClusterArgs::default(),
            coll: "c".into(),
            key: r#"{"x": -1}"#.into(),
            name: None,
            sparse: false,
            partial: None,
            hidden: false,
            unique: false,
            expire_after_seconds: None,
        })
        .expect("create index");
        let (handle, coll) = open_collection(dir.path(), "c").expect("open");
        assert_eq!(coll.list_indexes().expect("list").len(), 2);
        drop((handle, coll));
        drop_index(&DropArgs {
            db: db(),
            #[cfg(feature = "cluster")]
            cluster: crate::cmd::cluster::ClusterArgs::default(),
            coll: "c".into(),
            name: None,
            key: Some(r#"{"x": -1}"#.into()),
        })
        .expect("drop by key");
        let err = drop_index(&DropArgs {
            db: db(),
            #[cfg(feature = "cluster")]
            cluster: crate::cmd::cluster::ClusterArgs::default(),
            coll: "c".into(),
            name: Some("nope".into()),
            key: None,
        })
        .expect_err("unknown index");
        assert!(err.to_string().contains("IndexNotFound"), "{err}");
        let err = create(&CreateArgs {
            db: db(),
            #[cfg(feature = "cluster")]
            cluster: crate::cmd::cluster::ClusterArgs::default(),
            coll: "c".into(),
            key: r#"{"x": "text"}"#.into(),
            name: None,
            sparse: false,
            partial: None,
            hidden: false,
            unique: false,
            expire_after_seconds: None,
        })
        .expect_err("text index");
        assert!(err.to_string().contains("InvalidOptions"), "{err}");
        list(&ListArgs {
            db: db(),
            #[cfg(feature = "cluster")]
            cluster: crate::cmd::cluster::ClusterArgs::default(),
            coll: "c".into(),
            bucket_form: true,
        })
        .expect("list");
    }
}
