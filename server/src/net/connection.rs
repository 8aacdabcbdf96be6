//! One connection: read a message, run its command off the event loop, write the reply.
//!
//! A message is read whole (its length first, checked against `max_message_bytes`) after
//! taking its size from the server's budget of buffered bytes, so that many connections
//! sending large messages wait rather than exhaust memory. A message that cannot be decoded
//! closes this connection only. An OP_MSG flagged `moreToCome` gets no reply.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Semaphore, watch};

use crate::command::{self, CommandError, Request};
use crate::state::{Counters, Session, Shared};
use crate::wire::{self, Message, OpMsg, OpReply};

/// Serves one connection until the client closes it, sends a malformed message, or the
/// server stops.
pub(crate) async fn serve<S>(
    shared: Arc<Shared>,
    mut stream: S,
    peer: SocketAddr,
    connection_id: u64,
    buffered: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut session = Some(Session {
        connection_id,
        peer,
        user: None,
        conversation: None,
    });
    let max = shared.options.max_message_bytes;
    let mut request_id: i32 = 0;
    loop {
        let mut first4 = [0u8; 4];
        tokio::select! {
            () = super::stopped(&mut stop) => return,
            read = stream.read_exact(&mut first4) => if read.is_err() { return },
        }
        let Ok(len) = wire::frame_length_limited(&first4, max) else {
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
        Counters::add(&shared.counters.bytes_in, len as u64);
        Counters::add(&shared.counters.requests, 1);
        let Ok((header, message)) = wire::decode(&bytes, max) else {
            return;
        };
        drop(bytes);
        let (reply, no_reply) = match message {
            Message::Msg(msg) => {
                let more_to_come = msg.more_to_come();
                let OpMsg {
                    body, sequences, ..
                } = msg;
                let request = Request::from_msg(body, sequences);
                let Some(reply) = execute(&shared, &mut session, request).await else {
                    return;
                };
                (
                    OpMsg::encode_raw_reply(
                        reply.as_bytes(),
                        next(&mut request_id),
                        header.request_id,
                    ),
                    more_to_come,
                )
            }
            Message::Query(query) => {
                let request = Request::from_query(&query.full_collection_name, query.query);
                let Some(reply) = execute(&shared, &mut session, request).await else {
                    return;
                };
                let Ok(doc) = bson::Document::try_from(reply.as_ref()) else {
                    return;
                };
                match OpReply::single(doc).encode(next(&mut request_id), header.request_id) {
                    Ok(bytes) => (bytes, false),
                    Err(_) => return,
                }
            }
            Message::Compressed { .. } => {
                let err = CommandError::new(
                    2,
                    "BadValue",
                    "OP_COMPRESSED is not supported: tscoll offers no compressors",
                );
                match OpMsg::new(err.to_reply()).encode(
                    next(&mut request_id),
                    header.request_id,
                    false,
                ) {
                    Ok(bytes) => (bytes, false),
                    Err(_) => return,
                }
            }
        };
        drop(permit);
        if no_reply {
            continue;
        }
        if stream.write_all(&reply).await.is_err() || stream.flush().await.is_err() {
            return;
        }
        Counters::add(&shared.counters.bytes_out, reply.len() as u64);
    }
}

/// Runs a request on the blocking pool (the engine's calls block); the session goes there
/// and back. `None` if the task failed (a panic in a command: the connection closes).
async fn execute(
    shared: &Arc<Shared>,
    session: &mut Option<Session>,
    request: Result<Request, CommandError>,
) -> Option<bson::RawDocumentBuf> {
    let mut s = session.take()?;
    let shared = Arc::clone(shared);
    let (reply, s) = tokio::task::spawn_blocking(move || {
        let reply = match request {
            Ok(request) => command::run(&shared, &mut s, request),
            Err(e) => command::Reply::Doc(e.to_reply()),
        };
        (reply.into_raw(), s)
    })
    .await
    .ok()?;
    *session = Some(s);
    Some(reply)
}

fn next(id: &mut i32) -> i32 {
    *id = id.wrapping_add(1);
    *id
}
