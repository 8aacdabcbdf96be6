//! TTL expiry (SPEC §10): whole buckets whose `_id` time is older than
//! `now − expireAfterSeconds − bucketMaxSpanSeconds` are deleted; never single measurements.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::collection::{Collection, CollectionInner};
use crate::db::{Database, DbInner};
use crate::error::Result;

/// Outcome of a TTL pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpireResult {
    /// Buckets deleted.
    pub buckets: u64,
    /// Measurements in them.
    pub measurements: u64,
}

impl ExpireResult {
    fn add(&mut self, other: ExpireResult) {
        self.buckets += other.buckets;
        self.measurements += other.measurements;
    }
}

impl CollectionInner {
    /// The TTL cutoff (ms) at wall time `now_ms`, or `None` without `expireAfterSeconds`: a
    /// bucket is expired when its rounded min time is before it (SPEC R-10.1). Computed in
    /// 128 bits and clamped, so no time wraps (R-10.4).
    fn ttl_cutoff(&self, now_ms: i64) -> Option<i64> {
        let spec = self.spec();
        let e = spec.expire_after_seconds?;
        let cutoff = i128::from(now_ms)
            - i128::from(e) * 1000
            - i128::from(spec.bucket_max_span_seconds) * 1000;
        Some(i64::try_from(cutoff).unwrap_or(i64::MIN))
    }

    pub(crate) fn expire(&self, now_ms: i64) -> Result<ExpireResult> {
        self.writable()?;
        // Reads and direct writes see the store: rows held in memory are stored first.
        self.flush_open()?;
        let mut out = ExpireResult::default();
        let Some(cutoff) = self.ttl_cutoff(now_ms) else {
            return Ok(out);
        };
        for entry in self.all_buckets()? {
            // R-10.1: the `_id` time is the rounded min time in seconds; `min_time` is that
            // time in ms (a multiple of 1000 whenever the rounding is whole seconds).
            if entry.min_time >= cutoff {
                continue;
            }
            let removed = self.direct_write(&entry, || {
                let Some(control) = self.control(&entry.id)? else {
                    return Ok(None); // deleted meanwhile
                };
                self.write_removal(&entry, Some(&control))?;
                Ok(Some(u64::from(control.count)))
            })?;
            if let Some(count) = removed {
                out.add(ExpireResult {
                    buckets: 1,
                    measurements: count,
                });
            }
        }
        Ok(out)
    }
}

impl Collection {
    /// Runs one TTL pass at wall time `now_ms` (ms since the epoch, SPEC R-10.6): deletes every
    /// whole bucket whose `_id` time (its rounded min time) is before
    /// `now − expireAfterSeconds − bucketMaxSpanSeconds` (R-10.1), so no measurement goes while
    /// another of its bucket could still be unexpired (R-10.2). Nothing happens without
    /// `expireAfterSeconds` (or after collMod set it `"off"`, R-10.3). Times are compared on the
    /// full 64-bit range (R-10.4). Expired buckets are cleared from the catalog first (R-7.4.1).
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let opts = TimeseriesOptions::new("t").meta_field("m").expire_after_seconds(60);
    /// let coll = db.create_collection("c", &opts)?;
    /// coll.insert_many(&[doc! { "t": DateTime::from_millis(0), "m": 1, "v": 1 }], &InsertOptions::default())?;
    /// // 60 s of TTL plus the 3600 s span: gone two hours later.
    /// assert_eq!(coll.expire(3_000_000)?.measurements, 0);
    /// assert_eq!(coll.expire(7_200_000)?.measurements, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::Error::Storage`] when reading or deleting fails; buckets deleted before the
    /// failure stay deleted.
    pub fn expire(&self, now_ms: i64) -> Result<ExpireResult> {
        self.inner.expire(now_ms)
    }
}

impl Database {
    /// Runs one TTL pass over every collection at wall time `now_ms` (SPEC R-10.6).
    ///
    /// # Errors
    /// As [`Collection::expire`]; collections after a failing one are not visited.
    pub fn expire(&self, now_ms: i64) -> Result<ExpireResult> {
        let mut out = ExpireResult::default();
        for coll in self.collections() {
            out.add(coll.expire(now_ms)?);
        }
        Ok(out)
    }

    /// Starts the background TTL task (SPEC R-10.6, MongoDB's TTL monitor): every `interval`
    /// it runs [`Database::expire`] at the system clock's time. It stops when the returned
    /// handle is dropped (or [`TtlMonitor::stop`]ped) or when the database is closed (the
    /// task holds no strong reference to it). Errors of a pass are kept for
    /// [`TtlMonitor::last_error`] and the next pass runs anyway.
    #[must_use = "the task stops when the handle is dropped"]
    pub fn start_ttl_monitor(&self, interval: Duration) -> TtlMonitor {
        let weak: Weak<DbInner> = Arc::downgrade(&self.inner);
        let (stop, stopped) = mpsc::channel::<()>();
        let last_error = Arc::new(std::sync::Mutex::new(None));
        let errors = Arc::clone(&last_error);
        let passes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = Arc::clone(&passes);
        let thread = std::thread::Builder::new()
            .name("tscoll-ttl".to_owned())
            .spawn(move || {
                loop {
                    match stopped.recv_timeout(interval) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                    }
                    let Some(inner) = weak.upgrade() else { return };
                    let db = Database { inner };
                    let result = db.expire(wall_clock_ms());
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    *errors
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) =
                        result.err().map(|e| e.to_string());
                }
            })
            .ok();
        TtlMonitor {
            stop: Some(stop),
            thread,
            last_error,
            passes,
        }
    }
}

/// The system clock in ms since the epoch (negative before 1970).
#[must_use]
pub(crate) fn wall_clock_ms() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

/// Handle of the background TTL task ([`Database::start_ttl_monitor`]); dropping it stops
/// the task and waits for a running pass to end.
#[derive(Debug)]
pub struct TtlMonitor {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    last_error: Arc<std::sync::Mutex<Option<String>>>,
    passes: Arc<std::sync::atomic::AtomicU64>,
}

impl TtlMonitor {
    /// Passes run so far.
    #[must_use]
    pub fn passes(&self) -> u64 {
        self.passes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The error of the last pass, if it failed.
    #[must_use]
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Stops the task and waits for a running pass to end.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for TtlMonitor {
    fn drop(&mut self) {
        self.shutdown();
    }
}
