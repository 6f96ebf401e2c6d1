//! rlx-opt's fusing passes (`fuse-welch-peaks`, `fuse-log-mel`) on RLX
//! graphs: as a function ([`fuse`]) and as an IR pass registered with
//! rlx-fusion ([`install`], [`install_with`]), which
//! RLX runs on every graph it compiles, after its own fusion passes. The
//! pass cannot see the device a `Session` compiles for, so it decides for
//! the target it was installed with, or from the device profile it was
//! given (`profile=PATH`, from `rlx-run --calibrate`).

use crate::convert;
use crate::error::{ExtError, target_named};
use crate::fusion_report::FusionReport;
use crate::log_mel_ops::has_log_mel_kernels;
use crate::specialize::{has_rlx_kernels, specialize};
use rlx_opt::analysis::Target;
use rlx_opt::fusion_report::{Candidate, FusionCandidates};
use rlx_opt::pass::{PassContext, PassOptions, ReportFormat};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, RwLock};

/// The fusions rlx-ext runs, in order: the option that turns each off
/// (`log-mel=false`), and its pass.
const FUSIONS: [(&str, &str); 2] = [("welch-peaks", "fuse-welch-peaks"), ("log-mel", "fuse-log-mel")];

/// The installed fusing passes, in [`FUSIONS`] order.
type Passes = Vec<Box<dyn rlx_opt::pass::Pass>>;

/// The fusing passes over an RLX graph with `options` as the pass flags
/// take them (`"target=cuda force=true"`; the target defaults to cpu),
/// plus `welch-peaks=false` or `log-mel=false` to leave that fusion out. On a target
/// where this build registers no kernel with RLX (rocm, metal, mlx, tpu;
/// cuda without the `cuda` feature), fused ops are priced and lowered
/// as host calls (`native-kernels=false`), since that is how RLX runs them.
pub fn fuse(graph: rlx_ir::Graph, options: &str) -> Result<rlx_ir::Graph, ExtError> {
    fuse_reporting(&graph, options).map(|(fused, _)| fused)
}

/// [`fuse`] on a borrowed graph, with the pass's fusion report on it.
pub fn fuse_reporting(graph: &rlx_ir::Graph, options: &str) -> Result<(rlx_ir::Graph, FusionReport), ExtError> {
    let (passes, target) = create(options)?;
    let (fused, candidates) = run_passes(graph, &passes, target)?;
    Ok((fused, FusionReport { graph: graph.name.clone(), options: options.to_string(), candidates }))
}

/// A pass already made, on a borrowed graph: the registered pass keeps the
/// original to hand back when fusing fails, without copying it first.
/// Returns the fused graph and what the pass decided for each candidate.
fn run_passes(graph: &rlx_ir::Graph, passes: &Passes, target: Target) -> Result<(rlx_ir::Graph, Vec<Candidate>), ExtError> {
    let mut ours = convert::from_rlx(graph)?;
    let mut cx = PassContext::new(target, ReportFormat::Text);
    cx.request::<FusionCandidates>();
    for pass in passes {
        pass.run(&mut ours, &mut cx).map_err(|d| ExtError::Pass { pass: pass.name(), message: d.message })?;
        rlx_opt::verify::verify(&ours).map_err(|e| ExtError::Pass { pass: pass.name(), message: e.to_string() })?;
    }
    specialize(&mut ours, target)?;
    Ok((convert::to_rlx(&ours)?, cx.take::<FusionCandidates>().0))
}

/// The passes for `options` and the target they decide for (cpu unless
/// named). `welch-peaks=BOOL` and `log-mel=BOOL` are rlx-ext's own: each
/// turns its fusion on or off (both on by default); the rest goes to every
/// pass left on.
fn create(options: &str) -> Result<(Passes, Target), ExtError> {
    let mut on = [true; FUSIONS.len()];
    let mut rest = Vec::new();
    for item in options.split([' ', ',', '\t', '\n']).filter(|s| !s.is_empty()) {
        let fusion = item.split_once('=').and_then(|(key, value)| FUSIONS.iter().position(|(k, _)| *k == key).map(|i| (i, value)));
        match fusion {
            Some((i, value)) => on[i] = value.parse().map_err(|_| ExtError::Options(format!("`{item}`: expected {}=true or {}=false", FUSIONS[i].0, FUSIONS[i].0)))?,
            None => rest.push(item),
        }
    }
    let rest = rest.join(" ");
    let mut passes = Passes::new();
    let mut target = Target::Cpu;
    for (_, name) in FUSIONS.iter().zip(on).filter(|(_, on)| *on).map(|(f, _)| *f) {
        let info = rlx_opt::passes::lookup(name).expect("rlx-opt registers both fusing passes");
        let parsed = PassOptions::parse(&rest, info).map_err(|e| ExtError::Options(e.to_string()))?;
        target = parsed.target().map_err(|e| ExtError::Options(e.to_string()))?.unwrap_or(Target::Cpu);
        // Where this build registers no kernel with RLX for the pass's op, the op is
        // priced and lowered as the host call RLX makes of it.
        let kernels = if name == "fuse-log-mel" { has_log_mel_kernels(target) } else { has_rlx_kernels(target) };
        let options = match parsed.get("native-kernels") {
            None if !kernels => PassOptions::parse(&format!("{rest} native-kernels=false"), info).map_err(|e| ExtError::Options(e.to_string()))?,
            _ => parsed,
        };
        passes.push((info.create)(&options).map_err(|e| ExtError::Options(e.to_string()))?);
    }
    Ok((passes, target))
}

/// The pass as [`install_with`] made it: created once, so that a profile
/// is read once, from the working directory of the install, and every
/// compile decides from the same one.
struct Installed {
    passes: Passes,
    target: Target,
    options: String,
}

/// What the registered pass runs; `None` until [`install`], and while
/// [`suspend`]ed.
static INSTALLED: RwLock<Option<Arc<Installed>>> = RwLock::new(None);

/// Bumped (under `INSTALLED`'s lock) by every [`install_with`] and
/// [`uninstall`], so that a [`Suspended`] guard can tell "still suspended"
/// from "installed or uninstalled since", both of which it must keep.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Register the pass with RLX (once), deciding for `target` from now on.
pub fn install(target: &str) -> Result<(), ExtError> {
    install_with(&format!("target={}", target_named(target)?.name()))
}

/// Register the pass with RLX (once), running with `options` from now on,
/// as the pass flag takes them (`"target=wgpu profile=lavapipe.json"`).
/// The pass is made here, once: options the pass refuses, or a profile it
/// cannot read or that measured another target, are this call's error, not
/// every compile's, and a relative profile path is taken from the working
/// directory of this call.
pub fn install_with(options: &str) -> Result<(), ExtError> {
    let (passes, target) = create(options)?;
    crate::kernels::install_kernels();
    crate::log_mel::install_log_mel();
    let mut slot = INSTALLED.write().unwrap_or_else(|p| p.into_inner());
    // One pass per process: a second caller replacing another's pass is
    // said, not silent (the same options again make the same pass anew,
    // which changes nothing a caller can see, and stay silent).
    if let Some(previous) = slot.as_ref().filter(|p| p.options != options) {
        log::warn!(target: LOG_TARGET, "rlx-ext: installing `{options}` replaces the pass installed with `{}` (RLX runs one pass per process)", previous.options);
    }
    *slot = Some(Arc::new(Installed { passes, target, options: options.to_string() }));
    GENERATION.fetch_add(1, Ordering::Relaxed);
    drop(slot);
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| rlx_fusion::pass::register_ir_pass(Arc::new(RlxFusePass)));
    log::debug!(target: LOG_TARGET, "rlx-opt's fusing passes installed with `{options}`, deciding for {target}");
    Ok(())
}

/// The registered pass leaves every graph as it is until the next
/// [`install`](crate::install) (RLX has no way to unregister a pass; benchmarks compare RLX
/// alone and with the pass in one process).
pub fn uninstall() {
    let mut slot = INSTALLED.write().unwrap_or_else(|p| p.into_inner());
    *slot = None;
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The registered pass leaves every graph as it is until the guard drops,
/// then runs again as it was installed: how calibration measures RLX alone
/// in a process whose user installed the pass. (The pass is off for every
/// thread meanwhile: RLX runs its registered passes on all compiles.) An
/// install or uninstall made meanwhile is kept.
#[must_use = "the pass is back as soon as the guard drops"]
pub fn suspend() -> Suspended {
    let mut slot = INSTALLED.write().unwrap_or_else(|p| p.into_inner());
    Suspended { pass: slot.take(), generation: GENERATION.load(Ordering::Relaxed) }
}

/// See [`suspend`].
pub struct Suspended {
    pass: Option<Arc<Installed>>,
    generation: u64,
}

impl Drop for Suspended {
    fn drop(&mut self) {
        let mut slot = INSTALLED.write().unwrap_or_else(|p| p.into_inner());
        if GENERATION.load(Ordering::Relaxed) == self.generation {
            *slot = self.pass.take();
        }
    }
}

/// The options the registered pass runs with now, if it runs.
pub fn installed_options() -> Option<String> {
    INSTALLED.read().unwrap_or_else(|p| p.into_inner()).as_ref().map(|i| i.options.clone())
}

/// Where the pass's messages go in the `log` crate: an RLX user's logger
/// sees them under this target.
pub const LOG_TARGET: &str = "rlx_ext";

/// How many failures [`take_pass_failures`](crate::take_pass_failures)
/// keeps: the latest, so that a process compiling many graphs nobody asks
/// about holds a bounded list.
pub const KEPT_FAILURES: usize = 64;

/// How many reports [`take_fusion_reports`](crate::take_fusion_reports)
/// keeps: the latest, bounded as [`KEPT_FAILURES`] is.
pub const KEPT_REPORTS: usize = 64;

/// Graphs the registered pass left as they were since the last
/// [`take_failures`], the latest [`KEPT_FAILURES`].
static FAILURES: Mutex<VecDeque<ExtError>> = Mutex::new(VecDeque::new());

/// What the registered pass decided for the graphs it ran on since the last
/// [`take_reports`], the latest [`KEPT_REPORTS`].
static REPORTS: Mutex<VecDeque<FusionReport>> = Mutex::new(VecDeque::new());

/// The fusion reports of the graphs the registered pass ran on since the
/// last call, oldest first (at most the latest [`KEPT_REPORTS`]).
pub fn take_reports() -> Vec<FusionReport> {
    REPORTS.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect()
}

fn record_report(report: FusionReport) {
    crate::recording::record_fusion_report(&report);
    let mut reports = REPORTS.lock().unwrap_or_else(|p| p.into_inner());
    if reports.len() == KEPT_REPORTS {
        reports.pop_front();
    }
    reports.push_back(report);
}

/// Why the registered pass left graphs unfused since the last call, oldest
/// first (at most the latest [`KEPT_FAILURES`]); each was also logged as a
/// warning under [`LOG_TARGET`].
pub fn take_failures() -> Vec<ExtError> {
    FAILURES.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect()
}

fn record_failure(e: ExtError) {
    log::warn!(target: LOG_TARGET, "rlx-opt's fusing passes left a graph as it was: {e}");
    crate::recording::record_pass_failure(&e);
    let mut failures = FAILURES.lock().unwrap_or_else(|p| p.into_inner());
    if failures.len() == KEPT_FAILURES {
        failures.pop_front();
    }
    failures.push_back(e);
}

struct RlxFusePass;

impl rlx_fusion::pass::Pass for RlxFusePass {
    fn name(&self) -> &str {
        // The name RLX has known it by since the first fusion.
        "rlx_opt.fuse-welch-peaks"
    }

    /// A graph with no FFT, Welch-peaks or fused op goes back untouched
    /// without being converted; a graph the pass cannot take is left as it
    /// is (RLX passes have no error path): the reason goes to the `log`
    /// crate and to [`take_failures`].
    fn run(&self, graph: rlx_ir::Graph) -> rlx_ir::Graph {
        let Some(installed) = INSTALLED.read().unwrap_or_else(|p| p.into_inner()).clone() else { return graph };
        if !has_candidates(&graph) {
            return graph;
        }
        match run_passes(&graph, &installed.passes, installed.target) {
            Ok((fused, candidates)) => {
                record_report(FusionReport { graph: graph.name.clone(), options: installed.options.clone(), candidates });
                // Counting walks the whole graph: only for a logger that listens.
                if log::log_enabled!(target: LOG_TARGET, log::Level::Debug) {
                    let ops = fused.nodes().iter().filter(|n| matches!(&n.op, rlx_ir::Op::Custom { name, .. } if name.starts_with(rlx_opt::fused::NAMESPACE))).count();
                    log::debug!(target: LOG_TARGET, "rlx-opt's fusing passes ({}): {ops} fused op(s) in a graph of {} nodes", installed.options, fused.nodes().len());
                }
                fused
            }
            Err(e) => {
                record_failure(e);
                graph
            }
        }
    }
}

/// Whether `graph` holds an op the pass matches or specialises.
fn has_candidates(graph: &rlx_ir::Graph) -> bool {
    graph.nodes().iter().any(|n| match &n.op {
        rlx_ir::Op::Fft { .. } | rlx_ir::Op::WelchPeaks { .. } | rlx_ir::Op::LogMel => true,
        rlx_ir::Op::Custom { name, .. } => name == rlx_opt::fused::WELCH_PEAKS || name == rlx_opt::fused::LOG_MEL,
        _ => false,
    })
}
