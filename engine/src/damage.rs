//! Read failures of a keyspace in words, for the damage reports of `verify` and `salvage`:
//! what fjall reported, and which table files are damaged.
//!
//! fjall checks each block of a table file against its checksum as it reads it, and says only
//! that one did not match. When it records a table file it also records the xxh3 checksum of
//! the whole file: the files whose bytes no longer hash to it are the damaged ones.

use std::io::Read;
use std::path::{Path, PathBuf};

use fjall::AbstractTree;
use xxhash_rust::xxh3::Xxh3Default;

use crate::error::{describe_storage_error, table_damage};

/// fjall's failure `error` reading keyspace `ks` as a phrase: for damaged data, what is wrong
/// and the table files it is in (each file of the keyspace is read to find them), e.g.
/// `"table file DIR/keyspaces/7/tables/3 is damaged (checksum mismatch)"`; otherwise the
/// error's plain sentence (a full disk, an I/O error).
pub(crate) fn read_failure(ks: &fjall::Keyspace, error: &fjall::Error) -> String {
    let Some(what) = table_damage(error) else {
        return describe_storage_error(error);
    };
    let files = damaged_tables(ks);
    let names = |files: &[PathBuf]| {
        files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match files.as_slice() {
        [] => format!(
            "a table file in {} is damaged ({what})",
            ks.path().join("tables").display()
        ),
        [one] => format!("table file {} is damaged ({what})", one.display()),
        many => format!("table files {} are damaged ({what})", names(many)),
    }
}

/// The table files of `ks` that cannot be read or do not hash to the checksum fjall recorded.
fn damaged_tables(ks: &fjall::Keyspace) -> Vec<PathBuf> {
    let dir = ks.path().join("tables");
    let version = ks.tree.current_version();
    version
        .iter_tables()
        .filter_map(|t| {
            let path = dir.join(t.id().to_string());
            (file_checksum(&path) != Some(t.checksum().into_u128())).then_some(path)
        })
        .collect()
}

/// The xxh3 128-bit hash of a file's bytes; `None` when it cannot be read.
fn file_checksum(path: &Path) -> Option<u128> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Xxh3Default::new();
    let mut buf = vec![0_u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Some(hasher.digest128()),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// fjall's failure reading one bucket's records as a phrase: `"a damaged block (checksum
/// mismatch)"` (the keyspace's own report names the file), or the error's plain sentence.
pub(crate) fn bucket_read_failure(error: &fjall::Error) -> String {
    match table_damage(error) {
        Some(what) => format!("a damaged block ({what})"),
        None => describe_storage_error(error),
    }
}

/// The data segments of bucket `id` in `snap`: `(segment number, blob)`, in order; or why
/// they cannot be read ([`bucket_read_failure`]).
pub(crate) fn read_segments(
    snap: &fjall::Snapshot,
    data: &fjall::Keyspace,
    id: &tscoll_catalog::BucketId,
) -> Result<Vec<(u32, fjall::Slice)>, String> {
    let mut out = Vec::new();
    for item in fjall::Readable::prefix(snap, data, id) {
        let (k, v) = item.into_inner().map_err(|e| bucket_read_failure(&e))?;
        if let Some((_, seg)) = crate::storage::keys::parse_data_key(&k) {
            out.push((seg, v));
        }
    }
    Ok(out)
}
