//! Benchmarks and deterministic workload generators of tscoll.
//!
//! * [`codec`]: the codec measured side by side with pcodec and zstd on real columns cut into
//!   1000-value buckets, by column kind (`tscoll bench codec`).
//! * [`columns`]: deterministic synthetic columns, one generator per column kind (criterion
//!   benches).

pub mod codec;
pub mod columns;
