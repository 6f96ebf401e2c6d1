//! Runs the lit + FileCheck suite in `lit-tests/` against the rlx-opt binary
//! cargo just built (and the mlir-opt plugin, built here), so `cargo test`
//! covers the command line too. Skips, with a `SKIPPED` line and the reason,
//! where LLVM 22's lit is not installed (`apt-get install llvm-22-tools`),
//! and the parts that need MLIR 22 or spirv-val where those are not; under
//! CI (`CI=true`) what CI installs must run.

mod common;

use std::path::Path;
use std::process::Command;

/// `cargo test` does not build cdylibs: build the mlir-opt plugin beside the
/// rlx-opt under test (its build skips the shim, with a warning, without MLIR 22).
fn build_plugin(bin: &Path) {
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "-q", "-p", "rlx-welch-opt-mlir"]).current_dir(env!("CARGO_MANIFEST_DIR"));
    if bin.parent().and_then(|d| d.file_name()).is_some_and(|d| d == "release") {
        cargo.arg("--release");
    }
    let status = cargo.status().expect("cargo runs");
    assert!(status.success(), "cargo build -p rlx-welch-opt-mlir failed");
}

/// The text of every lit test under `dir` (files with a RUN line, `Inputs` left out).
fn lit_tests(dir: &Path) -> Vec<String> {
    let mut tests = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !path.ends_with("Inputs") {
                tests.extend(lit_tests(&path));
            }
        } else if let Ok(text) = std::fs::read_to_string(&path)
            && text.contains("RUN:")
        {
            tests.push(text);
        }
    }
    tests
}

#[test]
fn lit_suite() {
    let llvm_bin = std::env::var("LLVM_BIN_DIR").unwrap_or_else(|_| "/usr/lib/llvm-22/bin".into());
    let lit = Path::new(&llvm_bin).join("lit");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("lit-tests");
    let tests = lit_tests(&suite);
    if !lit.exists() {
        return common::skip(&format!("lit suite ({} tests)", tests.len()), &format!("{} not found (apt-get install llvm-22-tools)", lit.display()), true);
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_rlx-opt"));
    let plugin = bin.with_file_name("librlx_opt_mlir.so");
    build_plugin(bin);
    let mlir_opt = Path::new(&llvm_bin).join("mlir-opt");
    let mlir_installed = Path::new(&llvm_bin).join("llvm-config").exists() && Path::new("/usr/lib/llvm-22/lib/libMLIR.so").exists();
    // lit reports the tests whose REQUIRES are not met as UNSUPPORTED; say which and why here.
    let spirv_val = std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("spirv-val").is_file()));
    for (present, feature, reason, required_in_ci) in [
        (mlir_opt.exists(), "mlir-opt", "mlir-opt not found (apt-get install mlir-22-tools)", mlir_installed),
        (plugin.exists(), "mlir-plugin", "librlx_opt_mlir.so not built (needs libmlir-22-dev; cargo build -p rlx-welch-opt-mlir)", mlir_installed),
        (spirv_val, "spirv-val", "spirv-val not on PATH (apt-get install spirv-tools)", true),
        // CI's plain `cargo test` builds rlx-opt without the feature; its `--features mlir` run and its lit stage run these.
        (cfg!(feature = "mlir"), "rlx-mlir", "rlx-opt built without the `mlir` feature", false),
    ] {
        let count = tests.iter().filter(|t| t.lines().any(|l| l.trim_start_matches("//").trim() == format!("REQUIRES: {feature}"))).count();
        assert!(count > 0, "no lit test REQUIRES: {feature}");
        if !present {
            common::skip(&format!("{count} lit test(s) with REQUIRES: {feature}"), reason, required_in_ci);
        }
    }
    let status = Command::new(&lit)
        .arg("-sv")
        .arg(&suite)
        .env("RLX_OPT_BIN_DIR", bin.parent().unwrap())
        .env("LLVM_BIN_DIR", &llvm_bin)
        .status()
        .expect("lit runs");
    assert!(status.success(), "lit suite failed");
}

/// The plugin is built on the core alone (`default-features = false`): no
/// Vulkan, CUDA or NVRTC loader is linked, imported or named for dlopen.
#[test]
fn plugin_links_no_gpu_loaders() {
    let bin = Path::new(env!("CARGO_BIN_EXE_rlx-opt"));
    build_plugin(bin);
    let plugin = bin.with_file_name("librlx_opt_mlir.so");
    let bytes = std::fs::read(&plugin).expect("the plugin library is built (empty without MLIR 22)");
    for loader in ["libvulkan.so", "libcuda.so", "libnvrtc.so"] {
        assert!(!bytes.windows(loader.len()).any(|w| w == loader.as_bytes()), "{} names {loader}", plugin.display());
    }
    let tool = |name: &str, args: &[&str]| Command::new(name).args(args).arg(&plugin).output().ok().filter(|o| o.status.success());
    match tool("ldd", &[]) {
        Some(out) => {
            let libs = String::from_utf8_lossy(&out.stdout);
            assert!(!["libvulkan", "libcuda.", "libnvrtc"].iter().any(|l| libs.contains(l)), "ldd: {libs}");
        }
        None => println!("SKIPPED ldd check: ldd not available"),
    }
    match tool("nm", &["-D", "--undefined-only"]) {
        Some(out) => {
            let symbols = String::from_utf8_lossy(&out.stdout);
            let gpu = symbols.lines().filter(|l| l.contains(" vk") || l.contains(" cu") || l.contains(" nvrtc")).collect::<Vec<_>>();
            assert!(gpu.is_empty(), "imports GPU symbols: {gpu:?}");
        }
        None => println!("SKIPPED nm check: nm not available"),
    }
}
