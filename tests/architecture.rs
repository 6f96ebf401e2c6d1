//! The layers depend one way: a module may use its own layer and those
//! below it, never one above; and inside a layer the modules import each
//! other without circles. Checked on the sources, so a wrong-way import or a
//! circle fails CI rather than waiting for a review.
//!
//! ir, the fused op's definition, diagnostics and the output writer (0) →
//! format (1) → verify (2) → analysis (3) → matcher, rewrite, the pass
//! machinery (4) → passes (5) → lower (6) → runtime (7) → the drivers: the
//! three command lines, rlx-opt's passes inside MLIR's pass managers,
//! rlx-trace (8).
//!
//! The import reader below understands what rustc's name resolution needs
//! for module paths: `crate::`, `self::` and `super::` (also
//! `super::super::` and from inline modules such as `mod tests`), paths to a
//! module's own child modules, grouped imports (`use crate::{a::b, c::{d,
//! self}}`), globs, `as` renames and `pub use` re-exports; and paths written
//! in code (`crate::x::f()`), not only in `use` items. Comments and string
//! literals are skipped. It has its own tests at the end of this file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn layer(module: &str) -> Option<u32> {
    Some(match module {
        "ir" | "fused" | "diag" | "output" | "limits" | "opt_in" | "testgen" => 0,
        "format" => 1,
        "verify" => 2,
        "analysis" => 3,
        "matcher" | "rewrite" | "pass" | "fusion_report" => 4,
        "passes" => 5,
        "lower" => 6,
        "runtime" => 7,
        "driver" | "run_cli" | "trace_cli" | "mlir_pass" | "cli" | "trace" => 8,
        _ => return None,
    })
}

// ---------------------------------------------------------------- the tree

/// A module path from the crate root (`["runtime", "welch"]`; the root is `[]`).
type ModPath = Vec<String>;

fn show(path: &[String]) -> String {
    if path.is_empty() { "crate".into() } else { path.join("::") }
}

/// One crate's modules: each source file's module path. `passes/` is wired
/// into the core as `crate::passes` (`#[path]` in src/lib.rs).
struct Crate {
    files: Vec<(PathBuf, ModPath)>,
}

impl Crate {
    fn read(root: &Path, dirs: &[(&str, &[&str])]) -> Crate {
        let mut files = Vec::new();
        for (dir, prefix) in dirs {
            let mut found = Vec::new();
            sources(&root.join(dir), &mut found);
            for file in found {
                let rel = file.strip_prefix(root.join(dir)).unwrap();
                // Each binary under src/bin is a crate of its own.
                if rel.starts_with("bin") {
                    continue;
                }
                let mut path: ModPath = prefix.iter().map(|s| s.to_string()).collect();
                path.extend(rel.components().map(|c| c.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string()));
                if path.last().is_some_and(|last| last == "mod" || last == "lib") {
                    path.pop();
                }
                files.push((file, path));
            }
        }
        files.sort();
        Crate { files }
    }

    fn modules(&self) -> BTreeSet<ModPath> {
        self.files.iter().map(|(_, m)| m.clone()).collect()
    }

    /// Every import of every file, resolved.
    fn imports(&self) -> Vec<(String, ModPath, Import)> {
        let modules = self.modules();
        let mut all = Vec::new();
        for (file, module) in &self.files {
            let text = std::fs::read_to_string(file).unwrap();
            // Shown from the repository root (`rlx-ext/src/…` for rlx-ext).
            let shown = file.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().display().to_string();
            let imports = read_imports(&text, module, &modules).unwrap_or_else(|e| panic!("{shown}: {e}"));
            all.extend(imports.into_iter().map(|i| (shown.clone(), module.clone(), i)));
        }
        all
    }
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn core() -> Crate {
    Crate::read(Path::new(env!("CARGO_MANIFEST_DIR")), &[("src", &[]), ("passes", &["passes"])])
}

fn rlx_ext() -> Crate {
    Crate::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("rlx-ext").as_path(), &[("src", &[])])
}

// ----------------------------------------------------------- the reader

/// One path a file names into its own crate, resolved from the crate root.
#[derive(Debug, Clone, PartialEq)]
struct Import {
    line: usize,
    /// As written (`super::{a, b}` gives two imports, each written whole).
    written: String,
    path: ModPath,
    /// A `pub use` (also `pub(crate) use`): a re-export.
    reexport: bool,
    /// The name a `use` binds (`as` names it), `None` for a glob or a path in code.
    binds: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Sep, // ::
    Punct(char),
}

/// The tokens of `text` with their lines; comments, strings and character
/// literals dropped (braces in them would confuse the module nesting).
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                line += usize::from(c[i] == '\n');
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '\'' {
            // A character literal ('x', '\n', '\u{1F}', '\''), else a lifetime.
            if next == Some('\\') {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ident_char(ch) {
            let start = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            // Raw strings: r"…", r#"…"#, br"…".
            if (word == "r" || word == "br") && matches!(c.get(i), Some('"' | '#')) {
                let mut hashes = 0;
                while c.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                if c.get(i) == Some(&'"') {
                    i += 1;
                    loop {
                        if i >= c.len() {
                            break;
                        }
                        if c[i] == '"' && (0..hashes).all(|h| c.get(i + 1 + h) == Some(&'#')) {
                            i += 1 + hashes;
                            break;
                        }
                        line += usize::from(c[i] == '\n');
                        i += 1;
                    }
                    continue;
                }
                // `r#ident`: a raw identifier.
                let start = i;
                while i < c.len() && ident_char(c[i]) {
                    i += 1;
                }
                out.push((Tok::Ident(c[start..i].iter().collect()), line));
                continue;
            }
            if word == "b" && c.get(i) == Some(&'\'') {
                continue; // b'x': the literal follows
            }
            out.push((Tok::Ident(word), line));
        } else if ch == ':' && next == Some(':') {
            out.push((Tok::Sep, line));
            i += 2;
        } else {
            if !ch.is_whitespace() {
                out.push((Tok::Punct(ch), line));
            }
            i += 1;
        }
    }
    out
}

fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

fn is(t: Option<&(Tok, usize)>, want: &Tok) -> bool {
    t.is_some_and(|(t, _)| t == want)
}

/// The paths of one `use` tree from `*at` (after `use`) to its `;`, each
/// with the name it binds; `prefix` is the path above a group.
fn use_tree(toks: &[(Tok, usize)], at: &mut usize, prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) -> Result<(), String> {
    let mut path = prefix;
    if is(toks.get(*at), &Tok::Sep) {
        *at += 1; // `use ::name`: an extern crate
        path.push("::".into());
    }
    loop {
        match toks.get(*at) {
            Some((Tok::Punct('{'), _)) => {
                *at += 1;
                loop {
                    if is(toks.get(*at), &Tok::Punct('}')) {
                        *at += 1;
                        return Ok(());
                    }
                    use_tree(toks, at, path.clone(), out)?;
                    match toks.get(*at) {
                        Some((Tok::Punct(','), _)) => *at += 1,
                        Some((Tok::Punct('}'), _)) => {}
                        other => return Err(format!("line {}: `use` group: expected `,` or `}}`, found {other:?}", toks[*at - 1].1)),
                    }
                }
            }
            Some((Tok::Punct('*'), _)) => {
                *at += 1;
                out.push((path, None));
                return Ok(());
            }
            Some((Tok::Ident(name), _)) => {
                *at += 1;
                if is(toks.get(*at), &Tok::Sep) {
                    path.push(name.clone());
                    *at += 1;
                    continue;
                }
                // `a::{self, b}`: `self` is `a` itself.
                let bound = if name == "self" && !path.is_empty() && path.last().is_some_and(|p| p != "self" && p != "super") {
                    path.last().cloned()
                } else {
                    path.push(name.clone());
                    Some(name.clone())
                };
                let bound = if ident(toks.get(*at)) == Some("as") {
                    *at += 2;
                    ident(toks.get(*at - 1)).map(str::to_string)
                } else {
                    bound
                };
                out.push((path, bound));
                return Ok(());
            }
            other => return Err(format!("line {}: `use`: unexpected {other:?}", toks.get(*at).or(toks.last()).map_or(0, |t| t.1))),
        }
    }
}

/// `raw`, named from module `module`, as a path from the crate root; `None`
/// for a path into another crate.
fn resolve(raw: &[String], module: &[String], modules: &BTreeSet<ModPath>) -> Result<Option<ModPath>, String> {
    let mut segs = raw.iter().peekable();
    let mut path: ModPath = match segs.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segs.next();
            Vec::new()
        }
        Some("self" | "super") => module.to_vec(),
        Some(first) => {
            let mut child = module.to_vec();
            child.push(first.to_string());
            // A child module (`mod x;` beside this file), else another crate.
            if modules.contains(&child) { module.to_vec() } else { return Ok(None) }
        }
        None => return Ok(None),
    };
    while let Some(seg) = segs.peek() {
        match seg.as_str() {
            "self" => {}
            "super" => {
                if path.pop().is_none() {
                    return Err(format!("`{}` goes above the crate root", raw.join("::")));
                }
            }
            _ => break,
        }
        segs.next();
    }
    path.extend(segs.cloned());
    Ok(Some(path))
}

/// Every path into its own crate that a file of module `module` names: its
/// `use` items (a group gives one import per leaf) and the paths in its code
/// that start with `crate`, `self`, `super` or a child module's name.
/// `modules` is every module of the crate (files), to tell a child module
/// from another crate.
fn read_imports(text: &str, module: &[String], modules: &BTreeSet<ModPath>) -> Result<Vec<Import>, String> {
    let toks = tokens(text);
    let mut out = Vec::new();
    // Inline modules (`mod tests { … }`): their names and the brace depth they opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut at = 0;
    let here = |inline: &[(String, usize)]| -> ModPath { module.iter().cloned().chain(inline.iter().map(|(n, _)| n.clone())).collect() };
    while at < toks.len() {
        let (tok, line) = &toks[at];
        match tok {
            Tok::Punct('{') => {
                depth += 1;
                at += 1;
            }
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
                at += 1;
            }
            Tok::Ident(w) if w == "mod" && ident(toks.get(at + 1)).is_some() && is(toks.get(at + 2), &Tok::Punct('{')) => {
                inline.push((ident(toks.get(at + 1)).unwrap().to_string(), depth + 1));
                depth += 1;
                at += 3;
            }
            // (`use<…>` after `impl Trait +` is precise capturing, not an import.)
            Tok::Ident(w) if w == "use" && !is(toks.get(at + 1), &Tok::Punct('<')) => {
                let before = at.checked_sub(1).map(|b| &toks[b].0);
                let reexport = matches!(before, Some(Tok::Ident(p)) if p == "pub")
                    || (matches!(before, Some(Tok::Punct(')'))) && (1..at).rev().take(6).any(|b| ident(toks.get(b)) == Some("pub")));
                at += 1;
                let mut leaves = Vec::new();
                use_tree(&toks, &mut at, Vec::new(), &mut leaves)?;
                if !is(toks.get(at), &Tok::Punct(';')) {
                    return Err(format!("line {line}: `use` not ended by `;`"));
                }
                let from = here(&inline);
                for (raw, binds) in leaves {
                    if let Some(path) = resolve(&raw, &from, modules).map_err(|e| format!("line {line}: {e}"))? {
                        out.push(Import { line: *line, written: raw.join("::"), path, reexport, binds });
                    }
                }
            }
            Tok::Ident(first) if is(toks.get(at + 1), &Tok::Sep) && !(at > 0 && matches!(&toks[at - 1].0, Tok::Sep | Tok::Punct('$'))) => {
                // A path in code: `crate::a::b(…)`, `super::X`, `child::f`.
                let mut raw = vec![first.clone()];
                let mut end = at + 1;
                while is(toks.get(end), &Tok::Sep)
                    && let Some(next) = ident(toks.get(end + 1))
                {
                    raw.push(next.to_string());
                    end += 2;
                }
                if let Some(path) = resolve(&raw, &here(&inline), modules).map_err(|e| format!("line {line}: {e}"))? {
                    out.push(Import { line: *line, written: raw.join("::"), path, reexport: false, binds: None });
                }
                at = end;
            }
            _ => at += 1,
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced braces ({depth} left open)"));
    }
    Ok(out)
}

// --------------------------------------------------------- the import graph

/// Module → module edges, each with where it is written first.
type Graph = BTreeMap<ModPath, BTreeMap<ModPath, String>>;

/// The file module a resolved path lands in: the longest module prefix,
/// followed through re-exports (a facade's `pub use` leads to the module
/// that defines the name, so using a name through its facade is a use of
/// the defining module).
fn target(path: &[String], modules: &BTreeSet<ModPath>, reexports: &BTreeMap<ModPath, BTreeMap<String, ModPath>>, hops: u32) -> ModPath {
    let module = (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains(p)).unwrap_or_default();
    if hops < 8
        && let Some(name) = path.get(module.len())
        && let Some(to) = reexports.get(&module).and_then(|r| r.get(name))
    {
        let mut next = to.clone();
        next.extend(path[module.len() + 1..].iter().cloned());
        return target(&next, modules, reexports, hops + 1);
    }
    module
}

/// The import graph: one edge per file module that names another. A
/// re-export is an edge too (facade → module). Left out: self-edges (a
/// file's tests using the file), and edges between a module and its own
/// submodules (`format` and `format::rlx_text`): the parent declares them,
/// and a child using its parent's shared items (`super::Error`) while the
/// parent calls or re-exports the child is how a Rust module is built, not a
/// circle between parts. Circles are between modules neither of which
/// contains the other: siblings (`rlx_host::engine`, `rlx_host::kernels`),
/// cousins or unrelated modules. (A circle that runs through a parent's own
/// items, x → parent → y → x, is not seen; through a parent's re-export it
/// is, as the use lands on the defining module.)
fn graph_of(modules: &BTreeSet<ModPath>, imports: &[(String, ModPath, Import)]) -> Graph {
    let mut reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>> = BTreeMap::new();
    for (_, module, import) in imports {
        if import.reexport
            && let Some(name) = &import.binds
        {
            reexports.entry(module.clone()).or_default().insert(name.clone(), import.path.clone());
        }
    }
    let mut graph = Graph::new();
    for (file, module, import) in imports {
        let to = target(&import.path, modules, &reexports, 0);
        if !to.starts_with(module) && !module.starts_with(&to) {
            graph.entry(module.clone()).or_default().entry(to).or_insert_with(|| format!("{file}:{} `{}`", import.line, import.written));
        }
    }
    graph
}

/// The circles of `graph`: one per strongly connected set of two or more
/// modules, as a path through it (first module again at the end) with where
/// each step is written.
fn cycles(graph: &Graph) -> Vec<(BTreeSet<ModPath>, Vec<String>)> {
    let nodes: BTreeSet<&ModPath> = graph.keys().chain(graph.values().flat_map(|e| e.keys())).collect();
    let reaches = |from: &ModPath| {
        let mut seen = BTreeSet::from([from.clone()]);
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for next in graph.get(&n).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&ModPath, BTreeSet<ModPath>> = nodes.iter().map(|n| (*n, reaches(n))).collect();
    let mut done = BTreeSet::new();
    let mut found = Vec::new();
    for n in &nodes {
        if done.contains(*n) {
            continue;
        }
        let scc: BTreeSet<ModPath> = reach[n].iter().filter(|m| reach[m].contains(*n)).cloned().collect();
        done.extend(scc.iter().cloned());
        if scc.len() < 2 {
            continue;
        }
        // The shortest way round from `n` back to itself, inside the set.
        let mut prev: BTreeMap<ModPath, ModPath> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([(*n).clone()]);
        'search: while let Some(m) = queue.pop_front() {
            for next in graph.get(&m).into_iter().flat_map(|e| e.keys()) {
                if next == *n {
                    prev.insert((*n).clone(), m.clone());
                    break 'search;
                }
                if scc.contains(next) && !prev.contains_key(next) {
                    prev.insert(next.clone(), m.clone());
                    queue.push_back(next.clone());
                }
            }
        }
        let mut way = vec![(*n).clone()];
        let mut at = prev[*n].clone();
        while at != **n {
            way.push(at.clone());
            at = prev[&at].clone();
        }
        way.push((*n).clone());
        way.reverse();
        let steps = way.windows(2).map(|w| format!("{} → {} ({})", show(&w[0]), show(&w[1]), graph[&w[0]][&w[1]])).collect();
        found.push((scc, steps));
    }
    found
}

/// The circles of `krate` not in `known`, as messages; and the known ones
/// that are gone.
fn unexpected_cycles(krate: &Crate, known: &[&[&str]]) -> (Vec<String>, Vec<String>) {
    let graph = graph_of(&krate.modules(), &krate.imports());
    let found = cycles(&graph);
    let as_set = |c: &[&str]| -> BTreeSet<ModPath> { c.iter().map(|m| m.split("::").map(str::to_string).collect()).collect() };
    let new = found
        .iter()
        .filter(|(scc, _)| !known.iter().any(|k| as_set(k) == *scc))
        .map(|(scc, steps)| format!("{} modules import each other in a circle ({}); one way round:\n  {}", scc.len(), scc.iter().map(|m| show(m)).collect::<Vec<_>>().join(", "), steps.join("\n  ")))
        .collect();
    let gone = known.iter().filter(|k| !found.iter().any(|(scc, _)| *scc == as_set(k))).map(|k| k.join(", ")).collect();
    (new, gone)
}

// ------------------------------------------------------------------- tests

#[test]
fn no_module_imports_a_layer_above_it() {
    let krate = core();
    let mut wrong = Vec::new();
    let mut checked = BTreeSet::new();
    for (file, module, import) in krate.imports() {
        let Some(mine) = module.first().and_then(|m| layer(m)) else { continue };
        checked.insert(file.clone());
        if let Some(used) = import.path.first()
            && let Some(theirs) = layer(used)
            && theirs > mine
        {
            let what = if import.reexport { "re-exports" } else { "uses" };
            wrong.push(format!("{file}:{}: `{}` (layer {mine}) {what} {} (crate::{}, layer {theirs})", import.line, show(&module), import.written, show(&import.path)));
        }
    }
    assert!(checked.len() > 50, "only {} files checked", checked.len());
    assert!(wrong.is_empty(), "imports that run up the layers:\n{}", wrong.join("\n"));
}

/// Every top-level module of the core has a layer (a new one must be placed).
#[test]
fn every_core_module_has_a_layer() {
    let unplaced: BTreeSet<String> = core().modules().into_iter().filter_map(|m| m.first().cloned()).filter(|m| layer(m).is_none()).collect();
    assert!(unplaced.is_empty(), "modules with no layer in tests/architecture.rs: {unplaced:?}");
}

#[test]
fn no_import_circles_in_the_core() {
    let (new, gone) = unexpected_cycles(&core(), &[]);
    assert!(new.is_empty(), "import circles in the core:\n{}", new.join("\n"));
    assert!(gone.is_empty());
}

/// rlx-ext is one layer: its modules may use each other, but not in circles.
#[test]
fn no_import_circles_in_rlx_ext() {
    let (new, gone) = unexpected_cycles(&rlx_ext(), &[]);
    assert!(new.is_empty(), "import circles in rlx-ext:\n{}", new.join("\n"));
    assert!(gone.is_empty());
}

/// The core never names a pass, and the rlx-opt driver knows passes only
/// through the registry its binary hands it.
#[test]
fn the_core_never_imports_a_pass() {
    for (file, module, import) in core().imports() {
        if module.first().is_some_and(|m| layer(m).is_some_and(|l| l < 5) || m == "driver") {
            assert!(import.path.first().is_none_or(|p| p != "passes"), "{file}:{} names a pass: {}", import.line, import.written);
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    for file in files {
        let module = file.strip_prefix(root.join("src")).unwrap().components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if layer(&module).is_some_and(|l| l < 5) || module == "driver" {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(!text.lines().any(|l| !l.trim_start().starts_with("//") && l.contains("passes::")), "{} names a pass", file.display());
        }
    }
}

/// The reader itself, on small sources: each case would pass a reader that
/// missed it only by luck.
mod reader {
    use super::*;

    fn modules(list: &[&str]) -> BTreeSet<ModPath> {
        list.iter().map(|m| if m.is_empty() { Vec::new() } else { m.split("::").map(str::to_string).collect() }).collect()
    }

    fn paths(text: &str, module: &str) -> Vec<(String, bool)> {
        let mods = modules(&["", "a", "a::b", "a::b::c", "a::d", "x", "x::y"]);
        let module: ModPath = module.split("::").map(str::to_string).collect();
        read_imports(text, &module, &mods).unwrap().into_iter().map(|i| (show(&i.path), i.reexport)).collect()
    }

    #[test]
    fn grouped_imports_nested_groups_and_self() {
        let got = paths("use crate::{a::b::{self, c::Item}, x::{y, Z as W}};\n", "a::d");
        assert_eq!(got, [("a::b", false), ("a::b::c::Item", false), ("x::y", false), ("x::Z", false)].map(|(p, r)| (p.to_string(), r)));
    }

    #[test]
    fn super_super_and_inline_modules() {
        assert_eq!(paths("use super::super::x::Thing;", "a::b::c"), [("a::x::Thing".to_string(), false)]);
        // In `mod tests`, `super` is the file's own module.
        let got = paths("fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::super::d::f;\n    use super::*;\n}\nuse super::Q;\n", "a::b");
        assert_eq!(got, [("a::d::f", false), ("a::b", false), ("a::Q", false)].map(|(p, r)| (p.to_string(), r)));
        assert!(read_imports("use super::super::Q;", &["a".to_string()], &modules(&["", "a"])).is_err(), "above the root");
    }

    #[test]
    fn re_exports_child_paths_and_paths_in_code() {
        let got = paths("pub use b::{Thing, other::*};\npub(crate) use self::d::X;\nfn f() { crate::x::y::go(); b::c::run(); serde::de::x(); }\n", "a");
        let want = [("a::b::Thing", true), ("a::b::other", true), ("a::d::X", true), ("x::y::go", false), ("a::b::c::run", false)];
        assert_eq!(got, want.map(|(p, r)| (p.to_string(), r)));
    }

    #[test]
    fn comments_strings_and_macros_are_not_imports() {
        let text = "// use crate::x;\n/* use crate::x::y; /* nested */ */\nconst S: &str = \"crate::x::y { \";\nconst R: &str = r#\"super::x\"#;\nconst C: char = '{';\nfn f<'a>(s: &'a str) {}\nmacro_rules! m { () => { $crate::x::y() } }\n";
        assert_eq!(paths(text, "a"), []);
    }

    #[test]
    fn a_circle_of_three_is_found_with_its_path() {
        let mods = modules(&["", "p", "q", "r", "s"]);
        let file = |m: &str, text: &str| (format!("{m}.rs"), vec![m.to_string()], text.to_string());
        let files = [
            file("p", "use crate::q::f;"),
            file("q", "use super::{r::{self, g}};"),
            file("r", "pub fn g() { crate::p::h() }"),
            file("s", "use crate::p;"),
        ];
        let imports: Vec<_> = files.iter().flat_map(|(f, m, t)| read_imports(t, m, &mods).unwrap().into_iter().map(|i| (f.clone(), m.clone(), i))).collect();
        let found = cycles(&graph_of(&mods, &imports));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, modules(&["p", "q", "r"]));
        assert_eq!(found[0].1, ["p → q (p.rs:1 `crate::q::f`)", "q → r (q.rs:1 `super::r`)", "r → p (r.rs:1 `crate::p::h`)"]);
    }

    #[test]
    fn a_facade_re_export_leads_to_the_defining_module() {
        // `m` re-exports `m::c::E`; `m::c` uses `m`'s own item (parent and
        // child: no circle) and `m::d`'s, and `m::d` uses `E` through the
        // facade: m::d → m::c, a circle of siblings.
        let mods = modules(&["", "m", "m::c", "m::d"]);
        let files = [("m", "pub use c::E;\npub struct Own;"), ("m::c", "pub struct E(super::Own, super::d::D);"), ("m::d", "pub struct D;\nfn f(_: crate::m::E) {}")];
        let imports: Vec<_> = files
            .iter()
            .flat_map(|(m, t)| {
                let m: ModPath = m.split("::").map(str::to_string).collect();
                read_imports(t, &m, &mods).unwrap().into_iter().map(move |i| ("f".to_string(), m.clone(), i))
            })
            .collect();
        let found = cycles(&graph_of(&mods, &imports));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, modules(&["m::c", "m::d"]));
        assert_eq!(found[0].1, ["m::c → m::d (f:1 `super::d::D`)", "m::d → m::c (f:2 `crate::m::E`)"]);
    }
}

// ------------------------------------------------------- function lengths

/// The most lines a function may span (its `fn` line to its closing brace)
/// without a reason written above it, as `// Over 80 lines: WHY`.
const MAX_FUNCTION_LINES: usize = 80;

/// Each function of `text` over `max` lines with no `// Over 80 lines:`
/// comment among the comments and attributes right above it: (line, name, lines).
fn long_functions(text: &str, max: usize) -> Vec<(usize, String, usize)> {
    let toks = tokens(text);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, (tok, line)) in toks.iter().enumerate() {
        let (Tok::Ident(kw), Some(Tok::Ident(name))) = (tok, toks.get(i + 1).map(|t| &t.0)) else { continue };
        if kw != "fn" {
            continue;
        }
        // The body: the first `{` before any `;` (a declaration has none).
        let Some(open) = toks[i..].iter().position(|(t, _)| matches!(t, Tok::Punct('{') | Tok::Punct(';'))).map(|p| i + p) else { continue };
        if toks[open].0 == Tok::Punct(';') {
            continue;
        }
        let mut depth = 0usize;
        let close = toks[open..].iter().position(|(t, _)| {
            match t {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        let end = close.map_or(toks.last().unwrap().1, |c| toks[open + c].1);
        let span = end - line + 1;
        if span <= max {
            continue;
        }
        let above = lines[..line - 1].iter().rev().map(|l| l.trim()).take_while(|l| l.starts_with("//") || l.starts_with("#["));
        if !above.clone().any(|l| l.starts_with("// Over 80 lines:")) {
            out.push((*line, name.clone(), span));
        }
    }
    out
}

/// Functions stay short enough to read at once; a longer one says why.
#[test]
fn no_function_over_80_lines_without_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "passes", "rlx-ext/src", "mlir-plugin/src"] {
        sources(&root.join(dir), &mut files);
    }
    files.sort();
    let mut long = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, name, span) in long_functions(&text, MAX_FUNCTION_LINES) {
            long.push(format!("{}:{line}: fn {name} spans {span} lines", file.strip_prefix(root).unwrap().display()));
        }
    }
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines with no `// Over 80 lines: WHY` above them (split them, or say why):\n{}", long.join("\n"));
}

#[test]
fn the_length_check_counts_bodies_and_reads_reasons() {
    let body = |n: usize| format!("{{\n{}}}\n", "    let x = \"}\"; // {\n".repeat(n));
    let long = format!("/// Docs.\n#[inline]\nfn long(){}", body(80));
    assert_eq!(long_functions(&long, 80), vec![(3, "long".to_string(), 82)]);
    assert!(long_functions(&format!("fn short(){}", body(78)), 80).is_empty());
    let said = format!("// Over 80 lines: one arm per op kind.\n/// Docs.\nfn said(){}", body(90));
    assert!(long_functions(&said, 80).is_empty());
    assert!(long_functions("trait T { fn declared(&self); }\nfn f(g: fn(u8)) {}\n", 80).is_empty());
}
