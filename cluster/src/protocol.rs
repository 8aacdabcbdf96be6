//! What a coordinator and its workers say over Arrow Flight, besides datafusion-distributed's
//! own service: every message is a BSON document, and each names the shard the sender thinks
//! it addresses (`shard`, `shards`) so a worker can refuse a misplaced one.
//!
//! | call | message | answer |
//! |---|---|---|
//! | `do_action("command")` | `{shard, shards, assign, shardKey?, command}`: a MongoDB command (`create`, `collMod`, `createIndexes`, `dropIndexes`, `drop`, `listCollections`, `collStats`, …) | the command's reply document |
//! | `do_action("describe")` | `{shard, shards}` | `{shard, shards, collections: [{name, spec, shardKey, schema}]}` |
//! | `do_put` | descriptor `{shard, shards, collection, ordered, durability, format}`, then Arrow batches (`format: "arrow"`) or messages whose body is a run of BSON documents (`"bson"`) | one `PutResult` per batch or message: `{inserted, errors: [{index, code, message}]}`, `index` counted over the whole put |
//! | `do_get` | ticket `{shard, shards, plan, partition}`: a leaf over the worker's shard | the leaf's batches |

use bson::{Bson, Document, doc};
use tscoll_engine::Durability;

/// The action that runs a MongoDB command.
pub(crate) const COMMAND: &str = "command";
/// The action that describes a worker's collections.
pub(crate) const DESCRIBE: &str = "describe";

/// The shard a message addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Address {
    pub(crate) shard: usize,
    pub(crate) shards: usize,
}

impl Address {
    pub(crate) fn write(self, d: &mut Document) {
        d.insert("shard", int(self.shard));
        d.insert("shards", int(self.shards));
    }

    pub(crate) fn read(d: &Document) -> Result<Address, String> {
        Ok(Address {
            shard: usize_of(d, "shard")?,
            shards: usize_of(d, "shards")?,
        })
    }
}

/// A non-negative integer as BSON.
pub(crate) fn int(n: usize) -> Bson {
    Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX))
}

/// The non-negative integer `key` of `d`.
pub(crate) fn usize_of(d: &Document, key: &str) -> Result<usize, String> {
    match d.get(key) {
        Some(Bson::Int64(n)) => usize::try_from(*n).map_err(|e| format!("{key}: {e}")),
        Some(Bson::Int32(n)) => usize::try_from(*n).map_err(|e| format!("{key}: {e}")),
        _ => Err(format!("no integer {key}")),
    }
}

/// A message's document from its bytes.
pub(crate) fn read(bytes: &[u8]) -> Result<Document, String> {
    Document::from_reader(bytes).map_err(|e| format!("a message that is not BSON: {e}"))
}

/// A document's bytes.
pub(crate) fn bytes(d: &Document) -> Vec<u8> {
    d.to_vec().unwrap_or_default()
}

/// The name of a durability in messages.
pub(crate) fn durability_name(d: Durability) -> &'static str {
    match d {
        Durability::Buffered => "buffered",
        Durability::Flush => "flush",
        Durability::Sync => "sync",
    }
}

/// The durability of a name [`durability_name`] gives.
pub(crate) fn durability_of(name: &str) -> Result<Durability, String> {
    match name {
        "buffered" => Ok(Durability::Buffered),
        "flush" => Ok(Durability::Flush),
        "sync" => Ok(Durability::Sync),
        other => Err(format!("the durability '{other}'")),
    }
}

/// A write of Arrow batches.
pub(crate) const FORMAT_ARROW: &str = "arrow";
/// A write of BSON documents.
pub(crate) const FORMAT_BSON: &str = "bson";

/// A `do_put` descriptor: a write of `format` to `collection` with `options`.
pub(crate) fn put_descriptor(
    at: Address,
    collection: &str,
    options: &tscoll_engine::InsertOptions,
    format: &str,
) -> Document {
    let mut d = doc! {
        "collection": collection,
        "ordered": options.ordered,
        "durability": durability_name(options.durability),
        "format": format,
    };
    at.write(&mut d);
    d
}

/// The documents of a run of BSON documents (each its own length-prefixed bytes).
///
/// # Errors
/// A message when the bytes are not whole documents.
pub(crate) fn read_documents(mut bytes: &[u8]) -> Result<Vec<Document>, String> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let len = bytes
            .get(..4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(i32::from_le_bytes)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n >= 5 && n <= bytes.len())
            .ok_or_else(|| "a run of documents cut short".to_owned())?;
        let (one, rest) = bytes.split_at(len);
        out.push(read(one)?);
        bytes = rest;
    }
    Ok(out)
}
