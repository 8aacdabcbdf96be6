//! Arbitrary bytes → the messages a server reads from a connection (`frame_length_limited`,
//! `wire::decode`, `OpReply::decode`): `Err`, or messages that encode and decode back to
//! themselves; never a panic. Logic in `fuzz/common/wire_decode.rs`, replayed on stable by
//! `server/tests/fuzz_corpus.rs`.
#![no_main]

#[path = "../common/wire_decode.rs"]
mod wire_decode;

libfuzzer_sys::fuzz_target!(|data: &[u8]| wire_decode::wire_decode_target(data));
