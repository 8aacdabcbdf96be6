//! Throughput of `tscoll serve` through MongoDB's Rust driver, against the engine called in
//! process, on the TSBS cpu-only workload (`tscoll bench ingest`'s generator).
//!
//! ```text
//! cargo run --release -p tscoll-server --example driver_bench -- \
//!     [--hosts 1000] [--days 0.125] [--batch 5000] [--find 1000000] [--seed 1] \
//!     [--write-ndjson FILE] [--phases abc]
//! cargo run --release -p tscoll-server --example driver_bench -- --serve 127.0.0.1:27018
//! ```
//!
//! In one run:
//!
//! - (a) `Collection::insert_many` in process, batches of `--batch`, into a fresh database,
//!   with the durability the server gives a `w: 1` write (`Durability::Flush`);
//! - (b) the same measurements through the driver's `insert_many` (batches of `--batch`) into
//!   a server started in this process (`Server::spawn` on 127.0.0.1:0, a fresh database);
//! - (c) a find of `--find` measurements of (b)'s collection through the driver, the cursor
//!   iterated to the end over `getMore` batches (the server's default batch size: 16 MiB);
//!   and, for reference, the same find in process (`Collection::find_cursor`, in (a)'s
//!   database); and (c') the same find with the driver returning `RawDocumentBuf`s
//!   (the server's and the connection's share, without the client building `Document`s).
//!
//! `--phases` runs a part: `a`, `b`, `c`, or any of them together (default `abc`); `c`
//! without `b` inserts the measurements in process before the server starts (to profile
//! the find alone).
//!
//! Every measurement gets an `_id` (an ObjectId) before (a) and (b), as the driver would
//! give it, so both store the same documents. Only the calls are timed: the documents of a
//! batch are built with the clock stopped. CPU seconds come from `/proc/self/stat` (every
//! thread of the process, less the generation on the main thread); the server's share is
//! the CPU of its threads (named `tscoll-server`). With `--write-ndjson FILE`, the workload
//! is also written as NDJSON (relaxed Extended JSON) for `server/bench/pymongo_bench.py`.
//! `--serve ADDR` only serves a fresh temporary database on ADDR until standard input
//! closes: `tscoll serve` with this program's build, for that script.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bson::oid::ObjectId;
use bson::{Document, doc};
use tscoll_benches::tsbs::{self, Workload};
use tscoll_engine::{Database, DatabaseOptions, Durability, FindOptions, InsertOptions};
use tscoll_server::{Server, ServerOptions};

/// The allocator of the `tscoll` binary (cli/src/main.rs), so that the figures are those of
/// `tscoll serve`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The command line.
struct Args {
    hosts: usize,
    days: f64,
    batch: usize,
    find: usize,
    seed: u64,
    write_ndjson: Option<PathBuf>,
    phases: String,
    serve: Option<std::net::SocketAddr>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        hosts: 1000,
        days: 0.125,
        batch: 5000,
        find: 1_000_000,
        seed: tsbs::DEFAULT_SEED,
        write_ndjson: None,
        phases: "abc".into(),
        serve: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--hosts" => args.hosts = value.parse().map_err(|e| bad(&e))?,
            "--days" => args.days = value.parse().map_err(|e| bad(&e))?,
            "--batch" => args.batch = value.parse().map_err(|e| bad(&e))?,
            "--find" => args.find = value.parse().map_err(|e| bad(&e))?,
            "--seed" => args.seed = value.parse().map_err(|e| bad(&e))?,
            "--write-ndjson" => args.write_ndjson = Some(PathBuf::from(value)),
            "--phases" => args.phases = value,
            "--serve" => args.serve = Some(value.parse().map_err(|e| bad(&e))?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if args.phases.is_empty() || args.phases.chars().any(|c| !"abc".contains(c)) {
        return Err("--phases takes letters of abc".into());
    }
    if args.batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    Ok(args)
}

/// Clock ticks per second of `/proc/*/stat` (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const CLK_TCK: f64 = 100.0;

/// utime + stime of a `/proc/.../stat` line, in seconds.
fn stat_cpu(stat: &str) -> Option<f64> {
    // The command name is in parentheses and may hold spaces: count fields after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of the line are 12 and 13 after the state (field 3).
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / CLK_TCK)
}

/// CPU seconds of the whole process (every thread, living or ended).
fn process_cpu() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| stat_cpu(&s))
        .unwrap_or(0.0)
}

/// CPU seconds of the living threads whose name starts with `prefix`.
fn threads_cpu(prefix: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .filter_map(Result::ok)
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim_end().starts_with(prefix))
        })
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|s| stat_cpu(&s))
        .sum()
}

/// CPU time of the calling thread (`/proc/thread-self/schedstat`, nanoseconds).
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// The process's peak resident set (`VmHWM`), in MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |k| k / 1024.0)
}

/// What a timed phase took.
#[derive(Default)]
struct Phase {
    /// Wall time of the timed calls.
    wall: Duration,
    /// CPU seconds of the process during the phase, less the generation.
    cpu: f64,
    /// CPU seconds of the server's threads during the phase.
    server_cpu: f64,
    /// Measurements inserted or read.
    n: u64,
}

impl Phase {
    fn rate(&self) -> f64 {
        self.n as f64 / self.wall.as_secs_f64()
    }

    fn line(&self, what: &str) -> String {
        let server = if self.server_cpu > 0.0 {
            format!(", server threads {:.2} s", self.server_cpu)
        } else {
            String::new()
        };
        format!(
            "{what}: {} in {:.2} s = {:.0}/s; CPU {:.2} s ({:.2} µs/measurement){server}",
            self.n,
            self.wall.as_secs_f64(),
            self.rate(),
            self.cpu,
            self.cpu * 1e6 / self.n as f64
        )
    }
}

/// Inserts the workload batch by batch with `insert`, timing only the calls.
fn insert_all(
    workload: &Workload,
    batch: usize,
    mut insert: impl FnMut(&[Document]) -> Result<u64, String>,
) -> Result<Phase, String> {
    let mut generator = workload.generator();
    let mut docs = Vec::with_capacity(batch);
    let mut phase = Phase::default();
    let mut generating = Duration::ZERO;
    let cpu0 = process_cpu();
    let server0 = threads_cpu("tscoll-server");
    loop {
        let g0 = thread_cpu();
        docs.clear();
        if generator.fill_batch(&mut docs, batch) == 0 {
            break;
        }
        for d in &mut docs {
            d.insert("_id", ObjectId::new());
        }
        generating += thread_cpu().saturating_sub(g0);
        let t0 = Instant::now();
        phase.n += insert(&docs)?;
        phase.wall += t0.elapsed();
    }
    phase.cpu = process_cpu() - cpu0 - generating.as_secs_f64();
    phase.server_cpu = threads_cpu("tscoll-server") - server0;
    Ok(phase)
}

/// `--serve ADDR`: a server on a fresh temporary database until standard input closes (for
/// `server/bench/pymongo_bench.py`, with this program's allocator and build).
fn serve(addr: std::net::SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path(), DatabaseOptions::default())?;
    let server = Server::spawn(
        db,
        ServerOptions {
            bind: addr,
            ..ServerOptions::default()
        },
    )?;
    println!(
        "serving {} on {}; close standard input to stop",
        dir.path().display(),
        server.local_addr()
    );
    std::io::copy(&mut std::io::stdin(), &mut std::io::sink())?;
    server.stop()?;
    Ok(())
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(addr) = args.serve {
        return serve(addr);
    }
    let workload = Workload::new(args.hosts, args.days, args.seed);
    println!(
        "TSBS cpu-only: {} hosts, {} days, seed {}: {} measurements; batches of {}",
        args.hosts,
        args.days,
        args.seed,
        workload.measurements(),
        args.batch
    );
    if let Some(path) = &args.write_ndjson {
        tsbs::write_ndjson(&workload, std::fs::File::create(path)?)?;
        println!("wrote {}", path.display());
    }

    let want = |c: char| args.phases.contains(c);
    let create =
        tscoll_engine::TimeseriesOptions::new(tsbs::TIME_FIELD).meta_field(tsbs::META_FIELD);
    let insert_options = InsertOptions {
        ordered: true,
        durability: Durability::Flush,
    };
    let engine_insert = |coll: &tscoll_engine::Collection, docs: &[Document]| {
        let r = coll
            .insert_many(docs, &insert_options)
            .map_err(|e| e.to_string())?;
        if !r.errors.is_empty() {
            return Err(format!("{} measurements rejected", r.errors.len()));
        }
        Ok(r.inserted as u64)
    };

    // (a) The engine in process, and the find of (c) in process, for reference.
    let mut a = None;
    let mut in_process_find = None;
    if want('a') {
        let dir = tempfile::tempdir()?;
        let db = Database::open(dir.path(), DatabaseOptions::default())?;
        let coll = db.create_collection("bench.cpu", &create)?;
        let phase = insert_all(&workload, args.batch, |docs| engine_insert(&coll, docs))?;
        println!("{}", phase.line("(a) in-process insert_many"));
        a = Some(phase);
        let cpu0 = process_cpu();
        let t0 = Instant::now();
        let options = FindOptions {
            limit: Some(args.find),
            ..FindOptions::default()
        };
        let mut n = 0;
        for d in coll.find_cursor(&doc! {}, &options)? {
            let _ = d?;
            n += 1;
        }
        in_process_find = Some(Phase {
            wall: t0.elapsed(),
            cpu: process_cpu() - cpu0,
            server_cpu: 0.0,
            n,
        });
        drop(coll);
        db.close()?;
    }
    if !want('b') && !want('c') {
        return Ok(());
    }

    // (b) The driver into the server, in this process. For (c) alone, the measurements are
    // inserted in process before the server starts.
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path(), DatabaseOptions::default())?;
    if !want('b') {
        let coll = db.create_collection("bench.cpu", &create)?;
        insert_all(&workload, args.batch, |docs| engine_insert(&coll, docs))?;
    }
    let server = Server::spawn(
        db,
        ServerOptions {
            bind: "127.0.0.1:0".parse()?,
            ..ServerOptions::default()
        },
    )?;
    let client = mongodb::sync::Client::with_uri_str(format!(
        "mongodb://{}/?directConnection=true",
        server.local_addr()
    ))?;
    let mdb = client.database("bench");
    let mcoll = mdb.collection::<Document>("cpu");
    if want('b') {
        mdb.run_command(doc! {
            "create": "cpu",
            "timeseries": { "timeField": tsbs::TIME_FIELD, "metaField": tsbs::META_FIELD },
        })
        .run()?;
        let b = insert_all(&workload, args.batch, |docs| {
            let r = mcoll.insert_many(docs).run().map_err(|e| e.to_string())?;
            Ok(r.inserted_ids.len() as u64)
        })?;
        println!("{}", b.line("(b) driver insert_many into tscoll serve"));
        if let Some(a) = &a {
            println!("(b)/(a) = {:.2} (goal >= 0.6)", b.rate() / a.rate());
        }
    }

    // (c) A find through the driver, every getMore batch read.
    if want('c') {
        let cpu0 = process_cpu();
        let server0 = threads_cpu("tscoll-server");
        let t0 = Instant::now();
        let mut n = 0_u64;
        for d in mcoll.find(doc! {}).limit(args.find as i64).run()? {
            let _ = d?;
            n += 1;
        }
        let c = Phase {
            wall: t0.elapsed(),
            cpu: process_cpu() - cpu0,
            server_cpu: threads_cpu("tscoll-server") - server0,
            n,
        };
        println!("{}", c.line("(c) driver find, cursor iterated to the end"));
        println!("    goal >= 500000 documents/s");
        // The same find, the driver leaving each document raw (no `Document` built): what
        // the server and the connection give, without the client's decoding.
        let raw = mcoll.clone_with_type::<bson::RawDocumentBuf>();
        let cpu0 = process_cpu();
        let server0 = threads_cpu("tscoll-server");
        let t0 = Instant::now();
        let mut n = 0_u64;
        for d in raw.find(doc! {}).limit(args.find as i64).run()? {
            let _ = d?;
            n += 1;
        }
        let raw = Phase {
            wall: t0.elapsed(),
            cpu: process_cpu() - cpu0,
            server_cpu: threads_cpu("tscoll-server") - server0,
            n,
        };
        println!("{}", raw.line("(c') the same find as RawDocumentBuf"));
        if let Some(f) = &in_process_find {
            println!("{}", f.line("    for reference: in-process find_cursor"));
        }
    }
    println!("peak RSS (VmHWM) of the process: {:.0} MiB", peak_rss_mib());
    drop(mcoll);
    drop(client);
    server.stop()?;
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("driver_bench: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("driver_bench: {e}");
        std::process::exit(1);
    }
}
