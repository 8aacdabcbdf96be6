//! Three workers in this process on 127.0.0.1, a routed ingest of TSBS data, and the TSBS
//! queries through the cluster compared with the same data in one database.

use std::sync::Arc;

use bson::doc;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};
use tscoll_benches::tsbs::{self, Workload};
use tscoll_cluster::{Cluster, ClusterConfig, WorkerOptions};
use tscoll_engine::{Database, DatabaseOptions, InsertOptions, TimeseriesOptions};

async fn rows(ctx: &SessionContext, q: &str) -> String {
    let batches: Vec<RecordBatch> = ctx
        .sql(q)
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    pretty_format_batches(&batches).unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_workers_answer_as_one_database() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut workers = Vec::new();
    for d in &dirs {
        let db = Database::open(d.path(), DatabaseOptions::default()).unwrap();
        let w = tscoll_cluster::start(
            db,
            WorkerOptions {
                listen: "127.0.0.1:0".parse().unwrap(),
                token: Some(Arc::from("t0ken")),
            },
        )
        .await
        .unwrap();
        workers.push(w);
    }
    let list: Vec<String> = workers.iter().map(|w| w.local_addr().to_string()).collect();
    let config = ClusterConfig::from_list(&list.join(","))
        .unwrap()
        .with_token(Some(Arc::from("t0ken")));
    let cluster = Cluster::new(config).unwrap();
    let create = doc! { "create": "cpu", "timeseries": { "timeField": tsbs::TIME_FIELD, "metaField": tsbs::META_FIELD } };
    for (url, r) in cluster
        .command(&create, Some("tags.hostname"))
        .await
        .unwrap()
    {
        let r = r.unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(r.get_f64("ok").ok(), Some(1.0), "{url}: {r}");
    }
    let coll = cluster.collection("cpu").await.unwrap();
    let refdir = tempfile::tempdir().unwrap();
    let refdb = Database::open(refdir.path(), DatabaseOptions::default()).unwrap();
    let refcoll = refdb
        .create_collection(
            "cpu",
            &TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD),
        )
        .unwrap();
    let w = Workload::new(12, 0.1, 1);
    let mut g = w.generator();
    let mut batch = Vec::new();
    while g.fill_batch(&mut batch, 2000) > 0 {
        refcoll
            .insert_many(&batch, &InsertOptions::default())
            .unwrap();
        let parts = cluster
            .insert_documents(&coll, &batch, &InsertOptions::default())
            .await;
        let mut sent = 0;
        for p in parts {
            assert!(p.failure.is_none(), "{p:?}");
            assert!(p.errors.is_empty(), "{p:?}");
            assert_eq!(p.sent, p.inserted);
            sent += p.inserted;
        }
        assert_eq!(sent, batch.len());
        batch.clear();
    }
    let ctx = cluster.session(SessionConfig::new()).await.unwrap();
    let single = SessionContext::new();
    tscoll_datafusion::register_database(&single, &refdb).unwrap();
    let queries = [
        "SELECT count(*) FROM cpu",
        "SELECT tags.hostname AS h, date_bin(INTERVAL '1 hour', time) AS hour, max(usage_user) AS m FROM cpu GROUP BY 1, 2 ORDER BY 1, 2",
        "SELECT time, usage_user, usage_system FROM cpu WHERE tags.hostname = 'host_3' AND time >= TIMESTAMP '2016-01-01T01:00:00Z' AND time < TIMESTAMP '2016-01-01T02:00:00Z' ORDER BY time",
    ];
    for q in queries {
        let got = rows(&ctx, q).await;
        let want = rows(&single, q).await;
        assert_eq!(got, want, "{q}");
        let plan = ctx
            .sql(q)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        println!(
            "{}",
            datafusion_distributed::display_plan_ascii(plan.as_ref(), false)
        );
    }
    for w in workers {
        w.shutdown().await.unwrap();
    }
}
