//! rlx-opt's passes on MLIR modules. One implementation, three callers: the
//! `rlx-opt` driver (graphs read from `.mlir`), an MLIR `PassManager` through
//! melior (the `mlir` feature, [`melior_pass`]), and stock `mlir-opt` through
//! the pass plugin in `mlir-plugin/`. Every caller hands the module over as
//! generic-form text; [`ModuleFusion`] rewrites its functions of `rlx` ops
//! with the same matcher, gate, rewriter and report as the graph pass. The
//! MLIR hosts offer the fusing passes, [`MODULE_PASSES`]; each host has one
//! implementation, parameterised by the pass.

#[cfg(feature = "mlir")]
pub mod melior_pass;

use crate::analysis::Target;
use crate::diag::Diagnostic;
use crate::format::{InputFormat, mlir};
use crate::fusion_report::{Candidate, FusionCandidates};
use crate::ir::{Graph, view};
use crate::pass::{OptionError, Pass, PassContext, PassInfo, PassOptions, ReportFormat};
use crate::passes::{fuse_log_mel, fuse_welch_peaks};
use crate::verify::verify;

/// The passes the MLIR hosts (the melior pass, the mlir-opt plugin) offer,
/// each under its graph-pass name (the plugin prefixes `rlx-`). They share
/// their options ([`crate::passes::fusion::FUSE_OPTIONS`]), which the
/// plugin declares to MLIR once for all of them.
pub const MODULE_PASSES: [&PassInfo; 2] = [&fuse_welch_peaks::INFO, &fuse_log_mel::INFO];

/// The module pass called `name` (`fuse-log-mel`), if the MLIR hosts offer it.
pub fn module_pass(name: &str) -> Option<&'static PassInfo> {
    MODULE_PASSES.into_iter().find(|info| info.name == name)
}

/// Why a module pass cannot be made: no such pass, or bad options.
#[derive(Debug, thiserror::Error)]
pub enum ModulePassError {
    /// `known`: the names of [`MODULE_PASSES`], comma-separated.
    #[error("no module pass `{name}` (MLIR hosts run {known})")]
    UnknownPass { name: String, known: String },
    #[error(transparent)]
    Option(#[from] OptionError),
}

/// Whether this build links MLIR itself (the `mlir` feature).
pub const LINKS_MLIR: bool = cfg!(feature = "mlir");

/// The graphs of an input; with the `mlir` feature, MLIR input is first
/// parsed and verified by MLIR itself.
pub fn parse_input(format: InputFormat, text: &str, first_line: u32) -> Result<Vec<Graph>, Diagnostic> {
    let mut graphs = Vec::new();
    parse_each(format, text, first_line, |graph| {
        graphs.push(graph);
        Ok::<_, Diagnostic>(())
    })?;
    Ok(graphs)
}

/// [`parse_input`], handing each graph to `each` as soon as it is read: an
/// MLIR module of many functions is never held whole (see
/// [`mlir::for_each_graph`]).
pub fn parse_each<E: From<Diagnostic>>(format: InputFormat, text: &str, first_line: u32, mut each: impl FnMut(Graph) -> Result<(), E>) -> Result<(), E> {
    let parse_error = |e: crate::format::FormatError| E::from(Diagnostic::from(e));
    match format {
        InputFormat::Mlir => {
            #[cfg(feature = "mlir")]
            melior_pass::verify_text(text, first_line)?;
            mlir::for_each_graph(text, first_line, |graph| each(graph).map_err(Through)).map_err(|Through(e)| e)
        }
        _ => each(format.parse(text, first_line).map_err(parse_error)?),
    }
}

/// The caller's error through [`mlir::for_each_graph`], which makes its
/// own errors from the reader's: a reader's error as a diagnostic.
struct Through<E>(E);

impl<E: From<Diagnostic>> From<crate::format::FormatError> for Through<E> {
    fn from(e: crate::format::FormatError) -> Self {
        Through(E::from(Diagnostic::from(e)))
    }
}

/// The module for `graphs` read from `file`, each op located at its node's
/// place there; with the `mlir` feature it is parsed, verified and printed
/// (generic form, with locations) by MLIR.
pub fn print_module(graphs: &[Graph], file: &str) -> Result<String, Diagnostic> {
    let text = mlir::print_with(graphs, mlir::Locations::File(file));
    #[cfg(feature = "mlir")]
    return melior_pass::verify_and_print(&text);
    #[cfg(not(feature = "mlir"))]
    Ok(text)
}

/// Why a module could not be rewritten, and where in the user's file.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleError {
    pub message: String,
    /// File, line and column, from the location of the op concerned.
    pub at: Option<(String, u32, u32)>,
}

impl std::fmt::Display for ModuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A fusing pass ([`MODULE_PASSES`]) as an MLIR module pass: its options
/// are the graph pass's plus `fusion-report=FILE` (`-` for a table on stderr).
pub struct ModuleFusion {
    info: &'static PassInfo,
    pass: Box<dyn Pass>,
    target: Target,
    report: Option<String>,
    /// The device profile the pass reads, which the report may not replace.
    profile: Option<String>,
}

impl ModuleFusion {
    /// The pass [`ModuleFusion::from_options`] makes (the first one the MLIR
    /// hosts offered; its API stays).
    pub const NAME: &'static str = "fuse-welch-peaks";

    /// `fuse-welch-peaks` from MLIR's option syntax: `target=cuda model=rlx fusion-report=r.json`.
    pub fn from_options(options: &str) -> Result<Self, OptionError> {
        Self::with_pass(&fuse_welch_peaks::INFO, options)
    }

    /// The module pass called `pass` (one of [`MODULE_PASSES`]) from MLIR's option syntax.
    pub fn for_pass(pass: &str, options: &str) -> Result<Self, ModulePassError> {
        let info = module_pass(pass).ok_or_else(|| ModulePassError::UnknownPass {
            name: pass.to_string(),
            known: MODULE_PASSES.map(|info| info.name).join(", "),
        })?;
        Ok(Self::with_pass(info, options)?)
    }

    /// The graph pass `info` as a module pass, from MLIR's option syntax.
    pub fn with_pass(info: &'static PassInfo, options: &str) -> Result<Self, OptionError> {
        let mut report = None;
        let mut rest = Vec::new();
        for item in options.split([' ', ',']).filter(|s| !s.is_empty()) {
            match item.strip_prefix("fusion-report=") {
                Some(path) if !path.is_empty() => report = Some(path.to_string()),
                Some(_) => return Err(OptionError::MissingValue { key: "fusion-report", needs: "a file name (or `-`)" }),
                None => rest.push(item),
            }
        }
        let options = PassOptions::parse(&rest.join(" "), info)?;
        let target = options.target()?.unwrap_or(Target::Cpu);
        let profile = options.get("profile").map(str::to_string);
        Ok(ModuleFusion { info, pass: (info.create)(&options)?, target, report, profile })
    }

    /// The graph pass's name (`fuse-log-mel`), for messages.
    pub fn name(&self) -> &'static str {
        self.info.name
    }

    /// Rewrite the module text; functions that do not change keep their text.
    /// An error carries, when the module was printed with locations, the
    /// file location of the op it concerns.
    pub fn run(&self, module: &str) -> Result<String, ModuleError> {
        self.rewrite(module).map_err(|d| self.error(module, d))
    }

    /// Like [`ModuleFusion::run`], but describes the changes as
    /// [`mlir::edits`] (`None`: nothing changed), for callers that keep
    /// the module and apply them (the mlir-opt plugin).
    pub fn run_edits(&self, module: &str) -> Result<Option<String>, ModuleError> {
        let mut candidates = Vec::new();
        let edits = mlir::function_edits(module, |graph| self.fuse(graph, &mut candidates)).map_err(|d| self.error(module, d))?;
        self.report(&candidates).map_err(|d| self.error(module, d))?;
        Ok(edits)
    }

    fn rewrite(&self, module: &str) -> Result<String, Diagnostic> {
        let mut candidates = Vec::new();
        let (text, _) = mlir::rewrite_functions(module, |graph| self.fuse(graph, &mut candidates))?;
        self.report(&candidates)?;
        Ok(text)
    }

    fn error(&self, module: &str, d: Diagnostic) -> ModuleError {
        ModuleError { at: d.loc.and_then(|at| mlir::source_location(module, at)), message: d.message }
    }

    /// The graph pass on one function's graph, verified before and after.
    fn fuse(&self, mut graph: Graph, candidates: &mut Vec<Candidate>) -> Result<Graph, Diagnostic> {
        verify(&graph)?;
        view::ensure_dependency_order(&mut graph);
        let mut cx = PassContext::new(self.target, ReportFormat::Text);
        if self.report.is_some() {
            cx.request::<FusionCandidates>();
        }
        self.pass.run(&mut graph, &mut cx)?;
        verify(&graph).map_err(|e| Diagnostic::maybe_at(e.loc(), format!("after pass `{}`: {e}", self.info.name)))?;
        candidates.append(&mut cx.take::<FusionCandidates>().0);
        Ok(graph)
    }

    fn report(&self, candidates: &[Candidate]) -> Result<(), Diagnostic> {
        match self.report.as_deref() {
            Some("-") => crate::cli::print_err(&crate::fusion_report::to_table(candidates)).map_err(|e| Diagnostic::whole_file(format!("the fusion report: {e}")))?,
            // Not over the profile the pass read (as rlx-opt refuses it: a review).
            Some(path) => {
                let reads: Vec<&std::path::Path> = self.profile.iter().map(std::path::Path::new).collect();
                crate::output::write_file_reading(path, crate::fusion_report::to_json(candidates).as_bytes(), &reads).map_err(|e| Diagnostic::whole_file(e.to_string()))?
            }
            None => {}
        }
        Ok(())
    }
}
