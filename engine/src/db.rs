//! The database: one fjall database holding any number of time-series collections.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use bson::Document;
use fjall::PersistMode;
use tscoll_catalog::{CatalogOptions, MemoryPool, StatsSnapshot};

use crate::collection::{Collection, CollectionInner, Storage};
use crate::error::{Error, ErrorCode, Result};
use crate::flush::replay::LogRecovery;
use crate::index::Indexes;
use crate::options::collection::{CollectionSpec, TimeseriesOptions};
use crate::read_only::ReadOnlyReport;
use crate::storage::BucketStore;
use crate::storage::collection_records::CollectionRecords;
use crate::storage::fjall_journal::RecoveryReport;
use crate::storage::keyspaces;
use crate::tools::stats::CatalogStats;
use crate::wal::WriteAheadLog;
use crate::{Access, DatabaseOptions};

pub(crate) struct DbInner {
    pub(crate) fjall: fjall::Database,
    /// The database directory.
    path: std::path::PathBuf,
    records: CollectionRecords,
    collections: Mutex<HashMap<String, Collection>>,
    options: Mutex<DatabaseOptions>,
    /// Catalog memory of every collection, under one threshold (SPEC ).
    memory: MemoryPool,
    /// What [`Database::open_recovering`] dropped from a damaged journal.
    recovery: Option<RecoveryReport>,
    /// Set when the database is open read-only: nothing is written, not even on drop.
    read_only: Option<Mutex<ReadOnlyReport>>,
    /// Opened with [`Database::open_recovering`]: a damaged write-ahead log is recovered up
    /// to the damage.
    recover: bool,
    /// What opening the collections dropped from their write-ahead logs.
    log_recovery: Mutex<Vec<LogRecovery>>,
    /// Set by [`Database::crash`]: the last handle leaves without storing anything.
    crashed: std::sync::atomic::AtomicBool,
}

/// A tscoll database: a directory holding time-series collections (one process at a time).
///
/// Cheap to clone; every clone is the same database.
#[derive(Clone)]
pub struct Database {
    pub(crate) inner: Arc<DbInner>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").finish_non_exhaustive()
    }
}

impl Database {
    /// Opens the database in directory `path`, or creates it there when the directory holds
    /// none and [`DatabaseOptions::create`] is set (the default).
    ///
    /// Buckets left open by a previous process are found again through the meta+time index
    /// when their series receives measurements (query-based reopening, SPEC §6.8).
    ///
    /// fjall's journal is read first: when it is damaged (not merely cut short by a crash,
    /// which fjall recovers from) the open fails and nothing is changed; open the database
    /// with [`Database::open_recovering`] then. So is each collection's write-ahead log: a
    /// torn last record is dropped ([`Database::log_recovery`] says so), damage before it
    /// fails the open.
    ///
    /// # Errors
    /// [`Error::NotADatabase`] when the directory holds no database and
    /// [`DatabaseOptions::create`] is off (or the access is [`Access::ReadOnly`]);
    /// [`Error::Locked`] when another process has the directory open; [`Error::Storage`] for
    /// fjall failures (e.g. a full disk, for [`Access::ReadWrite`]); [`Error::Corruption`]
    /// when a collection record cannot be read; [`Error::JournalDamaged`] when the journal is
    /// damaged; [`Error::LogDamaged`] when a write-ahead log is; [`Error::Io`] when the journal
    /// or a log cannot be read.
    pub fn open(path: impl AsRef<Path>, options: DatabaseOptions) -> Result<Database> {
        Self::open_with(path.as_ref(), options, false)
    }

    /// Opens the database in directory `path` like [`Database::open`], even when fjall's
    /// journal is damaged (`docs/durability.md`, "A damaged journal"): every intact write
    /// batch before the damage is kept; the damaged batch and everything written after it
    /// are dropped, after the original journal files are copied to a backup folder in the
    /// database directory. [`Database::recovery_report`] says what was dropped. Likewise a
    /// collection's damaged write-ahead log ("A damaged write-ahead log"): every record before
    /// the damaged one is recovered, that one and every later one are dropped, after the log
    /// files from the damaged one on are copied to `<db>/wal-damaged-<ms>/c<id>/`;
    /// [`Database::log_recovery`] says what was dropped. With an intact journal and logs this
    /// is [`Database::open`].
    ///
    /// # Errors
    /// As [`Database::open`], but not for a damaged journal or log; [`Error::Io`] when the
    /// journal or log files cannot be copied, cut or removed.
    pub fn open_recovering(path: impl AsRef<Path>, options: DatabaseOptions) -> Result<Database> {
        Self::open_with(path.as_ref(), options, true)
    }

    fn open_with(path: &Path, options: DatabaseOptions, recover: bool) -> Result<Database> {
        if !options.create || options.access == Access::ReadOnly {
            check_database(path)?;
        }
        match options.access {
            Access::ReadWrite => Self::open_as(path, options, recover, None),
            Access::ReadOnly => Self::open_as(path, options, false, Some(None)),
            Access::ReadWriteOrReadOnly => {
                match Self::open_as(path, options.clone(), recover, None) {
                    // When even the read-only open fails, the first failure says more.
                    Err(e) if e.writing_impossible() => {
                        let reason = Some(e.to_string());
                        check_database(path)
                            .and_then(|()| Self::open_as(path, options, false, Some(reason)))
                            .map_err(|_| e)
                    }
                    other => other,
                }
            }
        }
    }

    /// Opens read-write, or read-only when `read_only` is set (with the reason, if any).
    fn open_as(
        path: &Path,
        options: DatabaseOptions,
        recover: bool,
        read_only: Option<Option<String>>,
    ) -> Result<Database> {
        let (fjall, recovery) = crate::storage::open_database(
            path,
            options.catalog.cache_size_bytes,
            read_only.is_some(),
            recover,
        )?;
        let records = CollectionRecords::open(&fjall)?;
        let db = Database {
            inner: Arc::new(DbInner {
                fjall,
                path: path.to_path_buf(),
                records,
                collections: Mutex::new(HashMap::new()),
                options: Mutex::new(options),
                memory: MemoryPool::default(),
                recovery,
                read_only: read_only.map(|reason| {
                    Mutex::new(ReadOnlyReport {
                        reason,
                        unstored: Vec::new(),
                    })
                }),
                recover,
                log_recovery: Mutex::new(Vec::new()),
                crashed: std::sync::atomic::AtomicBool::new(false),
            }),
        };
        let mut unstored = Vec::new();
        for (name, v) in db.inner.records.all()? {
            let corrupt = |reason: &str| CollectionRecords::corrupt(&name, reason);
            let record = Document::from_reader(&v[..]).map_err(|e| corrupt(&e.to_string()))?;
            let id = record.get_i64("id").map_err(|_| corrupt("no id"))?;
            let spec = record
                .get_document("spec")
                .ok()
                .and_then(CollectionSpec::from_stored)
                .ok_or_else(|| corrupt("bad options"))?;
            let indexes = Indexes::from_record(&record);
            let (coll, rows) = db.open_collection(&name, id.cast_unsigned(), spec, indexes)?;
            if rows > 0 {
                unstored.push((name.clone(), rows));
            }
            db.lock().insert(name, coll);
        }
        if let Some(r) = &db.inner.read_only {
            unstored.sort();
            r.lock().unwrap_or_else(PoisonError::into_inner).unstored = unstored;
        }
        Ok(db)
    }

    /// The database directory, as given to [`Database::open`].
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Why the database is open read-only and what its reads miss; `None` when it is open
    /// for writing ([`Access`]).
    #[must_use]
    pub fn read_only(&self) -> Option<ReadOnlyReport> {
        let r = self.inner.read_only.as_ref()?;
        Some(r.lock().unwrap_or_else(PoisonError::into_inner).clone())
    }

    /// Refuses a write when the database is open read-only.
    fn writable(&self) -> Result<()> {
        if self.inner.read_only.is_some() {
            Err(Error::ReadOnly)
        } else {
            Ok(())
        }
    }

    /// What [`Database::open_recovering`] dropped from a damaged journal; `None` when nothing
    /// was dropped (or the database was opened with [`Database::open`]).
    #[must_use]
    pub fn recovery_report(&self) -> Option<RecoveryReport> {
        self.inner.recovery.clone()
    }

    /// What opening the collections dropped from their write-ahead logs
    /// (`docs/durability.md`): a torn last record (after a crash during a commit), or, with
    /// [`Database::open_recovering`], the damaged record and every later one. Empty when
    /// every log was read whole.
    #[must_use]
    pub fn log_recovery(&self) -> Vec<LogRecovery> {
        self.inner
            .log_recovery
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every open collection handle (unordered).
    pub(crate) fn collections(&self) -> Vec<Collection> {
        self.lock().values().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Collection>> {
        self.inner
            .collections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a collection's storage and recovers its log; read-only, counts the rows the log
    /// holds beyond the store instead. Returns the handle and that count.
    fn open_collection(
        &self,
        name: &str,
        id: u64,
        spec: CollectionSpec,
        indexes: Indexes,
    ) -> Result<(Collection, u64)> {
        let fj = &self.inner.fjall;
        let options = self
            .inner
            .options
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let store = BucketStore::open(fj, id, !spec.rollups.is_empty())?;
        let wal = WriteAheadLog::open(self.inner.path.join("wal").join(format!("c{id}")))?;
        let coll = Collection::new(CollectionInner::new(
            name.to_owned(),
            id,
            spec,
            indexes,
            self.catalog_options(),
            self.inner.memory.clone(),
            Storage {
                fjall: fj.clone(),
                store,
                wal,
                log_options: options.log,
                sort_memory_bytes: options.sort_memory_bytes,
                records: self.inner.records.clone(),
                read_only: self.inner.read_only.is_some(),
                database: Arc::downgrade(&self.inner),
            },
        ));
        if coll.inner.read_only {
            let rows = coll.inner.unstored_logged_rows()?;
            return Ok((coll, rows));
        }
        let recovered = coll.inner.recover_log(self.inner.recover)?;
        if let Some(dropped) = recovered.dropped {
            self.inner
                .log_recovery
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(dropped);
        }
        Ok((coll, 0))
    }

    /// Creates a time-series collection, or returns the existing one when its options are equal
    /// (SPEC ).
    ///
    /// # Errors
    /// Every validation error of SPEC §1.4 (`InvalidOptions`, `BadValue`, ...);
    /// `NamespaceExists` when a collection of that name exists with other options;
    /// `InvalidNamespace` for an empty name or one with a NUL byte or `$`.
    pub fn create_collection(&self, name: &str, options: &TimeseriesOptions) -> Result<Collection> {
        if name.is_empty() || name.contains('\0') || name.contains('$') || name.len() > 200 {
            return Err(Error::rejected(
                ErrorCode::InvalidNamespace,
                format!("invalid collection name {name:?}: 1 to 200 bytes, no NUL and no '$'"),
            ));
        }
        let spec = options.validate()?;
        self.writable()?;
        let mut colls = self.lock();
        if let Some(existing) = colls.get(name) {
            let current = existing.spec();
            if current.same_bucketing(&spec)
                && current.expire_after_seconds == spec.expire_after_seconds
                && current.rollups == spec.rollups
            {
                return Ok(existing.clone());
            }
            return Err(Error::rejected(
                ErrorCode::NamespaceExists,
                format!("a collection '{name}' already exists with different options"),
            ));
        }
        let id = colls
            .values()
            .map(Collection::id)
            .max()
            .map_or(1, |m| m + 1);
        let (coll, _) = self.open_collection(name, id, spec, Indexes::default())?;
        coll.inner.save_record()?;
        colls.insert(name.to_owned(), coll.clone());
        Ok(coll)
    }

    /// The collection called `name`.
    ///
    /// # Errors
    /// `NamespaceNotFound` when there is none.
    pub fn collection(&self, name: &str) -> Result<Collection> {
        self.lock().get(name).cloned().ok_or_else(|| {
            Error::rejected(
                ErrorCode::NamespaceNotFound,
                format!("collection '{name}' does not exist"),
            )
        })
    }

    /// Every collection with its options, sorted by name.
    ///
    /// # Errors
    /// None today; reserved for storage errors.
    pub fn list_collections(&self) -> Result<Vec<(String, CollectionSpec)>> {
        let mut v: Vec<_> = self
            .lock()
            .iter()
            .map(|(n, c)| (n.clone(), c.spec()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(v)
    }

    /// Drops a collection and all its buckets (SPEC ). Returns whether it existed.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub fn drop_collection(&self, name: &str) -> Result<bool> {
        self.writable()?;
        let Some(coll) = self.lock().remove(name) else {
            return Ok(false);
        };
        coll.inner.catalog.clear_all();
        coll.inner.wal.remove()?;
        self.inner.records.remove(name)?;
        for ks in coll.inner.keyspaces() {
            keyspaces::delete(&self.inner.fjall, ks, "deleting a keyspace")?;
        }
        Ok(true)
    }

    /// Stores every bucket held in memory (each whole, in one blob), writes fjall's memtables
    /// to tables, makes everything durable (fsync) and removes the write-ahead logs. Call
    /// before shutdown to leave a database that opens without replaying a log; dropping the
    /// last handle does the same but ignores errors and leaves the memtables to fjall's
    /// journal. The database stays usable: later inserts reopen buckets from storage.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub fn close(&self) -> Result<()> {
        if self.inner.read_only.is_some() {
            return Ok(());
        }
        let colls: Vec<Collection> = self.lock().values().cloned().collect();
        for c in colls {
            c.inner.store_all()?;
            c.inner.flush_memtables()?;
        }
        keyspaces::flush_memtable(self.inner.records.keyspace())?;
        self.inner
            .fjall
            .persist(PersistMode::SyncAll)
            .map_err(Error::storage("persisting"))?;
        Ok(())
    }

    /// Leaves the database as a process crash would right after every log write reached the
    /// operating system: the write-ahead logs are flushed, nothing held in memory is stored,
    /// and dropping the last handle stores nothing either. Opening the directory again
    /// recovers from the logs (for crash tests; [`Database::close`] is the way to shut down).
    ///
    /// # Errors
    /// [`Error::Io`] when a log cannot be flushed.
    #[doc(hidden)]
    pub fn crash(self) -> Result<()> {
        self.inner
            .crashed
            .store(true, std::sync::atomic::Ordering::Relaxed);
        for c in self.collections() {
            c.inner.wal.flush()?;
        }
        Ok(())
    }

    /// Compacts every collection ([`Collection::compact`]) and the collection directory, so
    /// that the database holds each bucket once, in one blob, with its latest control record.
    /// Meant after a bulk load, before measuring disk use.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Codec`] when merging a bucket fails.
    pub fn compact(&self) -> Result<()> {
        self.writable()?;
        let colls: Vec<Collection> = self.lock().values().cloned().collect();
        for c in colls {
            c.compact()?;
        }
        keyspaces::compact(self.inner.records.keyspace())
    }

    /// The catalog parameters every collection uses now.
    #[must_use]
    pub fn catalog_options(&self) -> CatalogOptions {
        self.inner
            .options
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .catalog
            .clone()
    }

    /// Changes the catalog parameters at run time, for every collection (SPEC ):
    /// e.g. the memory threshold `idle_bucket_expiry_memory_usage_threshold_bytes`. Buckets
    /// already open keep their contents; the new values apply from the next measurement.
    /// `cache_size_bytes` changes the cache-pressure sizing (SPEC §6.6) but not fjall's block
    /// cache, which is sized when the database opens.
    pub fn set_catalog_options(&self, options: CatalogOptions) {
        self.inner
            .options
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .catalog = options.clone();
        for c in self.lock().values() {
            c.inner.catalog.set_options(options.clone());
        }
    }

    /// Engine-level bucket catalog statistics (SPEC §8.2, `serverStatus.bucketCatalog`): the
    /// gauges of every collection's catalog and the sum of their execution counters. `None`
    /// while no collection has catalog state or counters (MongoDB omits the section then).
    #[must_use]
    pub fn catalog_stats(&self) -> Option<CatalogStats> {
        let colls: Vec<Collection> = self.lock().values().cloned().collect();
        let mut out = CatalogStats::default();
        let mut any = false;
        for c in colls {
            let cat = &c.inner.catalog;
            let gauges = cat.gauges();
            let execution = cat.stats();
            any |= gauges.active_buckets > 0 || execution != StatsSnapshot::default();
            out.add(&gauges, &execution);
        }
        any.then_some(out)
    }

    /// Bytes the database occupies on disk (tables and journals).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub fn disk_space(&self) -> Result<u64> {
        self.inner
            .fjall
            .disk_space()
            .map_err(Error::storage("measuring disk space"))
    }
}

/// fjall's marker file of a database directory, written last when a database is created.
const VERSION_MARKER: &str = "version";

/// Whether `path` holds a database (fjall's version marker), without writing anything.
///
/// # Errors
/// [`Error::NotADatabase`] when it does not; [`Error::Io`] when it cannot be looked at.
fn check_database(path: &Path) -> Result<()> {
    let not = |reason: &'static str| Error::NotADatabase {
        path: path.display().to_string(),
        reason,
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(not("the directory does not exist"));
        }
        Err(e) => return Err(Error::Io(e)),
        Ok(m) if !m.is_dir() => return Err(not("it is not a directory")),
        Ok(_) => {}
    }
    if path.join(VERSION_MARKER).try_exists()? {
        Ok(())
    } else {
        Err(not("it holds no database files"))
    }
}

impl Drop for DbInner {
    fn drop(&mut self) {
        if self.crashed.load(std::sync::atomic::Ordering::Relaxed) || self.read_only.is_some() {
            return;
        }
        let colls: Vec<Collection> = self
            .collections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for c in colls {
            let _ = c.inner.store_all();
        }
        let _ = self.fjall.persist(PersistMode::SyncAll);
    }
}
