//! The errors of a cluster's calls.

/// What a cluster call fails with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An argument, a cluster file or a shard key that cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// A worker that cannot be reached, refused the call or failed it: the message names it.
    #[error("worker {worker}: {message}")]
    Worker {
        /// The worker's address (`http://HOST:PORT`).
        worker: String,
        /// What happened.
        message: String,
    },
    /// The worker's shard file (`tscoll-shard.json` in its database directory).
    #[error("shard file {path}: {message}")]
    ShardFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The engine's error.
    #[error(transparent)]
    Engine(#[from] tscoll_engine::Error),
    /// DataFusion's error (planning or running a query).
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// A server that cannot start (an address in use, say).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The error of worker `worker`.
    pub(crate) fn worker(
        worker: &impl std::fmt::Display,
        message: impl std::fmt::Display,
    ) -> Error {
        Error::Worker {
            worker: worker.to_string(),
            message: message.to_string(),
        }
    }
}
