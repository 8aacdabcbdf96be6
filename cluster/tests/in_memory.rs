//! A cluster of three shards in one process over in-memory pipes (no socket): routed writes,
//! the TSBS queries planned by datafusion-distributed and answered as one database answers
//! them, shard pruning, and what a cluster refuses.

mod common;

use bson::doc;
use datafusion::prelude::SessionConfig;
use tscoll_benches::tsbs::{self, Workload};
use tscoll_cluster::{Cluster, ShardKey, in_memory};
use tscoll_engine::{Database, DatabaseOptions, InsertOptions};

struct Shards {
    _dirs: Vec<tempfile::TempDir>,
    cluster: Cluster,
}

async fn three_shards() -> Shards {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().expect("dir")).collect();
    let dbs = dirs
        .iter()
        .map(|d| Database::open(d.path(), DatabaseOptions::default()).expect("open"))
        .collect();
    let cluster = in_memory(dbs, None).await.expect("cluster");
    Shards {
        _dirs: dirs,
        cluster,
    }
}

async fn create_cpu(cluster: &Cluster, key: Option<&str>) {
    let create = doc! { "create": "cpu", "timeseries": { "timeField": tsbs::TIME_FIELD, "metaField": tsbs::META_FIELD } };
    for (url, r) in cluster.command(&create, key).await.expect("create") {
        let r = r.unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(r.get_f64("ok").ok(), Some(1.0), "{url}: {r}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tsbs_queries_answer_as_one_database() {
    let s = three_shards().await;
    create_cpu(&s.cluster, Some("tags.hostname")).await;
    let coll = s.cluster.collection("cpu").await.expect("cpu");
    assert_eq!(
        coll.shard_key.as_ref().map(ShardKey::path),
        Some("tags.hostname")
    );
    let w = Workload::new(12, 0.1, 7);
    let mut g = w.generator();
    let mut batch = Vec::new();
    let mut per_shard = [0usize; 3];
    while g.fill_batch(&mut batch, 2000) > 0 {
        for p in s
            .cluster
            .insert_documents(&coll, &batch, &InsertOptions::default())
            .await
        {
            assert!(p.failure.is_none() && p.errors.is_empty(), "{p:?}");
            assert_eq!(p.sent, p.inserted, "{p:?}");
            per_shard[p.shard] += p.inserted;
        }
        batch.clear();
    }
    assert_eq!(per_shard.iter().sum::<usize>() as u64, w.measurements());
    assert!(
        per_shard.iter().all(|&n| n > 0),
        "every shard holds series: {per_shard:?}"
    );
    let (_refdir, single) = common::single_session(&w);
    let ctx = s
        .cluster
        .session(SessionConfig::new())
        .await
        .expect("session");
    for (name, q) in common::tsbs_queries("host_7") {
        let got = common::answer(&ctx, &q).await;
        let want = common::answer(&single, &q).await;
        assert!(want.lines().count() > 4, "{name} answers rows: {want}");
        assert_eq!(got, want, "{name}: {q}");
    }
    // Aggregates run partially on the three workers, each reading its own shard.
    let q2 = common::plan(&ctx, &common::tsbs_queries("host_7")[1].1).await;
    assert!(q2.contains("DistributedExec"), "{q2}");
    assert!(q2.contains("tasks=3"), "{q2}");
    assert_eq!(common::shards_read(&q2), [0, 1, 2], "{q2}");
    assert!(q2.contains("AggregateExec: mode=Partial"), "{q2}");
    // A query that pins the shard key reads one shard: the host's.
    let host = doc! { tsbs::META_FIELD: { "hostname": "host_7" } };
    let shard = coll.shard_key.as_ref().expect("key").shard_of(&host, 3);
    let q1 = common::plan(&ctx, &common::tsbs_queries("host_7")[0].1).await;
    assert_eq!(common::shards_read(&q1), [shard], "{q1}");
    assert!(!q1.contains("tasks=3"), "{q1}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_report_each_shard_and_input_positions() {
    let s = three_shards().await;
    create_cpu(&s.cluster, None).await;
    let coll = s.cluster.collection("cpu").await.expect("cpu");
    assert_eq!(coll.shard_key.as_ref().map(ShardKey::path), Some("tags"));
    let t = |i: i64| bson::DateTime::from_millis(tsbs::START_MS + i * 1000);
    let mut docs: Vec<bson::Document> = (0..30)
        .map(|i| doc! { "time": t(i), "tags": { "hostname": format!("h{}", i % 6) }, "v": i })
        .collect();
    // Rejected: no time field, a time of the wrong type.
    docs[4].remove("time");
    docs[17].insert("time", "noon");
    let options = InsertOptions {
        ordered: false,
        ..InsertOptions::default()
    };
    let parts = s.cluster.insert_documents(&coll, &docs, &options).await;
    let mut rejected: Vec<usize> = parts
        .iter()
        .flat_map(|p| p.errors.iter().map(|e| e.0))
        .collect();
    rejected.sort_unstable();
    assert_eq!(rejected, [4, 17]);
    assert_eq!(parts.iter().map(|p| p.inserted).sum::<usize>(), 28);
    for p in &parts {
        assert!(p.failure.is_none(), "{p:?}");
        assert_eq!(p.sent, p.inserted + p.errors.len(), "{p:?}");
    }
    let ctx = s
        .cluster
        .session(SessionConfig::new())
        .await
        .expect("session");
    let n = common::answer(&ctx, "SELECT count(*) AS n, sum(v) AS s FROM cpu").await;
    assert!(n.contains("| 28 | 414 |"), "{n}");
    // The same series always goes to the same shard.
    let again = s
        .cluster
        .insert_documents(&coll, &docs[..6], &options)
        .await;
    for (a, b) in parts.iter().zip(&again) {
        assert_eq!(a.shard, b.shard);
        assert_eq!(b.sent > 0, a.sent > 0, "{a:?} {b:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_on_every_shard() {
    let s = three_shards().await;
    create_cpu(&s.cluster, Some("tags.hostname")).await;
    // A second create fails on every shard, each reply MongoDB's error.
    let create = doc! { "create": "cpu", "timeseries": { "timeField": "time" } };
    for (_, r) in s.cluster.command(&create, None).await.expect("broadcast") {
        let r = r.expect("reply");
        assert_eq!(r.get_f64("ok").ok(), Some(0.0), "{r}");
    }
    let mod_ = doc! { "collMod": "cpu", "timeseries": { "granularity": "minutes" } };
    for (_, r) in s.cluster.command(&mod_, None).await.expect("collMod") {
        assert_eq!(r.expect("reply").get_f64("ok").ok(), Some(1.0));
    }
    let c = s.cluster.collection("cpu").await.expect("cpu");
    assert_eq!(c.spec.bucket_max_span_seconds, 86_400);
    assert_eq!(c.shards, [0, 1, 2]);
    // A shard key outside the meta field is refused before anything is sent.
    let other =
        doc! { "create": "mem", "timeseries": { "timeField": "time", "metaField": "tags" } };
    assert!(s.cluster.command(&other, Some("usage")).await.is_err());
    for (_, r) in s
        .cluster
        .command(&doc! { "drop": "cpu" }, None)
        .await
        .expect("drop")
    {
        assert_eq!(r.expect("reply").get_bool("dropped").ok(), Some(true));
    }
    assert!(s.cluster.collections().await.expect("list").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrow_batches_are_routed_row_by_row() {
    let s = three_shards().await;
    create_cpu(&s.cluster, Some("tags.hostname")).await;
    let coll = s.cluster.collection("cpu").await.expect("cpu");
    let w = Workload::new(9, 0.05, 11);
    let mut g = w.generator();
    let mut docs = Vec::new();
    while g.fill_batch(&mut docs, 10_000) > 0 {}
    let batches = tscoll_engine::arrow::documents_to_batches(&docs, 1000).expect("arrow");
    assert!(batches.notes.is_empty(), "{:?}", batches.notes);
    for b in &batches.batches {
        let parts = s
            .cluster
            .insert_batch(&coll, b, &InsertOptions::default())
            .await;
        assert_eq!(
            parts.iter().map(|p| p.inserted).sum::<usize>(),
            b.num_rows()
        );
        for p in parts {
            assert!(p.failure.is_none() && p.errors.is_empty(), "{p:?}");
        }
    }
    let (_refdir, single) = common::single_session(&w);
    let ctx = s
        .cluster
        .session(SessionConfig::new())
        .await
        .expect("session");
    let queries = [
        "SELECT tags.hostname AS h, count(*) AS n, min(time) AS t0, max(usage_idle) AS m FROM cpu GROUP BY 1 ORDER BY 1".to_owned(),
        // A limit over every shard, and an IN list of the shard key read from its shards.
        "SELECT count(*) AS n FROM (SELECT time FROM cpu WHERE usage_user >= 0 LIMIT 100)".to_owned(),
        "SELECT tags.hostname AS h, sum(usage_user) AS s FROM cpu WHERE tags.hostname IN ('host_1', 'host_5') GROUP BY 1 ORDER BY 1".to_owned(),
    ];
    for q in &queries {
        assert_eq!(
            common::answer(&ctx, q).await,
            common::answer(&single, q).await,
            "{q}"
        );
    }
    let key = coll.shard_key.clone().expect("key");
    let mut want: Vec<usize> = ["host_1", "host_5"]
        .iter()
        .map(|h| key.shard_of(&doc! { "tags": { "hostname": *h } }, 3))
        .collect();
    want.sort_unstable();
    want.dedup();
    let plan = common::plan(&ctx, &queries[2]).await;
    assert_eq!(common::shards_read(&plan), want, "{plan}");
}
