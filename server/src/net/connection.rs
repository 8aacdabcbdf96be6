//! One connection's socket: read a message, have its [`Connection`] answer it off the
//! event loop, write the reply.
//!
//! A message is read whole (its length first, checked against `max_message_bytes`) after
//! taking its size from the server's budget of buffered bytes, so that many connections
//! sending large messages wait rather than exhaust memory. A message that cannot be decoded
//! closes this connection only.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Semaphore, watch};

use crate::service::Connection;
use crate::state::Counters;
use crate::wire;

/// Serves one connection until the client closes it, sends a malformed message, or the
/// server stops.
pub(crate) async fn serve<S>(
    connection: Connection,
    counters: &Counters,
    max_message_bytes: usize,
    mut stream: S,
    buffered: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut connection = Some(connection);
    loop {
        let mut first4 = [0u8; 4];
        tokio::select! {
            () = super::stopped(&mut stop) => return,
            read = stream.read_exact(&mut first4) => if read.is_err() { return },
        }
        let Ok(len) = wire::frame_length_limited(&first4, max_message_bytes) else {
            return;
        };
        let Ok(permit) = buffered
            .acquire_many(u32::try_from(len).unwrap_or(u32::MAX))
            .await
        else {
            return;
        };
        let mut bytes = vec![0u8; len];
        bytes[..4].copy_from_slice(&first4);
        if stream.read_exact(&mut bytes[4..]).await.is_err() {
            return;
        }
        Counters::add(&counters.bytes_in, len as u64);
        // The engine's calls block: the message is answered on the blocking pool, and the
        // connection goes there and back.
        let Some(mut c) = connection.take() else {
            return;
        };
        let Ok((c, reply)) = tokio::task::spawn_blocking(move || {
            let reply = c.handle(&bytes);
            (c, reply)
        })
        .await
        else {
            return;
        };
        connection = Some(c);
        drop(permit);
        let reply = match reply {
            Ok(Some(reply)) => reply,
            Ok(None) => continue,
            Err(_) => return,
        };
        if stream.write_all(&reply).await.is_err() || stream.flush().await.is_err() {
            return;
        }
        Counters::add(&counters.bytes_out, reply.len() as u64);
    }
}
