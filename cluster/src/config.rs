//! A cluster as its users name it: the workers in shard order (`--workers
//! HOST:PORT,HOST:PORT`, or a cluster file) and the shared token, if any.
//!
//! The cluster file is TOML:
//!
//! ```toml
//! # Shard 0 is the first worker. Keep the order: it numbers the shards.
//! workers = ["10.0.0.1:7100", "10.0.0.2:7100", "10.0.0.3:7100"]
//! # Optional: a file holding the shared token (relative to this file's folder).
//! token_file = "cluster.token"
//! ```

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use url::Url;

use crate::Error;

/// The workers of a cluster, in shard order, and its token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The workers' addresses (`http://HOST:PORT`): worker `i` holds shard `i`.
    pub workers: Vec<Url>,
    /// The shared secret every request carries, if the workers require one.
    pub token: Option<Arc<str>>,
}

/// The cluster file's fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterFile {
    workers: Vec<String>,
    #[serde(default)]
    token_file: Option<String>,
}

impl ClusterConfig {
    /// The cluster of the comma-separated workers `list` (`HOST:PORT` or
    /// `http://HOST:PORT`), without a token.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty list, an address that is not `HOST:PORT`, or a worker
    /// named twice.
    pub fn from_list(list: &str) -> Result<ClusterConfig, Error> {
        let items: Vec<&str> = list.split(',').map(str::trim).collect();
        ClusterConfig::from_items(&items)
    }

    fn from_items(items: &[&str]) -> Result<ClusterConfig, Error> {
        if items.iter().all(|i| i.is_empty()) {
            return Err(Error::Invalid("a cluster needs at least one worker".into()));
        }
        let mut workers: Vec<Url> = Vec::with_capacity(items.len());
        for item in items {
            let url = worker_url(item)?;
            if workers.contains(&url) {
                return Err(Error::Invalid(format!(
                    "the worker {item} is named twice: each worker holds one shard"
                )));
            }
            workers.push(url);
        }
        Ok(ClusterConfig {
            workers,
            token: None,
        })
    }

    /// The cluster of the TOML file `path` (`workers = [...]`, optional `token_file`).
    ///
    /// # Errors
    /// [`Error::Invalid`] when the file cannot be read or parsed, or names its workers as
    /// [`ClusterConfig::from_list`] refuses; or its token file cannot be read.
    pub fn from_file(path: &Path) -> Result<ClusterConfig, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Invalid(format!("cluster file {}: {e}", path.display())))?;
        let file: ClusterFile = toml::from_str(&text)
            .map_err(|e| Error::Invalid(format!("cluster file {}: {e}", path.display())))?;
        let items: Vec<&str> = file.workers.iter().map(String::as_str).collect();
        let mut config = ClusterConfig::from_items(&items)
            .map_err(|e| Error::Invalid(format!("cluster file {}: {e}", path.display())))?;
        if let Some(t) = file.token_file {
            let base = path.parent().unwrap_or_else(|| Path::new("."));
            config.token = Some(read_token(&base.join(t))?);
        }
        Ok(config)
    }

    /// The same cluster with `token`.
    #[must_use]
    pub fn with_token(mut self, token: Option<Arc<str>>) -> ClusterConfig {
        self.token = token;
        self
    }
}

/// The token in file `path` (its first line, without surrounding white space).
///
/// # Errors
/// [`Error::Invalid`] when the file cannot be read or its token is empty or not printable
/// ASCII.
pub fn read_token(path: &Path) -> Result<Arc<str>, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Invalid(format!("token file {}: {e}", path.display())))?;
    let token = text.lines().next().unwrap_or_default().trim();
    crate::auth::check_token(token)
        .map_err(|e| Error::Invalid(format!("token file {}: {e}", path.display())))?;
    Ok(Arc::from(token))
}

/// The URL of worker `item`: `HOST:PORT` or `http://HOST:PORT`.
fn worker_url(item: &str) -> Result<Url, Error> {
    let text = if item.contains("://") {
        item.to_owned()
    } else {
        format!("http://{item}")
    };
    let bad =
        |why: &str| Error::Invalid(format!("the worker address '{item}' {why}: give HOST:PORT"));
    let url = Url::parse(&text).map_err(|e| bad(&e.to_string()))?;
    if url.scheme() != "http" {
        return Err(bad("is not http"));
    }
    if url.host_str().is_none_or(str::is_empty) || url.port().is_none() {
        return Err(bad("has no host and port"));
    }
    if url.path() != "/" || url.query().is_some() {
        return Err(bad("has a path"));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_name_workers_in_shard_order() {
        let c = ClusterConfig::from_list("127.0.0.1:7001, http://127.0.0.1:7002,localhost:7003")
            .unwrap();
        let urls: Vec<String> = c.workers.iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:7001/",
                "http://127.0.0.1:7002/",
                "http://localhost:7003/"
            ]
        );
        for bad in ["", "127.0.0.1", "a:1,a:1", "https://a:1", "a:1/x", "a:b"] {
            assert!(ClusterConfig::from_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cluster_file_names_workers_and_token() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t"), "s3cret\n").unwrap();
        let f = dir.path().join("cluster.toml");
        std::fs::write(
            &f,
            "workers = [\"127.0.0.1:1\", \"127.0.0.1:2\"]\ntoken_file = \"t\"\n",
        )
        .unwrap();
        let c = ClusterConfig::from_file(&f).unwrap();
        assert_eq!(c.workers.len(), 2);
        assert_eq!(c.token.as_deref(), Some("s3cret"));
        std::fs::write(&f, "workers = [\"127.0.0.1:1\"]\nshards = 3\n").unwrap();
        let err = ClusterConfig::from_file(&f).unwrap_err().to_string();
        assert!(err.contains("shards"), "{err}");
    }
}
