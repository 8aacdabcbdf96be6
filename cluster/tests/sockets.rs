//! Workers on 127.0.0.1 in this process: the shared token, and what a cluster does when a
//! worker is down or dies during a query.

mod common;

use std::sync::Arc;

use bson::doc;
use datafusion::prelude::SessionConfig;
use futures::StreamExt;
use tscoll_benches::tsbs::{self, Workload};
use tscoll_cluster::{Cluster, ClusterConfig, WorkerHandle, WorkerOptions};
use tscoll_engine::{Database, DatabaseOptions, InsertOptions};

const TOKEN: &str = "t0ken-for-tests";

struct Workers {
    _dirs: Vec<tempfile::TempDir>,
    handles: Vec<Option<WorkerHandle>>,
    list: String,
}

async fn start_workers(n: usize) -> Workers {
    let dirs: Vec<tempfile::TempDir> = (0..n).map(|_| tempfile::tempdir().expect("dir")).collect();
    let mut handles = Vec::new();
    for d in &dirs {
        let db = Database::open(d.path(), DatabaseOptions::default()).expect("open");
        let options = WorkerOptions {
            listen: "127.0.0.1:0".parse().expect("addr"),
            token: Some(Arc::from(TOKEN)),
            memory_bytes: Some(256 << 20),
        };
        handles.push(Some(
            tscoll_cluster::start(db, options).await.expect("start"),
        ));
    }
    let list: Vec<String> = handles
        .iter()
        .flatten()
        .map(|w| w.local_addr().to_string())
        .collect();
    Workers {
        _dirs: dirs,
        handles,
        list: list.join(","),
    }
}

fn cluster(list: &str, token: &str) -> Cluster {
    let config = ClusterConfig::from_list(list)
        .expect("list")
        .with_token(Some(Arc::from(token)));
    Cluster::new(config).expect("cluster")
}

/// Creates `cpu` (shard key `tags.hostname`) and inserts the TSBS data of `hosts` hosts.
async fn load(c: &Cluster, hosts: usize, days: f64) -> Workload {
    let create = doc! { "create": "cpu", "timeseries": { "timeField": tsbs::TIME_FIELD, "metaField": tsbs::META_FIELD } };
    for (url, r) in c
        .command(&create, Some("tags.hostname"))
        .await
        .expect("create")
    {
        assert_eq!(r.expect("reply").get_f64("ok").ok(), Some(1.0), "{url}");
    }
    let coll = c.collection("cpu").await.expect("cpu");
    let w = Workload::new(hosts, days, 3);
    let mut g = w.generator();
    let mut batch = Vec::new();
    while g.fill_batch(&mut batch, 5000) > 0 {
        for p in c
            .insert_documents(&coll, &batch, &InsertOptions::default())
            .await
        {
            assert!(p.failure.is_none() && p.errors.is_empty(), "{p:?}");
        }
        batch.clear();
    }
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wrong_or_missing_token_is_refused() {
    let w = start_workers(2).await;
    let good = cluster(&w.list, TOKEN);
    load(&good, 4, 0.01).await;
    for bad in [
        cluster(&w.list, "not-the-token"),
        Cluster::new(ClusterConfig::from_list(&w.list).expect("list")).expect("c"),
    ] {
        let err = bad.collections().await.expect_err("refused").to_string();
        assert!(err.contains("token"), "{err}");
        assert!(err.contains("127.0.0.1"), "{err}");
    }
    // A worker beyond loopback needs a token.
    let dir = tempfile::tempdir().expect("dir");
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    let open = WorkerOptions {
        listen: "0.0.0.0:0".parse().expect("addr"),
        token: None,
        memory_bytes: None,
    };
    let err = tscoll_cluster::start(db, open).await.expect_err("refused");
    assert!(err.to_string().contains("token"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_in_another_order_are_refused() {
    let w = start_workers(2).await;
    load(&cluster(&w.list, TOKEN), 4, 0.01).await;
    let swapped: Vec<&str> = w.list.split(',').rev().collect();
    let c = cluster(&swapped.join(","), TOKEN);
    let err = c.collections().await.expect_err("refused").to_string();
    assert!(err.contains("holds shard"), "{err}");
    let fewer = cluster(swapped[1], TOKEN);
    let err = fewer.collections().await.expect_err("refused").to_string();
    assert!(err.contains("of 2"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_down_worker_fails_queries_and_its_own_writes_only() {
    let mut w = start_workers(3).await;
    let c = cluster(&w.list, TOKEN);
    let workload = load(&c, 12, 0.05).await;
    let coll = c.collection("cpu").await.expect("cpu");
    let ctx = c.session(SessionConfig::new()).await.expect("session");
    let q2 = &common::tsbs_queries("host_1")[1].1;
    common::answer(&ctx, q2).await;
    let down = w.handles[1].take().expect("worker 1");
    let down_addr = down.local_addr().to_string();
    down.shutdown().await.expect("shutdown");
    // A query over every shard fails, naming the worker.
    let err = match ctx.sql(q2).await.expect("plan").collect().await {
        Ok(b) => panic!("an answer without shard 1: {b:?}"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains(&down_addr), "{err}");
    // A query that pins a series of a live shard still answers.
    let key = coll.shard_key.clone().expect("key");
    let live = (0..12)
        .map(|h| format!("host_{h}"))
        .find(|h| key.shard_of(&doc! { "tags": { "hostname": h.as_str() } }, 3) != 1)
        .expect("a host on a live shard");
    let q1 = &common::tsbs_queries(&live)[0].1;
    assert!(common::answer(&ctx, q1).await.lines().count() > 10);
    // A write fails for the down shard's measurements only.
    let docs = workload
        .host_rows(0, 0..1)
        .into_iter()
        .chain((1..12).flat_map(|h| workload.host_rows(h, 0..1)))
        .collect::<Vec<_>>();
    let parts = c
        .insert_documents(&coll, &docs, &InsertOptions::default())
        .await;
    for p in &parts {
        if p.shard == 1 {
            let f = p.failure.as_ref().expect("shard 1 fails").to_string();
            assert!(f.contains(&down_addr), "{f}");
            assert_eq!(p.inserted, 0);
        } else {
            assert!(p.failure.is_none(), "{p:?}");
            assert_eq!(p.inserted, p.sent);
        }
    }
    assert_eq!(parts.iter().map(|p| p.sent).sum::<usize>(), 12);
}

/// A worker on a runtime of its own, which the test shuts down as a crash would end it:
/// every connection dropped, every request under way cut.
fn worker_on_own_runtime(dir: &std::path::Path) -> (tokio::runtime::Runtime, std::net::SocketAddr) {
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let db = Database::open(&dir, DatabaseOptions::default()).expect("open");
        let options = WorkerOptions {
            listen: "127.0.0.1:0".parse().expect("addr"),
            token: Some(Arc::from(TOKEN)),
            memory_bytes: None,
        };
        let handle = rt
            .block_on(tscoll_cluster::start(db, options))
            .expect("start");
        let addr = handle.local_addr();
        std::mem::forget(handle);
        (rt, addr)
    })
    .join()
    .expect("thread")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_worker_that_dies_during_a_query_fails_it() {
    let w = start_workers(1).await;
    let dir = tempfile::tempdir().expect("dir");
    let (rt, addr) = worker_on_own_runtime(dir.path());
    let c = cluster(&format!("{},{addr}", w.list), TOKEN);
    load(&c, 40, 0.2).await;
    let ctx = c
        .session(SessionConfig::new().with_batch_size(64))
        .await
        .expect("session");
    let mut stream = ctx
        .sql("SELECT * FROM cpu")
        .await
        .expect("plan")
        .execute_stream()
        .await
        .expect("stream");
    let first = stream.next().await.expect("a batch").expect("no error yet");
    assert!(first.num_rows() > 0);
    rt.shutdown_background();
    let mut rows = first.num_rows();
    let mut failed = None;
    while let Some(b) = stream.next().await {
        match b {
            Ok(b) => rows += b.num_rows(),
            Err(e) => {
                failed = Some(e.to_string());
                break;
            }
        }
    }
    let err = failed.unwrap_or_else(|| panic!("{rows} rows and no error"));
    assert!(err.contains(&addr.to_string()), "{err}");
}
