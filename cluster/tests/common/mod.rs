//! What the cluster tests share: the TSBS queries, a reference database, answers as text.

#![allow(dead_code, unreachable_pub)]

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use tscoll_benches::tsbs::{self, Workload};
use tscoll_engine::{Collection, Database, DatabaseOptions, InsertOptions, TimeseriesOptions};

/// The TSBS cpu-only queries as SQL (`tsbs::sql_queries`: q1 over `host` from 01:00 to
/// 02:00, the ranged queries over the first 12 hours) and a `count(*)`.
pub fn tsbs_queries(host: &str) -> Vec<(&'static str, String)> {
    let mut q = tsbs::sql_queries(host, 60..120, 0..720);
    q.push(("count", "SELECT count(*) AS n FROM cpu".to_owned()));
    q
}

/// A database holding `cpu` with the TSBS workload `w` (`insert` also gets each batch).
pub fn reference(dir: &std::path::Path, w: &Workload) -> (Database, Collection) {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let coll = db
        .create_collection(
            "cpu",
            &TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD),
        )
        .expect("create");
    let mut g = w.generator();
    let mut batch = Vec::new();
    while g.fill_batch(&mut batch, 2000) > 0 {
        coll.insert_many(&batch, &InsertOptions::default())
            .expect("insert");
        batch.clear();
    }
    (db, coll)
}

/// A session over one database holding the TSBS workload `w` (in a temporary directory,
/// returned with it): the answers a cluster's must equal.
pub fn single_session(w: &Workload) -> (tempfile::TempDir, SessionContext) {
    let dir = tempfile::tempdir().expect("dir");
    let (db, _) = reference(dir.path(), w);
    let ctx = SessionContext::new();
    tscoll_datafusion::register_database(&ctx, &db).expect("register");
    (dir, ctx)
}

/// The answer of `q` as a table's text.
pub async fn answer(ctx: &SessionContext, q: &str) -> String {
    let batches: Vec<RecordBatch> = ctx
        .sql(q)
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    pretty_format_batches(&batches).expect("format").to_string()
}

/// The physical plan of `q` as datafusion-distributed draws it.
pub async fn plan(ctx: &SessionContext, q: &str) -> String {
    let plan = ctx
        .sql(q)
        .await
        .expect("plan")
        .create_physical_plan()
        .await
        .expect("physical plan");
    datafusion_distributed::display_plan_ascii(plan.as_ref(), false)
}

/// The shards the leaves of a drawn plan read (`remote_shards=[..]`), ascending.
pub fn shards_read(plan: &str) -> Vec<usize> {
    let mut out: Vec<usize> = plan
        .split("remote_shards=[")
        .skip(1)
        .flat_map(|rest| {
            rest.split(']')
                .next()
                .unwrap_or_default()
                .split(',')
                .filter_map(|n| n.trim().parse().ok())
                .collect::<Vec<usize>>()
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}
