//! Server-side cursors: the first batch of `find`, `aggregate`, `listCollections` and
//! `listIndexes`, the batches of `getMore`, `killCursors`, and the idle timeout.
//!
//! A cursor is the engine's stream of documents, kept between commands under a random id.
//! A batch holds at most `batchSize` documents (101 for a first batch without one, as
//! MongoDB; unlimited for `getMore`) and at most 16 MiB of them: the document that would
//! pass that is kept for the next batch (the first document of a batch always goes, and is
//! at most 16 MiB itself). A cursor unread for `cursor_timeout` (10 minutes) is closed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bson::raw::{RawArrayBuf, RawDocumentBuf};
use bson::{Document, cstr};

use super::error::CommandError;
use crate::wire::MAX_BSON_OBJECT_BYTES;

/// The documents a cursor yields.
pub(crate) type DocStream = Box<dyn Iterator<Item = tscoll_engine::Result<Document>> + Send>;

/// The documents of a first batch when the command gives no `batchSize` (MongoDB's 101).
pub(crate) const DEFAULT_FIRST_BATCH: u64 = 101;

/// An open cursor.
struct OpenCursor {
    /// `db.collection` (for the replies and the check of `getMore`'s `collection`).
    ns: String,
    docs: DocStream,
    /// A document read for a batch it did not fit in.
    pending: Option<RawDocumentBuf>,
    last_used: Instant,
    /// The user who opened it (`None` without authentication): only they may read it.
    owner: Option<String>,
}

/// A cursor's slot: idle, or being read by a `getMore`.
enum Slot {
    Idle(OpenCursor),
    InUse,
}

/// The open cursors of a server.
pub(crate) struct Cursors {
    map: Mutex<HashMap<i64, Slot>>,
    timeout: Duration,
}

/// What a batch came to.
pub(crate) struct Batch {
    docs: RawArrayBuf,
    /// The stream has no more documents.
    exhausted: bool,
}

impl Cursors {
    pub(crate) fn new(timeout: Duration) -> Self {
        Cursors {
            map: Mutex::new(HashMap::new()),
            timeout,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Slot>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Open cursors.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Reads a first batch from `docs` and, unless it ended (or `single_batch`), keeps the
    /// rest as a cursor. The reply: `{cursor: {firstBatch, id, ns}, ok: 1}`.
    pub(crate) fn first_batch(
        &self,
        ns: String,
        mut docs: DocStream,
        batch_size: Option<u64>,
        single_batch: bool,
        owner: Option<String>,
    ) -> Result<RawDocumentBuf, CommandError> {
        let mut pending = None;
        let batch = fill(
            &mut docs,
            &mut pending,
            batch_size.unwrap_or(DEFAULT_FIRST_BATCH),
        )?;
        let id = if batch.exhausted || single_batch {
            0
        } else {
            let cursor = OpenCursor {
                ns: ns.clone(),
                docs,
                pending,
                last_used: Instant::now(),
                owner,
            };
            let mut map = self.lock();
            let mut id: i64 = rand::random::<i64>() & i64::MAX;
            while id == 0 || map.contains_key(&id) {
                id = rand::random::<i64>() & i64::MAX;
            }
            map.insert(id, Slot::Idle(cursor));
            id
        };
        Ok(reply(batch.docs, cstr!("firstBatch"), id, &ns))
    }

    /// `getMore`: the next batch of cursor `id`, which must be of `ns` and opened by
    /// `user`. The reply: `{cursor: {nextBatch, id, ns}, ok: 1}` (id 0 once it ends).
    pub(crate) fn get_more(
        &self,
        id: i64,
        ns: &str,
        batch_size: Option<u64>,
        user: Option<&str>,
    ) -> Result<RawDocumentBuf, CommandError> {
        let mut cursor = {
            let mut map = self.lock();
            match map.get(&id) {
                None => return Err(CommandError::cursor_not_found(id)),
                Some(Slot::InUse) => {
                    return Err(CommandError::new(
                        292,
                        "CursorInUse",
                        format!("cursor id {id} is already in use"),
                    ));
                }
                Some(Slot::Idle(c)) if c.ns != ns => {
                    return Err(CommandError::new(
                        13,
                        "Unauthorized",
                        format!(
                            "Requested getMore on namespace '{ns}', but cursor belongs to a \
                             different namespace {}",
                            c.ns
                        ),
                    ));
                }
                Some(Slot::Idle(c)) if c.owner.as_deref() != user => {
                    return Err(CommandError::new(
                        13,
                        "Unauthorized",
                        format!("cursor id {id} was not created by the authenticated user"),
                    ));
                }
                Some(Slot::Idle(_)) => {}
            }
            match map.insert(id, Slot::InUse) {
                Some(Slot::Idle(c)) => c,
                _ => return Err(CommandError::cursor_not_found(id)),
            }
        };
        let batch = fill(
            &mut cursor.docs,
            &mut cursor.pending,
            batch_size.filter(|&n| n > 0).unwrap_or(u64::MAX),
        );
        let mut map = self.lock();
        match batch {
            Ok(batch) if !batch.exhausted => {
                cursor.last_used = Instant::now();
                let ns = cursor.ns.clone();
                map.insert(id, Slot::Idle(cursor));
                Ok(reply(batch.docs, cstr!("nextBatch"), id, &ns))
            }
            Ok(batch) => {
                map.remove(&id);
                Ok(reply(batch.docs, cstr!("nextBatch"), 0, &cursor.ns))
            }
            Err(e) => {
                map.remove(&id);
                Err(e)
            }
        }
    }

    /// `killCursors`: closes the cursors of `ns` among `ids`. The reply's lists:
    /// `cursorsKilled`, `cursorsNotFound`, `cursorsAlive` (in use by a `getMore`),
    /// `cursorsUnknown`.
    pub(crate) fn kill(&self, ns: &str, ids: &[i64], user: Option<&str>) -> Document {
        let mut killed = Vec::new();
        let mut not_found = Vec::new();
        let mut alive = Vec::new();
        let mut map = self.lock();
        for &id in ids {
            match map.get(&id) {
                Some(Slot::Idle(c)) if c.ns == ns && c.owner.as_deref() == user => {
                    map.remove(&id);
                    killed.push(id);
                }
                Some(Slot::InUse) => alive.push(id),
                _ => not_found.push(id),
            }
        }
        bson::doc! {
            "cursorsKilled": killed,
            "cursorsNotFound": not_found,
            "cursorsAlive": alive,
            "cursorsUnknown": Vec::<i64>::new(),
        }
    }

    /// Closes the cursors unread for longer than the timeout; returns how many.
    pub(crate) fn reap(&self, now: Instant) -> usize {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|_, slot| match slot {
            Slot::Idle(c) => now.duration_since(c.last_used) < self.timeout,
            Slot::InUse => true,
        });
        before - map.len()
    }

    /// Closes the idle cursors whose namespace passes `drop` (a dropped collection's or
    /// database's; every cursor when the server stops).
    pub(crate) fn close_matching(&self, drop: impl Fn(&str) -> bool) {
        self.lock().retain(|_, slot| match slot {
            Slot::Idle(c) => !drop(&c.ns),
            Slot::InUse => true,
        });
    }
}

/// Reads up to `max_docs` documents (and 16 MiB of them) from `docs`, `pending` first.
fn fill(
    docs: &mut DocStream,
    pending: &mut Option<RawDocumentBuf>,
    max_docs: u64,
) -> Result<Batch, CommandError> {
    let mut out = RawArrayBuf::new();
    let mut bytes = 0usize;
    let mut n = 0u64;
    if max_docs == 0 {
        // batchSize 0: an empty first batch and a cursor (MongoDB's way to open one cheaply).
        return Ok(Batch {
            docs: out,
            exhausted: false,
        });
    }
    loop {
        if n >= max_docs {
            return Ok(Batch {
                docs: out,
                exhausted: false,
            });
        }
        let raw = match pending.take() {
            Some(raw) => raw,
            None => match docs.next() {
                None => {
                    return Ok(Batch {
                        docs: out,
                        exhausted: true,
                    });
                }
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(doc)) => RawDocumentBuf::try_from(&doc).map_err(|e| {
                    CommandError::of(
                        tscoll_engine::ErrorCode::InternalError,
                        format!("a result document cannot be encoded: {e}"),
                    )
                })?,
            },
        };
        let size = raw.as_bytes().len();
        if n > 0 && bytes + size > MAX_BSON_OBJECT_BYTES {
            *pending = Some(raw);
            return Ok(Batch {
                docs: out,
                exhausted: false,
            });
        }
        bytes += size;
        n += 1;
        out.push(raw);
    }
}

/// `{cursor: {<field>: docs, id, ns}, ok: 1}`.
fn reply(docs: RawArrayBuf, field: &bson::raw::CStr, id: i64, ns: &str) -> RawDocumentBuf {
    let mut cursor = RawDocumentBuf::new();
    cursor.append(field, docs);
    cursor.append(cstr!("id"), id);
    cursor.append(cstr!("ns"), ns);
    let mut out = RawDocumentBuf::new();
    out.append(cstr!("cursor"), cursor);
    out.append(cstr!("ok"), 1.0);
    out
}

/// The reply of a command whose results all fit in one batch (`listCollections`,
/// `listIndexes`): `{cursor: {firstBatch, id: 0, ns}, ok: 1}`.
pub(crate) fn single_batch(ns: &str, docs: Vec<Document>) -> Result<RawDocumentBuf, CommandError> {
    let mut arr = RawArrayBuf::new();
    for d in &docs {
        arr.push(RawDocumentBuf::try_from(d).map_err(|e| {
            CommandError::of(
                tscoll_engine::ErrorCode::InternalError,
                format!("a result document cannot be encoded: {e}"),
            )
        })?);
    }
    Ok(reply(arr, cstr!("firstBatch"), 0, ns))
}
