//! `librlx_opt_mlir.so`: rlx-opt's fusing passes as a pass plugin for stock
//! `mlir-opt-22`. The C++ shim (`shim/plugin.cpp`) is only glue: it registers
//! the passes `rlx-fuse-welch-peaks` and `rlx-fuse-log-mel` (rlx-opt's
//! [`rlx_opt::mlir_pass::MODULE_PASSES`], each named with `rlx-` in front)
//! and their options, prints the module in
//! generic form, calls [`rlx_fuse_module`] and applies the edits it gets
//! back (`rlx_opt::format::mlir::edits`: keep, rewire, create and erase ops),
//! so untouched ops stay the same MLIR operations and the module is never
//! parsed twice. All matching, gating, rewriting and reporting is rlx-opt's
//! ([`rlx_opt::mlir_pass::ModuleFusion`]), reading MLIR with rlx-opt's own
//! reader: no second MLIR is linked into mlir-opt.

use rlx_opt::mlir_pass::{ModuleError, ModuleFusion};
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The `mlir` feature links a static MLIR beside mlir-opt's: refuse to build.
const _: () = assert!(!rlx_opt::mlir_pass::LINKS_MLIR, "build rlx-welch-opt-mlir on its own (cargo build -p rlx-welch-opt-mlir), never with rlx-opt's `mlir` feature");

/// What the shim gets back: edits for the module, or an error and where.
#[repr(C)]
pub struct RlxResult {
    /// 0: `text` is the edits (null: nothing to change); 1: `text` is an error message.
    pub failed: u32,
    pub text: *mut c_char,
    /// For errors, the file location of the op concerned (null: none).
    pub file: *mut c_char,
    pub line: u32,
    pub col: u32,
}

/// Run the pass `pass` (rlx-opt's name: `fuse-log-mel`) on `module`
/// (generic-form text) with `options` (`key=value …`). Never unwinds into
/// C++. Free the result with [`rlx_free_result`].
///
/// # Safety
/// `pass` must be a NUL-terminated string; `module` and `options` must
/// point to `module_len` and `options_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rlx_fuse_module(pass: *const c_char, module: *const u8, module_len: usize, options: *const u8, options_len: usize) -> *mut RlxResult {
    // SAFETY: the caller passes a NUL-terminated string and valid (pointer, length) pairs.
    let (pass, module, options) =
        unsafe { (CStr::from_ptr(pass).to_bytes(), std::slice::from_raw_parts(module, module_len), std::slice::from_raw_parts(options, options_len)) };
    let outcome = catch_unwind(AssertUnwindSafe(|| fuse(pass, module, options))).unwrap_or_else(|panic| {
        let what = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned());
        Err(ModuleError { message: format!("internal error (Rust panic: {})", what.as_deref().unwrap_or("unknown")), at: None })
    });
    let result = match outcome {
        Ok(None) => RlxResult { failed: 0, text: std::ptr::null_mut(), file: std::ptr::null_mut(), line: 0, col: 0 },
        Ok(Some(text)) => RlxResult { failed: 0, text: c_string(text), file: std::ptr::null_mut(), line: 0, col: 0 },
        Err(e) => {
            let (file, line, col) = match e.at {
                Some((file, line, col)) => (c_string(file), line, col),
                None => (std::ptr::null_mut(), 0, 0),
            };
            RlxResult { failed: 1, text: c_string(e.message), file, line, col }
        }
    };
    Box::into_raw(Box::new(result))
}

/// The pass called `pass` with `options`, or why not.
fn module_fusion(pass: &[u8], options: &[u8]) -> Result<ModuleFusion, String> {
    let pass = std::str::from_utf8(pass).map_err(|e| format!("pass name is not UTF-8: {e}"))?;
    let options = std::str::from_utf8(options).map_err(|e| format!("options are not UTF-8: {e}"))?;
    ModuleFusion::for_pass(pass, options).map_err(|e| e.to_string())
}

/// The edits for the module, or `None` when nothing changes.
fn fuse(pass: &[u8], module: &[u8], options: &[u8]) -> Result<Option<String>, ModuleError> {
    let plain = |message: String| ModuleError { message, at: None };
    let module = std::str::from_utf8(module).map_err(|e| plain(format!("module text is not UTF-8: {e}")))?;
    let fusion = module_fusion(pass, options).map_err(plain)?;
    let edits = fusion.run_edits(module)?;
    // A fault hook for the failure-path tests: the shim must survive both.
    match std::env::var("RLX_OPT_PLUGIN_FAULT").as_deref() {
        Ok("panic") => panic!("RLX_OPT_PLUGIN_FAULT=panic"),
        Ok("garbage") => return Ok(Some("F 0\nN - a0\trlx.X\ttensor<oops>\t{}\n".into())),
        _ => {}
    }
    Ok(edits)
}

/// Check the options of the pass `pass`; returns null when they are fine,
/// else an error message to free with [`rlx_free_string`].
///
/// # Safety
/// `pass` must be a NUL-terminated string; `options` must point to
/// `options_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rlx_check_options(pass: *const c_char, options: *const u8, options_len: usize) -> *mut c_char {
    // SAFETY: the caller passes a NUL-terminated string and a valid (pointer, length) pair.
    let (pass, options) = unsafe { (CStr::from_ptr(pass).to_bytes(), std::slice::from_raw_parts(options, options_len)) };
    let checked = catch_unwind(|| module_fusion(pass, options).map(drop));
    match checked {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(message)) => c_string(message),
        Err(_) => c_string("internal error (Rust panic) while checking options".into()),
    }
}

/// The help text of option `name` of the pass `pass` (`description`: the
/// pass's), from the graph passes' registry (one definition); lives as long
/// as the process. Empty for a pass or option there is none of.
///
/// # Safety
/// `pass` and `name` must be NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rlx_option_help(pass: *const c_char, name: *const c_char) -> *const c_char {
    type Help = Vec<(&'static str, Vec<(String, CString)>)>;
    static HELP: OnceLock<Help> = OnceLock::new();
    let help = HELP.get_or_init(|| {
        rlx_opt::mlir_pass::MODULE_PASSES
            .iter()
            .map(|info| {
                let mut all: Vec<(String, CString)> =
                    info.options.iter().map(|o| (o.name.to_string(), CString::new(format!("{} (default: {})", o.help, o.default)).unwrap_or_default())).collect();
                all.push(("fusion-report".into(), c"write the fusion report: JSON to FILE, or a table to stderr with -".into()));
                all.push(("description".into(), CString::new(info.description).unwrap_or_default()));
                (info.name, all)
            })
            .collect()
    });
    // SAFETY: the caller passes NUL-terminated strings.
    let (pass, name) = unsafe { (CStr::from_ptr(pass).to_string_lossy(), CStr::from_ptr(name).to_string_lossy()) };
    help.iter()
        .find(|(p, _)| *p == pass)
        .and_then(|(_, options)| options.iter().find(|(n, _)| *n == name))
        .map_or(c"".as_ptr(), |(_, h)| h.as_ptr())
}

/// # Safety
/// `result` must come from [`rlx_fuse_module`] and not be freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rlx_free_result(result: *mut RlxResult) {
    if result.is_null() {
        return;
    }
    // SAFETY: made by Box::into_raw in rlx_fuse_module; its strings by CString::into_raw.
    let result = unsafe { Box::from_raw(result) };
    unsafe {
        rlx_free_string(result.text);
        rlx_free_string(result.file);
    }
}

/// # Safety
/// `s` must be null or come from this library and not be freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rlx_free_string(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: made by CString::into_raw here.
        drop(unsafe { CString::from_raw(s) });
    }
}

fn c_string(s: String) -> *mut c_char {
    CString::new(s.replace('\0', " ")).expect("NULs removed").into_raw()
}

/// MLIR's pass-plugin ABI (`mlir/Tools/Plugins/PassPlugin.h`, API version 1).
#[repr(C)]
pub struct PassPluginLibraryInfo {
    pub api_version: u32,
    pub plugin_name: *const c_char,
    pub plugin_version: *const c_char,
    pub register_pass_registry_callbacks: extern "C" fn(),
}

#[cfg(rlx_shim)]
unsafe extern "C" {
    fn rlx_register_passes();
}

#[cfg(rlx_shim)]
extern "C" fn register() {
    // SAFETY: the shim's registration only calls mlir::PassRegistration.
    unsafe { rlx_register_passes() }
}

/// The entry point mlir-opt looks up. Defined here, not in the C++ shim: a
/// cdylib exports only Rust's `#[no_mangle]` symbols.
#[cfg(rlx_shim)]
#[unsafe(no_mangle)]
pub extern "C" fn mlirGetPassPluginInfo() -> PassPluginLibraryInfo {
    PassPluginLibraryInfo {
        api_version: 1,
        plugin_name: c"rlx-opt".as_ptr(),
        plugin_version: concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast(),
        register_pass_registry_callbacks: register,
    }
}
