//! Every option type a caller passes, in one place: a database's ([`database`]), a
//! collection's with their validation ([`collection`], SPEC §1) and an insert's ([`insert`]),
//! and the machine's memory that default sizes derive from ([`machine`]).
//! Options of reads, updates and indexes stay beside the code they steer (`query/`,
//! `direct_write/update/`, `index/`).

pub(crate) mod collection;
pub(crate) mod database;
pub(crate) mod insert;
pub(crate) mod machine;

pub(crate) use collection::CollectionSpec;
