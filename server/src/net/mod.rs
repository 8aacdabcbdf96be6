//! The network side: the listener, its caps, and one task per connection.

mod connection;
mod listener;

pub(crate) use listener::{Listener, beyond_loopback, run};

/// Resolves once the server is stopping (`stop` turns true, or its sender is gone).
pub(crate) async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await.map(|_| ());
}
