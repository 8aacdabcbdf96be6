//! Each command's help lists the options it takes: the options of opening a database
//! (`--recover`, `--checkpoint-bytes`, `--ingest-min-bytes`) under their own heading on the
//! commands that open one, and nowhere else.

use crate::common::tscoll;

/// The options of opening a database.
const DB_OPTIONS: [&str; 3] = ["--recover", "--checkpoint-bytes", "--ingest-min-bytes"];

/// Commands that open a database (`--db DIR`).
const OPEN_A_DATABASE: [&str; 19] = [
    "create",
    "ingest",
    "find",
    "aggregate",
    "stats",
    "list",
    "drop",
    "compact",
    "buckets",
    "expire",
    "delete",
    "update",
    "collmod",
    "index create",
    "index drop",
    "index list",
    "verify",
    "salvage",
    "serve",
];

/// Commands that do not (the benchmarks make their own databases, `demo` a temporary one,
/// `user` writes only its own file in the directory).
const OTHERS: [&str; 11] = [
    "demo",
    "bench codec",
    "bench ingest",
    "bench gen",
    "bench query",
    "bench memory",
    "index",
    "user",
    "user add",
    "user remove",
    "user list",
];

/// `tscoll help COMMAND...`.
fn help(command: &str) -> String {
    let mut args = vec!["help"];
    args.extend(command.split_whitespace());
    tscoll(&args, None).ok().stdout()
}

/// The command names of a help text's "Commands:" section (`help` aside).
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // Not the continuation lines of a wrapped description.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn database_options_are_shown_only_on_commands_that_open_a_database() {
    // Every command is in one list or the other (`sql` and `worker` are built with a
    // feature).
    let mut listed = commands(&help(""));
    listed.retain(|c| c != "sql" && c != "worker");
    for parent in ["index", "bench", "user"] {
        listed.extend(
            commands(&help(parent))
                .into_iter()
                .map(|c| format!("{parent} {c}")),
        );
    }
    for name in &listed {
        assert!(
            OPEN_A_DATABASE.contains(&name.as_str())
                || OTHERS.contains(&name.as_str())
                || name == "bench",
            "classify `{name}`"
        );
    }
    for name in OPEN_A_DATABASE {
        let text = help(name);
        let (own, db) = text
            .split_once("\nDatabase options:\n")
            .unwrap_or_else(|| panic!("no heading in `tscoll help {name}`:\n{text}"));
        for option in DB_OPTIONS {
            assert!(
                !own.contains(option),
                "{option} among {name}'s own:\n{text}"
            );
            assert!(db.contains(option), "{option} missing in {name}:\n{text}");
        }
    }
    for name in OTHERS.into_iter().chain(["", "bench"]) {
        let text = help(name);
        for option in DB_OPTIONS.into_iter().chain(["Database options"]) {
            assert!(
                !text.contains(option),
                "{option} in `tscoll help {name}`:\n{text}"
            );
        }
    }
}

#[test]
fn database_options_work_after_the_command() {
    let s = crate::common::Scratch::new();
    s.run(
        "create",
        &["c", "--time-field", "ts", "--checkpoint-bytes", "4096"],
    )
    .ok();
    s.run("verify", &["--recover"]).ok();
    s.run("list", &["--ingest-min-bytes", "0"]).ok();
}
