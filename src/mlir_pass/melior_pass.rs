//! The `mlir` feature: MLIR itself, through melior, parses and verifies
//! rlx-opt's MLIR input and output, and the fusing passes (`fuse-welch-peaks`,
//! `fuse-log-mel`: [`super::MODULE_PASSES`]) run as external passes inside an
//! MLIR `PassManager`:
//!
//! ```no_run
//! use melior::{ir::Module, pass::PassManager};
//! use rlx_opt::mlir_pass::melior_pass;
//!
//! let context = melior_pass::context();
//! let mut module = Module::parse(&context, &std::fs::read_to_string("in.mlir").unwrap()).unwrap();
//! let pm = PassManager::new(&context);
//! pm.add_pass(melior_pass::create_pass(&context, "target=cuda").unwrap());
//! pm.add_pass(melior_pass::create_pass_named(&context, "fuse-log-mel", "target=cuda").unwrap());
//! pm.run(&mut module).unwrap();
//! ```
//!
//! Only the `func` dialect is registered; `rlx.*` ops are unregistered ops.

use super::{MODULE_PASSES, ModuleError, ModuleFusion, ModulePassError};
use crate::diag::Diagnostic;
use crate::ir::Loc;
use melior::dialect::DialectHandle;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationPrintingFlags};
use melior::ir::r#type::TypeId;
use melior::ir::{BlockLike, Location, Module, Operation, OperationRef, RegionLike};
use melior::pass::{ExternalPass, Pass, RunExternalPass, create_external};
use melior::{Context, ContextRef};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// A context with the `func` dialect loaded and unregistered dialects allowed.
pub fn context() -> Context {
    let context = Context::new();
    let func = DialectHandle::func();
    func.register_dialect(&context);
    func.load_dialect(&context);
    context.set_allow_unregistered_dialects(true);
    context
}

/// Parse and verify `text` with MLIR; the first error MLIR reports becomes the
/// diagnostic, at its line in the file (the text starts at `first_line`).
fn parse_verified<'c>(context: &'c Context, text: &str, first_line: u32) -> Result<Module<'c>, Diagnostic> {
    if let Some(offset) = text.find('\0') {
        return Err(Diagnostic::at(crate::diag::loc_in_chunk(text.as_bytes(), offset, first_line), "NUL byte in MLIR input"));
    }
    let errors = Rc::new(RefCell::new(Vec::new()));
    let sink = errors.clone();
    let handler = context.attach_diagnostic_handler(move |d| {
        let loc = d.location();
        let at = loc.is_file_line_col_range().then(|| Loc {
            line: loc.file_line_col_range_start_line() as u32 + first_line - 1,
            col: loc.file_line_col_range_start_column() as u32,
        });
        sink.borrow_mut().push(Diagnostic::maybe_at(at, format!("MLIR: {d}")));
        true
    });
    let module = Module::parse(context, text).filter(|m| m.as_operation().verify());
    context.detach_diagnostic_handler(handler);
    let first = errors.borrow_mut().drain(..).next();
    module.ok_or_else(|| first.unwrap_or_else(|| Diagnostic::whole_file("MLIR rejected the module")))
}

/// Check MLIR input with MLIR's parser and verifier.
pub fn verify_text(text: &str, first_line: u32) -> Result<(), Diagnostic> {
    // MLIR's parser recurses per bracket: hostile nesting is refused first.
    crate::format::mlir::syntax::check_bracket_depth(text)
        .map_err(|e| Diagnostic::at(crate::diag::loc_in_chunk(text.as_bytes(), e.offset, first_line), e.message))?;
    parse_verified(&context(), text, first_line).map(drop)
}

/// Parse, verify and print `text` in generic form with its locations.
pub fn verify_and_print(text: &str) -> Result<String, Diagnostic> {
    let context = context();
    let module = parse_verified(&context, text, 1).map_err(|d| Diagnostic { message: format!("rlx-opt wrote MLIR that MLIR rejects: {}", d.message), ..d })?;
    let mut printed = module.as_operation().to_string_with_flags(print_flags()).map_err(|e| Diagnostic::whole_file(format!("MLIR cannot print the module: {e}")))?;
    printed.push('\n');
    Ok(printed)
}

fn print_flags() -> OperationPrintingFlags {
    OperationPrintingFlags::new().print_generic_operation_form().enable_debug_info(true, false)
}

/// One MLIR `TypeID` per module pass, in [`MODULE_PASSES`] order: MLIR tells
/// passes apart (instrumentation, statistics, pipeline printing) by it. Not
/// zero-sized, so each element has an address of its own.
#[repr(align(8))]
struct PassId(#[allow(dead_code)] u8);
static PASS_IDS: [PassId; MODULE_PASSES.len()] = [const { PassId(0) }; MODULE_PASSES.len()];

/// `fuse-welch-peaks` as an MLIR pass on `builtin.module`, with the graph
/// pass's options plus `fusion-report=FILE` (MLIR's `key=value` syntax).
pub fn create_pass(context: &Context, options: &str) -> Result<Pass, crate::pass::OptionError> {
    Ok(external(context, ModuleFusion::from_options(options)?))
}

/// The module pass called `name` (one of [`MODULE_PASSES`]: `fuse-welch-peaks`,
/// `fuse-log-mel`) as an MLIR pass on `builtin.module`, with the graph pass's
/// options plus `fusion-report=FILE`.
pub fn create_pass_named(context: &Context, name: &str, options: &str) -> Result<Pass, ModulePassError> {
    Ok(external(context, ModuleFusion::for_pass(name, options)?))
}

fn external(context: &Context, fusion: ModuleFusion) -> Pass {
    let index = MODULE_PASSES.iter().position(|info| info.name == fusion.name()).expect("ModuleFusion is made only for MODULE_PASSES");
    let info = MODULE_PASSES[index];
    create_external(
        ModulePass { context, fusion: Arc::new(fusion) },
        TypeId::create(&PASS_IDS[index]),
        info.name,
        info.name,
        info.description,
        "builtin.module",
        &[DialectHandle::func()],
    )
}

#[derive(Clone)]
struct ModulePass<'c> {
    // melior gives the pass a `ContextRef`, from which no `&Context` can be had
    // to parse the result; the pass keeps the one it was made for.
    context: &'c Context,
    fusion: Arc<ModuleFusion>,
}

impl<'c> RunExternalPass<'c> for ModulePass<'c> {
    fn initialize(&mut self, _: ContextRef<'c>) {}

    fn run(&mut self, module: OperationRef<'c, '_>, pass: ExternalPass<'_>) {
        if let Err(e) = self.rewrite(module) {
            let location = match &e.at {
                Some((file, line, col)) => Location::new(self.context, file, *line as usize, *col as usize),
                None => module.location(),
            };
            let message = std::ffi::CString::new(format!("{}: {}", self.fusion.name(), e.message).replace('\0', " ")).expect("NULs removed");
            // SAFETY: a valid location and a NUL-terminated string MLIR copies.
            unsafe { mlir_sys::mlirEmitError(location.to_raw(), message.as_ptr()) };
            pass.signal_failure();
        }
    }
}

impl<'c> ModulePass<'c> {
    fn rewrite(&self, module: OperationRef<'c, '_>) -> Result<(), ModuleError> {
        let plain = |message: String| ModuleError { message, at: None };
        let text = module.to_string_with_flags(print_flags().use_local_scope()).map_err(|e| plain(e.to_string()))?;
        let rewritten = self.fusion.run(&text)?;
        if rewritten == text {
            return Ok(());
        }
        let new = parse_verified(self.context, &rewritten, 1).map_err(|d| plain(format!("MLIR rejects the rewritten module: {}", d.message)))?;
        let body = module.region(0).map_err(|e| plain(e.to_string()))?.first_block().ok_or_else(|| plain("module has no body".into()))?;
        while let Some(mut op) = body.first_operation_mut() {
            op.remove_from_parent();
            // SAFETY: the op was just detached; owning it again destroys it.
            drop(unsafe { Operation::from_raw(op.to_raw()) });
        }
        while let Some(mut op) = new.body().first_operation_mut() {
            op.remove_from_parent();
            // SAFETY: the op was just detached from `new`; `body` takes ownership.
            body.append_operation(unsafe { Operation::from_raw(op.to_raw()) });
        }
        Ok(())
    }
}
