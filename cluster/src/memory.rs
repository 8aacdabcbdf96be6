//! A cluster in one process without a socket: each worker's server on an in-memory pipe
//! (tokio's duplex streams), for the tests of a host that embeds tscoll, and ours.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion_distributed::grpc::BoxCloneSyncChannel;
use hyper_util::rt::TokioIo;
use tonic::transport::Endpoint;
use tscoll_engine::Database;
use url::Url;

use crate::Error;
use crate::channels::{Channels, MemoryNetwork};
use crate::config::ClusterConfig;
use crate::coordinator::Cluster;

/// Bytes an in-memory pipe buffers each way.
const PIPE_BYTES: usize = 1 << 20;

/// Serves each of `shards` (shard `i` is `shards[i]`) as a worker on an in-memory pipe, on
/// the current tokio runtime, and returns the cluster of them with `token`. The workers
/// stop when the runtime does.
///
/// # Errors
/// [`Error::ShardFile`] when a database's shard file cannot be read.
pub async fn in_memory(shards: Vec<Database>, token: Option<Arc<str>>) -> Result<Cluster, Error> {
    let urls: Vec<Url> = (0..shards.len())
        .map(|i| Url::parse(&format!("http://shard-{i}.invalid:7100")))
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Invalid(e.to_string()))?;
    let mut servers = Vec::with_capacity(shards.len());
    let mut network = BTreeMap::new();
    for url in &urls {
        let (client, server) = tokio::io::duplex(PIPE_BYTES);
        let mut client = Some(client);
        let channel = Endpoint::from_shared(url.to_string())
            .map_err(|e| Error::worker(url, e))?
            .connect_with_connector_lazy(tower::service_fn(move |_| {
                let io = client.take();
                async move {
                    io.map(TokioIo::new)
                        .ok_or_else(|| std::io::Error::other("an in-memory pipe connects once"))
                }
            }));
        network.insert(url.clone(), BoxCloneSyncChannel::new(channel));
        servers.push(server);
    }
    let network: MemoryNetwork = Arc::new(network);
    for (db, server) in shards.into_iter().zip(servers) {
        let router = crate::worker::routes(
            db,
            Channels::memory(Arc::clone(&network), token.clone()),
            None,
        )?;
        tokio::spawn(async move {
            router
                .serve_with_incoming(futures::stream::once(async move {
                    Ok::<_, std::io::Error>(server)
                }))
                .await
        });
    }
    let config = ClusterConfig {
        workers: urls,
        token: token.clone(),
    };
    Cluster::with_channels(config, Channels::memory(network, token))
}
