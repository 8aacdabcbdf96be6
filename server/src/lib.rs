//! tscoll-server: MongoDB's wire protocol for tscoll, so that mongosh and MongoDB's drivers can
//! use tscoll's time-series collections.
//!
//! The crate is built in steps. This one holds the **message layer** ([`wire`]): the framing
//! and the encoding of the messages drivers send and expect (OP_MSG, and the legacy OP_QUERY /
//! OP_REPLY pair of the connection handshake), with no networking and no commands. The
//! commands (`hello`, `insert`, `find`, …) over `tscoll-engine` and the tokio server
//! (`tscoll serve`) come next.

#![forbid(unsafe_code)]

pub mod auth;
pub mod wire;
