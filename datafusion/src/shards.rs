//! Where a table's measurements are: collections open in this process, or shards held by
//! other processes (workers of a cluster, docs/scale-out.md) that a plan is sent to.
//!
//! A plan over remote shards names its collection and the shard numbers it reads. It runs
//! where a [`ShardDatabase`] is in the session (a worker: the plan reads that database's
//! collection of the name), or where a [`ShardHostExtension`] is (a coordinator that kept the
//! leaf in its own stage: the host runs it on the shard's worker and streams its batches
//! back).

use std::fmt;
use std::sync::{Arc, OnceLock};

use bson::Document;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::ExecutionPlan;
use tscoll_engine::{Collection, Database};

use crate::table::external;

/// The collections a table or plan reads.
#[derive(Clone, Debug)]
pub enum Shards {
    /// Collections open in this process (one, or the shards of one data set).
    Local(Vec<Collection>),
    /// The collection `collection` in the shards numbered `shards` (positions in the
    /// cluster's list of workers), each held by another process.
    Remote {
        /// The collection's name, the same in every shard.
        collection: String,
        /// The shard numbers, in partition order.
        shards: Vec<usize>,
    },
}

impl Shards {
    /// How many shards (collections) the plan reads.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Shards::Local(c) => c.len(),
            Shards::Remote { shards, .. } => shards.len(),
        }
    }

    /// Whether the plan reads no shard (a remote plan's task that was given none).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same remote collection in the shards `shards`; `None` for local collections.
    #[must_use]
    pub fn remote_subset(&self, shards: Vec<usize>) -> Option<Shards> {
        match self {
            Shards::Local(_) => None,
            Shards::Remote { collection, .. } => Some(Shards::Remote {
                collection: collection.clone(),
                shards,
            }),
        }
    }

    /// The collection of shard position `i` where it can be read in this process: a local
    /// collection, or the collection of a remote plan on the worker that holds it (its
    /// session has a [`ShardDatabase`]). `Ok(None)`: a remote shard on a process without one.
    pub(crate) fn resolve(&self, i: usize, ctx: &TaskContext) -> Result<Option<Collection>> {
        match self {
            Shards::Local(c) => c.get(i).cloned().map(Some).ok_or_else(|| {
                DataFusionError::Internal(format!("shard {i} of {} collections", c.len()))
            }),
            Shards::Remote { collection, shards } => {
                let Some(db) = ctx.session_config().get_extension::<ShardDatabase>() else {
                    return Ok(None);
                };
                let wanted = shards.get(i).copied();
                let held = db.shard.get().copied();
                if held.is_none() || held != wanted {
                    return Err(DataFusionError::Plan(format!(
                        "a plan for shard {} of collection '{collection}' reached the worker \
                         of shard {}: give the workers in the order they were created with",
                        wanted.map_or_else(|| "?".into(), |w| w.to_string()),
                        held.map_or_else(|| "none".into(), |h| h.to_string()),
                    )));
                }
                db.database
                    .collection(collection)
                    .map(Some)
                    .map_err(external)
            }
        }
    }

    /// The shard number of position `i` of a remote plan.
    pub(crate) fn remote_shard(&self, i: usize) -> Option<usize> {
        match self {
            Shards::Local(_) => None,
            Shards::Remote { shards, .. } => shards.get(i).copied(),
        }
    }
}

impl fmt::Display for Shards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shards::Local(c) => write!(f, "{}", c.len()),
            Shards::Remote { shards, .. } => write!(f, "{shards:?}"),
        }
    }
}

/// On a worker: the database whose collections plans over remote shards read, and the shard
/// it is, as a session config extension (`SessionConfig::with_extension`). A plan for another
/// shard fails instead of reading this one's measurements as that shard's.
#[derive(Debug)]
pub struct ShardDatabase {
    /// The worker's database.
    pub database: Database,
    /// The shard number the database holds, once the cluster has assigned it.
    pub shard: Arc<OnceLock<usize>>,
}

/// What a coordinator's session needs to plan and run queries over remote shards.
pub trait ShardHost: fmt::Debug + Send + Sync {
    /// The shards whose measurements may match `filter` (a MongoDB filter on collection
    /// `collection`), in ascending order; every shard when the filter does not say.
    fn shards_for(&self, collection: &str, filter: &Document) -> Vec<usize>;

    /// Runs `plan`, a leaf over the one remote shard `shard`, on the worker that holds it and
    /// streams partition `partition` of its output back.
    ///
    /// # Errors
    /// A worker that cannot be reached or fails the plan: the error names the worker.
    fn execute(
        &self,
        shard: usize,
        plan: Arc<dyn ExecutionPlan>,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream>;
}

/// A [`ShardHost`] as a session config extension.
#[derive(Debug, Clone)]
pub struct ShardHostExtension(pub Arc<dyn ShardHost>);

/// The error of a remote plan run where no shard is held and no host can send it on.
pub(crate) fn nowhere_to_run(name: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{name} over remote shards runs on a worker (a session with a ShardDatabase) or a \
         coordinator (a session with a ShardHostExtension)"
    ))
}
