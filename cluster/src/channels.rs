//! The connections of a cluster's processes to its workers: over TCP (one tonic channel per
//! worker, made on first use with a connect timeout and kept), or, for tests, over in-memory
//! pipes ([`MemoryNetwork`]: no socket). Every request carries the cluster's token.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion_distributed::grpc::{BoxCloneSyncChannel, create_worker_client};
use datafusion_distributed::{
    ChannelResolver, CoordinatorToWorkerMsg, ExecuteTaskRequest, GetWorkerInfoRequest,
    GetWorkerInfoResponse, SetPlanRequest, WorkerChannel, WorkerToCoordinatorMsg,
};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use http::HeaderMap;
use tonic::transport::Endpoint;
use url::Url;

use crate::Error;
use crate::auth::with_token;
use crate::client::CONNECT_TIMEOUT;

/// In-memory connections to workers, by URL: each a channel over a pipe to a worker's
/// server in this process.
pub(crate) type MemoryNetwork = Arc<BTreeMap<Url, BoxCloneSyncChannel>>;

/// How a coordinator or worker reaches workers: one channel (one HTTP/2 connection, made on
/// first use, with a connect timeout) per worker, shared by the Flight calls and
/// datafusion-distributed's.
#[derive(Clone, Default)]
pub(crate) struct Channels {
    tcp: Arc<Mutex<BTreeMap<Url, BoxCloneSyncChannel>>>,
    memory: Option<MemoryNetwork>,
    token: Option<Arc<str>>,
}

impl Channels {
    /// Connections over TCP carrying `token`.
    pub(crate) fn tcp(token: Option<Arc<str>>) -> Channels {
        Channels {
            tcp: Arc::default(),
            memory: None,
            token,
        }
    }

    /// Connections over the pipes of `network`, carrying `token`.
    pub(crate) fn memory(network: MemoryNetwork, token: Option<Arc<str>>) -> Channels {
        Channels {
            tcp: Arc::default(),
            memory: Some(network),
            token,
        }
    }

    /// The cluster's token.
    pub(crate) fn token(&self) -> Option<&Arc<str>> {
        self.token.as_ref()
    }

    /// A channel to `url` that connects on first use.
    ///
    /// # Errors
    /// [`Error::Worker`] for an address tonic cannot use, or one the in-memory network does
    /// not hold.
    pub(crate) fn lazy(&self, url: &Url) -> Result<BoxCloneSyncChannel, Error> {
        Ok(with_token(self.plain(url)?, self.token.as_ref()))
    }

    /// The channel to `url`, without the token.
    fn plain(&self, url: &Url) -> Result<BoxCloneSyncChannel, Error> {
        if let Some(net) = &self.memory {
            return net
                .get(url)
                .cloned()
                .ok_or_else(|| Error::worker(url, "not in the in-memory network"));
        }
        let mut tcp = self.tcp.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = tcp.get(url) {
            return Ok(c.clone());
        }
        let channel = BoxCloneSyncChannel::new(
            Endpoint::from_shared(url.to_string())
                .map_err(|e| Error::worker(url, e))?
                .connect_timeout(CONNECT_TIMEOUT)
                .tcp_nodelay(true)
                .connect_lazy(),
        );
        tcp.insert(url.clone(), channel.clone());
        Ok(channel)
    }
}

#[async_trait]
impl ChannelResolver for Channels {
    async fn get_worker_client_for_url(
        &self,
        url: &Url,
    ) -> Result<Box<dyn WorkerChannel>, DataFusionError> {
        let channel = self
            .plain(url)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(Box::new(NamedWorker {
            url: url.clone(),
            inner: create_worker_client(with_token(channel, self.token.as_ref())),
        }))
    }
}

/// A worker's channel whose every error names the worker: a query that fails because one
/// worker is down or died says which.
struct NamedWorker {
    url: Url,
    inner: Box<dyn WorkerChannel>,
}

/// Adds the worker `url` to an error.
fn named(url: &Url) -> impl Fn(DataFusionError) -> DataFusionError + Clone + Send + 'static {
    let url = url.clone();
    move |e| DataFusionError::Context(format!("worker {url}"), Box::new(e))
}

#[async_trait]
impl WorkerChannel for NamedWorker {
    async fn coordinator_channel(
        &mut self,
        headers: HeaderMap,
        set_plan_request: SetPlanRequest,
        c2w_stream: BoxStream<'static, CoordinatorToWorkerMsg>,
        metrics: ExecutionPlanMetricsSet,
        task_ctx: &Arc<TaskContext>,
    ) -> DfResult<BoxStream<'static, DfResult<WorkerToCoordinatorMsg>>> {
        let name = named(&self.url);
        let stream = self
            .inner
            .coordinator_channel(headers, set_plan_request, c2w_stream, metrics, task_ctx)
            .await
            .map_err(name.clone())?;
        Ok(stream.map_err(name).boxed())
    }

    async fn execute_task(
        &mut self,
        headers: HeaderMap,
        request: ExecuteTaskRequest,
        metrics: ExecutionPlanMetricsSet,
        task_ctx: &Arc<TaskContext>,
    ) -> DfResult<Vec<BoxStream<'static, DfResult<RecordBatch>>>> {
        let name = named(&self.url);
        let streams = self
            .inner
            .execute_task(headers, request, metrics, task_ctx)
            .await
            .map_err(name.clone())?;
        Ok(streams
            .into_iter()
            .map(|s| s.map_err(name.clone()).boxed())
            .collect())
    }

    async fn get_worker_info(
        &mut self,
        request: GetWorkerInfoRequest,
    ) -> DfResult<GetWorkerInfoResponse> {
        self.inner
            .get_worker_info(request)
            .await
            .map_err(named(&self.url))
    }
}
