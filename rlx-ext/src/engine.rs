//! Graphs run through RLX's own `Session` with the fused op's kernels
//! installed (`rlx-run --engine=rlx`): fused ops are fitted to RLX's kernels
//! for the target first ([`super::specialize`]), nothing else is rewritten,
//! so an unfused graph runs as RLX alone runs it.

use crate::error::ExtError;
use crate::{convert, specialize::specialize};
use rlx_opt::analysis::Target;
use rlx_opt::ir::Graph;
use rlx_opt::runtime::Tensor;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// RLX's device for a target.
pub fn device_for(target: Target) -> Result<rlx_runtime::Device, ExtError> {
    match target {
        Target::Cpu => Ok(rlx_runtime::Device::Cpu),
        Target::Wgpu => Ok(rlx_runtime::Device::Gpu),
        #[cfg(feature = "cuda")]
        Target::Cuda => Ok(rlx_runtime::Device::Cuda),
        #[cfg(not(feature = "cuda"))]
        Target::Cuda => Err(ExtError::Rlx("RLX's CUDA backend needs rlx-ext built with its `cuda` feature".into())),
        other => Err(ExtError::Rlx(format!("target `{other}` has no RLX backend here (cpu and wgpu do, cuda with rlx-ext's `cuda` feature)"))),
    }
}

/// A graph compiled by RLX for one device.
pub struct Compiled {
    compiled: rlx_runtime::CompiledGraph,
    /// RLX's backend that compiled it, for messages.
    backend: &'static str,
    /// The shape of each output, from rlx-opt's graph.
    output_shapes: Vec<Vec<usize>>,
    /// How many fused ops run on a GPU kernel registered with RLX.
    pub gpu_kernels: usize,
    pub compile_time: Duration,
}

/// Compile `graph` with RLX for `target`, the fused op's kernels installed.
pub fn compile(graph: &Graph, target: Target) -> Result<Compiled, ExtError> {
    let device = device_for(target)?;
    // RLX's backend, as messages name it.
    let backend = target.name();
    let mut graph = graph.clone();
    let gpu_kernels = specialize(&mut graph, target)?;
    if target == Target::Wgpu {
        refuse_lost_log_mel(&graph)?;
    }
    if target != Target::Cpu {
        refuse_lost_spectrum(&graph)?;
    }
    let output_shapes = graph.outputs.iter().map(|id| Tensor::dims_of(&graph.node(*id).ty).map_err(|e| ExtError::Rlx(e.to_string()))).collect::<Result<_, _>>()?;
    let rlx = convert::to_rlx(&graph)?;
    let started = Instant::now();
    let compiled = quiet::catch(|| {
        let session = rlx_runtime::Session::try_new(device).map_err(|e| e.to_string())?;
        session.try_compile(rlx).map_err(|e| e.to_string())
    })
    .map_err(|p| p.into_error(backend, "compile"))?
    .map_err(|e| ExtError::Rlx(format!("compile: {e}")))?;
    Ok(Compiled { compiled, backend, output_shapes, gpu_kernels, compile_time: started.elapsed() })
}

/// RLX 0.2.19's wgpu backend runs a `LogMel` right only where every other
/// op of the graph is one the LogMel needs: with an op after it (a consumer
/// or not, a fused op or RLX's own) the run succeeds and the LogMel reads
/// back as zeros; with an op it does not need before it, the run never
/// returns (on lavapipe). Refused here rather than run, naming the way out
/// (found by an adversarial run on 2026-11-29: rlx-run gave exit 0 and zeros).
fn refuse_lost_log_mel(graph: &Graph) -> Result<(), ExtError> {
    use rlx_opt::ir::{NodeId, OpCode};
    use rlx_opt::ir::view;
    let code = |id: NodeId| graph.node(id).op.kind().code();
    let graph_view = view::build(graph);
    // The nodes that `from` need (themselves included).
    let needed = |from: &[NodeId]| view::reaching(&graph_view, from.iter().copied());
    // What RLX runs: the steps an output needs.
    let live = needed(&graph.outputs);
    let steps: Vec<NodeId> = graph.ids().filter(|&id| live[id.index()] && !matches!(code(id), OpCode::Input | OpCode::Param | OpCode::Constant)).collect();
    let Some(&log_mel) = steps.iter().find(|&&id| code(id) == OpCode::LogMel) else {
        return Ok(());
    };
    let its_own = needed(&[log_mel]);
    let named = |id: NodeId| format!("%{} ({})", graph.node(id).label, graph.node(id).op.name());
    match steps.iter().find(|&&id| !its_own[id.index()]) {
        Some(&other) => Err(ExtError::Rlx(format!(
            "its wgpu backend (0.2.19) runs a LogMel right only where every other op is one the LogMel needs (beside others it reads back as zeros, or the run never returns): {} is beside {}; fuse it (rlx-opt --fuse-log-mel) or run on cpu",
            named(log_mel),
            named(other)
        ))),
        None => Ok(()),
    }
}

/// RLX 0.2.19 drops a graph output on every target but the CPU: the
/// spectrum of an FFT that an unfused `WelchPeaks` reads, where the peaks
/// are returned too (rlx-compile's `SelectPeaksOnlyOutputs`, which
/// `RLX_NO_IO_PEAKS_OUTPUT=1` turns off). The run returned one output fewer
/// than the graph ("run: 1 outputs, the graph returns 2", on the README's
/// own `welch_native.graph`: an adversarial run). Refused here, naming the
/// way out. (Where the peaks are not returned, RLX's gate may return them
/// in the spectrum's place, which the run's shape check then refuses.)
fn refuse_lost_spectrum(graph: &Graph) -> Result<(), ExtError> {
    use rlx_opt::ir::OpCode;
    if rlx_ir::env_registry::flag("RLX_NO_IO_PEAKS_OUTPUT") {
        return Ok(());
    }
    let returned = |id: rlx_opt::ir::NodeId| graph.outputs.contains(&id);
    for id in graph.ids().filter(|&id| graph.node(id).op.kind().code() == OpCode::WelchPeaks && returned(id)) {
        let Some(&spectrum) = graph.node(id).operands.first() else { continue };
        if graph.node(spectrum).op.kind().code() == OpCode::Fft && returned(spectrum) {
            return Err(ExtError::Rlx(format!(
                "it drops the spectrum of an FFT that WelchPeaks reads where the peaks are returned too (0.2.19, every target but the cpu): %{} (Fft) is returned, and so is %{} (WelchPeaks), which reads it; fuse the chain (rlx-opt --fuse-welch-peaks), set RLX_NO_IO_PEAKS_OUTPUT=1, or run on cpu",
                graph.node(spectrum).label,
                graph.node(id).label
            )));
        }
    }
    Ok(())
}

impl Compiled {
    /// One run on `inputs` (by the graph's input names).
    pub fn run(&mut self, inputs: &HashMap<String, Tensor>) -> Result<Vec<Tensor>, ExtError> {
        let named: Vec<(&str, &[f32])> = inputs.iter().map(|(n, t)| (n.as_str(), t.data.as_slice())).collect();
        let compiled = &mut self.compiled;
        let outputs = quiet::catch(|| compiled.try_run(&named).map_err(|e| e.to_string()))
            .map_err(|p| p.into_error(self.backend, "run"))?
            .map_err(|e| ExtError::Rlx(format!("run: {e}")))?;
        if outputs.len() != self.output_shapes.len() {
            return Err(ExtError::Rlx(format!("run: {} outputs, the graph returns {}", outputs.len(), self.output_shapes.len())));
        }
        outputs
            .into_iter()
            .zip(&self.output_shapes)
            .map(|(data, shape)| {
                let want: usize = shape.iter().product();
                if data.len() == want { Ok(Tensor::new(shape.clone(), data)) } else { Err(ExtError::Rlx(format!("run: an output of {} values, its shape {shape:?} holds {want}", data.len()))) }
            })
            .collect()
    }
}

/// RLX 0.2.19 reports some errors only by panicking (rlx-wgpu's run of
/// `tests/fixtures/mixed_opaque_dead.graph` indexes out of bounds): those
/// panics are caught, and kept off stderr, where rlx-run says once what
/// failed.
pub mod quiet {
    use crate::error::ExtError;
    use std::cell::{Cell, RefCell};
    use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
    use std::sync::{Arc, Mutex};

    type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

    thread_local! {
        /// Whether this thread is inside [`catch`].
        static QUIET: Cell<bool> = const { Cell::new(false) };
        /// Where this thread's last quiet panic was raised.
        static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    /// The quiet hook's installation: how many [`catch`]es run now, on any
    /// thread, and the hook it replaced. The first to enter installs it,
    /// the last to leave installs the previous hook again; catches on
    /// several threads (or nested on one) share one installation, so none
    /// restores a hook another still needs.
    struct Installed {
        depth: usize,
        previous: Option<Arc<Hook>>,
    }

    static INSTALLED: Mutex<Installed> = Mutex::new(Installed { depth: 0, previous: None });

    /// A panic [`catch`] caught.
    #[derive(Debug)]
    pub struct Caught {
        pub message: String,
        /// `file:line:col`, when it was raised on the calling thread.
        pub location: Option<String>,
    }

    impl Caught {
        /// The panic as the error of RLX's `backend` in `stage` (compile,
        /// run). RLX reports a custom op's kernel error by panicking with
        /// the op's name (rlx-cpu: `Op::Custom('…') CPU kernel failed: …`):
        /// one of ours is the fused op's error, not a defect of RLX.
        pub fn into_error(self, backend: &'static str, stage: &'static str) -> ExtError {
            if self.message.contains(&format!("Op::Custom('{}", rlx_opt::fused::NAMESPACE)) {
                return ExtError::Rlx(format!("{stage}: {}", self.message));
            }
            ExtError::RlxPanicked { backend, stage, message: self.message, location: self.location }
        }
    }

    /// Whether a panic was raised in the source of one of RLX's crates
    /// (`…/rlx-wgpu-0.2.19/src/…`): RLX's worker threads (rayon) panic on
    /// threads other than the caller's, and the caller gets the payload.
    fn in_rlx(file: &str) -> bool {
        file.split(['/', '\\']).any(|part| part.starts_with("rlx") && part.ends_with("-0.2.19"))
    }

    fn installed() -> std::sync::MutexGuard<'static, Installed> {
        INSTALLED.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The quiet hook, installed by the first catch running.
    fn enter() {
        let mut installed = installed();
        installed.depth += 1;
        if installed.depth > 1 {
            return;
        }
        let previous: Arc<Hook> = Arc::new(panic::take_hook());
        let delegate = Arc::clone(&previous);
        installed.previous = Some(previous);
        panic::set_hook(Box::new(move |info| {
            if QUIET.get() || info.location().is_some_and(|l| in_rlx(l.file())) {
                LOCATION.set(info.location().map(|l| format!("{}:{}:{}", short_path(l.file()), l.line(), l.column())));
            } else {
                delegate(info);
            }
        }));
    }

    /// The previous hook, installed again by the last catch to finish.
    fn leave() {
        let mut installed = installed();
        installed.depth -= 1;
        if installed.depth > 0 {
            return;
        }
        // Dropping ours drops its handle on the previous hook, which is
        // then ours alone to install again, as it was.
        drop(panic::take_hook());
        match installed.previous.take().map(Arc::try_unwrap) {
            Some(Ok(hook)) => panic::set_hook(hook),
            // Someone else holds our hook (they took it meanwhile): the
            // previous hook, called through.
            Some(Err(shared)) => panic::set_hook(Box::new(move |info| shared(info))),
            None => {}
        }
    }

    /// A file of RLX's from its crate's folder on (`rlx-wgpu-0.2.19/src/…`),
    /// without the registry's path before it; so any crate's file from
    /// cargo's registry (`bytemuck-1.25.2/src/…`: a long registry path was
    /// clipped mid-name in the message, an adversarial run); any other file
    /// as it is.
    pub(super) fn short_path(file: &str) -> &str {
        let mut at = 0;
        for part in file.split(['/', '\\']) {
            if part.starts_with("rlx") && part.ends_with("-0.2.19") {
                return &file[at..];
            }
            at += part.len() + 1;
        }
        // `…/registry/src/<index>/<crate>-<version>/…`
        let registry = ["/registry/src/", "\\registry\\src\\"].iter().find_map(|sep| file.find(sep).map(|i| i + sep.len()));
        match registry.and_then(|i| file[i..].find(['/', '\\']).map(|j| i + j + 1)) {
            Some(crate_dir) => &file[crate_dir..],
            None => file,
        }
    }

    /// Run `f`, catching a panic: the panic hook stays quiet for panics of
    /// this thread and of RLX's code on any thread while `f` runs, and every
    /// other panic goes to the hook that was installed; that hook is
    /// installed again before this returns.
    pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Caught> {
        enter();
        let was_quiet = QUIET.replace(true);
        LOCATION.set(None);
        let result = panic::catch_unwind(AssertUnwindSafe(f));
        QUIET.set(was_quiet);
        leave();
        result.map_err(|payload| Caught {
            message: payload.downcast_ref::<String>().cloned().or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "panicked".into()),
            location: LOCATION.take(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::quiet;
    use crate::error::ExtError;

    /// RLX's panics are its defects, but for its report of one of our
    /// kernels' errors, which is the fused op's.
    #[test]
    fn a_panic_carrying_our_kernels_error_is_not_called_rlxs_defect() {
        let caught = |message: &str| quiet::Caught { message: message.into(), location: Some("rlx-cpu-0.2.19/src/thunk/ops/custom.rs:415:9".into()) };
        let ours = caught("Op::Custom('rlx_opt.welch_peaks') CPU kernel failed: the input holds 3 values").into_error("cpu", "run");
        assert!(matches!(&ours, ExtError::Rlx(m) if m == "run: Op::Custom('rlx_opt.welch_peaks') CPU kernel failed: the input holds 3 values"), "{ours:?}");
        let theirs = caught("index out of bounds: the len is 1 but the index is 1").into_error("wgpu", "run").to_string();
        assert_eq!(theirs, "RLX's wgpu backend failed on this graph (a defect of RLX 0.2.19): it panicked in run at rlx-cpu-0.2.19/src/thunk/ops/custom.rs:415:9: index out of bounds: the len is 1 but the index is 1");
    }

    /// Panic locations lose the registry's path: RLX's crates' and any other's.
    #[test]
    fn panic_locations_start_at_the_crate() {
        let registry = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f";
        assert_eq!(quiet::short_path(&format!("{registry}/rlx-wgpu-0.2.19/src/buffer.rs")), "rlx-wgpu-0.2.19/src/buffer.rs");
        assert_eq!(quiet::short_path(&format!("{registry}/bytemuck-1.25.2/src/internal.rs")), "bytemuck-1.25.2/src/internal.rs");
        assert_eq!(quiet::short_path("src/engine.rs"), "src/engine.rs");
    }
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Panics the hook under test saw, by their message's marker.
    static SEEN: AtomicUsize = AtomicUsize::new(0);

    /// A panic inside `catch` is caught without reaching the hook; the
    /// hook is installed again afterwards, and another thread's panic
    /// meanwhile reaches it (only this thread and RLX's code are quiet).
    #[test]
    fn caught_panics_are_quiet_and_the_hook_comes_back() {
        let previous = std::panic::take_hook();
        // Alive as long as the hook below is: installed, or held by the catch.
        let marker = std::sync::Arc::new(());
        let held = std::sync::Arc::clone(&marker);
        std::panic::set_hook(Box::new(move |info| {
            let _held = &held;
            let message = info.payload().downcast_ref::<&str>().copied().unwrap_or_default();
            if message.starts_with("quiet-test") {
                SEEN.fetch_add(1, Ordering::SeqCst);
            } else {
                previous(info);
            }
        }));
        let caught = quiet::catch(|| -> () { panic!("quiet-test: caught") }).unwrap_err();
        assert_eq!(caught.message, "quiet-test: caught");
        assert!(caught.location.as_deref().is_some_and(|l| l.starts_with(concat!(file!(), ":"))), "{caught:?}");
        assert_eq!(SEEN.load(Ordering::SeqCst), 0, "the caught panic reached the hook");
        // Another thread's panic while a catch runs is not the catch's.
        let other = quiet::catch(|| std::thread::spawn(|| panic!("quiet-test: another thread")).join().is_err()).unwrap();
        assert!(other);
        assert_eq!(SEEN.load(Ordering::SeqCst), 1);
        // Nested, and on several threads at once: one installation.
        let nested = quiet::catch(|| {
            let inner = std::thread::spawn(|| quiet::catch(|| -> () { panic!("quiet-test: nested on a thread") }).unwrap_err());
            (quiet::catch(|| 7).unwrap(), inner.join().unwrap().message)
        });
        assert_eq!(nested.unwrap(), (7, "quiet-test: nested on a thread".to_string()));
        assert_eq!(SEEN.load(Ordering::SeqCst), 1);
        // The hook itself is installed again, not dropped (nor wrapped).
        assert_eq!(std::sync::Arc::strong_count(&marker), 2, "the previous hook was not installed again");
        // The hook is back: a panic after the catch reaches it.
        assert!(std::thread::spawn(|| panic!("quiet-test: after")).join().is_err());
        assert_eq!(SEEN.load(Ordering::SeqCst), 2);
        drop(std::panic::take_hook());
    }
}
