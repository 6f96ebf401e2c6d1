//! Builds the C++ shim against the LLVM/MLIR 22 that stock mlir-opt-22 links
//! (`libMLIR.so`, `libLLVM.so`). Without it the plugin is built empty, with a
//! warning saying why, and cannot be loaded.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=shim/plugin.cpp");
    println!("cargo:rerun-if-env-changed=LLVM_CONFIG");
    println!("cargo:rustc-check-cfg=cfg(rlx_shim)");
    let llvm_config = std::env::var("LLVM_CONFIG").unwrap_or_else(|_| "/usr/lib/llvm-22/bin/llvm-config".into());
    let query = |arg: &str| -> Option<String> {
        let out = Command::new(&llvm_config).arg(arg).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let (Some(version), Some(include), Some(libdir), Some(cxxflags)) = (query("--version"), query("--includedir"), query("--libdir"), query("--cxxflags")) else {
        skip(&format!("{llvm_config} not found (apt-get install llvm-22-dev libmlir-22-dev)"));
        return;
    };
    if !version.starts_with("22.") {
        skip(&format!("{llvm_config} is LLVM {version}; the plugin needs LLVM 22 (set LLVM_CONFIG)"));
        return;
    }
    if !Path::new(&include).join("mlir/Tools/Plugins/PassPlugin.h").exists() || !Path::new(&libdir).join("libMLIR.so").exists() {
        skip("MLIR 22 headers or libMLIR.so are missing (apt-get install libmlir-22-dev)");
        return;
    }
    let mut build = cc::Build::new();
    build.cpp(true).file("shim/plugin.cpp").warnings(false);
    for flag in cxxflags.split_whitespace() {
        build.flag(flag);
    }
    if query("--has-rtti").as_deref() == Some("NO") {
        build.flag("-fno-rtti");
    }
    build.compile("rlx_opt_mlir_shim");
    println!("cargo:rustc-cfg=rlx_shim");
    println!("cargo:rustc-link-search=native={libdir}");
    println!("cargo:rustc-link-lib=dylib=MLIR");
    println!("cargo:rustc-link-lib=dylib=LLVM");
    println!("cargo:rustc-link-lib=dylib=stdc++");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
}

fn skip(why: &str) {
    println!("cargo:warning=rlx-welch-opt-mlir: the mlir-opt plugin is not built: {why}");
}
