//! What the cluster tests share: the TSBS queries, a reference database, answers as text.

#![allow(dead_code, unreachable_pub)]

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use tscoll_benches::tsbs::{self, Workload};
use tscoll_engine::{Collection, Database, DatabaseOptions, InsertOptions, TimeseriesOptions};

/// The TSBS cpu-only queries as SQL, each with a total order: `(name, sql)`; q1 reads
/// `host` from 01:00 to 02:00 of the first day.
pub fn tsbs_queries(host: &str) -> Vec<(&'static str, String)> {
    tsbs_queries_at(host, 1, 2)
}

/// [`tsbs_queries`] with q1 reading from hour `q1_from` to hour `q1_to` of the first day.
pub fn tsbs_queries_at(host: &str, q1_from: i64, q1_to: i64) -> Vec<(&'static str, String)> {
    let fields = tsbs::FIELDS.join(", ");
    let avgs: Vec<String> = tsbs::FIELDS
        .iter()
        .map(|f| format!("avg({f}) AS avg_{f}"))
        .collect();
    let avgs = avgs.join(", ");
    let t = |h: i64| format!("TIMESTAMP '2016-01-01T{h:02}:00:00Z'");
    vec![
        (
            "q1",
            format!(
                "SELECT time, {fields} FROM cpu WHERE tags.hostname = '{host}' \
                 AND time >= {} AND time < {} ORDER BY time",
                t(q1_from),
                t(q1_to)
            ),
        ),
        (
            "q2",
            "SELECT tags.hostname AS h, date_bin(INTERVAL '1 hour', time) AS hour, \
             max(usage_user) AS m FROM cpu GROUP BY 1, 2 ORDER BY 1, 2"
                .to_owned(),
        ),
        (
            "q3",
            format!(
                "SELECT tags.hostname AS h, date_bin(INTERVAL '1 hour', time) AS hour, {avgs} \
                 FROM cpu GROUP BY 1, 2 ORDER BY 1, 2"
            ),
        ),
        (
            "lastpoint",
            format!(
                "SELECT h, time, {fields} FROM (SELECT tags.hostname AS h, time, {fields}, \
                 row_number() OVER (PARTITION BY tags.hostname ORDER BY time DESC) AS rn \
                 FROM cpu) WHERE rn = 1 ORDER BY h"
            ),
        ),
        (
            "double-groupby-all",
            format!(
                "SELECT tags.hostname AS h, date_bin(INTERVAL '1 hour', time) AS hour, {avgs} \
                 FROM cpu WHERE time >= {} AND time < {} GROUP BY 1, 2 ORDER BY 1, 2",
                t(0),
                t(12)
            ),
        ),
        (
            "high-cpu-all",
            format!(
                "SELECT tags.hostname AS h, time, {fields} FROM cpu WHERE usage_user > 90 \
                 AND time >= {} AND time < {} ORDER BY h, time",
                t(0),
                t(12)
            ),
        ),
        ("count", "SELECT count(*) AS n FROM cpu".to_owned()),
    ]
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
