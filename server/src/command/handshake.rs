//! The commands of a connection's start and of monitoring: `hello` (`isMaster`), `buildInfo`,
//! `ping`, `getParameter`, `hostInfo`, `connectionStatus`, `whatsmyuri`, `endSessions`.

use bson::{Bson, DateTime, Document, doc};

use super::error::{CommandError, CommandResult};
use crate::state::{Session, Shared};
use crate::wire::{MAX_BSON_OBJECT_BYTES, MAX_MESSAGE_BYTES};

/// The MongoDB version the server answers as: the language and reply shapes it follows.
pub const MONGODB_VERSION: &str = "8.0.0";

/// The wire version of MongoDB 8.0, the highest the server speaks (`maxWireVersion`).
pub const MAX_WIRE_VERSION: i32 = 25;

/// The most writes one `insert`, `update` or `delete` takes (`maxWriteBatchSize`).
pub const MAX_WRITE_BATCH_SIZE: usize = 100_000;

/// Minutes a logical session lives unused (`logicalSessionTimeoutMinutes`; sessions are
/// accepted and not kept, as the server has no transactions).
const LOGICAL_SESSION_TIMEOUT_MINUTES: i32 = 30;

/// `hello`, `isMaster`, `ismaster`: a standalone server's handshake reply.
pub(crate) fn hello(
    shared: &Shared,
    session: &Session,
    cmd: &Document,
    name: &str,
) -> CommandResult {
    let mut out = Document::new();
    if name == "hello" {
        out.insert("isWritablePrimary", true);
    } else {
        out.insert("ismaster", true);
    }
    if matches!(cmd.get("helloOk"), Some(Bson::Boolean(true))) {
        out.insert("helloOk", true);
    }
    // No `topologyVersion`: with one, drivers switch to the streaming protocol (an awaitable
    // `hello` the server holds until the topology changes), which a standalone server that
    // never changes has no use for; without one they poll every `heartbeatFrequencyMS`.
    out.insert("maxBsonObjectSize", MAX_BSON_OBJECT_BYTES as i32);
    out.insert(
        "maxMessageSizeBytes",
        i32::try_from(shared.options.max_message_bytes.min(MAX_MESSAGE_BYTES)).unwrap_or(i32::MAX),
    );
    out.insert("maxWriteBatchSize", MAX_WRITE_BATCH_SIZE as i32);
    out.insert("localTime", DateTime::now());
    out.insert(
        "logicalSessionTimeoutMinutes",
        LOGICAL_SESSION_TIMEOUT_MINUTES,
    );
    out.insert("connectionId", session.connection_id as i64);
    out.insert("minWireVersion", 0);
    out.insert("maxWireVersion", MAX_WIRE_VERSION);
    out.insert("readOnly", shared.db.read_only().is_some());
    // The one mechanism, whoever asks: the answer does not tell whether the user exists
    // (an unknown user then fails as a wrong password does).
    if let Some(Bson::String(_)) = cmd.get("saslSupportedMechs") {
        out.insert("saslSupportedMechs", vec!["SCRAM-SHA-256"]);
    }
    out.insert("ok", 1.0);
    Ok(out)
}

/// `buildInfo`.
pub(crate) fn build_info() -> CommandResult {
    Ok(doc! {
        "version": MONGODB_VERSION,
        "gitVersion": "tscoll",
        "versionArray": [8, 0, 0, 0],
        "tscollVersion": env!("CARGO_PKG_VERSION"),
        "modules": [],
        "allocator": "system",
        "javascriptEngine": "none",
        "sysInfo": "deprecated",
        "bits": 64,
        "debug": false,
        "maxBsonObjectSize": MAX_BSON_OBJECT_BYTES as i32,
        "storageEngines": ["tscoll"],
        "openssl": { "running": "rustls" },
        "buildEnvironment": { "target_arch": std::env::consts::ARCH, "target_os": std::env::consts::OS },
        "ok": 1.0,
    })
}

/// The parameters `getParameter` knows, and their values.
fn parameters(shared: &Shared) -> Document {
    doc! {
        "featureCompatibilityVersion": { "version": "8.0" },
        "authenticationMechanisms": ["SCRAM-SHA-256"],
        "cursorTimeoutMillis": shared.options.cursor_timeout.as_millis() as i64,
        "maxBsonObjectSize": MAX_BSON_OBJECT_BYTES as i32,
        "timeseriesBucketMaxCount": 1000,
        "timeseriesBucketMaxSize": 128_000,
    }
}

/// `getParameter`: `{getParameter: 1, <name>: 1, …}` or `{getParameter: "*"}` for all.
pub(crate) fn get_parameter(shared: &Shared, cmd: &Document) -> CommandResult {
    let known = parameters(shared);
    let all = matches!(cmd.get("getParameter"), Some(Bson::String(s)) if s == "*")
        || matches!(cmd.get("allParameters"), Some(Bson::Boolean(true)));
    let mut out = Document::new();
    if all {
        out = known;
    } else {
        for name in cmd.keys().skip(1) {
            match known.get(name) {
                Some(v) => {
                    out.insert(name.clone(), v.clone());
                }
                None => {
                    return Err(CommandError::of(
                        tscoll_engine::ErrorCode::InvalidOptions,
                        format!("no option found to get: {name}"),
                    ));
                }
            }
        }
        if out.is_empty() {
            return Err(CommandError::of(
                tscoll_engine::ErrorCode::InvalidOptions,
                "no option found to get",
            ));
        }
    }
    out.insert("ok", 1.0);
    Ok(out)
}

/// `hostInfo`.
pub(crate) fn host_info() -> CommandResult {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as i32;
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "localhost".to_owned());
    let mem_mib = tscoll_engine::machine_memory_bytes().map_or(0, |b| (b / (1024 * 1024)) as i64);
    Ok(doc! {
        "system": {
            "currentTime": DateTime::now(),
            "hostname": hostname,
            "cpuAddrSize": 64,
            "memSizeMB": mem_mib,
            "memLimitMB": mem_mib,
            "numCores": cores,
            "numCoresAvailableToProcess": cores,
            "cpuArch": std::env::consts::ARCH,
            "numaEnabled": false,
        },
        "os": { "type": std::env::consts::OS, "name": std::env::consts::OS },
        "extra": {},
        "ok": 1.0,
    })
}

/// `connectionStatus`: who is authenticated on this connection.
pub(crate) fn connection_status(session: &Session) -> CommandResult {
    let users: Vec<Document> = session
        .user
        .iter()
        .map(|u| doc! { "user": u.as_str(), "db": "admin" })
        .collect();
    let roles: Vec<Document> = session
        .user
        .iter()
        .map(|_| doc! { "role": "root", "db": "admin" })
        .collect();
    Ok(doc! {
        "authInfo": { "authenticatedUsers": users, "authenticatedUserRoles": roles },
        "ok": 1.0,
    })
}

/// `whatsmyuri`: the client's address as the server sees it.
pub(crate) fn whats_my_uri(session: &Session) -> CommandResult {
    Ok(doc! { "you": session.peer.to_string(), "ok": 1.0 })
}
