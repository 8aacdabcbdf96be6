//! Why a write batch was not committed (SPEC §7.3).

/// Why a write batch was not committed. None of its rows were written; its writers place
/// them again (SPEC ), in another batch.
///
/// Returned by [`crate::WriteBatch::wait`], [`crate::BucketCatalog::wait`] and
/// [`crate::CommitRights::prepare`]; a committer passes one to
/// [`crate::CommitRights::abort`] or [`crate::Prepared::abort`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// The batch's bucket left the catalog before the batch was prepared: another batch of
    /// it was aborted (SPEC ).
    #[error("bucket was cleared from the catalog")]
    BucketCleared,
    /// A direct write (a delete, a meta update, TTL) cleared the batch's bucket from the
    /// catalog (SPEC ).
    #[error("bucket was cleared by a direct write")]
    DirectWrite,
    /// The batch's bucket is frozen: its data failed to encode or decode (SPEC §6.10).
    #[error("bucket is frozen")]
    Frozen,
    /// The collection was dropped (SPEC ).
    #[error("the collection was dropped")]
    CollectionDropped,
    /// The committer dropped its [`crate::CommitRights`] or [`crate::Prepared`] without
    /// finishing or aborting it (an early return or a panic between claim and finish).
    #[error("the commit was abandoned before it finished")]
    Abandoned,
    /// The committer could not write the batch: the storage error or the rows that failed
    /// to encode, as text.
    #[error("{0}")]
    WriteFailed(String),
}
