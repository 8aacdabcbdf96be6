//! Every rule id the repository cites has an entry in `docs/semantics.md`.
//!
//! Comments, tests and documents cite sections as `§N` or `§N.M` (often written `SPEC §N.M`)
//! and rules as `R-N.M` or `R-N.M.K`. This test collects every such id from the sources and
//! documents (the crates' folders, `docs/*.md`, `README.md`, `CHANGELOG.md`; `target` folders
//! and `docs/semantics.md` itself left out) and checks that `docs/semantics.md` defines each
//! one: as the first word of a heading (`### §N.M Title`) or as a bold label
//! (`**R-N.M.K**`). Ids match exactly: a longer id (one more digit or one more `.N` part)
//! never stands for a shorter one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Folders scanned, relative to the repository root (each walked recursively).
const DIRS: [&str; 7] = [
    "engine", "catalog", "codec", "cli", "tests", "fuzz", "benches",
];

/// Single files scanned, relative to the repository root (besides `docs/*.md`).
const ROOT_FILES: [&str; 2] = ["README.md", "CHANGELOG.md"];

/// Extensions of the files scanned in [`DIRS`].
const EXTENSIONS: [&str; 3] = ["rs", "md", "toml"];

/// The rule book, relative to the repository root.
const SEMANTICS: &str = "docs/semantics.md";

/// The section sign that starts a section id.
const SECTION: char = '\u{a7}';

/// The repository root: `tests/` is one level below it.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// One id found in a text: the id and its byte range.
#[derive(Debug)]
struct Found {
    id: String,
    start: usize,
    end: usize,
}

/// Length of the run of ASCII digits at the start of `s`.
fn digits(s: &[u8]) -> usize {
    s.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// Length of the longest `N(.N)*` at the start of `s` and the number of its `.N` parts;
/// `None` when `s` does not start with a digit. A `.` not followed by a digit (the end of a
/// sentence) is not part of the id.
fn number_groups(s: &[u8]) -> Option<(usize, usize)> {
    let mut len = digits(s);
    if len == 0 {
        return None;
    }
    let mut parts = 0;
    while s.get(len) == Some(&b'.') {
        let more = digits(&s[len + 1..]);
        if more == 0 {
            break;
        }
        len += 1 + more;
        parts += 1;
    }
    Some((len, parts))
}

/// Every id in `text`, longest match at each place: `§` followed by `N(.N)*`, and `R-`
/// followed by `N(.N)+` where the `R` does not continue a word.
fn scan(text: &str) -> Vec<Found> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        let (prefix, need_parts) = if rest.starts_with(SECTION) {
            (SECTION.len_utf8(), 0)
        } else if rest.starts_with("R-")
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'))
        {
            (2, 1)
        } else {
            // Step to the next character boundary.
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        match number_groups(&bytes[i + prefix..]) {
            Some((len, parts)) if parts >= need_parts => {
                let end = i + prefix + len;
                out.push(Found {
                    id: text[i..end].to_owned(),
                    start: i,
                    end,
                });
                i = end;
            }
            _ => i += prefix,
        }
    }
    out
}

/// The ids `doc` defines, each with how many times: the first word of a heading line, or an
/// id written alone in bold (`**id**`).
fn defined_ids(doc: &str) -> BTreeMap<String, usize> {
    let mut defined = BTreeMap::new();
    for line in doc.lines() {
        let heading = line.starts_with('#').then(|| {
            let words = line.trim_start_matches('#');
            words.len() - words.trim_start().len() + (line.len() - words.len())
        });
        for f in scan(line) {
            let at_heading = heading == Some(f.start)
                && line[f.end..].chars().next().is_none_or(char::is_whitespace);
            let bold = line[..f.start].ends_with("**") && line[f.end..].starts_with("**");
            if at_heading || bold {
                *defined.entry(f.id).or_insert(0) += 1;
            }
        }
    }
    defined
}

/// Adds the files under `dir` with one of [`EXTENSIONS`] to `out`, skipping `target`
/// folders and hidden entries. Symbolic links are not followed.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let kind = entry
            .file_type()
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        if kind.is_dir() {
            if name != "target" {
                walk(&path, out);
            }
        } else if kind.is_file()
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e))
        {
            out.push(path);
        }
    }
}

/// The files whose citations must resolve, sorted.
fn cited_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in DIRS {
        walk(&root.join(dir), &mut files);
    }
    for entry in fs::read_dir(root.join("docs")).expect("reading docs/") {
        let path = entry.expect("reading docs/").path();
        if path.extension().is_some_and(|e| e == "md") && path != root.join(SEMANTICS) {
            files.push(path);
        }
    }
    files.extend(ROOT_FILES.iter().map(|f| root.join(f)));
    files.sort();
    files
}

/// Every id cited in `files`, with the first place (`path:line`) that cites it.
fn cited_ids(root: &Path, files: &[PathBuf]) -> BTreeMap<String, String> {
    let mut cited = BTreeMap::new();
    for path in files {
        let Ok(text) = fs::read_to_string(path) else {
            continue; // not UTF-8: no citations to check
        };
        let shown = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        for (no, line) in text.lines().enumerate() {
            for f in scan(line) {
                cited
                    .entry(f.id)
                    .or_insert_with(|| format!("{shown}:{}", no + 1));
            }
        }
    }
    cited
}

fn semantics() -> String {
    let path = repo_root().join(SEMANTICS);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

#[test]
fn every_cited_id_is_defined_in_semantics_md() {
    let root = repo_root();
    let files = cited_files(&root);
    let cited = cited_ids(&root, &files);
    assert!(
        !cited.is_empty(),
        "no rule ids found in {} files",
        files.len()
    );
    let defined = defined_ids(&semantics());
    let missing: Vec<String> = cited
        .iter()
        .filter(|(id, _)| !defined.contains_key(*id))
        .map(|(id, at)| format!("  {id} (cited at {at})"))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} cited ids have no heading or bold label in {SEMANTICS}:\n{}",
        missing.len(),
        cited.len(),
        missing.join("\n")
    );
}

#[test]
fn semantics_md_defines_each_id_once_and_refers_only_to_defined_ids() {
    let doc = semantics();
    let defined = defined_ids(&doc);
    let twice: Vec<&String> = defined
        .iter()
        .filter(|&(_, &n)| n > 1)
        .map(|(id, _)| id)
        .collect();
    assert!(
        twice.is_empty(),
        "defined more than once in {SEMANTICS}: {twice:?}"
    );
    let dangling: BTreeSet<String> = scan(&doc)
        .into_iter()
        .map(|f| f.id)
        .filter(|id| !defined.contains_key(id))
        .collect();
    assert!(
        dangling.is_empty(),
        "{SEMANTICS} refers to ids it does not define: {dangling:?}"
    );
}

#[test]
fn ids_match_exactly() {
    // Ids are assembled at run time so that this file cites none itself.
    let r = |n: &str| format!("R-{n}");
    let s = |n: &str| format!("{SECTION}{n}");
    let ids = |text: &str| scan(text).into_iter().map(|f| f.id).collect::<Vec<_>>();

    let text = format!(
        "see {} and {}. Also {}, {}–{} and X{} or {}x.",
        r("6.2.2"),
        s("6"),
        s("11.1"),
        s("6.2"),
        s("6.5"),
        r("1.2"),
        r("3")
    );
    assert_eq!(
        ids(&text),
        [r("6.2.2"), s("6"), s("11.1"), s("6.2"), s("6.5")],
        "{text}"
    );

    let doc = format!(
        "## {} Placement\n* **{}** rule\n### {}.x\nmentions {} and {}\n",
        s("6.2"),
        r("6.2.20"),
        s("6"),
        r("6.2.2"),
        s("7")
    );
    let defined = defined_ids(&doc);
    assert!(defined.contains_key(&s("6.2")), "{defined:?}");
    assert!(defined.contains_key(&r("6.2.20")), "{defined:?}");
    assert!(
        !defined.contains_key(&s("6")),
        "a heading word longer than the id"
    );
    assert!(
        !defined.contains_key(&r("6.2.2")),
        "a longer id does not define it"
    );
    assert!(
        !defined.contains_key(&s("7")),
        "a mention is not a definition"
    );
}
