//! Arbitrary bytes as one client's messages → a `Service` over a real database answers each
//! (the command parser and every command): a reply with `ok`, or the connection closed on a
//! message that does not decode; never a panic. Logic in `fuzz/common/server_commands.rs`,
//! replayed on stable by `server/tests/fuzz_corpus.rs`.
#![no_main]

#[path = "../common/server_commands.rs"]
mod server_commands;

libfuzzer_sys::fuzz_target!(|data: &[u8]| server_commands::server_commands_target(data));
