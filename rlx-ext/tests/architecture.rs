//! rlx-ext's modules import one another without a circle (the engine once
//! imported the specialisation, which imported the kernels, which imported
//! the engine's recording). Checked on the sources: every `crate::m`,
//! `super::m` and grouped `crate::{m, …}` path outside comments is an edge
//! from the file's module to `m`; the crate root (`lib.rs`, the facade that
//! re-exports the API) and the binary are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module → the sibling modules its code names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules: BTreeSet<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs") && !p.ends_with("lib.rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(modules.len() >= 8, "{modules:?}");
    let mut graph = BTreeMap::new();
    for module in &modules {
        let text = std::fs::read_to_string(src.join(format!("{module}.rs"))).unwrap();
        let mut names = BTreeSet::new();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for prefix in ["crate::", "super::"] {
                for (at, _) in line.match_indices(prefix) {
                    let rest = &line[at + prefix.len()..];
                    // A group (`crate::{a, b::c}`) names each of its first words.
                    let group = rest.strip_prefix('{').map(|g| g.split('}').next().unwrap_or(g));
                    let words: Vec<&str> = match group {
                        Some(g) => g.split(',').map(|w| w.trim()).collect(),
                        None => vec![rest],
                    };
                    for word in words {
                        let name: String = word.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        if modules.contains(&name) && &name != module {
                            names.insert(name);
                        }
                    }
                }
            }
        }
        graph.insert(module.clone(), names);
    }
    graph
}

/// A circle through `graph`, if there is one (depth-first, by module name).
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(m: &str, graph: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut found = path[at..].to_vec();
            found.push(m.to_string());
            return Some(found);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in &graph[m] {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_imports_itself_through_others() {
    let graph = imports();
    // The reader sees what it must: the kernels record their calls.
    assert!(graph["kernels"].contains("recording"), "{graph:?}");
    assert!(graph["engine"].contains("specialize"), "{graph:?}");
    if let Some(found) = circle(&graph) {
        panic!("an import circle: {}", found.join(" → "));
    }
}

#[test]
fn a_circle_is_found() {
    let edges = [("engine", "specialize"), ("specialize", "kernels"), ("kernels", "engine"), ("error", "")];
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in edges {
        let targets = graph.entry(from.to_string()).or_default();
        if !to.is_empty() {
            targets.insert(to.to_string());
        }
    }
    assert_eq!(circle(&graph).unwrap().join(" → "), "engine → specialize → kernels → engine");
}
