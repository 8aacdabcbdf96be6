//! Catalog parameters (SPEC §0, R-0.1, R-0.2).

/// Tunable parameters of the bucket catalog, with MongoDB's defaults (SPEC §0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogOptions {
    /// `timeseriesBucketMaxCount`: most measurements per bucket. Default = 1000.
    pub bucket_max_count: u32,
    /// `timeseriesBucketMaxSize` (bytes): size limit of the bucket estimate. Default = 128 000.
    pub bucket_max_size: u64,
    /// `timeseriesBucketMinCount`: below this count a bucket is kept open for large
    /// measurements (SPEC §6.5). Default = 10.
    pub bucket_min_count: u32,
    /// `timeseriesBucketMinSize` (bytes): floor of the cache-derived size limit (SPEC §6.6).
    /// Default = 5 120.
    pub bucket_min_size: u64,
    /// `timeseriesLargeMeasurementThreshold` (bytes). Default = 32. Kept for the compressed
    /// size rule; the classic estimate (SPEC R-6.4.1) does not use it.
    pub large_measurement_threshold: u64,
    /// `timeseriesIdleBucketExpiryMemoryUsageThreshold` (bytes): catalog memory above which
    /// idle buckets are archived or closed (SPEC §6.9, R-0.1). Default = 64 MiB; 5 % of a
    /// declared memory size with [`CatalogOptions::for_memory`].
    pub idle_bucket_expiry_memory_usage_threshold_bytes: u64,
    /// `timeseriesIdleBucketExpiryMaxCountPerAttempt`. Default = 3.
    pub idle_bucket_expiry_max_count_per_attempt: u32,
    /// Storage cache size (bytes) for cache-pressure sizing (SPEC §6.6; also fjall's block
    /// cache). Default = 256 MiB, the smallest WiredTiger cache MongoDB configures: with 1000
    /// active buckets it allows 134 KB per bucket, so the 128 000-byte size limit, not cache
    /// pressure, closes them (64 MiB closed them at 33 KB, about 280 measurements of 12
    /// fields).
    pub cache_size_bytes: u64,
}

impl CatalogOptions {
    /// The default of [`CatalogOptions::idle_bucket_expiry_memory_usage_threshold_bytes`]
    /// when no memory size is declared: 64 MiB (SPEC R-0.1).
    pub const DEFAULT_IDLE_BUCKET_EXPIRY_MEMORY_USAGE_THRESHOLD_BYTES: u64 = 64 << 20;

    /// The share of the memory a process may use that its bucket catalog may hold by default:
    /// 5 % (SPEC R-0.1, MongoDB 8.0's default of `timeseriesIdleBucketExpiryMemoryUsageThreshold`).
    pub const MEMORY_THRESHOLD_PERCENT: u64 = 5;

    /// The default options for a process that may use `memory_bytes` of memory (the
    /// embedder's declared size, or the machine's, e.g. `tscoll_engine::machine_memory_bytes`):
    /// the memory threshold is [`CatalogOptions::MEMORY_THRESHOLD_PERCENT`] of it, and never
    /// less than 1 MiB.
    ///
    /// ```
    /// use tscoll_catalog::CatalogOptions;
    /// let o = CatalogOptions::for_memory(16 << 30);
    /// assert_eq!(o.idle_bucket_expiry_memory_usage_threshold_bytes, (16 << 30) / 20);
    /// ```
    #[must_use]
    pub fn for_memory(memory_bytes: u64) -> CatalogOptions {
        CatalogOptions {
            idle_bucket_expiry_memory_usage_threshold_bytes: u64::try_from(
                u128::from(memory_bytes) * u128::from(Self::MEMORY_THRESHOLD_PERCENT) / 100,
            )
            .unwrap_or(u64::MAX)
            .max(1 << 20),
            ..CatalogOptions::default()
        }
    }
}

impl Default for CatalogOptions {
    fn default() -> Self {
        CatalogOptions {
            bucket_max_count: 1000,
            bucket_max_size: 128_000,
            bucket_min_count: 10,
            bucket_min_size: 5_120,
            large_measurement_threshold: 32,
            idle_bucket_expiry_memory_usage_threshold_bytes:
                Self::DEFAULT_IDLE_BUCKET_EXPIRY_MEMORY_USAGE_THRESHOLD_BYTES,
            idle_bucket_expiry_max_count_per_attempt: 3,
            cache_size_bytes: 256 << 20,
        }
    }
}

/// The large-measurement ceiling: 16 MiB − 4 MiB (SPEC §0, `kLargeMeasurementsMaxBucketSize`).
pub const LARGE_MEASUREMENTS_MAX_BUCKET_SIZE: u64 = 12_582_912;
