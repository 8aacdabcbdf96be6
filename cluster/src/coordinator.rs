//! The coordinator: a cluster's collections as SQL tables (a DataFusion session with
//! datafusion-distributed's planner, `session`), commands sent to every worker
//! (`command`), and writes sent to the shard of each series (`insert_documents`,
//! `insert_batch`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bson::{Bson, Document};
use datafusion::arrow::array::{BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::{SendableRecordBatchStream, SessionStateBuilder, TaskContext};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_distributed::{DistributedExt, SessionStateBuilderExt, WorkerResolver};
use futures::{StreamExt, TryStreamExt};
use tscoll_datafusion::{CollectionTable, ShardHost, ShardHostExtension};
use tscoll_engine::{Collection, CollectionSpec, ErrorCode, InsertOptions};
use url::Url;

use crate::Error;
use crate::channels::Channels;
use crate::client::WorkerClient;
use crate::codec::{ShardPlanCodec, encode_plan};
use crate::config::ClusterConfig;
use crate::plan::{ShardWorkers, route_to_shards, shard_task_count, split_by_shard};
use crate::protocol::{Address, usize_of};
use crate::routing::ShardKey;

/// What a routed write sends a shard: Arrow batches, or documents as given (each message a
/// run of BSON documents), so that every value reaches the shard as it was.
enum Payload {
    Batches(Vec<RecordBatch>),
    Documents(Vec<Vec<u8>>),
}

/// A shard's documents as messages of BSON, or why one could not be written.
type DocumentMessages = Result<Vec<Vec<u8>>, String>;

/// The bytes of documents a routed write puts in one message.
const PUT_MESSAGE_BYTES: usize = 4 << 20;

/// A cluster's collection as its workers describe it.
#[derive(Clone, Debug)]
pub struct ClusterCollection {
    /// The collection's name.
    pub name: String,
    /// Its options (the first shard's; every shard was created with the same).
    pub spec: CollectionSpec,
    /// Its shard key; `None` for a collection without a meta field.
    pub shard_key: Option<ShardKey>,
    /// Its Arrow schema, every shard's joined (`Collection::join_arrow_schemas_of`).
    pub schema: SchemaRef,
    /// The shards that hold it (all, unless a command failed on some).
    pub shards: Vec<usize>,
}

/// One shard's part of a routed write.
#[derive(Debug)]
pub struct ShardInsert {
    /// The shard.
    pub shard: usize,
    /// Its worker.
    pub worker: Url,
    /// Measurements sent to it.
    pub sent: usize,
    /// Their positions in the whole input, in order (`sent` of them).
    pub rows: Vec<usize>,
    /// Measurements it stored.
    pub inserted: usize,
    /// Measurements it rejected: `(position in the whole input, code, reason)`.
    pub errors: Vec<(usize, i32, String)>,
    /// Why the part failed as a whole (the worker down, say): none of its measurements
    /// that [`ShardInsert::inserted`] does not count were stored.
    pub failure: Option<Error>,
}

/// A cluster of workers, seen from a coordinator.
pub struct Cluster {
    config: ClusterConfig,
    channels: Channels,
    clients: Vec<WorkerClient>,
    /// Bytes of the leaves its sessions ran whole on workers (`ShardHost::execute`).
    received: Arc<AtomicU64>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("workers", &self.config.workers)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// The cluster of `config`; no connection is made until a call needs one.
    ///
    /// # Errors
    /// [`Error::Worker`] for a worker address tonic cannot use.
    ///
    /// # Panics
    /// Outside a tokio runtime (`Runtime::enter`, or an async context): the connections are
    /// tasks of the current runtime.
    pub fn new(config: ClusterConfig) -> Result<Cluster, Error> {
        let channels = Channels::tcp(config.token.clone());
        Cluster::with_channels(config, channels)
    }

    /// The cluster of `config`, its workers reached through `channels`.
    pub(crate) fn with_channels(
        config: ClusterConfig,
        channels: Channels,
    ) -> Result<Cluster, Error> {
        let shards = config.workers.len();
        let clients = config
            .workers
            .iter()
            .enumerate()
            .map(|(shard, url)| WorkerClient::new(url, Address { shard, shards }, &channels))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Cluster {
            config,
            channels,
            clients,
            received: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The workers, in shard order.
    #[must_use]
    pub fn workers(&self) -> &[Url] {
        &self.config.workers
    }

    /// Runs MongoDB command `command` (`{create: "cpu", timeseries: {...}}`, `{collMod:
    /// ...}`, `{createIndexes: ...}`, `{drop: "cpu"}`, `{listCollections: 1}`, …) on every
    /// worker, each as its shard, and returns each worker's reply in shard order (a failed
    /// command is a reply with `ok: 0`). A `create` gives workers that hold no shard yet
    /// their shard number, and records `shard_key` (default: the meta field) as the
    /// collection's.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a shard key the `create` cannot take; [`Error::Worker`] for a
    /// worker that cannot be reached or holds another shard: the others ran the command.
    pub async fn command(
        &self,
        command: &Document,
        shard_key: Option<&str>,
    ) -> Result<Vec<(Url, Result<Document, Error>)>, Error> {
        let name = command
            .keys()
            .next()
            .map(String::as_str)
            .unwrap_or_default();
        let create = name == "create";
        let key = if create {
            let meta = command
                .get_document("timeseries")
                .ok()
                .and_then(|t| t.get_str("metaField").ok());
            match (shard_key, meta) {
                (Some(k), m) => Some(ShardKey::new(k, m)?.path().to_owned()),
                (None, Some(m)) => Some(m.to_owned()),
                (None, None) => None,
            }
        } else {
            if shard_key.is_some() {
                return Err(Error::Invalid(
                    "a shard key is chosen when the collection is created".into(),
                ));
            }
            None
        };
        let calls = self
            .clients
            .iter()
            .map(|c| c.command(command, create, key.as_deref()));
        let replies = futures::future::join_all(calls).await;
        Ok(self.config.workers.iter().cloned().zip(replies).collect())
    }

    /// Every collection the workers hold, their descriptions merged: the options of the
    /// first shard, the schemas joined, the shard key.
    ///
    /// # Errors
    /// [`Error::Worker`] naming a worker that cannot be reached, holds another shard than
    /// its place in the list, or describes a collection with other time or meta fields or
    /// another shard key than the others.
    pub async fn collections(&self) -> Result<Vec<ClusterCollection>, Error> {
        // Not tolerant: the first worker that cannot be reached fails the call.
        Ok(self.described(false).await?.0)
    }

    /// Every collection the workers hold, as [`Cluster::collections`], but described by
    /// the workers that answer: each worker that cannot be reached is left out (its shard
    /// is not in [`ClusterCollection::shards`]) and its error returned beside. For a write
    /// that goes on while a worker is down: its shard's part fails, the others' are stored.
    ///
    /// # Errors
    /// As [`Cluster::collections`] for the workers that answer; [`Error::Worker`] when none
    /// does.
    pub async fn reachable_collections(
        &self,
    ) -> Result<(Vec<ClusterCollection>, Vec<Error>), Error> {
        let (collections, mut unreachable) = self.described(true).await?;
        if unreachable.len() == self.clients.len() && !unreachable.is_empty() {
            return Err(unreachable.swap_remove(0));
        }
        Ok((collections, unreachable))
    }

    /// The workers' descriptions merged; with `tolerant`, the workers that cannot be
    /// reached are left out and their errors returned, else the first fails the call.
    async fn described(
        &self,
        tolerant: bool,
    ) -> Result<(Vec<ClusterCollection>, Vec<Error>), Error> {
        let described =
            futures::future::join_all(self.clients.iter().map(WorkerClient::describe)).await;
        let mut merged: BTreeMap<String, ClusterCollection> = BTreeMap::new();
        let mut unreachable = Vec::new();
        for (client, d) in self.clients.iter().zip(described) {
            let d = match d {
                Ok(d) => d,
                Err(e) if tolerant => {
                    unreachable.push(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let (Ok(s), Ok(n)) = (usize_of(&d, "shard"), usize_of(&d, "shards"))
                && (s, n) != (client.at.shard, client.at.shards)
            {
                return Err(Error::worker(
                    &client.url,
                    format!(
                        "holds shard {s} of {n}, but the list names it shard {} of {}",
                        client.at.shard, client.at.shards
                    ),
                ));
            }
            let colls = d
                .get_array("collections")
                .map_err(|e| Error::worker(&client.url, e))?;
            for c in colls {
                let c = c
                    .as_document()
                    .ok_or_else(|| Error::worker(&client.url, "a collection not a document"))?;
                let one = read_collection(c, client)?;
                match merged.get_mut(&one.name) {
                    None => {
                        merged.insert(one.name.clone(), one);
                    }
                    Some(all) => {
                        if all.spec.time_field != one.spec.time_field
                            || all.spec.meta_field != one.spec.meta_field
                            || all.shard_key != one.shard_key
                        {
                            return Err(Error::worker(
                                &client.url,
                                format!(
                                    "collection '{}' has other time or meta fields or another \
                                     shard key than on the shards before it",
                                    one.name
                                ),
                            ));
                        }
                        all.schema =
                            Collection::join_arrow_schemas_of(&all.spec, &all.schema, &one.schema)
                                .map_err(|e| Error::worker(&client.url, e))?;
                        all.shards.extend(one.shards);
                    }
                }
            }
        }
        Ok((merged.into_values().collect(), unreachable))
    }

    /// A DataFusion session over the cluster: each collection every worker holds is a
    /// table of its name (the meta field a struct, as `tscoll sql`); queries are planned by
    /// datafusion-distributed, one task per shard read, each sent to the shard's worker;
    /// aggregates are partial on the workers and final here; a filter that pins the shard
    /// key reads its shard alone.
    ///
    /// # Errors
    /// What [`Cluster::collections`] fails with.
    pub async fn session(&self, config: SessionConfig) -> Result<SessionContext, Error> {
        self.session_with(config, Arc::new(RuntimeEnv::default()))
            .await
    }

    /// [`Cluster::session`] whose operators here hold at most `memory_bytes` (sorts and
    /// aggregates spill beyond it: `tscoll_datafusion::bounded_context`), as `tscoll sql`
    /// runs.
    ///
    /// # Errors
    /// As [`Cluster::session`]; the temporary directory cannot be used.
    pub async fn bounded_session(&self, memory_bytes: usize) -> Result<SessionContext, Error> {
        let (config, runtime) = tscoll_datafusion::bounded_parts(memory_bytes)?;
        self.session_with(config, runtime).await
    }

    async fn session_with(
        &self,
        config: SessionConfig,
        runtime: Arc<RuntimeEnv>,
    ) -> Result<SessionContext, Error> {
        let collections = self.collections().await?;
        let n = self.clients.len();
        let host = Arc::new(ClusterHost {
            clients: self.clients.clone(),
            keys: collections
                .iter()
                .filter_map(|c| Some((c.name.clone(), c.shard_key.clone()?)))
                .collect(),
            received: Arc::clone(&self.received),
        });
        let workers = ShardWorkers(self.config.workers.clone());
        let resolver = StaticWorkers(self.config.workers.clone());
        let state = SessionStateBuilder::new()
            .with_default_features()
            .with_runtime_env(runtime)
            .with_config(config.with_extension(Arc::new(ShardHostExtension(host))))
            .with_distributed_worker_resolver(resolver)
            .with_distributed_channel_resolver(self.channels.clone())
            .with_distributed_planner()
            .with_distributed_user_codec(ShardPlanCodec)
            .with_distributed_desired_task_count_handler(shard_task_count)
            .with_distributed_scale_up_leaf_node_handler(split_by_shard)
            .with_distributed_route_tasks_handler(
                move |ev: datafusion_distributed::RouteTasksEvent<'_>| {
                    route_to_shards(&workers, &ev)
                },
            )
            .build();
        let ctx = SessionContext::from(state);
        tscoll_datafusion::add_rules(&ctx);
        for c in collections {
            if c.shards.len() != n {
                // Held by some shards only (a create that failed on others): not a table.
                continue;
            }
            let table = CollectionTable::remote(&c.name, c.schema, c.spec.meta_field.clone(), n);
            ctx.register_table(c.name.as_str(), Arc::new(table))?;
        }
        Ok(ctx)
    }

    /// Bytes received so far by this cluster's sessions for the leaves they ran whole on a
    /// worker (a query whose leaf stage datafusion-distributed kept on the coordinator, e.g.
    /// one that reads one shard): the Arrow Flight messages' headers, bodies and metadata.
    /// With [`bytes_between_stages`], what a query moved between processes.
    #[must_use]
    pub fn leaf_bytes_received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// The collection `name` as the workers describe it.
    ///
    /// # Errors
    /// [`Error::Invalid`] when no worker holds it; what [`Cluster::collections`] fails with.
    pub async fn collection(&self, name: &str) -> Result<ClusterCollection, Error> {
        self.collections()
            .await?
            .into_iter()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::Invalid(format!("the cluster has no collection '{name}'")))
    }

    /// Inserts `docs` into collection `coll`: each measurement sent to the shard of its
    /// shard key's value, each shard's part in one call (concurrently), with `options`
    /// applied per shard (an ordered part stops at its first rejected measurement; the
    /// other shards' parts go on). Positions in the results are positions in `docs`.
    #[must_use = "a shard's part may have failed"]
    pub async fn insert_documents(
        &self,
        coll: &ClusterCollection,
        docs: &[Document],
        options: &InsertOptions,
    ) -> Vec<ShardInsert> {
        let n = self.clients.len();
        // Each shard's positions, and its documents' BSON written one after another into
        // messages of about `PUT_MESSAGE_BYTES`.
        let mut parts: Vec<(Vec<usize>, DocumentMessages)> =
            (0..n).map(|_| (Vec::new(), Ok(Vec::new()))).collect();
        let mut scratch = Vec::new();
        for (i, d) in docs.iter().enumerate() {
            let shard = coll
                .shard_key
                .as_ref()
                .map_or(0, |k| k.shard_of_with(d, n, &mut scratch));
            let (rows, messages) = &mut parts[shard];
            rows.push(i);
            if let Ok(messages) = messages {
                if messages
                    .last()
                    .is_none_or(|m: &Vec<u8>| m.len() >= PUT_MESSAGE_BYTES)
                {
                    messages.push(Vec::new());
                }
                if let Some(m) = messages.last_mut()
                    && let Err(e) = d.to_writer(m)
                {
                    parts[shard].1 = Err(format!("measurement {i} cannot be written as BSON: {e}"));
                }
            }
        }
        let sends = parts
            .into_iter()
            .enumerate()
            .map(|(shard, (rows, messages))| async move {
                let part = messages.map(Payload::Documents).map_err(|message| {
                    tscoll_engine::Error::Rejected {
                        code: ErrorCode::BadValue,
                        message,
                    }
                });
                self.send(shard, &coll.name, &rows, part, options).await
            });
        futures::future::join_all(sends).await
    }

    /// Inserts the rows of `batch` (as `Collection::insert_record_batch` reads them: the
    /// time field's column, the meta field's, the measurement fields') into collection
    /// `coll`, each row sent to the shard of its shard key's value. As
    /// [`Cluster::insert_documents`]; positions are rows of `batch`.
    #[must_use = "a shard's part may have failed"]
    pub async fn insert_batch(
        &self,
        coll: &ClusterCollection,
        batch: &RecordBatch,
        options: &InsertOptions,
    ) -> Vec<ShardInsert> {
        let n = self.clients.len();
        let shard_of = match row_shards(coll, batch, n) {
            Ok(s) => s,
            Err(e) => {
                // Nothing sent: every shard's part fails alike.
                let message = e.to_string();
                return (0..n)
                    .map(|shard| ShardInsert {
                        shard,
                        worker: self.config.workers[shard].clone(),
                        sent: 0,
                        rows: Vec::new(),
                        inserted: 0,
                        errors: Vec::new(),
                        failure: Some(Error::Invalid(message.clone())),
                    })
                    .collect();
            }
        };
        let sends = (0..n).map(|shard| {
            let rows: Vec<usize> = (0..batch.num_rows())
                .filter(|&r| shard_of[r] == shard)
                .collect();
            let mask: BooleanArray = shard_of.iter().map(|&s| Some(s == shard)).collect();
            let part = filter_record_batch(batch, &mask)
                .map(|b| Payload::Batches(vec![b]))
                .map_err(|e| tscoll_engine::Error::Rejected {
                    code: ErrorCode::BadValue,
                    message: e.to_string(),
                });
            async move { self.send(shard, &coll.name, &rows, part, options).await }
        });
        futures::future::join_all(sends).await
    }

    /// Sends shard `shard` the batches of its rows `rows` (positions in the caller's
    /// input, in order).
    async fn send(
        &self,
        shard: usize,
        collection: &str,
        rows: &[usize],
        payload: Result<Payload, tscoll_engine::Error>,
        options: &InsertOptions,
    ) -> ShardInsert {
        let client = &self.clients[shard];
        let mut out = ShardInsert {
            shard,
            worker: client.url.clone(),
            sent: rows.len(),
            rows: rows.to_vec(),
            inserted: 0,
            errors: Vec::new(),
            failure: None,
        };
        if rows.is_empty() {
            return out;
        }
        let sent = match payload {
            Ok(Payload::Batches(b)) => client.put(collection, b, options).await,
            Ok(Payload::Documents(d)) => client.put_documents(collection, d, options).await,
            Err(e) => {
                out.failure = Some(Error::Engine(e));
                return out;
            }
        };
        match sent {
            Ok(replies) => {
                for r in replies {
                    out.inserted += usize_of(&r, "inserted").unwrap_or(0);
                    for e in r.get_array("errors").map(|a| a.as_slice()).unwrap_or(&[]) {
                        let Some(e) = e.as_document() else { continue };
                        let at = usize_of(e, "index").unwrap_or(0);
                        out.errors.push((
                            rows.get(at).copied().unwrap_or(at),
                            e.get_i32("code").unwrap_or(0),
                            e.get_str("message").unwrap_or_default().to_owned(),
                        ));
                    }
                }
            }
            Err(e) => out.failure = Some(e),
        }
        out
    }
}

/// The shard of each row of `batch`: its shard key's value read from the meta column.
fn row_shards(
    coll: &ClusterCollection,
    batch: &RecordBatch,
    n: usize,
) -> Result<Vec<usize>, Error> {
    let Some(key) = &coll.shard_key else {
        return Ok(vec![0; batch.num_rows()]);
    };
    let Some(meta) = &coll.spec.meta_field else {
        return Ok(vec![0; batch.num_rows()]);
    };
    let Ok(i) = batch.schema().index_of(meta) else {
        // No meta column: every row lacks the key.
        return Ok(vec![
            crate::routing::shard_of_value(None, n);
            batch.num_rows()
        ]);
    };
    let metas = batch.project(&[i]).map_err(DataFusionError::from)?;
    let docs = tscoll_engine::arrow::documents_from_batch(&metas)?;
    let mut scratch = Vec::new();
    Ok(docs
        .iter()
        .map(|d| key.shard_of_with(d, n, &mut scratch))
        .collect())
}

/// One collection of a worker's `describe`.
fn read_collection(c: &Document, client: &WorkerClient) -> Result<ClusterCollection, Error> {
    let bad = |e: &dyn std::fmt::Display| Error::worker(&client.url, format!("describe: {e}"));
    let name = c.get_str("name").map_err(|e| bad(&e))?.to_owned();
    let spec = c
        .get_document("spec")
        .ok()
        .and_then(CollectionSpec::from_stored)
        .ok_or_else(|| bad(&"no options"))?;
    let shard_key = match c.get("shardKey") {
        Some(Bson::String(k)) => {
            Some(ShardKey::new(k, spec.meta_field.as_deref()).map_err(|e| bad(&e))?)
        }
        _ => ShardKey::of_meta(spec.meta_field.as_deref()),
    };
    let schema_bytes = c.get_binary_generic("schema").map_err(|e| bad(&e))?;
    let schema = tscoll_datafusion::schema_from_bytes(schema_bytes).map_err(|e| bad(&e))?;
    Ok(ClusterCollection {
        name,
        spec,
        shard_key,
        schema,
        shards: vec![client.at.shard],
    })
}

/// The workers a coordinator plans with: the cluster's list.
struct StaticWorkers(Vec<Url>);

impl WorkerResolver for StaticWorkers {
    fn get_urls(&self) -> DfResult<Vec<Url>> {
        Ok(self.0.clone())
    }
}

/// A coordinator's side of remote shards: pruning by shard key, and leaves run whole on
/// their worker.
#[derive(Clone)]
struct ClusterHost {
    clients: Vec<WorkerClient>,
    keys: BTreeMap<String, ShardKey>,
    received: Arc<AtomicU64>,
}

impl std::fmt::Debug for ClusterHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterHost")
            .field("shards", &self.clients.len())
            .finish_non_exhaustive()
    }
}

impl ShardHost for ClusterHost {
    fn shards_for(&self, collection: &str, filter: &Document) -> Vec<usize> {
        let n = self.clients.len();
        self.keys
            .get(collection)
            .and_then(|k| k.shards_for(filter, n))
            .unwrap_or_else(|| (0..n).collect())
    }

    fn execute(
        &self,
        shard: usize,
        plan: Arc<dyn ExecutionPlan>,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let client = self
            .clients
            .get(shard)
            .cloned()
            .ok_or_else(|| DataFusionError::Plan(format!("no worker holds shard {shard}")))?;
        let bytes = encode_plan(plan.as_ref())?;
        let schema = plan.schema();
        let url = client.url.clone();
        let received = Arc::clone(&self.received);
        let batches =
            futures::stream::once(async move { client.get(bytes, partition, received).await })
                .map_err(|e| DataFusionError::External(Box::new(e)))
                .map_ok(move |s| {
                    let url = url.clone();
                    s.map_err(move |e| DataFusionError::External(Box::new(Error::worker(&url, e))))
                })
                .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            batches.boxed(),
        )))
    }
}

/// Bytes a distributed plan moved between its stages (datafusion-distributed's
/// `bytes_transferred` of each network boundary, the encoded Arrow messages), once it has run
/// to its end: the plan with its metrics gathered from the workers
/// (`datafusion_distributed::rewrite_distributed_plan_with_metrics`). 0 for a plan that was
/// not distributed.
#[must_use]
pub fn bytes_between_stages(plan: &Arc<dyn ExecutionPlan>) -> u64 {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let mut total = 0u64;
    let _ = plan.apply(|node| {
        if let Some(m) = node.metrics() {
            for metric in m.iter() {
                if metric.value().name() == "bytes_transferred" {
                    total += u64::try_from(metric.value().as_usize()).unwrap_or(u64::MAX);
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    total
}
