//! The users `tscoll serve` authenticates, kept in one JSON file inside the database
//! directory: [`USERS_FILE`].
//!
//! ```json
//! {
//!   "version": 1,
//!   "users": [
//!     {
//!       "name": "alice",
//!       "db": "admin",
//!       "mechanism": "SCRAM-SHA-256",
//!       "salt": "<base64, 28 bytes>",
//!       "iterations": 15000,
//!       "storedKey": "<base64, 32 bytes>",
//!       "serverKey": "<base64, 32 bytes>"
//!     }
//!   ]
//! }
//! ```
//!
//! The password itself is never stored. Every user is defined on the `admin` database, as
//! MongoDB's users created there. A change writes the whole file anew atomically: a temporary
//! file beside it (`tscoll-users.json.tmp`) is written and synced, renamed over the file, and
//! the directory synced; on unix the file is readable by its owner only (mode 0600).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

use super::credential::KEY_BYTES;
use super::scram::MECHANISM;
use super::{AuthError, Credential};

/// The name of the user store's file in the database directory.
pub const USERS_FILE: &str = "tscoll-users.json";

/// The temporary file a change is written to before it is renamed to [`USERS_FILE`].
const USERS_TMP_FILE: &str = "tscoll-users.json.tmp";

/// The version of the file's format this build writes and reads.
const FORMAT_VERSION: u32 = 1;

/// The database every user is defined on.
const USER_DB: &str = "admin";

/// The largest user store file read, in bytes (16 MiB: about 50,000 users).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// The users of a database directory, each with a SCRAM-SHA-256 [`Credential`], read from
/// and written to `<dir>/`[`USERS_FILE`].
///
/// A `UserStore` reads the file once, at [`UserStore::open`]; each change rewrites it. Two
/// processes changing the same store at once may lose one's change: change users from one
/// process at a time.
#[derive(Debug)]
pub struct UserStore {
    /// The database directory.
    dir: PathBuf,
    /// The users by name.
    users: BTreeMap<String, Credential>,
}

/// The file's shape.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    /// [`FORMAT_VERSION`].
    version: u32,
    /// The users, by name.
    users: Vec<UserEntry>,
}

/// One user in the file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UserEntry {
    /// The user name.
    name: String,
    /// The database the user is defined on: always `admin`.
    db: String,
    /// The SASL mechanism of the credential: always `SCRAM-SHA-256`.
    mechanism: String,
    /// The PBKDF2 salt, base64.
    salt: String,
    /// PBKDF2 iterations.
    iterations: u32,
    /// The stored key, base64 of 32 bytes.
    stored_key: String,
    /// The server key, base64 of 32 bytes.
    server_key: String,
}

impl UserStore {
    /// Reads the user store of the database directory `dir`. A missing file (or directory)
    /// is a store with no users; nothing is written.
    ///
    /// # Errors
    /// [`AuthError::Io`] when the file exists but cannot be read; [`AuthError::Corrupt`]
    /// (naming the file) when it is not a user store this build reads: not JSON, another
    /// format version, an unknown field, a mechanism other than `SCRAM-SHA-256`, a database
    /// other than `admin`, bad base64, keys that are not 32 bytes, an empty salt, fewer than
    /// [`Credential::MIN_ITERATIONS`] iterations, a user listed twice, or over 16 MiB.
    pub fn open(dir: &Path) -> Result<UserStore, AuthError> {
        let path = dir.join(USERS_FILE);
        let io = |source| AuthError::Io {
            path: path.clone(),
            source,
        };
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(UserStore {
                    dir: dir.to_owned(),
                    users: BTreeMap::new(),
                });
            }
            Err(e) => return Err(io(e)),
        };
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        let corrupt = |reason: String| AuthError::Corrupt {
            path: path.clone(),
            reason,
        };
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(corrupt(format!("it is larger than {MAX_FILE_BYTES} bytes")));
        }
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(format!("not JSON: {e}")))?;
        // The version first: a newer format may have fields this build does not know.
        match value.get("version").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(FORMAT_VERSION) => {}
            Some(v) => {
                return Err(corrupt(format!(
                    "format version {v} (this build reads version {FORMAT_VERSION})"
                )));
            }
            None => return Err(corrupt("it has no format version".into())),
        }
        let parsed: StoreFile =
            serde_json::from_value(value).map_err(|e| corrupt(format!("{e}")))?;
        let mut users = BTreeMap::new();
        for entry in parsed.users {
            let name = entry.name.clone();
            let credential = entry
                .credential()
                .map_err(|reason| corrupt(format!("user {name:?}: {reason}")))?;
            if users.insert(name.clone(), credential).is_some() {
                return Err(corrupt(format!("user {name:?} is listed twice")));
            }
        }
        Ok(UserStore {
            dir: dir.to_owned(),
            users,
        })
    }

    /// The path of the store's file: `<dir>/`[`USERS_FILE`] (which may not exist yet).
    #[must_use]
    pub fn path(&self) -> PathBuf {
        self.dir.join(USERS_FILE)
    }

    /// Adds the user `name` with a new SCRAM-SHA-256 credential of `password`
    /// ([`Credential::new`]: a random salt, [`Credential::DEFAULT_ITERATIONS`]) and writes
    /// the file.
    ///
    /// # Errors
    /// [`AuthError::UserExists`] when the store has that user; [`AuthError::InvalidUserName`]
    /// for an empty name or one holding a NUL; [`AuthError::InvalidPassword`] for an empty
    /// password or one SASLprep refuses; [`AuthError::Io`] when the file cannot be written
    /// (the store is then unchanged).
    pub fn add(&mut self, name: &str, password: &str) -> Result<(), AuthError> {
        check_name(name)?;
        if self.users.contains_key(name) {
            return Err(AuthError::UserExists(name.to_owned()));
        }
        let credential = Credential::new(password)?;
        self.users.insert(name.to_owned(), credential);
        if let Err(e) = self.write() {
            self.users.remove(name);
            return Err(e);
        }
        Ok(())
    }

    /// Removes the user `name` and writes the file; `false` (nothing written) when there is
    /// no such user.
    ///
    /// # Errors
    /// [`AuthError::Io`] when the file cannot be written (the store is then unchanged).
    pub fn remove(&mut self, name: &str) -> Result<bool, AuthError> {
        let Some(credential) = self.users.remove(name) else {
            return Ok(false);
        };
        if let Err(e) = self.write() {
            self.users.insert(name.to_owned(), credential);
            return Err(e);
        }
        Ok(true)
    }

    /// The user names, sorted (by bytes).
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.users.keys().cloned().collect()
    }

    /// The credential of the user `name`, if there is one (for [`super::ScramServer::start`]'s
    /// lookup).
    #[must_use]
    pub fn credential(&self, name: &str) -> Option<Credential> {
        self.users.get(name).cloned()
    }

    /// Whether the store has no users.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// Writes the whole store atomically: the temporary file, synced, renamed over the file,
    /// then the directory synced.
    fn write(&self) -> Result<(), AuthError> {
        let file = StoreFile {
            version: FORMAT_VERSION,
            users: self
                .users
                .iter()
                .map(|(name, c)| UserEntry::new(name, c))
                .collect(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| AuthError::Io {
            path: self.path(),
            source: std::io::Error::other(e),
        })?;
        bytes.push(b'\n');
        let tmp = self.dir.join(USERS_TMP_FILE);
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| AuthError::Io { path, source }
        };
        write_private(&tmp, &bytes).map_err(io(&tmp))?;
        fs::rename(&tmp, self.path()).map_err(io(&self.path()))?;
        sync_dir(&self.dir).map_err(io(&self.dir))?;
        Ok(())
    }
}

impl UserEntry {
    /// The file's entry of the user `name`.
    fn new(name: &str, c: &Credential) -> UserEntry {
        UserEntry {
            name: name.to_owned(),
            db: USER_DB.to_owned(),
            mechanism: MECHANISM.to_owned(),
            salt: BASE64.encode(&c.salt),
            iterations: c.iterations,
            stored_key: BASE64.encode(c.stored_key),
            server_key: BASE64.encode(c.server_key),
        }
    }

    /// The credential of an entry, or why it is not one.
    fn credential(&self) -> Result<Credential, String> {
        if self.db != USER_DB {
            return Err(format!("database {:?}, not {USER_DB:?}", self.db));
        }
        if self.mechanism != MECHANISM {
            return Err(format!("mechanism {:?}, not {MECHANISM:?}", self.mechanism));
        }
        check_name(&self.name).map_err(|e| e.to_string())?;
        let salt = BASE64
            .decode(&self.salt)
            .map_err(|e| format!("salt is not base64: {e}"))?;
        if salt.is_empty() {
            return Err("the salt is empty".into());
        }
        if self.iterations < Credential::MIN_ITERATIONS {
            return Err(format!(
                "{} iterations, below the minimum of {}",
                self.iterations,
                Credential::MIN_ITERATIONS
            ));
        }
        Ok(Credential {
            salt,
            iterations: self.iterations,
            stored_key: decode_key(&self.stored_key, "storedKey")?,
            server_key: decode_key(&self.server_key, "serverKey")?,
        })
    }
}

/// A 32-byte key from its base64 text in the file.
fn decode_key(text: &str, field: &str) -> Result<[u8; KEY_BYTES], String> {
    let bytes = BASE64
        .decode(text)
        .map_err(|e| format!("{field} is not base64: {e}"))?;
    <[u8; KEY_BYTES]>::try_from(bytes.as_slice())
        .map_err(|_| format!("{field} holds {} bytes, not {KEY_BYTES}", bytes.len()))
}

/// Refuses a user name that is empty or holds a NUL character.
fn check_name(name: &str) -> Result<(), AuthError> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.contains('\0') {
        "it holds a NUL character"
    } else {
        return Ok(());
    };
    Err(AuthError::InvalidUserName {
        name: name.to_owned(),
        reason,
    })
}

/// Writes `bytes` to a new file at `path` (replacing any), readable by its owner only on unix,
/// and syncs it.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // A temporary file a crash left behind may have other permissions: start anew.
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        // The mode given at creation is reduced by the umask; 0600 is what is wanted.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(bytes)?;
    file.sync_all()
}

/// Syncs the directory `dir`, so a rename in it survives a crash (unix; elsewhere nothing).
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
    }
    Ok(())
}
