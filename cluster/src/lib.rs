//! tscoll over several machines: the shards of a collection held by **workers** (one tscoll
//! database each), one SQL query over all of them planned by a **coordinator** with
//! [datafusion-distributed](https://github.com/datafusion-contrib/datafusion-distributed),
//! and writes sent to the shard of each series (docs/scale-out.md).
//!
//! A measurement's shard is a hash of its **shard key** (the meta field, or a path inside
//! it) modulo the number of workers, so a series and all its buckets live on one worker;
//! the order of the workers in the cluster's list numbers the shards, and each worker
//! records its number (`tscoll-shard.json` in its database directory) and refuses to be
//! addressed as another.
//!
//! | file | concept |
//! |---|---|
//! | `config.rs` | [`ClusterConfig`]: the workers in shard order and the token (`--workers`, the cluster file) |
//! | `routing.rs` | [`ShardKey`]: the shard of a measurement, and the shards a filter can match |
//! | `worker.rs` | a worker: datafusion-distributed's worker service and the Flight service on one port |
//! | `membership.rs` | a worker's shard number and its collections' shard keys, kept beside its database |
//! | `protocol.rs` | the Flight messages: commands, descriptions, writes, whole leaves |
//! | `commands.rs` | the commands a worker runs on its shard (create, collMod, indexes, drop, list, stats) |
//! | `client.rs` | a coordinator's connection to one worker's Flight service |
//! | `coordinator.rs` | [`Cluster`]: SQL sessions over the shards, commands to every worker, routed writes |
//! | `plan.rs` | how datafusion-distributed splits a leaf by shard and sends each task to its shard's worker |
//! | `codec.rs` | the leaves over remote shards as bytes ([`ShardPlanCodec`]) |
//! | `channels.rs` | the connections to workers: TCP, or in-memory pipes for tests |
//! | `memory.rs` | [`in_memory`]: a cluster in one process without a socket |
//! | `auth.rs` | the shared token, sent and checked |
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use tscoll_cluster::{Cluster, ClusterConfig};
//! let cluster = Cluster::new(ClusterConfig::from_list("127.0.0.1:7101,127.0.0.1:7102")?)?;
//! let ctx = cluster.session(Default::default()).await?;
//! let batches = ctx
//!     .sql("SELECT tags.hostname, max(usage_user) FROM cpu GROUP BY 1")
//!     .await?
//!     .collect()
//!     .await?;
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod auth;
mod channels;
mod client;
mod codec;
mod commands;
mod config;
mod coordinator;
mod error;
mod membership;
mod memory;
mod plan;
mod protocol;
mod routing;
mod worker;

pub use codec::{ShardPlanCodec, decode_plan, encode_plan};
pub use config::{ClusterConfig, read_token};
pub use coordinator::{Cluster, ClusterCollection, ShardInsert, bytes_between_stages};
pub use error::Error;
pub use membership::{Membership, SHARD_FILE};
pub use memory::in_memory;
pub use routing::{ShardKey, shard_of_value};
pub use worker::{WorkerHandle, WorkerOptions, start};
