//! The end-to-end tests of tscoll in one test binary: real data round trips, SPEC conformance,
//! crash recovery, damaged stores and the model-based test. Each file of this folder is a
//! module of it, so the engine, fjall and arrow are linked once for all of them.
//!
//! The tests of one file: `cargo test -p tscoll-tests --test end_to_end spec_ttl::`. proptest
//! keeps the seeds of past failures in `tests/tests/proptest-regressions/<module>.txt` (beside
//! the folder of this `main.rs`) and replays them before new cases.

/// Helpers of the damage tests.
mod damage;

mod accumulators;
mod aggregate_arrow;
mod arrow_insert;
mod arrow_results;
mod arrow_types;
#[cfg(unix)]
mod closed_buckets_skip_journal;
mod compact;
mod explain;
mod expressions;
mod find_cursor_streams;
mod journal_damaged_open;
mod manual_examples;
mod merge_from_memory;
mod model_ops;
mod nul_field_names;
mod open_read_only;
mod pipeline_bounded_memory;
mod pipeline_stages;
mod reads_see_memory;
mod real_data_roundtrip;
mod rollups;
mod salvage_damage;
mod semantics_ids;
mod spec_coll_mod;
mod spec_control;
mod spec_delete;
mod spec_idle;
mod spec_indexes;
mod spec_measurements;
mod spec_meta;
mod spec_options;
mod spec_pipeline;
mod spec_placement;
mod spec_queries;
mod spec_reopen;
mod spec_rollover;
mod spec_single_writer;
mod spec_stats;
mod spec_ttl;
mod spec_update;
mod spec_update_measurements;
mod spec_update_pipeline;
mod spec_update_positional;
mod stress_concurrent;
mod time_zones;
mod update_pipeline_model;
mod verify_damage;
mod wal_damaged_open;
mod wal_recovery;
mod wide_measurements;
