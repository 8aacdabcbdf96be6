//! `tscoll user`: adds, removes and lists the users `tscoll serve` authenticates with
//! SCRAM-SHA-256, kept in the database directory's `tscoll-users.json`
//! (`tscoll_server::auth::UserStore`). The database itself is not opened.

use std::io::{self, BufRead, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tscoll_server::auth::UserStore;

use super::CmdResult;

/// Arguments of `tscoll user`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// What to do.
    #[command(subcommand)]
    pub(crate) action: Action,
}

/// The user actions.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Action {
    /// Add a user; the password is read from stdin (one line) or from `--password-file`.
    Add(AddArgs),
    /// Remove a user.
    Remove(RemoveArgs),
    /// Print the user names, one per line.
    List(ListArgs),
}

/// Arguments of `tscoll user add`.
#[derive(Debug, clap::Args)]
pub(crate) struct AddArgs {
    /// Database directory (it must exist).
    #[arg(long, value_name = "DIR")]
    pub(crate) db: PathBuf,
    /// User name.
    pub(crate) name: String,
    /// Read the password from this file (its first line) instead of stdin.
    #[arg(long, value_name = "FILE")]
    pub(crate) password_file: Option<PathBuf>,
}

/// Arguments of `tscoll user remove`.
#[derive(Debug, clap::Args)]
pub(crate) struct RemoveArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) db: PathBuf,
    /// User name.
    pub(crate) name: String,
}

/// Arguments of `tscoll user list`.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// Database directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) db: PathBuf,
}

/// Runs `tscoll user`.
///
/// # Errors
/// The directory does not exist, the user store is damaged or cannot be written, the user
/// exists (`add`) or does not (`remove`), or the password is empty, unreadable or refused by
/// SASLprep.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    match &args.action {
        Action::Add(a) => add(a),
        Action::Remove(a) => remove(a),
        Action::List(a) => list(a),
    }
}

fn add(args: &AddArgs) -> CmdResult<ExitCode> {
    let mut store = open_store(&args.db)?;
    let password = match &args.password_file {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read the password file {}: {e}", file.display()))?;
            first_line(&text).to_owned()
        }
        None => read_stdin_password(&args.name)?,
    };
    store.add(&args.name, &password).map_err(|e| match e {
        tscoll_server::auth::AuthError::UserExists(_) => format!(
            "user '{}' already exists in {} (tscoll user remove, then add, to change the \
             password)",
            args.name,
            store.path().display()
        ),
        e => e.to_string(),
    })?;
    outln!("added user '{}' (SCRAM-SHA-256, database admin)", args.name);
    Ok(ExitCode::SUCCESS)
}

fn remove(args: &RemoveArgs) -> CmdResult<ExitCode> {
    let mut store = open_store(&args.db)?;
    if !store.remove(&args.name)? {
        return Err(format!(
            "no user named '{}' in {} (tscoll user list shows them)",
            args.name,
            args.db.display()
        )
        .into());
    }
    outln!("removed user '{}'", args.name);
    Ok(ExitCode::SUCCESS)
}

fn list(args: &ListArgs) -> CmdResult<ExitCode> {
    for name in open_store(&args.db)?.names() {
        outln!("{name}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The user store of `dir`, which must be an existing directory (nothing is created).
fn open_store(dir: &Path) -> CmdResult<UserStore> {
    if !dir.is_dir() {
        return Err(format!(
            "{} is not a directory: give the database directory of `tscoll serve`",
            dir.display()
        )
        .into());
    }
    Ok(UserStore::open(dir)?)
}

/// Reads the password, one line, from stdin (prompting on stderr when stdin is a terminal).
fn read_stdin_password(name: &str) -> CmdResult<String> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        errprint!("password for user '{name}' (shown as typed): ");
    }
    let mut line = String::new();
    stdin
        .lock()
        .take(64 << 10)
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the password from stdin: {e}"))?;
    if line.is_empty() {
        return Err("no password on stdin: pipe it in (one line) or use --password-file".into());
    }
    Ok(first_line(&line).to_owned())
}

/// The text up to its first line break (`\n` or `\r\n`).
fn first_line(text: &str) -> &str {
    let line = text.split('\n').next().unwrap_or_default();
    line.strip_suffix('\r').unwrap_or(line)
}
