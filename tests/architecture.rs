//! The layers depend one way: a module may use its own layer and those
//! below it, never one above. Checked on the sources, so a wrong-way import
//! fails CI rather than waiting for a review.
//!
//! ir, the fused op's definition, diagnostics and the output writer (0) →
//! format (1) → verify (2) → analysis (3) → matcher, rewrite, the pass
//! machinery (4) → passes (5) → lower (6) → runtime (7) → the drivers: the
//! three command lines, the MLIR hosts, rlx-trace (8).

use std::path::Path;

fn layer(module: &str) -> Option<u32> {
    Some(match module {
        "ir" | "fused" | "diag" | "output" | "limits" | "testgen" => 0,
        "format" => 1,
        "verify" => 2,
        "analysis" => 3,
        "matcher" | "rewrite" | "pass" | "fusion_report" => 4,
        "passes" => 5,
        "lower" => 6,
        "runtime" => 7,
        "driver" | "run_cli" | "trace_cli" | "mlir_host" | "cli" | "trace" => 8,
        _ => return None,
    })
}

/// The top-level module a source file belongs to.
fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap();
    let mut parts = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned());
    let first = parts.next().unwrap();
    if first == "passes" {
        return "passes".into();
    }
    let name = parts.next().unwrap_or_default();
    name.trim_end_matches(".rs").to_string()
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("passes"), &mut files);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in &files {
        let module = module_of(root, file);
        let Some(mine) = layer(&module) else { continue };
        checked += 1;
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (at, _) in code.match_indices("crate::") {
                let used: String = code[at + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if let Some(theirs) = layer(&used)
                    && theirs > mine
                {
                    wrong.push(format!("{}:{}: `{module}` (layer {mine}) uses crate::{used} (layer {theirs})", file.strip_prefix(root).unwrap().display(), n + 1));
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} files checked");
    assert!(wrong.is_empty(), "imports that run up the layers:\n{}", wrong.join("\n"));
}

/// The core never names a pass, and the rlx-opt driver knows passes only
/// through the registry its binary hands it.
#[test]
fn the_core_never_imports_a_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    for file in files {
        let module = module_of(root, &file);
        if layer(&module).is_some_and(|l| l < 5) || module == "driver" {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(!text.lines().any(|l| !l.trim_start().starts_with("//") && l.contains("passes::")), "{} names a pass", file.display());
        }
    }
}
