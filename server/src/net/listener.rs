//! Accepting connections: the cap on connections, the shared budget of buffered bytes, the
//! cursor timeout's sweep, and the graceful stop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::connection;
use crate::service::Service;
use crate::state::Counters;

/// A bound listener and what its connections share.
pub(crate) struct Listener {
    pub(crate) tcp: TcpListener,
    pub(crate) service: Service,
    /// TLS, when the server speaks it.
    pub(crate) tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Longest wait for a client's TLS handshake.
const TLS_HANDSHAKE: Duration = Duration::from_secs(10);

/// Longest wait, once stopping, for the connections' commands in progress to end.
const DRAIN: Duration = Duration::from_secs(30);

/// Accepts connections until `stop` turns true, then waits for the open ones to finish
/// their command in progress (at most 30 s) and returns.
pub(crate) async fn run(listener: Listener, mut stop: watch::Receiver<bool>) {
    let Listener { tcp, service, tls } = listener;
    let shared = Arc::clone(&service.shared);
    let connections = Arc::new(Semaphore::new(shared.options.max_connections));
    let buffered = Arc::new(Semaphore::new(
        shared
            .options
            .max_buffered_bytes
            .max(shared.options.max_message_bytes)
            .min(Semaphore::MAX_PERMITS),
    ));
    let max = shared.options.max_message_bytes;
    let mut tasks = JoinSet::new();
    let stop_for_connections = stop.clone();
    let sweep = sweep_cursors(service.clone(), stop.clone());
    let sweeper = tokio::spawn(sweep);
    loop {
        tokio::select! {
            () = super::stopped(&mut stop) => break,
            accepted = tcp.accept() => {
                let Ok((stream, peer)) = accepted else {
                    // Out of file descriptors and the like: wait a little, go on.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
                    Counters::add(&shared.counters.connections_rejected, 1);
                    drop(stream);
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let connection = service.connect(peer);
                let shared = Arc::clone(&shared);
                let buffered = Arc::clone(&buffered);
                let stop = stop_for_connections.clone();
                let tls = tls.clone();
                tasks.spawn(async move {
                    Counters::add(&shared.counters.connections_current, 1);
                    match tls {
                        None => connection::serve(connection, &shared.counters, max, stream, buffered, stop).await,
                        Some(tls) => {
                            // A client that does not finish its handshake in time is dropped.
                            if let Ok(Ok(stream)) = tokio::time::timeout(TLS_HANDSHAKE, tls.accept(stream)).await {
                                connection::serve(connection, &shared.counters, max, stream, buffered, stop).await;
                            }
                        }
                    }
                    shared.counters.connections_current.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    drop(permit);
                });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(tcp);
    let _ = tokio::time::timeout(DRAIN, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.abort_all();
    sweeper.abort();
}

/// Closes idle cursors past the timeout, checking every tenth of it (at most every minute).
async fn sweep_cursors(service: Service, mut stop: watch::Receiver<bool>) {
    let every = (service.shared.options.cursor_timeout / 10)
        .clamp(Duration::from_millis(10), Duration::from_secs(60));
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            () = super::stopped(&mut stop) => return,
            _ = tick.tick() => { service.close_idle_cursors(); }
        }
    }
}

/// Whether clients from beyond this machine can reach `addr`.
pub(crate) fn beyond_loopback(addr: &SocketAddr) -> bool {
    !addr.ip().is_loopback()
}
