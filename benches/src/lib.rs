//! Benchmarks and deterministic workload generators of tscoll.
