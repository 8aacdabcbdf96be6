//! Replays the committed fuzz corpora of the server's targets (`fuzz/corpus/wire_decode/`,
//! `fuzz/corpus/server_commands/`) on stable with the same logic as the cargo-fuzz targets
//! (`fuzz/common/`).

#[path = "../../fuzz/common/replay.rs"]
mod replay;
#[path = "../../fuzz/common/server_commands.rs"]
mod server_commands;
#[path = "../../fuzz/common/wire_decode.rs"]
mod wire_decode;

#[test]
fn wire_decode_corpus() {
    replay::replay(
        env!("CARGO_MANIFEST_DIR"),
        "wire_decode",
        wire_decode::wire_decode_target,
    );
}

#[test]
fn server_commands_corpus() {
    replay::replay(
        env!("CARGO_MANIFEST_DIR"),
        "server_commands",
        server_commands::server_commands_target,
    );
}
