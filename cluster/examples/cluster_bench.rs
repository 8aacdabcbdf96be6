//! The TSBS queries on one database and on clusters of 1, 2 and 3 workers (each worker its
//! own process on 127.0.0.1), the same data in each: median query times and the bytes each
//! query moved between processes (docs/BENCHMARKS.md, "Scale-out").
//!
//! ```text
//! cargo run --release -p tscoll-cluster --example cluster_bench -- [HOSTS] [DAYS] [REPS] [WORKERS,...] [QUERY,...]
//! ```
//!
//! Defaults: 1000 hosts, 1 day, 7 runs per query, clusters of 1, 2 and 3 workers. The
//! queries are `tscoll_benches::tsbs::sql_queries` (q1 as `tscoll bench query` has it, q2,
//! q3, lastpoint, double-groupby-all and high-cpu-all over the first 12 hours, each with a
//! total `ORDER BY`), as the cluster tests run them. The data
//! is the TSBS cpu-only workload of `tscoll bench` (shard key `tags.hostname`), inserted
//! through the cluster (each series to its shard) and, for the single database, directly;
//! the databases are compacted and reopened before the queries, as `tscoll bench query` does.
//! Each query runs once untimed, then REPS times; the median wall-clock time (planning and
//! execution, the whole answer collected by this process) is printed, with the bytes one run
//! moved: between stages (datafusion-distributed's Arrow messages) and of the leaves this
//! process ran whole on a worker. One JSON object per line.
//!
//! Run with `worker DIR` it is one worker process instead (it prints its address, then serves
//! until its standard input closes).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use bson::doc;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::TryStreamExt;
use tscoll_benches::tsbs::{self, Workload};
use tscoll_cluster::{Cluster, ClusterConfig, WorkerOptions, bytes_between_stages};
use tscoll_engine::{Database, DatabaseOptions, InsertOptions, TimeseriesOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("worker") {
        return worker(args.get(1).ok_or("worker DIR")?);
    }
    let hosts: usize = args.first().map_or(Ok(1000), |a| a.parse())?;
    let days: f64 = args.get(1).map_or(Ok(1.0), |a| a.parse())?;
    let reps: usize = args.get(2).map_or(Ok(7), |a| a.parse())?;
    let sizes: Vec<usize> = args
        .get(3)
        .map_or("1,2,3", String::as_str)
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let _in_runtime = rt.enter();
    let w = Workload::new(hosts, days, tsbs::DEFAULT_SEED);
    // q1 as `tscoll bench query` has it: host_42, 12:00 to 18:00; the ranged ones over the
    // first 12 hours.
    let mut queries = tsbs::sql_queries("host_42", 720..1080, 0..720);
    if let Some(only) = args.get(4) {
        let only: Vec<&str> = only.split(',').collect();
        queries.retain(|(name, _)| only.contains(name));
    }

    let single_dir = tempfile::tempdir()?;
    load_single(single_dir.path(), &w)?;
    let db = Database::open(single_dir.path(), DatabaseOptions::default())?;
    let ctx = SessionContext::new();
    tscoll_datafusion::register_database(&ctx, &db)?;
    for (name, q) in &queries {
        let ms = rt.block_on(time(&ctx, q, reps))?;
        println!(
            "{{\"setup\":\"single\",\"hosts\":{hosts},\"days\":{days},\"query\":\"{name}\",\"median_ms\":{ms:.1}}}"
        );
    }
    drop(ctx);
    db.close()?;

    for n in sizes {
        let dirs: Vec<tempfile::TempDir> = (0..n)
            .map(|_| tempfile::tempdir())
            .collect::<Result<_, _>>()?;
        let mut children = Vec::new();
        let mut addrs = Vec::new();
        for d in &dirs {
            let (child, addr) = spawn_worker(d.path())?;
            children.push(child);
            addrs.push(addr);
        }
        let cluster = Cluster::new(ClusterConfig::from_list(&addrs.join(","))?)?;
        let started = Instant::now();
        rt.block_on(load_cluster(&cluster, &w))?;
        let ingest_s = started.elapsed().as_secs_f64();
        // Compacted and reopened, as the single database: restart every worker.
        for c in &mut children {
            stop_worker(c)?;
        }
        for (i, d) in dirs.iter().enumerate() {
            let db = Database::open(d.path(), DatabaseOptions::default())?;
            db.compact()?;
            db.close()?;
            drop(db);
            let (child, addr) = spawn_worker(d.path())?;
            children[i] = child;
            addrs[i] = addr;
        }
        let cluster = Cluster::new(ClusterConfig::from_list(&addrs.join(","))?)?;
        let ctx = rt.block_on(cluster.session(SessionConfig::new()))?;
        for (name, q) in &queries {
            let ms = rt.block_on(time(&ctx, q, reps))?;
            let before = cluster.leaf_bytes_received();
            let stages = rt.block_on(bytes_moved(&ctx, q))?;
            let leaves = cluster.leaf_bytes_received() - before;
            println!(
                "{{\"setup\":\"workers\",\"workers\":{n},\"hosts\":{hosts},\"days\":{days},\"query\":\"{name}\",\"median_ms\":{ms:.1},\"bytes_between_stages\":{stages},\"bytes_of_whole_leaves\":{leaves},\"ingest_s\":{ingest_s:.1}}}"
            );
        }
        for c in &mut children {
            stop_worker(c)?;
        }
    }
    Ok(())
}

/// The median time (ms) of `reps` runs of `q` after one untimed run.
async fn time(
    ctx: &SessionContext,
    q: &str,
    reps: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut times = Vec::with_capacity(reps);
    for i in 0..=reps {
        let start = Instant::now();
        let batches = ctx.sql(q).await?.collect().await?;
        std::hint::black_box(&batches);
        if i > 0 {
            times.push(start.elapsed().as_secs_f64() * 1000.0);
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The bytes one run of `q` moved between stages.
async fn bytes_moved(ctx: &SessionContext, q: &str) -> Result<u64, Box<dyn std::error::Error>> {
    let plan = ctx.sql(q).await?.create_physical_plan().await?;
    execute_stream(Arc::clone(&plan), ctx.task_ctx())?
        .try_collect::<Vec<_>>()
        .await?;
    let plan = datafusion_distributed::rewrite_distributed_plan_with_metrics(
        plan,
        datafusion_distributed::DistributedMetricsFormat::Aggregated,
    )
    .await?;
    Ok(bytes_between_stages(&plan))
}

fn options() -> TimeseriesOptions {
    TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD)
}

fn load_single(dir: &std::path::Path, w: &Workload) -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::open(dir, DatabaseOptions::default())?;
    let coll = db.create_collection("cpu", &options())?;
    let mut g = w.generator();
    let mut batch = Vec::new();
    let unordered = InsertOptions {
        ordered: false,
        ..InsertOptions::default()
    };
    while g.fill_batch(&mut batch, 5000) > 0 {
        coll.insert_many(&batch, &unordered)?.check()?;
        batch.clear();
    }
    db.close()?;
    drop((coll, db));
    let db = Database::open(dir, DatabaseOptions::default())?;
    db.compact()?;
    db.close()?;
    Ok(())
}

async fn load_cluster(cluster: &Cluster, w: &Workload) -> Result<(), Box<dyn std::error::Error>> {
    let create = doc! { "create": "cpu", "timeseries": { "timeField": tsbs::TIME_FIELD, "metaField": tsbs::META_FIELD } };
    for (url, r) in cluster.command(&create, Some("tags.hostname")).await? {
        let r = r?;
        if r.get_f64("ok").ok() != Some(1.0) {
            return Err(format!("{url}: {r}").into());
        }
    }
    let coll = cluster.collection("cpu").await?;
    let unordered = InsertOptions {
        ordered: false,
        ..InsertOptions::default()
    };
    let mut g = w.generator();
    let mut batch = Vec::new();
    while g.fill_batch(&mut batch, 5000) > 0 {
        for p in cluster.insert_documents(&coll, &batch, &unordered).await {
            if let Some(f) = p.failure {
                return Err(f.into());
            }
            if !p.errors.is_empty() {
                return Err(format!("{:?}", p.errors).into());
            }
        }
        batch.clear();
    }
    Ok(())
}

/// Starts this program as a worker of `dir`; its address.
fn spawn_worker(dir: &std::path::Path) -> Result<(Child, String), Box<dyn std::error::Error>> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("worker")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    let out = child.stdout.take().ok_or("no stdout")?;
    BufReader::new(out).read_line(&mut line)?;
    Ok((child, line.trim().to_owned()))
}

/// Closes the worker's standard input and waits for it to stop.
fn stop_worker(child: &mut Child) -> Result<(), Box<dyn std::error::Error>> {
    drop(child.stdin.take());
    child.wait()?;
    Ok(())
}

/// A worker process: serves `dir` on a free port of 127.0.0.1 until stdin closes.
fn worker(dir: &str) -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let db = Database::open(dir, DatabaseOptions::default())?;
    let options = WorkerOptions {
        listen: "127.0.0.1:0".parse()?,
        token: None,
        memory_bytes: None,
    };
    let handle = rt.block_on(tscoll_cluster::start(db.clone(), options))?;
    println!("{}", handle.local_addr());
    std::io::stdout().flush()?;
    let mut rest = Vec::new();
    std::io::stdin().read_to_end(&mut rest)?;
    rt.block_on(handle.shutdown())?;
    db.close()?;
    Ok(())
}
