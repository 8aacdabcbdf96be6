//! fjall's journal, read by tscoll before fjall opens a database (`docs/durability.md`,
//! "A damaged journal").
//!
//! fjall 3 replays its journal files (`<dir>/<n>.jnl`, oldest first; the highest number is
//! the active one) when it opens. Each write batch is framed as a start entry (item count,
//! sequence number), the items, and an end entry holding the xxh3 checksum of the items'
//! bytes and a 4-byte trailer. fjall's only recovery mode (`TolerateCorruptTail`, not
//! configurable in fjall 3) drops an incomplete last batch; a checksum mismatch fails the
//! whole open (`JournalRecovery(ChecksumMismatch)`), and a batch whose framing is broken is
//! cut off silently together with everything after it in that file.
//!
//! [`scan`] reads every journal file the same way, read-only, and finds the first damaged
//! batch; it also checks that the batches' sequence numbers increase (they are outside the
//! checksum). [`Database::open`](crate::Database::open) then fails with a plain error;
//! [`Database::open_recovering`](crate::Database::open_recovering) calls [`repair`], which
//! copies the damaged file and the later ones to a backup folder, cuts the damaged
//! file at the start of the damaged batch and removes the later files, so that fjall replays
//! every intact batch before the damage and nothing after it (a consistent point in time:
//! every batch is one atomic commit).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use xxhash_rust::xxh3::Xxh3;

use crate::error::{Error, Result};

/// Entry tags of fjall 3's journal.
const START: u8 = 1;
const ITEM: u8 = 2;
const END: u8 = 3;
const CLEAR: u8 = 4;
/// Trailer of an end entry.
const TRAILER: [u8; 4] = *b"FJL\x03";
/// Bytes of an item entry's header after its tag: value type, compression, keyspace id,
/// key length, value length, stored value length.
const ITEM_HEADER: usize = 1 + 1 + 8 + 2 + 4 + 4;
/// fjall's lock file in the database directory.
const LOCK_FILE: &str = "lock";
/// Prefix of the folder a repair copies the damaged journal files to.
const BACKUP_PREFIX: &str = "journal-damaged-";

/// What [`Database::open_recovering`](crate::Database::open_recovering) dropped from a
/// damaged journal ([`Database::recovery_report`](crate::Database::recovery_report)).
///
/// Every write batch before the damaged one was kept; the damaged batch and everything
/// written after it were dropped. The dropped files are kept in [`RecoveryReport::backup_dir`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveryReport {
    /// The damaged journal file.
    pub file: PathBuf,
    /// Byte offset in [`RecoveryReport::file`] where the damaged batch starts.
    pub offset: u64,
    /// What is wrong there.
    pub reason: String,
    /// Intact write batches kept, over every journal file.
    pub batches_kept: u64,
    /// Write batches dropped: the damaged one and the readable ones after it in its file (a
    /// lower bound when the damage hides where the next batches start), plus those of
    /// [`RecoveryReport::later_files`].
    pub batches_dropped: u64,
    /// Bytes of journal data dropped (without fjall's zero-filled preallocation).
    pub bytes_dropped: u64,
    /// Journal files removed whole: those after the damaged one, and `.jnl` files whose name
    /// fjall does not read.
    pub later_files: Vec<PathBuf>,
    /// Where the damaged file and the later ones were copied, as they were, before the repair.
    pub backup_dir: PathBuf,
    /// fjall refused the journal even after the repair: every journal file was moved to the
    /// backup folder and the database holds what its tables hold (writes not yet flushed to
    /// tables are lost).
    pub tables_only: bool,
}

impl std::fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.tables_only {
            write!(
                f,
                "the journal could not be replayed ({}); every journal file was set aside and \
                 the database holds what its tables hold: writes not yet flushed to tables are \
                 lost",
                self.reason
            )?;
        } else {
            write!(
                f,
                "the journal was damaged at byte {} of {} ({}); kept {} intact write batches \
                 before it, dropped {} batch(es) ({} bytes)",
                self.offset,
                self.file.display(),
                self.reason,
                self.batches_kept,
                self.batches_dropped,
                self.bytes_dropped
            )?;
            if !self.later_files.is_empty() {
                write!(
                    f,
                    " including {} later journal file(s)",
                    self.later_files.len()
                )?;
            }
        }
        write!(
            f,
            "; the original files are in {}",
            self.backup_dir.display()
        )
    }
}

/// How reading one journal file ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// Every batch is intact; the file ends there or continues with zeros only.
    Clean,
    /// The file ends inside a batch starting at this offset (an interrupted write).
    Torn(u64),
    /// The batch starting at this offset is damaged.
    Damaged(u64, String),
}

/// One journal file as read.
#[derive(Debug)]
struct FileScan {
    path: PathBuf,
    /// Intact batches before the end or the damage.
    batches: u64,
    /// Readable batches after a damaged one (whose framing was intact).
    batches_after: u64,
    outcome: Outcome,
}

/// The journal files of a database directory, as read.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    files: Vec<FileScan>,
    /// `.jnl` files fjall cannot name (it refuses to open with them).
    stray: Vec<PathBuf>,
}

/// The first damage of a scan: the file index, the offset of the damaged batch, and why.
struct Damage {
    file: usize,
    offset: u64,
    reason: String,
}

impl Scan {
    /// The first damaged batch. An interrupted last batch of the active (last) journal file is
    /// not damage: fjall drops it itself, as after any crash.
    fn damage(&self) -> Option<Damage> {
        let last = self.files.len().checked_sub(1);
        for (i, f) in self.files.iter().enumerate() {
            match &f.outcome {
                Outcome::Clean => {}
                Outcome::Torn(_) if Some(i) == last => {}
                Outcome::Torn(offset) => {
                    return Some(Damage {
                        file: i,
                        offset: *offset,
                        reason: "the file ends inside a write batch, but later journal files \
                                 follow"
                            .to_owned(),
                    });
                }
                Outcome::Damaged(offset, reason) => {
                    return Some(Damage {
                        file: i,
                        offset: *offset,
                        reason: reason.clone(),
                    });
                }
            }
        }
        if let Some(p) = self.stray.first() {
            return Some(Damage {
                file: self.files.len(),
                offset: 0,
                reason: format!("{} is not a journal file name fjall reads", p.display()),
            });
        }
        None
    }

    /// The plain error of a damaged journal, for an open without recovery.
    pub(crate) fn damaged_error(&self) -> Option<Error> {
        let d = self.damage()?;
        let file = self
            .files
            .get(d.file)
            .map_or_else(|| self.stray[0].clone(), |f| f.path.clone());
        Some(damaged_error(&file, Some(d.offset), &d.reason))
    }
}

/// The error of a database whose journal is damaged: what is wrong and how to recover.
pub(crate) fn damaged_error(file: &Path, offset: Option<u64>, reason: &str) -> Error {
    let name = file.file_name().map_or_else(
        || file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Error::JournalDamaged {
        file: match offset {
            Some(o) => format!("{name} at byte {o}"),
            None => name,
        },
        reason: format!(
            "{reason}. The journal is damaged, so the database cannot be opened as it is: run \
             `tscoll verify --recover --db DIR` to keep every write before the damage and see \
             what is lost, or `tscoll salvage --recover --db DIR --to NEWDIR` to copy what is \
             readable (API: Database::open_recovering)"
        ),
    }
}

/// Holds fjall's lock file while the journal is read or repaired, so that a database another
/// process has open is neither misread nor changed (the open then fails with
/// [`Error::Locked`]). `None` when the directory holds no database yet.
fn lock(dir: &Path) -> Result<Option<File>> {
    let path = dir.join(LOCK_FILE);
    let file = match OpenOptions::new().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Io(e)),
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::Io(e)),
    }
}

/// The journal files of `dir`, oldest first, and the `.jnl` files without a numeric name.
fn journal_files(dir: &Path) -> io::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut numbered = Vec::new();
    let mut stray = Vec::new();
    for dirent in fs::read_dir(dir)? {
        let dirent = dirent?;
        let path = dirent.path();
        if !path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("jnl"))
            || !dirent.file_type()?.is_file()
        {
            continue;
        }
        let id = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jnl"))
            .and_then(|n| n.parse::<u64>().ok());
        match id {
            Some(id) => numbered.push((id, path)),
            None => stray.push(path),
        }
    }
    numbered.sort();
    Ok((numbered.into_iter().map(|(_, p)| p).collect(), stray))
}

/// Reads every journal file of database directory `dir` (holding fjall's lock meanwhile).
///
/// # Errors
/// [`Error::Locked`] when another process has the database open; [`Error::Io`] when a file
/// cannot be read.
pub(crate) fn scan(dir: &Path) -> Result<Scan> {
    let Some(_lock) = lock(dir)? else {
        return Ok(Scan::default());
    };
    scan_unlocked(dir).map_err(Error::Io)
}

fn scan_unlocked(dir: &Path) -> io::Result<Scan> {
    let (files, stray) = journal_files(dir)?;
    let mut out = Scan {
        files: Vec::with_capacity(files.len()),
        stray,
    };
    let mut seq = SeqTrack::default();
    for (i, path) in files.iter().enumerate() {
        out.files.push(scan_file(path, i, &mut seq)?);
        if let Some((file, offset)) = seq.earlier.take() {
            // The last batch of an earlier file has a number out of order.
            let f = &mut out.files[file];
            f.outcome = Outcome::Damaged(offset, SEQNO_OUT_OF_ORDER.to_owned());
            f.batches = f.batches.saturating_sub(1);
            f.batches_after += 1;
        }
    }
    Ok(out)
}

/// The error of a journal fjall refused to replay although [`scan`] found no damage.
pub(crate) fn fjall_refused(dir: &Path, e: fjall::JournalRecoveryError) -> Error {
    let file = journal_files(dir)
        .ok()
        .and_then(|(files, _)| files.last().cloned())
        .unwrap_or_else(|| dir.to_path_buf());
    damaged_error(&file, None, &format!("fjall cannot replay it ({e:?})"))
}

/// Cuts the journal of `dir` at its first damaged batch (see the module docs). `None` when
/// nothing is damaged.
///
/// # Errors
/// [`Error::Locked`] when another process has the database open; [`Error::Io`] when the
/// files cannot be copied, cut or removed.
pub(crate) fn repair(dir: &Path) -> Result<Option<RecoveryReport>> {
    let Some(_lock) = lock(dir)? else {
        return Ok(None);
    };
    let scan = scan_unlocked(dir)?;
    let Some(damage) = scan.damage() else {
        return Ok(None);
    };
    let backup_dir = backup_dir(dir)?;
    let batches_kept: u64 = scan.files[..damage.file.min(scan.files.len())]
        .iter()
        .map(|f| f.batches)
        .sum::<u64>()
        + scan.files.get(damage.file).map_or(0, |f| f.batches);
    let mut batches_dropped = 0;
    let mut bytes_dropped = 0;
    let mut later_files = Vec::new();
    for (i, f) in scan.files.iter().enumerate().skip(damage.file) {
        fs::copy(&f.path, backup_dir.join(file_name(&f.path)))?;
        let data = data_len(&f.path)?;
        if i == damage.file {
            batches_dropped += 1 + f.batches_after;
            bytes_dropped += data.saturating_sub(damage.offset);
        } else {
            batches_dropped += f.batches + f.batches_after + u64::from(f.outcome != Outcome::Clean);
            bytes_dropped += data;
            later_files.push(f.path.clone());
        }
    }
    for p in &scan.stray {
        fs::copy(p, backup_dir.join(file_name(p)))?;
        later_files.push(p.clone());
    }
    sync_dir(&backup_dir)?;
    if let Some(f) = scan.files.get(damage.file) {
        let file = OpenOptions::new().write(true).open(&f.path)?;
        file.set_len(damage.offset)?;
        file.sync_all()?;
    }
    for p in &later_files {
        fs::remove_file(p)?;
    }
    sync_dir(dir)?;
    let file = scan
        .files
        .get(damage.file)
        .map_or_else(|| scan.stray[0].clone(), |f| f.path.clone());
    Ok(Some(RecoveryReport {
        file,
        offset: damage.offset,
        reason: damage.reason,
        batches_kept,
        batches_dropped,
        bytes_dropped,
        later_files,
        backup_dir,
        tables_only: false,
    }))
}

/// Moves every journal file of `dir` to a backup folder, after fjall refused to replay them
/// (`reason`): the database is then opened from its tables alone. `earlier` is the report
/// of a repair made before, whose backup folder is reused.
///
/// # Errors
/// [`Error::Locked`] when another process has the database open; [`Error::Io`] when the
/// files cannot be moved.
pub(crate) fn set_aside_all(
    dir: &Path,
    reason: &str,
    earlier: Option<RecoveryReport>,
) -> Result<RecoveryReport> {
    let _lock = lock(dir)?;
    let scan = scan_unlocked(dir)?;
    let backup_dir = match &earlier {
        Some(r) => r.backup_dir.clone(),
        None => backup_dir(dir)?,
    };
    let mut batches_dropped = earlier.as_ref().map_or(0, |r| r.batches_dropped);
    let mut bytes_dropped = earlier.as_ref().map_or(0, |r| r.bytes_dropped);
    let mut later_files = earlier.map(|r| r.later_files).unwrap_or_default();
    let mut first = None;
    for f in &scan.files {
        batches_dropped += f.batches + f.batches_after;
        bytes_dropped += data_len(&f.path)?;
    }
    for p in scan.files.iter().map(|f| &f.path).chain(&scan.stray) {
        let to = backup_dir.join(file_name(p));
        if to.exists() {
            fs::remove_file(p)?;
        } else {
            fs::rename(p, &to)?;
        }
        first.get_or_insert_with(|| p.clone());
        later_files.push(p.clone());
    }
    sync_dir(&backup_dir)?;
    sync_dir(dir)?;
    Ok(RecoveryReport {
        file: first.unwrap_or_else(|| dir.to_path_buf()),
        offset: 0,
        reason: reason.to_owned(),
        batches_kept: 0,
        batches_dropped,
        bytes_dropped,
        later_files,
        backup_dir,
        tables_only: true,
    })
}

fn file_name(p: &Path) -> std::ffi::OsString {
    p.file_name().map(ToOwned::to_owned).unwrap_or_default()
}

/// A new folder in `dir` for the original journal files.
fn backup_dir(dir: &Path) -> io::Result<PathBuf> {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let mut n = 0u32;
    loop {
        let name = if n == 0 {
            format!("{BACKUP_PREFIX}{ms}")
        } else {
            format!("{BACKUP_PREFIX}{ms}-{n}")
        };
        let path = dir.join(name);
        match fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// The length of a file without its trailing zero bytes (fjall preallocates journal files
/// with zeros).
fn data_len(path: &Path) -> io::Result<u64> {
    let mut file = File::open(path)?;
    let mut end = file.metadata()?.len();
    let mut buf = vec![0u8; 1 << 16];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let n = usize::try_from(end - start).unwrap_or(buf.len());
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b != 0) {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// Why reading a batch stopped.
enum Stop {
    /// The file ended (or only zeros follow) inside the batch.
    Torn,
    /// The batch is damaged; `true` when its framing is intact, so the next batch can be
    /// read.
    Damaged(String, bool),
    /// An I/O error.
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

/// A journal file read front to back.
struct Reader {
    r: BufReader<File>,
    pos: u64,
    len: u64,
}

impl Reader {
    /// Fills `buf`, or [`Stop::Torn`] when the file ends first.
    fn read(&mut self, buf: &mut [u8]) -> std::result::Result<(), Stop> {
        if self.len - self.pos < buf.len() as u64 {
            return Err(Stop::Torn);
        }
        self.r.read_exact(buf)?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn byte(&mut self) -> std::result::Result<u8, Stop> {
        let mut b = [0u8; 1];
        self.read(&mut b)?;
        Ok(b[0])
    }

    /// Feeds the next `n` bytes to `hasher`.
    fn hash(&mut self, mut n: u64, hasher: &mut Xxh3) -> std::result::Result<(), Stop> {
        if self.len - self.pos < n {
            return Err(Stop::Torn);
        }
        let mut buf = [0u8; 8192];
        while n > 0 {
            let k = usize::try_from(n.min(buf.len() as u64)).unwrap_or(buf.len());
            self.r.read_exact(&mut buf[..k])?;
            hasher.update(&buf[..k]);
            self.pos += k as u64;
            n -= k as u64;
        }
        Ok(())
    }

    /// Whether every byte from the current position on is zero (the position is kept).
    fn rest_is_zero(&mut self) -> io::Result<bool> {
        let mut buf = vec![0u8; 1 << 16];
        let zero = loop {
            let n = self.r.read(&mut buf)?;
            if n == 0 {
                break true;
            }
            if buf[..n].iter().any(|&b| b != 0) {
                break false;
            }
        };
        self.r.seek(SeekFrom::Start(self.pos))?;
        Ok(zero)
    }

    /// A tag byte where a non-zero one is due: a zero starting an all-zero rest is the end
    /// of the written data ([`Stop::Torn`] inside a batch).
    fn tag(&mut self) -> std::result::Result<u8, Stop> {
        let t = self.byte()?;
        if t == 0 {
            return Err(if self.rest_is_zero()? {
                Stop::Torn
            } else {
                Stop::Damaged("a zero byte where an entry should start".to_owned(), false)
            });
        }
        Ok(t)
    }

    /// Reads the batch starting at the current position (its start tag already read);
    /// returns its sequence number.
    fn batch(&mut self) -> std::result::Result<u64, Stop> {
        let mut head = [0u8; 12];
        self.read(&mut head)?;
        let count = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let seqno = u64::from_le_bytes([
            head[4], head[5], head[6], head[7], head[8], head[9], head[10], head[11],
        ]);
        let mut hasher = Xxh3::new();
        for _ in 0..count {
            let tag = self.tag()?;
            match tag {
                ITEM => {
                    let mut h = [0u8; ITEM_HEADER];
                    self.read(&mut h)?;
                    if h[0] > 2 {
                        return Err(Stop::Damaged(format!("bad value type {}", h[0]), false));
                    }
                    if h[1] > 1 {
                        return Err(Stop::Damaged(
                            format!("bad compression tag {}", h[1]),
                            false,
                        ));
                    }
                    hasher.update(&[tag]);
                    hasher.update(&h);
                    let key_len = u16::from_le_bytes([h[10], h[11]]);
                    let stored_len = u32::from_le_bytes([h[16], h[17], h[18], h[19]]);
                    self.hash(u64::from(key_len) + u64::from(stored_len), &mut hasher)?;
                }
                CLEAR => {
                    let mut id = [0u8; 8];
                    self.read(&mut id)?;
                    hasher.update(&[tag]);
                    hasher.update(&id);
                }
                START | END => {
                    return Err(Stop::Damaged(
                        "the batch has fewer items than its start entry announces".to_owned(),
                        false,
                    ));
                }
                other => {
                    return Err(Stop::Damaged(format!("bad entry tag {other}"), false));
                }
            }
        }
        match self.tag()? {
            END => {}
            ITEM | CLEAR => {
                return Err(Stop::Damaged(
                    "the batch has more items than its start entry announces".to_owned(),
                    false,
                ));
            }
            other => {
                return Err(Stop::Damaged(
                    format!("bad entry tag {other} where the batch should end"),
                    false,
                ));
            }
        }
        let mut end = [0u8; 12];
        self.read(&mut end)?;
        if end[8..] != TRAILER {
            return Err(Stop::Damaged("bad batch trailer".to_owned(), false));
        }
        let stored = u64::from_le_bytes([
            end[0], end[1], end[2], end[3], end[4], end[5], end[6], end[7],
        ]);
        if stored != hasher.digest() {
            return Err(Stop::Damaged(
                "checksum mismatch in a write batch".to_owned(),
                true,
            ));
        }
        Ok(seqno)
    }
}

/// The sequence numbers of the last two intact batches read. fjall numbers every batch
/// under the journal's lock, so they increase strictly from batch to batch and from file to
/// file; the start entry holding the number is not covered by the checksum, so a number out
/// of order is how damage to it shows.
#[derive(Debug, Default)]
struct SeqTrack {
    /// Number of the batch before the last one.
    prev: Option<u64>,
    /// The last batch: number, file index, offset.
    last: Option<(u64, usize, u64)>,
    /// Stop checking: damage was found.
    done: bool,
    /// A batch of an earlier file found damaged by its number: `(file index, offset)`.
    earlier: Option<(usize, u64)>,
}

/// Why a sequence number out of order is damage.
const SEQNO_OUT_OF_ORDER: &str = "a write batch's sequence number is out of order";

impl SeqTrack {
    /// Takes batch `seqno` at `offset` of file `file`: `None` when in order, else the batch
    /// to blame, `(file, offset)`: the last one when its number is the odd one out (larger
    /// than both neighbours'), else this one.
    fn next(&mut self, seqno: u64, file: usize, offset: u64) -> Option<(usize, u64)> {
        if self.done {
            return None;
        }
        if let Some((last, lf, lo)) = self.last
            && seqno <= last
        {
            self.done = true;
            return Some(if self.prev.is_none_or(|p| p < seqno) {
                (lf, lo)
            } else {
                (file, offset)
            });
        }
        self.prev = self.last.map(|l| l.0);
        self.last = Some((seqno, file, offset));
        None
    }
}

/// Reads one journal file (number `index` in the scan) batch by batch.
fn scan_file(path: &Path, index: usize, seq: &mut SeqTrack) -> io::Result<FileScan> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut r = Reader {
        r: BufReader::with_capacity(1 << 16, file),
        pos: 0,
        len,
    };
    let mut out = FileScan {
        path: path.to_path_buf(),
        batches: 0,
        batches_after: 0,
        outcome: Outcome::Clean,
    };
    let mut damaged = false;
    loop {
        let start = r.pos;
        if start >= len {
            break; // the end of the file, between batches
        }
        let step = match r.byte() {
            Err(e) => Err(e),
            Ok(0) => {
                if r.rest_is_zero()? {
                    break;
                }
                Err(Stop::Damaged(
                    "unexpected bytes after the last write batch".to_owned(),
                    false,
                ))
            }
            Ok(START) => r.batch(),
            Ok(other) => Err(Stop::Damaged(
                format!("bad entry tag {other} where a write batch should start"),
                false,
            )),
        };
        match step {
            Ok(_) if damaged => out.batches_after += 1,
            Ok(seqno) => match seq.next(seqno, index, start) {
                None => out.batches += 1,
                Some((i, offset)) if i == index => {
                    // This batch or the one before it in this file.
                    let blamed_last = offset != start;
                    out.outcome = Outcome::Damaged(offset, SEQNO_OUT_OF_ORDER.to_owned());
                    out.batches -= u64::from(blamed_last);
                    out.batches_after += 1 + u64::from(blamed_last);
                    damaged = true;
                }
                Some(earlier) => {
                    seq.earlier = Some(earlier);
                    out.batches += 1;
                }
            },
            Err(Stop::Io(e)) => return Err(e),
            Err(_) if damaged => break,
            Err(Stop::Torn) => {
                out.outcome = Outcome::Torn(start);
                break;
            }
            Err(Stop::Damaged(_, false)) if r.rest_is_zero()? => {
                // Nothing was written after the broken part: an interrupted write.
                out.outcome = Outcome::Torn(start);
                break;
            }
            Err(Stop::Damaged(reason, framed)) => {
                seq.done = true;
                out.outcome = Outcome::Damaged(start, reason);
                if !framed {
                    break;
                }
                damaged = true;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal batch as fjall writes it: uncompressed items `(keyspace, key, value)`.
    fn batch(seqno: u64, items: &[(u64, &[u8], &[u8])]) -> Vec<u8> {
        let mut out = vec![START];
        out.extend_from_slice(&u32::try_from(items.len()).expect("count").to_le_bytes());
        out.extend_from_slice(&seqno.to_le_bytes());
        let mut body = Vec::new();
        for (ks, k, v) in items {
            body.push(ITEM);
            body.push(0); // value
            body.push(0); // no compression
            body.extend_from_slice(&ks.to_le_bytes());
            body.extend_from_slice(&u16::try_from(k.len()).expect("key").to_le_bytes());
            let vlen = u32::try_from(v.len()).expect("value").to_le_bytes();
            body.extend_from_slice(&vlen);
            body.extend_from_slice(&vlen);
            body.extend_from_slice(k);
            body.extend_from_slice(v);
        }
        let mut h = Xxh3::new();
        h.update(&body);
        out.extend_from_slice(&body);
        out.push(END);
        out.extend_from_slice(&h.digest().to_le_bytes());
        out.extend_from_slice(&TRAILER);
        out
    }

    fn scan_bytes(bytes: &[u8]) -> FileScan {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.jnl");
        fs::write(&path, bytes).expect("write");
        scan_file(&path, 0, &mut SeqTrack::default()).expect("scan")
    }

    #[test]
    fn intact_batches_and_zero_tails_are_clean() {
        let mut j = batch(1, &[(1, b"k", b"v")]);
        let second = j.len() as u64;
        j.extend(batch(2, &[(1, b"k2", b"value"), (2, b"x", b"")]));
        let s = scan_bytes(&j);
        assert_eq!((s.batches, &s.outcome), (2, &Outcome::Clean));
        j.extend(vec![0u8; 100_000]);
        let s = scan_bytes(&j);
        assert_eq!((s.batches, &s.outcome), (2, &Outcome::Clean));
        // An interrupted last batch.
        let full = batch(3, &[(1, b"k3", b"abcdef")]);
        let mut torn = j[..usize::try_from(second).expect("len")].to_vec();
        torn.extend_from_slice(&full[..full.len() - 5]);
        let s = scan_bytes(&torn);
        assert_eq!((s.batches, &s.outcome), (1, &Outcome::Torn(second)));
        torn.extend(vec![0u8; 1000]);
        assert_eq!(scan_bytes(&torn).outcome, Outcome::Torn(second));
    }

    #[test]
    fn set_aside_moves_every_journal_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let j = [batch(1, &[(1, b"k", b"v")]), batch(2, &[(1, b"k", b"v")])].concat();
        fs::write(dir.path().join("3.jnl"), &j).expect("write");
        fs::write(dir.path().join("4.jnl"), &j[..5]).expect("write");
        fs::write(dir.path().join(LOCK_FILE), b"").expect("write");
        let r = set_aside_all(dir.path(), "fjall: refused", None).expect("set aside");
        assert!(r.tables_only);
        assert_eq!(r.batches_dropped, 2);
        assert_eq!(r.later_files.len(), 2);
        assert_eq!(r.file, dir.path().join("3.jnl"));
        let (files, stray) = journal_files(dir.path()).expect("list");
        assert!(files.is_empty() && stray.is_empty());
        assert_eq!(fs::read(r.backup_dir.join("3.jnl")).expect("backup"), j);
        assert!(r.to_string().contains("fjall: refused"), "{r}");
    }

    #[test]
    fn flipped_bytes_are_damage() {
        let a = batch(1, &[(1, b"k", b"v")]);
        let b = batch(2, &[(1, b"key", b"some value bytes")]);
        let c = batch(3, &[(1, b"k3", b"v3")]);
        let at = a.len() as u64;
        let mut j = [a.clone(), b.clone(), c].concat();
        j[a.len() + b.len() - 20] ^= 0x40; // inside b's value
        let s = scan_bytes(&j);
        assert!(
            matches!(&s.outcome, Outcome::Damaged(o, r) if *o == at && r.contains("checksum")),
            "{:?}",
            s.outcome
        );
        assert_eq!((s.batches, s.batches_after), (1, 1));
        // A broken frame: b's start tag.
        let mut j = [a.clone(), b.clone()].concat();
        j[a.len()] = 9;
        assert!(matches!(scan_bytes(&j).outcome, Outcome::Damaged(o, _) if o == at));
        // A sequence number out of order: the odd one out is blamed.
        let (x, y) = (batch(1, &[(1, b"k", b"v")]), batch(2, &[(1, b"k", b"v")]));
        let z = batch(3, &[(1, b"k", b"v")]);
        let big = batch(200, &[(1, b"k", b"v")]);
        let small = batch(0, &[(1, b"k", b"v")]);
        let s = scan_bytes(&[x.clone(), big.clone(), z.clone()].concat());
        assert_eq!(
            s.outcome,
            Outcome::Damaged(x.len() as u64, SEQNO_OUT_OF_ORDER.into())
        );
        assert_eq!((s.batches, s.batches_after), (1, 2));
        let s = scan_bytes(&[x.clone(), y.clone(), small].concat());
        let third = (x.len() + y.len()) as u64;
        assert_eq!(
            s.outcome,
            Outcome::Damaged(third, SEQNO_OUT_OF_ORDER.into())
        );
        assert_eq!((s.batches, s.batches_after), (2, 1));
        // Across files: the last batch of the first one.
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("1.jnl"), [x.clone(), big].concat()).expect("write");
        fs::write(dir.path().join("2.jnl"), &z).expect("write");
        let scan = scan_unlocked(dir.path()).expect("scan");
        let d = scan.damage().expect("damage");
        assert_eq!((d.file, d.offset), (0, x.len() as u64));
        // Bytes after zeros.
        let mut j = [a, vec![0; 10], b].concat();
        j.truncate(j.len() - 3);
        assert!(matches!(scan_bytes(&j).outcome, Outcome::Damaged(o, _) if o == at));
    }
}
