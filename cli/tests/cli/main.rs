//! The integration tests of the `tscoll` command, one test binary: each file of this folder is
//! a module of it, so the engine, fjall, arrow and parquet are linked once for all of them. The
//! tests run the binary (`env!("CARGO_BIN_EXE_tscoll")`), most of them in a temporary database.
//!
//! The tests of one file: `cargo test -p tscoll-cli --test cli crash_kill::`. `tscoll sql`
//! (feature `sql`) is tested by `sql_command.rs`, a binary of its own.

/// Helpers shared with `sql_command.rs`: run the binary in a temporary database.
#[path = "../common/mod.rs"]
mod common;

mod bench_codec;
mod bench_ingest;
mod bench_memory;
mod collection_commands;
#[cfg(unix)]
mod crash_kill;
#[cfg(unix)]
mod crash_kill_update;
#[cfg(unix)]
mod disk_full;
mod extjson_dates_beyond_9999;
mod formats_parquet_csv;
mod help_options;
mod ingest_bad_lines;
mod ingest_compressed;
mod ingest_csv;
mod ingest_inputs;
mod ingest_report;
mod lock;
mod open_database;
mod plain_errors_no_panic_on_closed_pipe;
mod query_commands;
#[cfg(unix)]
mod serve_crash;
#[cfg(unix)]
mod serve_signal;
mod user_commands;
mod verify_salvage;
