//! Options of an insert: ordered or not, and how durable its acknowledgement is.

/// How durable an acknowledged insert is (`docs/durability.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Written to the write-ahead log's buffer: survives a clean shutdown, not a crash.
    /// Default.
    #[default]
    Buffered,
    /// Flushed to the operating system: survives a process crash, not a power loss.
    Flush,
    /// fsync'ed: survives `kill -9` and power loss.
    Sync,
}

/// Options of [`Collection::insert_many`](crate::Collection::insert_many).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InsertOptions {
    /// Stop at the first bad measurement (`true`, default) or keep every good one (SPEC ).
    pub ordered: bool,
    /// Durability of the acknowledgement. Default = [`Durability::Buffered`].
    pub durability: Durability,
}

impl Default for InsertOptions {
    fn default() -> Self {
        InsertOptions {
            ordered: true,
            durability: Durability::Buffered,
        }
    }
}
