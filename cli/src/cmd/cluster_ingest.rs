//! `tscoll ingest --workers ...`: the local ingest's reading (the same inputs, formats and
//! options, in batches of `--batch-size`) with each batch sent to the cluster, every
//! measurement to its shard (feature `cluster`): Arrow batches with
//! `Cluster::insert_batch`, documents with `Cluster::insert_documents`.
//!
//! Rejected measurements are reported as the local ingest reports them (`FILE:LINE:
//! reason`); a shard whose part of a batch fails as a whole (its worker down) is reported
//! with the batch's lines and the worker, and the other shards' parts are stored. After the
//! inputs, one line per shard: measurements sent, inserted, rejected, and its failure.

use std::cell::RefCell;
use std::process::ExitCode;

use arrow_array::RecordBatch;
use bson::Document;
use tscoll_cluster::{ClusterCollection, ShardInsert};
use tscoll_engine::{CollectionSpec, Error, InsertOptions};

use super::CmdResult;
use super::cluster::{Connected, shard_label};
use super::ingest::{Args, FailedPart, Stored, Target, ingest_inputs};

/// What one shard received over the whole ingest.
#[derive(Debug, Default)]
struct ShardTotals {
    sent: usize,
    inserted: usize,
    rejected: usize,
    /// The first failure of a part, and the measurements not stored by failed parts.
    failure: Option<String>,
    lost: usize,
}

/// A cluster's collection as an ingest's [`Target`].
struct ClusterTarget<'a> {
    connected: &'a Connected,
    coll: ClusterCollection,
    totals: RefCell<Vec<ShardTotals>>,
}

impl ClusterTarget<'_> {
    /// The outcome of the shards' parts of one insert, counted in the totals.
    fn stored(&self, parts: Vec<ShardInsert>) -> Stored {
        let mut totals = self.totals.borrow_mut();
        let mut out = Stored::default();
        for p in parts {
            let t = &mut totals[p.shard];
            t.sent += p.sent;
            t.inserted += p.inserted;
            t.rejected += p.errors.len();
            out.inserted += p.inserted;
            out.rejected.extend(
                p.errors
                    .into_iter()
                    .map(|(at, code, message)| (at, format!("{message} (code {code})"))),
            );
            if let Some(e) = p.failure {
                // The label names the worker; a worker's own error names it again.
                let reason = format!("{}: {e}", shard_label(p.shard, &p.worker));
                t.lost += p.sent - p.inserted;
                t.failure.get_or_insert_with(|| reason.clone());
                out.failed.push(FailedPart {
                    reason,
                    sent: p.sent,
                    inserted: p.inserted,
                });
            }
        }
        // In input order, as the local ingest reports them.
        out.rejected.sort_by_key(|(at, _)| *at);
        out
    }
}

impl Target for ClusterTarget<'_> {
    fn spec(&self) -> CollectionSpec {
        self.coll.spec.clone()
    }

    fn insert_documents(
        &self,
        docs: &[Document],
        options: &InsertOptions,
    ) -> Result<Stored, Error> {
        let c = self.connected;
        let parts = c.block_on(c.cluster.insert_documents(&self.coll, docs, options));
        Ok(self.stored(parts))
    }

    fn insert_batch(&self, batch: &RecordBatch, options: &InsertOptions) -> Result<Stored, Error> {
        let c = self.connected;
        let parts = c.block_on(c.cluster.insert_batch(&self.coll, batch, options));
        Ok(self.stored(parts))
    }
}

/// Runs `tscoll ingest` on cluster `c`: the inputs as the local ingest reads them, a
/// summary line per input, then one line per shard.
///
/// # Errors
/// An option that has no meaning on a cluster; the collection is on no worker that
/// answers; an input that cannot be opened or read (after what was read before was sent).
pub(crate) fn run(c: &Connected, args: &Args) -> CmdResult<ExitCode> {
    for (given, option) in [
        (args.json, "--json"),
        (args.verbose, "--verbose"),
        (args.stats, "--stats"),
        (args.compact, "--compact"),
    ] {
        if given {
            return Err(format!(
                "{option} is not available on a cluster: each worker's database is its own"
            )
            .into());
        }
    }
    // Described by the workers that answer: a worker down fails its shard's parts only.
    let (collections, _unreachable) = c.block_on(c.cluster.reachable_collections())?;
    let coll = collections
        .into_iter()
        .find(|coll| coll.name == args.coll)
        .ok_or_else(|| {
            format!(
                "the cluster has no collection '{}' (create it first)",
                args.coll
            )
        })?;
    let target = ClusterTarget {
        connected: c,
        coll,
        totals: RefCell::new(
            (0..c.cluster.workers().len())
                .map(|_| ShardTotals::default())
                .collect(),
        ),
    };
    let (total, failure) = ingest_inputs(&target, args, true)?;
    let mut failed = total.rejected > 0;
    for (shard, (t, worker)) in target
        .totals
        .borrow()
        .iter()
        .zip(c.cluster.workers())
        .enumerate()
    {
        let label = shard_label(shard, worker);
        errln!(
            "{label}: {} measurements sent, {} inserted, {} rejected",
            t.sent,
            t.inserted,
            t.rejected
        );
        if let Some(reason) = &t.failure {
            failed = true;
            errln!(
                "tscoll: error: {reason} ({} measurements of the shard not stored)",
                t.lost
            );
        }
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
