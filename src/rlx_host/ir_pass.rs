//! `fuse-welch-peaks` on RLX graphs: as a function ([`fuse`]) and as an IR
//! pass registered with rlx-fusion ([`install`], [`install_with`]), which
//! RLX runs on every graph it compiles, after its own fusion passes. The
//! pass cannot see the device a `Session` compiles for, so it decides for
//! the target it was installed with, or from the device profile it was
//! given (`profile=PATH`, from `rlx-run --calibrate`).

use super::specialize::{has_rlx_kernels, specialize};
use super::{HostError, convert, target_named};
use crate::analysis::Target;
use crate::pass::{PassContext, PassOptions, ReportFormat};
use std::sync::{Arc, Once, RwLock};

const PASS: &str = "fuse-welch-peaks";

/// The pass over an RLX graph with `options` as the pass flag takes them
/// (`"target=cuda force=true"`; the target defaults to cpu). On a target
/// where this build registers no kernel with RLX (rocm, metal, mlx, tpu;
/// cuda without the `rlx-cuda` feature), fused ops are priced and lowered
/// as host calls (`native-kernels=false`), since that is how RLX runs them.
pub fn fuse(graph: rlx_ir::Graph, options: &str) -> Result<rlx_ir::Graph, HostError> {
    fuse_graph(&graph, options)
}

/// [`fuse`] on a borrowed graph: the registered pass keeps the original to
/// hand back when fusing fails, without copying it first.
fn fuse_graph(graph: &rlx_ir::Graph, options: &str) -> Result<rlx_ir::Graph, HostError> {
    let (pass, target) = create(options)?;
    let mut ours = convert::from_rlx(graph)?;
    let mut cx = PassContext::new(target, ReportFormat::Text);
    pass.run(&mut ours, &mut cx).map_err(|d| HostError::Pass(d.message))?;
    crate::verify::verify(&ours).map_err(|e| HostError::Pass(e.to_string()))?;
    specialize(&mut ours, target)?;
    convert::to_rlx(&ours)
}

/// The pass for `options` and the target it decides for (cpu unless named).
fn create(options: &str) -> Result<(Box<dyn crate::pass::Pass>, Target), HostError> {
    let info = crate::passes::lookup(PASS).expect("fuse-welch-peaks is registered");
    let parsed = PassOptions::parse(options, info).map_err(HostError::Options)?;
    let target = parsed.target().map_err(HostError::Options)?.unwrap_or(Target::Cpu);
    let options = match parsed.get("native-kernels") {
        None if !has_rlx_kernels(target) => PassOptions::parse(&format!("{options} native-kernels=false"), info).map_err(HostError::Options)?,
        _ => parsed,
    };
    let pass = (info.create)(&options).map_err(HostError::Options)?;
    Ok((pass, target))
}

/// The options the registered pass runs with; `None` until [`install`].
static OPTIONS: RwLock<Option<String>> = RwLock::new(None);

/// Register the pass with RLX (once), deciding for `target` from now on.
pub fn install(target: &str) -> Result<(), HostError> {
    install_with(&format!("target={}", target_named(target)?.name()))
}

/// Register the pass with RLX (once), running with `options` from now on,
/// as the pass flag takes them (`"target=wgpu profile=lavapipe.json"`).
/// Options the pass refuses, or a profile it cannot read or that measured
/// another target, are this call's error, not every compile's.
pub fn install_with(options: &str) -> Result<(), HostError> {
    create(options)?;
    super::kernels::install_kernels();
    *OPTIONS.write().unwrap_or_else(|p| p.into_inner()) = Some(options.to_string());
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| rlx_fusion::pass::register_ir_pass(Arc::new(RlxFusePass)));
    Ok(())
}

/// The registered pass leaves every graph as it is until the next
/// [`install`] (RLX has no way to unregister a pass; benchmarks compare RLX
/// alone and with the pass in one process).
pub fn uninstall() {
    *OPTIONS.write().unwrap_or_else(|p| p.into_inner()) = None;
}

fn installed_options() -> Option<String> {
    OPTIONS.read().unwrap_or_else(|p| p.into_inner()).clone()
}

struct RlxFusePass;

impl rlx_fusion::pass::Pass for RlxFusePass {
    fn name(&self) -> &str {
        "rlx_opt.fuse-welch-peaks"
    }

    /// A graph with no FFT, Welch-peaks or fused op goes back untouched
    /// without being converted; a graph the pass cannot take is left as it
    /// is, with the reason on stderr (RLX passes have no error path).
    fn run(&self, graph: rlx_ir::Graph) -> rlx_ir::Graph {
        let Some(options) = installed_options() else { return graph };
        if !has_candidates(&graph) {
            return graph;
        }
        match fuse_graph(&graph, &options) {
            Ok(fused) => fused,
            Err(e) => {
                // A host's stderr that takes no more must not panic its run.
                crate::cli::say(&format!("rlx-ext: fuse-welch-peaks left the graph as it was: {}", crate::diag::printable(&e.to_string())));
                graph
            }
        }
    }
}

/// Whether `graph` holds an op the pass matches or specialises.
fn has_candidates(graph: &rlx_ir::Graph) -> bool {
    graph.nodes().iter().any(|n| match &n.op {
        rlx_ir::Op::Fft { .. } | rlx_ir::Op::WelchPeaks { .. } => true,
        rlx_ir::Op::Custom { name, .. } => name == crate::fused::WELCH_PEAKS,
        _ => false,
    })
}
