//! Benchmarks and deterministic workload generators of tscoll.
//!
//! * [`codec`]: the codec measured side by side with pcodec and zstd on real columns cut into
//!   1000-value buckets, by column kind (`tscoll bench codec`).
//! * [`columns`]: deterministic synthetic columns, one generator per column kind (criterion
//!   benches).
//! * [`tsbs`]: TSBS's "cpu-only" devops workload (hosts with 10 tags, 10 CPU usage fields every
//!   10 s), generated deterministically in time-major order, as documents or NDJSON
//!   (`tscoll bench ingest`, `tscoll bench gen`).

pub mod codec;
pub mod columns;
mod rng;
pub mod tsbs;
