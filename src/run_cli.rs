//! The `rlx-run` command line, in the spirit of mlir-runner: run a graph on
//! `.npy` inputs (or seeded random ones), write its outputs as `.npy`, time
//! repeated runs, and record a Chrome trace.
//!
//! The binary is rlx-ext's (`cargo run --bin rlx-run`): it hands this driver
//! RLX, as an [`RlxEngine`], for `--engine=rlx` and for `--calibrate`'s
//! measurement of RLX's unfused chain. The core itself has no RLX.

use crate::analysis::Target;
use crate::cli::{EXIT_FAILURE, StreamError, one_of, output_failed, print_err, print_out, say, say_error, usage_error};
use crate::limits::{MAX_NPY_HEADER, MAX_NPY_HEADER_NESTING};
use crate::output::Batch;
use crate::format::InputFormat;
use crate::ir::{Graph, OpKind, view};
use crate::runtime::interp::{Executed, run_traced};
use crate::runtime::memory::{self, Budget};
use crate::runtime::{DispatchByLowering, CpuKernel, FusedKernel, Tensor, random_inputs};
use crate::verify::verify;
use clap::Parser;
// Output paths are `PathBuf`s, read from the OS's own strings: a name that
// is not UTF-8 is written where it says (an empty one is a usage error).
use clap::builder::PathBufValueParser;
use std::path::{Path, PathBuf};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// An error of an [`RlxEngine`], typed by the engine (rlx-ext's is
/// `rlx_ext::Error`): the core knows no RLX, so it holds it as a boxed error
/// and prints it.
pub type EngineError = Box<dyn std::error::Error + Send + Sync>;

/// What `rlx-run` asks of RLX: `--engine=rlx` (compile with RLX's own
/// Session, run) and `--calibrate`'s measurement of RLX running the chain
/// unfused. The core has no RLX: rlx-ext implements this
/// (`rlx_ext::SessionEngine`), and its `rlx-run` binary hands it to
/// [`main_with_engine`]. Errors are the engine's own ([`EngineError`]):
/// rlx-run prints them after `--engine=rlx --target=…: `.
pub trait RlxEngine {
    /// Whether RLX has a backend for `target` here, or why not.
    fn backend(&self, target: Target) -> Result<(), EngineError>;
    /// RLX's unfused chain on `target`, measured per FFT length; `progress`
    /// is told each step ([`crate::runtime::calibrate::FFT_LENGTHS`] of them).
    fn calibrate_unfused(&self, target: Target, progress: &mut dyn FnMut(&str)) -> Result<Vec<crate::analysis::device_profile::UnfusedCost>, EngineError>;
    /// RLX's unfused log-mel chain on `target`, measured per FFT length
    /// ([`crate::runtime::calibrate::LOG_MEL_LENGTHS`] steps).
    fn calibrate_unfused_log_mel(&self, target: Target, progress: &mut dyn FnMut(&str)) -> Result<Vec<crate::analysis::device_profile::UnfusedLogMelCost>, EngineError>;
    /// `graph` compiled by RLX for `target`, the fused op's kernels installed.
    fn compile(&self, graph: &Graph, target: Target) -> Result<Box<dyn RlxCompiled>, EngineError>;
}

/// A graph [`RlxEngine::compile`] compiled.
pub trait RlxCompiled {
    /// One run on `inputs` (by the graph's input names); `calls` is set to
    /// the fused op's CPU kernel calls this run made (for `--trace`).
    fn run(&mut self, inputs: &HashMap<String, Tensor>, calls: &mut Vec<KernelCall>) -> Result<Vec<Tensor>, EngineError>;
    /// How long RLX took to compile it.
    fn compile_time(&self) -> Duration;
    /// How many fused ops run on a GPU kernel registered with RLX.
    fn gpu_kernels(&self) -> usize;
}

/// One call of the fused op's CPU kernel in an RLX run, for `--trace`.
#[derive(Debug, Clone)]
pub struct KernelCall {
    /// The op's name as RLX called its kernel.
    pub name: String,
    /// When the call began.
    pub start: Instant,
    /// How long it took.
    pub duration: Duration,
}

#[derive(Parser, Debug)]
#[command(name = "rlx-run", version, about = "Run an RLX graph on the CPU: the reference interpreter, with native kernels for fused ops")]
struct Cli {
    /// The graph (`.graph` RLX text or `.json`).
    #[arg(required_unless_present = "calibrate", value_parser = clap::builder::PathBufValueParser::new())]
    graph: Option<std::path::PathBuf>,
    /// Measure the `--target` device instead of running a graph: call and
    /// launch costs, bandwidths, FFT throughput per length, each plan on a
    /// small grid. Writes a device profile (JSON) for
    /// `fuse-welch-peaks{profile=PROFILE.json}`.
    #[arg(long, conflicts_with_all = ["graph", "inputs", "random_inputs", "output_dir", "repeat", "trace", "memory_limit"])]
    calibrate: bool,
    /// Where `--calibrate` writes the profile (`-` or absent: stdout).
    #[arg(short = 'o', long = "output", value_name = "PROFILE.json", value_parser = PathBufValueParser::new())]
    output: Option<PathBuf>,
    /// Where fused ops run: `cpu`, `wgpu` (Vulkan) or `cuda`; other ops run in the CPU interpreter.
    #[arg(long, value_parser = one_of(&Target::ALL, Target::name), default_value = "cpu")]
    target: Target,
    /// An input as NAME=FILE.npy (f32), matched to the graph's Input/Param
    /// names; NAME may itself hold `=` or be empty (`--input =FILE.npy`),
    /// and where two readings name inputs the longer name wins.
    #[arg(long = "input", value_name = "NAME=FILE", value_parser = input_spec, allow_hyphen_values = true)]
    inputs: Vec<String>,
    /// Fill every input with uniform random values in [-1, 1) from this seed.
    #[arg(long, value_name = "SEED", conflicts_with = "inputs")]
    random_inputs: Option<u64>,
    /// Write output i as DIR/<i>.npy, or DIR/<i>_<name>.npy for named outputs.
    #[arg(long, value_name = "DIR", value_parser = PathBufValueParser::new())]
    output_dir: Option<PathBuf>,
    /// Time N runs after a warm-up (1 to 1,000,000); print one JSON summary line to stdout.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_REPEAT as i64))]
    repeat: Option<u32>,
    /// Write a Chrome trace (JSON) of the last run: one event per op or kernel.
    #[arg(long, value_name = "FILE", value_parser = PathBufValueParser::new())]
    trace: Option<PathBuf>,
    /// What runs the graph: `interp`, rlx-opt's interpreter with native
    /// kernels for fused ops, or `rlx`, RLX's own Session with the fused
    /// op's kernels installed (rlx-ext's rlx-run).
    #[arg(long, value_parser = ["interp", "rlx"], default_value = "interp")]
    engine: String,
    /// The most bytes of tensors the run may hold at once (inputs,
    /// intermediates, outputs): BYTES or N with KiB, MiB, GiB, TiB. By
    /// default the least of 8 GiB, half the machine's memory and half the
    /// address-space limit.
    #[arg(long, value_name = "BYTES", value_parser = crate::runtime::memory::parse_size)]
    memory_limit: Option<u64>,
}

/// The most runs `--repeat` takes: its timings are kept, one `f64` a run.
pub const MAX_REPEAT: u32 = 1_000_000;

/// `NAME=FILE` of `--input`, checked when the command line is read (one
/// without `=` followed by a path is a usage error); which `=` ends the name
/// is decided against the graph's input names ([`resolve_input`]).
fn input_spec(spec: &str) -> Result<String, String> {
    match spec.split_once('=') {
        Some((_, path)) if !path.is_empty() => Ok(spec.to_string()),
        _ => Err(format!("`{spec}` is not NAME=FILE.npy")),
    }
}

/// The input `spec` (`NAME=FILE`) names, and its file.
///
/// Input names are any strings, `=` and the empty name included, so no one
/// `=` can be the separator: splitting at the first would leave `a=b`
/// unnameable, and at the last would break paths like `x=run=1/x.npy`. The
/// name is instead the part before some `=` that is one of the graph's
/// inputs (ordinary names, without `=`, read exactly as before). Where two
/// readings name inputs (inputs `a` and `a=b`, `--input a=b=f.npy`) the
/// longer name wins, and the shorter one is still reachable by spelling the
/// path another way (`--input a=./b=f.npy`).
fn resolve_input<'s>(spec: &'s str, inputs: &[(String, Vec<usize>)]) -> Result<(&'s str, &'s str), String> {
    let reading = spec
        .match_indices('=')
        .map(|(i, _)| (&spec[..i], &spec[i + 1..]))
        .filter(|(name, path)| !path.is_empty() && inputs.iter().any(|(n, _)| n == name))
        .max_by_key(|(name, _)| name.len());
    reading.ok_or_else(|| {
        let (name, _) = spec.split_once('=').expect("`input_spec` checked it has one");
        let names: Vec<String> = inputs.iter().map(|(n, _)| shown_name(n)).collect();
        format!("the graph has no input `{name}` (inputs: {})", names.join(", "))
    })
}

/// An input name in a list: as itself where it is plain, else in backticks
/// (so the empty name, and names holding spaces or commas, can be seen).
fn shown_name(name: &str) -> String {
    let plain = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || "_-./:".contains(c));
    if plain { name.to_string() } else { format!("`{name}`") }
}

/// The `--input` argument for input `name` with a placeholder file, as a
/// shell reads it: quoted where the name holds anything a shell would take
/// apart, so that the suggestion in a message is a command that works
/// (`--input =FILE.npy` for the empty name, `--input 'a b=FILE.npy'`).
pub fn input_argument(name: &str) -> String {
    let word = format!("{name}=FILE.npy");
    if word.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:=+,@%^".contains(c)) {
        format!("--input {word}")
    } else {
        format!("--input '{}'", word.replace('\'', r"'\''"))
    }
}

/// rlx-run without RLX: `--engine=rlx` is an error, and `--calibrate`
/// skips RLX's unfused chain, saying so. rlx-ext's `rlx-run` has RLX.
pub fn main_with_args(args: Vec<String>) -> i32 {
    main_with_os_args(args)
}

/// [`main_with_args`] with the OS's own strings (`std::env::args_os`): a
/// path that is not UTF-8 reaches the file system as it is.
pub fn main_with_os_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    main_with(args, None)
}

/// [`main_with_os_args`] with RLX: `engine` runs `--engine=rlx` and
/// measures RLX's unfused chain in `--calibrate`.
pub fn main_with_engine<I, T>(args: I, engine: &dyn RlxEngine) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    main_with(args, Some(engine))
}

fn main_with<I, T>(args: I, engine: Option<&dyn RlxEngine>) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        // clap takes a flag's default as present, so `requires` cannot say this.
        Ok(cli) if cli.output.is_some() && !cli.calibrate => {
            use clap::CommandFactory;
            return usage_error(Cli::command().error(clap::error::ErrorKind::MissingRequiredArgument, "-o/--output is the profile `--calibrate` writes: it needs --calibrate"));
        }
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match run(&cli, engine) {
        Ok(()) => 0,
        Err(RunError::Located(rendered)) => {
            say(&rendered);
            EXIT_FAILURE
        }
        Err(RunError::Plain(message)) => {
            say_error(TOOL, &message);
            EXIT_FAILURE
        }
        Err(RunError::Stream(e)) => e.exit(TOOL),
        Err(RunError::Output(e)) => output_failed(TOOL, &e),
    }
}

const TOOL: &str = "rlx-run";

/// Why a run failed: an error in the graph file, already rendered as
/// `file:line:col: error: …`; stdout or stderr refusing a line (a closed
/// pipe ends the run quietly); an output that could not be written; or
/// anything else, said by rlx-run.
enum RunError {
    Located(String),
    Plain(String),
    Stream(StreamError),
    Output(crate::output::OutputError),
}

impl From<StreamError> for RunError {
    fn from(e: StreamError) -> Self {
        RunError::Stream(e)
    }
}

impl From<crate::output::OutputError> for RunError {
    fn from(e: crate::output::OutputError) -> Self {
        RunError::Output(e)
    }
}

impl From<String> for RunError {
    fn from(message: String) -> Self {
        RunError::Plain(message)
    }
}

/// The kernel that runs fused ops on `target`, or why there is none here.
fn fused_kernel(target: Target) -> Result<Box<dyn FusedKernel>, String> {
    match target {
        Target::Cpu => Ok(Box::new(CpuKernel)),
        #[cfg(feature = "wgpu")]
        Target::Wgpu => crate::runtime::wgpu_kernel::WgpuKernels::new().map(|k| Box::new(k) as Box<dyn FusedKernel>).map_err(|e| format!("--target=wgpu: {e}")),
        #[cfg(not(feature = "wgpu"))]
        Target::Wgpu => Err(built_without(target, "wgpu")),
        #[cfg(feature = "cuda")]
        Target::Cuda => crate::runtime::cuda_kernel::CudaKernels::new().map(|k| Box::new(k) as Box<dyn FusedKernel>).map_err(|e| format!("--target=cuda: {e}")),
        #[cfg(not(feature = "cuda"))]
        Target::Cuda => Err(built_without(target, "cuda")),
        other => Err(format!("target `{other}` has no runtime here (cpu, wgpu and cuda do; Metal needs macOS)")),
    }
}

/// RLX's unfused chains into `profile` where `unfused` can measure them;
/// the reasons of those it could not (nothing is measured where it cannot
/// be: the reason found before is said).
fn measure_unfused(unfused: Result<&dyn RlxEngine, EngineError>, target: Target, profile: &mut crate::analysis::device_profile::DeviceProfile, step: &mut dyn FnMut(&str)) -> Vec<String> {
    let mut skipped = Vec::new();
    let unfused = unfused.map_err(|e| e.to_string());
    let why = |chain: &str, reason: EngineError| format!("RLX's unfused {chain} on {target} ({reason}): the profile prices it from the chain's IO profile and this device's FFT throughput");
    match unfused.clone().map_err(EngineError::from).and_then(|rlx| rlx.calibrate_unfused(target, step)) {
        Ok(costs) => profile.unfused = costs,
        Err(reason) => skipped.push(why("chain", reason)),
    }
    match unfused.map_err(EngineError::from).and_then(|rlx| rlx.calibrate_unfused_log_mel(target, step)) {
        Ok(costs) => profile.unfused_log_mel = costs,
        Err(reason) => skipped.push(why("log-mel chain", reason)),
    }
    skipped
}

/// `--calibrate`: measure the target's device, with a progress bar on
/// stderr, then write the profile and say how well it predicts the plans
/// it was checked on.
fn calibrate(cli: &Cli, engine: Option<&dyn RlxEngine>) -> Result<(), RunError> {
    use crate::runtime::calibrate::{CalibrationDevice, FFT_LENGTHS, LOG_MEL_LENGTHS, calibrate, steps};
    if cli.engine != "interp" {
        return Err(RunError::Plain("--calibrate measures rlx-run's own kernels: leave --engine at interp".into()));
    }
    // A folder given for the profile is refused before the measurement
    // (a minute on lavapipe), not after it.
    if let Some(path) = cli.output.as_deref().filter(|p| p.as_os_str() != "-" && p.is_dir()) {
        let source = std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory");
        return Err(crate::output::OutputError::File { path: path.to_path_buf(), source }.into());
    }
    let (device, name): (Box<dyn CalibrationDevice>, String) = match cli.target {
        Target::Cpu => (Box::new(CpuKernel), format!("{} ({} threads)", cpu_model(), rayon::current_num_threads())),
        #[cfg(feature = "wgpu")]
        Target::Wgpu => {
            let k = crate::runtime::wgpu_kernel::WgpuKernels::new().map_err(|e| format!("--target=wgpu: {e}"))?;
            let name = k.adapter.clone();
            (Box::new(k), name)
        }
        #[cfg(feature = "cuda")]
        Target::Cuda => {
            let k = crate::runtime::cuda_kernel::CudaKernels::new().map_err(|e| format!("--target=cuda: {e}"))?;
            let name = format!("{} ({})", k.device, k.arch);
            (Box::new(k), name)
        }
        other => return Err(RunError::Plain(fused_kernel(other).err().unwrap_or_else(|| format!("--calibrate: target `{other}` cannot be measured here")))),
    };
    // A GPU's profile carries its host's, for pricing host calls.
    let with_host = cli.target != Target::Cpu;
    // RLX running the chain unfused, where rlx-run has RLX and RLX a backend
    // for the target; else it is skipped, and said so.
    let unfused = unfused_measurable(engine, cli.target);
    let log_mel_steps = if cli.target == Target::Cpu { LOG_MEL_LENGTHS.len() } else { 0 };
    let unfused_steps = if unfused.is_ok() { (FFT_LENGTHS.len() + log_mel_steps) as u64 } else { 0 };
    let bar = indicatif::ProgressBar::new(steps() * (1 + with_host as u64) + unfused_steps);
    bar.set_style(indicatif::ProgressStyle::with_template("calibrating {prefix} [{bar:30}] {pos}/{len} {msg}").expect("a valid template").progress_chars("=> "));
    bar.set_prefix(cli.target.name());
    let mut step = |what: &str| {
        bar.inc(1);
        bar.set_message(what.to_string());
    };
    let mut profile = calibrate(cli.target, &name, device.as_ref(), &mut step).map_err(|e| e.to_string())?;
    // What could not be measured: said once the profile is written, which
    // keeps every measurement that could be taken.
    let skipped = measure_unfused(unfused, cli.target, &mut profile, &mut step);
    if with_host {
        let host = format!("{} ({} threads)", cpu_model(), rayon::current_num_threads());
        profile.host_cpu = Some(Box::new(calibrate(Target::Cpu, &host, &CpuKernel, &mut step).map_err(|e| format!("the host: {e}"))?));
    }
    bar.finish_and_clear();
    // What the pass would refuse is not written: a measurement outside the
    // physical ranges (`DeviceProfile::check`) is this run's error.
    profile.check().map_err(|e| format!("--calibrate measured a profile the pass cannot use: {e}"))?;
    let json = serde_json::to_string_pretty(&profile).expect("profiles serialise") + "\n";
    crate::output::write_file(cli.output.as_deref().unwrap_or(Path::new("-")), json.as_bytes())?;
    // The device's name is the driver's to choose: shown escaped.
    let mut table = String::new();
    for what in &skipped {
        table += &format!("rlx-run: warning: not measured: {}\n", crate::diag::escape_invisible(what));
    }
    table += &format!("calibrated {}: each plan measured against the profile's prediction\n", crate::diag::escape_invisible(&name));
    table += &format!("{:<6} {:>7} {:>9} {:>6} {:>4} {:>12} {:>12} {:>7}\n", "plan", "batch", "segments", "n_fft", "k", "measured_ms", "predicted_ms", "ratio");
    for c in &profile.checks {
        table += &format!(
            "{:<6} {:>7} {:>9} {:>6} {:>4} {:>12.3} {:>12.3} {:>7.2}\n",
            c.plan.name(),
            c.batch,
            c.segments,
            c.n_fft,
            c.k,
            c.measured_ms,
            c.predicted_ms,
            c.predicted_ms / c.measured_ms
        );
    }
    Ok(print_err(&table)?)
}

/// Why rlx-run cannot run RLX: it was given no [`RlxEngine`].
const WITHOUT_RLX: &str = "this rlx-run has no RLX (rlx-ext's rlx-run has: cargo run --bin rlx-run)";

/// The engine that can measure RLX's unfused chain on `target` here, or
/// why none can (rlx-run without RLX; RLX without a backend for the target,
/// as CUDA without rlx-ext's `cuda` feature). Asked once per calibration.
pub fn unfused_measurable(engine: Option<&dyn RlxEngine>, target: Target) -> Result<&dyn RlxEngine, EngineError> {
    let engine = engine.ok_or_else(|| EngineError::from(WITHOUT_RLX))?;
    engine.backend(target)?;
    Ok(engine)
}

/// The CPU's model name, as Linux reports it.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| info.lines().find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())))
        .unwrap_or_else(|| "CPU".into())
}

#[cfg_attr(all(feature = "wgpu", feature = "cuda"), allow(dead_code))]
fn built_without(target: Target, feature: &str) -> String {
    format!("--target={target}: rlx-run was built without the `{feature}` feature")
}

fn run(cli: &Cli, engine: Option<&dyn RlxEngine>) -> Result<(), RunError> {
    if cli.calibrate {
        return calibrate(cli, engine);
    }
    let path = cli.graph.as_deref().expect("clap requires a graph without --calibrate");
    let graph = load(path)?;
    // Messages name the graph as a terminal can show it.
    let path = &*path.to_string_lossy();
    // Before any input is read or tensor allocated.
    let budget = cli.memory_limit.map_or_else(Budget::default_for_this_machine, Budget::given);
    memory::check(&graph, &budget, cli.repeat.is_some())
        .map_err(|e| RunError::Located(crate::diag::Diagnostic::whole_file(format!("{e}; --memory-limit=BYTES raises it")).render(path)))?;
    // The `.npy` files read, which no output of the run may replace.
    let (inputs, read) = match cli.random_inputs {
        Some(seed) => (random_inputs(&graph, seed).map_err(|e| e.to_string())?, Vec::new()),
        None => read_inputs(&graph, &cli.inputs)?,
    };
    if cli.engine == "rlx" {
        let engine = engine.ok_or_else(|| format!("--engine=rlx: {WITHOUT_RLX}"))?;
        return run_rlx(cli, engine, &graph, &inputs, &read);
    }
    let kernel = DispatchByLowering::new(fused_kernel(cli.target)?);
    let fused = &kernel;
    let mut trace = Vec::new();
    let outputs = match cli.repeat {
        None => run_traced(&graph, &inputs, fused, &mut trace).map_err(|e| e.to_string())?,
        Some(n) => {
            run_traced(&graph, &inputs, fused, &mut Vec::new()).map_err(|e| e.to_string())?;
            let mut times = Vec::new();
            let mut outputs = Vec::new();
            for _ in 0..n {
                trace.clear();
                let start = Instant::now();
                outputs = run_traced(&graph, &inputs, fused, &mut trace).map_err(|e| e.to_string())?;
                times.push(start.elapsed().as_secs_f64() * 1e3);
            }
            print_out(&(summary(&graph, &times, &outputs) + "\n"))?;
            outputs
        }
    };
    // Said, not hidden: the trace still names the device for such an op.
    for why in kernel.ran_on_the_host() {
        crate::cli::say(&format!("rlx-run: note: an op fused for the CPU ran on the CPU kernel: {}", crate::diag::escape_invisible(&why)));
    }
    finish(cli, &graph, &outputs, cli.trace.as_ref().map(|_| chrome_trace(&graph, &trace, cli.target)), &read)
}

/// Write or describe the outputs, and write the trace, as every engine
/// does: the files are one batch, which appear together or not at all (a
/// trace that is also an output file is refused, not overwritten).
fn finish(cli: &Cli, graph: &Graph, outputs: &[Tensor], trace: Option<String>, read: &[&str]) -> Result<(), RunError> {
    let mut files = Batch::default();
    // No output may replace the graph or an `.npy` input it read (a trace
    // written over the graph was taken without a word).
    if let Some(graph) = &cli.graph {
        files.input(graph);
    }
    read.iter().for_each(|path| files.input(path));
    if let (Some(path), Some(trace)) = (&cli.trace, trace) {
        files.add(path, trace.into_bytes());
    }
    match &cli.output_dir {
        Some(dir) => add_outputs(&mut files, graph, outputs, dir)?,
        None if cli.repeat.is_none() => print_out(&describe_outputs(graph, outputs))?,
        None => {}
    }
    Ok(files.finish()?)
}

/// `--engine=rlx`: compile once with RLX's Session for `--target`, then the
/// same runs, summary, trace and outputs as the interpreter.
fn run_rlx(cli: &Cli, engine: &dyn RlxEngine, graph: &Graph, inputs: &HashMap<String, Tensor>, read: &[&str]) -> Result<(), RunError> {
    // The file first, as every other error of the graph names it.
    let file = cli.graph.as_deref().map(|p| format!("{}: ", p.display())).unwrap_or_default();
    let flag = |e: EngineError| format!("{file}--engine=rlx --target={}: {e}", cli.target);
    let mut compiled = engine.compile(graph, cli.target).map_err(flag)?;
    let mut calls = Vec::new();
    // The first run is timed too: without --repeat it is the trace's run
    // (it was stamped after it ended, 0 µs long: an adversarial run).
    let first = Instant::now();
    let mut outputs = compiled.run(inputs, &mut calls).map_err(flag)?;
    let mut runs = vec![(first, first.elapsed())];
    if let Some(n) = cli.repeat {
        let mut times = Vec::new();
        for _ in 0..n {
            let start = Instant::now();
            outputs = compiled.run(inputs, &mut calls).map_err(flag)?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
            runs.push((start, start.elapsed()));
        }
        print_out(&(summary(graph, &times, &outputs) + "\n"))?;
    }
    let trace = cli.trace.as_ref().map(|_| rlx_trace(cli.target, compiled.as_ref(), runs.last().copied(), &calls));
    finish(cli, graph, &outputs, trace, read)
}

/// A Chrome trace of an RLX run: the compile, the last run as a whole (RLX
/// times no single op for us), and each call of the fused op's CPU kernel.
fn rlx_trace(target: Target, compiled: &dyn RlxCompiled, run: Option<(Instant, std::time::Duration)>, calls: &[KernelCall]) -> String {
    let origin = run.map_or_else(Instant::now, |(start, _)| start);
    let micros = |at: Instant| at.saturating_duration_since(origin).as_secs_f64() * 1e6;
    let mut events = vec![serde_json::json!({
        "name": "rlx compile", "cat": "compile", "ph": "X", "ts": -compiled.compile_time().as_secs_f64() * 1e6,
        "dur": compiled.compile_time().as_secs_f64() * 1e6, "pid": 1, "tid": 1, "args": {"gpu_kernels": compiled.gpu_kernels()},
    })];
    if let Some((start, duration)) = run {
        events.push(serde_json::json!({"name": "rlx run", "cat": "run", "ph": "X", "ts": micros(start), "dur": duration.as_secs_f64() * 1e6, "pid": 1, "tid": 1}));
    }
    for call in calls {
        events.push(serde_json::json!({"name": call.name, "cat": "fused", "ph": "X", "ts": micros(call.start), "dur": call.duration.as_secs_f64() * 1e6, "pid": 1, "tid": 2}));
    }
    serde_json::json!({"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"tool": "rlx-run", "engine": "rlx", "device": target.name()}}).to_string() + "\n"
}

fn load(file: &std::path::Path) -> Result<Graph, RunError> {
    let path = &*file.to_string_lossy();
    let text = crate::driver::read_input(file).map_err(|d| RunError::Located(d.render(path)))?;
    let mut graph = InputFormat::for_path(file).parse(&text, 1).map_err(|d| RunError::Located(d.render(path)))?;
    verify(&graph).map_err(|e| RunError::Located(crate::diag::Diagnostic::from(e).render(path)))?;
    view::ensure_dependency_order(&mut graph);
    Ok(graph)
}

/// The graph's inputs from `--input` specs, and the files they came from.
fn read_inputs<'s>(graph: &Graph, specs: &'s [String]) -> Result<(HashMap<String, Tensor>, Vec<&'s str>), String> {
    let wanted = crate::runtime::graph_inputs(graph).map_err(|e| e.to_string())?;
    let mut inputs = HashMap::new();
    let mut read = Vec::new();
    for spec in specs {
        let (name, path) = resolve_input(spec, &wanted)?;
        let shape = &wanted.iter().find(|(n, _)| n == name).expect("resolved to an input").1;
        if inputs.contains_key(name) {
            return Err(format!("input `{name}` is given twice"));
        }
        let tensor = read_npy(path, name, shape)?;
        inputs.insert(name.to_string(), tensor);
        read.push(path);
    }
    if let Some((name, shape)) = wanted.iter().find(|(n, _)| !inputs.contains_key(n)) {
        return Err(format!("missing input `{name}` (shape {shape:?}): give {} or --random-inputs=SEED", input_argument(name)));
    }
    Ok((inputs, read))
}

/// Input `name` from the `.npy` file at `path`, which must hold `shape`:
/// the header is sized, and the shape and length checked, before the data
/// is read (a header may declare anything).
fn read_npy(path: &str, name: &str, shape: &[usize]) -> Result<Tensor, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{path}: cannot read: {e}"))?;
    let file_len = file.metadata().map_err(|e| format!("{path}: cannot read: {e}"))?.len();
    read_npy_from(std::io::BufReader::new(file), file_len, path, name, shape).map_err(|e| e.to_string())
}

/// [`read_npy`] from any seekable reader of `file_len` bytes (`path` names
/// it in messages): what the npy fuzz target drives.
pub fn read_npy_from(mut file: impl std::io::Read + std::io::Seek, file_len: u64, path: &str, name: &str, shape: &[usize]) -> Result<Tensor, NpyError> {
    use std::io::Read;
    let mut preamble = [0u8; 12];
    let got = file.by_ref().take(12).read(&mut preamble).map_err(|source| NpyError::Read { path: path.into(), source })?;
    if got < 10 || &preamble[..6] != b"\x93NUMPY" {
        return Err(NpyError::NoMagic { path: path.into() });
    }
    let (header_len, header_start) = match preamble[6] {
        1 => (u64::from(u16::from_le_bytes([preamble[8], preamble[9]])), 10),
        2 | 3 if got == 12 => (u64::from(u32::from_le_bytes([preamble[8], preamble[9], preamble[10], preamble[11]])), 12),
        version => return Err(NpyError::Version { path: path.into(), version }),
    };
    if header_len > MAX_NPY_HEADER || header_start + header_len > file_len {
        return Err(NpyError::HeaderSize { path: path.into(), header_len, file_len });
    }
    // The header (at most MAX_NPY_HEADER bytes, checked above) read once
    // here, its nesting bounded before npyz parses it.
    let mut header = vec![0u8; header_len as usize];
    file.seek(std::io::SeekFrom::Start(header_start)).and_then(|_| file.read_exact(&mut header)).map_err(|source| NpyError::Read { path: path.into(), source })?;
    let depth = bracket_depth(&header);
    if depth > MAX_NPY_HEADER_NESTING {
        return Err(NpyError::HeaderNesting { path: path.into(), depth });
    }
    check_header_keys(&header).map_err(|detail| NpyError::HeaderKeys { path: path.into(), detail })?;
    file.rewind().map_err(|source| NpyError::Read { path: path.into(), source })?;
    let npy = npyz::NpyFile::new(file).map_err(|source| NpyError::Header { path: path.into(), source })?;
    if npy.dtype() != npyz::DType::Plain("<f4".parse().expect("valid type string")) {
        return Err(NpyError::DType { path: path.into(), dtype: npy.dtype().descr() });
    }
    if npy.order() != npyz::Order::C {
        return Err(NpyError::FortranOrder { path: path.into() });
    }
    let declared: Vec<u64> = npy.shape().to_vec();
    if declared.len() != shape.len() || declared.iter().zip(shape).any(|(d, s)| *d != *s as u64) {
        return Err(NpyError::Shape { path: path.into(), name: name.into(), shape: shape.to_vec(), declared });
    }
    let values: usize = shape.iter().product();
    let data_bytes = file_len - header_start - header_len;
    if data_bytes < 4 * values as u64 {
        return Err(NpyError::Truncated { path: path.into(), values, data_bytes });
    }
    // numpy reads the first array and ignores the rest: bytes after the
    // data are most likely a second `np.save` into the same file, whose
    // array would be silently dropped (an adversarial run).
    if data_bytes > 4 * values as u64 {
        return Err(NpyError::TrailingBytes { path: path.into(), values, extra: data_bytes - 4 * values as u64 });
    }
    let data = npy.into_vec::<f32>().map_err(|source| NpyError::Data { path: path.into(), source })?;
    Ok(Tensor::new(shape.to_vec(), data))
}

/// The header is a dict of exactly numpy's three keys, as numpy's
/// `read_array_header` requires (npyz ignores others), each once: stricter
/// than numpy, whose `literal_eval` keeps the last of a key given twice, as
/// npyz does; a file written so was hand-made, and which value it means is
/// a guess. Parsed by py_literal, npyz's own parser, so both read the same
/// text.
fn check_header_keys(header: &[u8]) -> Result<(), String> {
    const KEYS: [&str; 3] = ["descr", "fortran_order", "shape"];
    let text = header.strip_suffix(b"\n").unwrap_or(header);
    let text = std::str::from_utf8(text).map_err(|_| "its header is not UTF-8 text".to_string())?;
    // py_literal's syntax errors span several lines; the first says where.
    let value: py_literal::Value = text.parse().map_err(|e: py_literal::ParseError| {
        let e = e.to_string();
        format!("its header is not a Python literal ({})", crate::diag::echo_in_line(e.lines().next().unwrap_or_default()))
    })?;
    let py_literal::Value::Dict(entries) = value else {
        return Err("its header is not a dict".into());
    };
    let mut seen = [false; 3];
    for (key, _) in &entries {
        let found = match key {
            py_literal::Value::String(k) => KEYS.iter().position(|known| known == k),
            _ => None,
        };
        match found {
            Some(i) if seen[i] => return Err(format!("its header gives '{}' twice", KEYS[i])),
            Some(i) => seen[i] = true,
            None => return Err(format!("its header holds the key {}; numpy's has only 'descr', 'fortran_order' and 'shape'", crate::diag::echo_in_line(&key.to_string()))),
        }
    }
    match seen.iter().position(|s| !s) {
        Some(i) => Err(format!("its header has no '{}'", KEYS[i])),
        None => Ok(()),
    }
}

/// The deepest nesting of `{`, `(` and `[` in a header's text (a Python
/// literal), outside its quoted strings; one pass.
fn bracket_depth(header: &[u8]) -> usize {
    let (mut depth, mut deepest, mut quote, mut escaped) = (0usize, 0usize, None, false);
    for &c in header {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == b'\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'\'' | b'"' => quote = Some(c),
                b'{' | b'(' | b'[' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b'}' | b')' | b']' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    deepest
}

/// Why a `.npy` file is not the input asked for; `path` names the file.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("{path}: cannot read: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: not a .npy file (no NUMPY magic and version)")]
    NoMagic { path: String },
    #[error("{path}: not a .npy file this reads (format version {version})")]
    Version { path: String, version: u8 },
    #[error("{path}: the header declares {header_len} bytes; the file has {file_len} and headers are at most {MAX_NPY_HEADER}")]
    HeaderSize { path: String, header_len: u64, file_len: u64 },
    #[error("{path}: not a .npy file this reads: its header nests brackets {depth} deep (at most {MAX_NPY_HEADER_NESTING})")]
    HeaderNesting { path: String, depth: usize },
    #[error("{path}: not a .npy file: {detail}")]
    HeaderKeys { path: String, detail: String },
    #[error("{path}: not a .npy file: {source}")]
    Header { path: String, source: std::io::Error },
    #[error("{path}: the data must be little-endian float32 (<f4), not {dtype}")]
    DType { path: String, dtype: String },
    #[error("{path}: Fortran-ordered arrays are not supported")]
    FortranOrder { path: String },
    #[error("{path}: input `{name}` must have shape {shape:?}, the file has {declared:?}")]
    Shape { path: String, name: String, shape: Vec<usize>, declared: Vec<u64> },
    #[error("{path}: truncated: the header declares {values} values ({} bytes of data), the file holds {data_bytes}", 4 * values)]
    Truncated { path: String, values: usize, data_bytes: u64 },
    #[error("{path}: {extra} bytes follow the {values} values the header declares (a second array saved into the same file?)")]
    TrailingBytes { path: String, values: usize, extra: u64 },
    #[error("{path}: {source}")]
    Data { path: String, source: std::io::Error },
}

#[cfg(test)]
mod npy_errors {
    use super::{NpyError, read_npy_from};

    #[test]
    fn a_file_that_is_not_npy_says_why() {
        let e = read_npy_from(std::io::Cursor::new(b"hello, world"), 12, "x.npy", "x", &[2]).unwrap_err();
        assert!(matches!(&e, NpyError::NoMagic { path } if path == "x.npy"), "{e}");
        assert_eq!(e.to_string(), "x.npy: not a .npy file (no NUMPY magic and version)");
        let e = read_npy_from(std::io::Cursor::new(b"\x93NUMPY\x09\x00\x00\x00"), 10, "y.npy", "x", &[2]).unwrap_err();
        assert!(matches!(e, NpyError::Version { version: 9, .. }), "{e}");
    }

    /// A version-1 `.npy` file of `header` (padded as numpy pads it) and
    /// `values` little-endian f32s.
    fn npy(header: &str, values: &[f32]) -> Vec<u8> {
        let mut text = header.to_string();
        while !(10 + text.len() + 1).is_multiple_of(64) {
            text.push(' ');
        }
        text.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((text.len() as u16).to_le_bytes());
        bytes.extend(text.as_bytes());
        bytes.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        bytes
    }

    fn read(bytes: &[u8], shape: &[usize]) -> Result<crate::runtime::Tensor, NpyError> {
        read_npy_from(std::io::Cursor::new(bytes), bytes.len() as u64, "x.npy", "x", shape)
    }

    #[test]
    fn numpy_s_own_header_reads() {
        let t = read(&npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }", &[1.5, -2.0]), &[2, 1]).unwrap();
        assert_eq!(t.data, [1.5, -2.0]);
    }

    /// An adversarial run: npyz's parser took 27 s on dicts nested 22 deep
    /// in a 246-byte header (each level doubling it), and hung at 30.
    #[test]
    fn a_header_nested_deeper_than_numpy_s_is_refused_before_it_is_parsed() {
        let nested = |depth: usize| format!("{}1{}", "{'a':".repeat(depth), "}".repeat(depth));
        let header = |depth: usize| format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': {}}}", nested(depth));
        let e = read(&npy(&header(12), &[1.0, 2.0]), &[2]).unwrap_err();
        assert!(matches!(e, NpyError::HeaderNesting { depth: 13, .. }), "{e}");
        assert_eq!(e.to_string(), "x.npy: not a .npy file this reads: its header nests brackets 13 deep (at most 4)");
        // Within the bound it is parsed, and its extra key refused.
        let e = read(&npy(&header(3), &[1.0, 2.0]), &[2]).unwrap_err();
        assert_eq!(e.to_string(), "x.npy: not a .npy file: its header holds the key 'x'; numpy's has only 'descr', 'fortran_order' and 'shape'");
        // Brackets in strings do not count, nor do escaped quotes end one.
        assert_eq!(super::bracket_depth(br"{'a': '(((\'[[[', 'b': ((1,),)}"), 3);
    }

    /// numpy's `read_array_header` refuses a header without exactly its
    /// three keys; npyz took extra keys (an adversarial run). A key given
    /// twice is refused too, where numpy and npyz keep the last.
    #[test]
    fn a_header_holds_numpy_s_three_keys_once() {
        let refused = |header: &str| read(&npy(header, &[1.0, 2.0]), &[2]).unwrap_err().to_string();
        assert_eq!(refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'note': 'hi'}"), "x.npy: not a .npy file: its header holds the key 'note'; numpy's has only 'descr', 'fortran_order' and 'shape'");
        assert_eq!(refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (2,)}"), "x.npy: not a .npy file: its header gives 'shape' twice");
        assert_eq!(refused("{'descr': '<f4', 'shape': (2,)}"), "x.npy: not a .npy file: its header has no 'fortran_order'");
        assert_eq!(refused("{'descr': '<f4', 'fortran_order': False, 2: (2,)}"), "x.npy: not a .npy file: its header holds the key 2; numpy's has only 'descr', 'fortran_order' and 'shape'");
        assert_eq!(refused("('descr', '<f4')"), "x.npy: not a .npy file: its header is not a dict");
        // A header of no bytes: one line, where the parser's message spans five.
        let mut empty = b"\x93NUMPY\x01\x00\x00\x00".to_vec();
        empty.extend(1f32.to_le_bytes());
        let e = read(&empty, &[1]).unwrap_err().to_string();
        assert!(e.starts_with("x.npy: not a .npy file: its header is not a Python literal (") && !e.contains('\n'), "{e}");
    }

    /// numpy reads the first array of a file two `np.save`s wrote, and
    /// drops the second: refused, as a file of the wrong length is.
    #[test]
    fn bytes_after_the_data_are_refused() {
        let mut bytes = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", &[1.0, 2.0]);
        bytes.extend(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", &[3.0]));
        let e = read(&bytes, &[2]).unwrap_err();
        assert!(matches!(e, NpyError::TrailingBytes { values: 2, extra: 132, .. }), "{e}");
        assert_eq!(e.to_string(), "x.npy: 132 bytes follow the 2 values the header declares (a second array saved into the same file?)");
    }

    /// Output files are named by index and debug name, safe, within a file
    /// name's 255 bytes; no name and the empty name alike give `<i>.npy`.
    #[test]
    fn output_file_names_are_safe_and_short() {
        use super::output_file_name;
        assert_eq!(output_file_name(0, Some("peaks")), "0_peaks.npy");
        assert_eq!(output_file_name(1, Some("../é/x")), "1_..___x.npy");
        assert_eq!((output_file_name(2, None), output_file_name(2, Some(""))), ("2.npy".to_string(), "2.npy".to_string()));
        let long = output_file_name(12_345, Some(&"é".repeat(300)));
        assert_eq!(long, format!("12345_{}.npy", "_".repeat(200)));
        assert!(long.len() <= 255);
    }
}

fn npy_bytes(t: &Tensor) -> Result<Vec<u8>, String> {
    use npyz::WriterBuilder;
    let mut out = Vec::new();
    let shape: Vec<u64> = t.shape.iter().map(|d| *d as u64).collect();
    let mut writer = npyz::WriteOptions::new().default_dtype().shape(&shape).writer(&mut out).begin_nd().map_err(|e| e.to_string())?;
    writer.extend(t.data.iter().copied()).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

/// The most characters of a debug name an output's file name keeps: a
/// file name has at most 255 bytes (NAME_MAX), and a valid graph may name
/// a node with more (an adversarial run: a 300-character name failed the
/// run with "File name too long"). The index keeps clipped names apart.
const LONGEST_OUTPUT_NAME: usize = 200;

/// `<i>.npy`, or `<i>_<name>.npy` with the name reduced to safe characters
/// and clipped to [`LONGEST_OUTPUT_NAME`].
pub fn output_file_name(index: usize, name: Option<&str>) -> String {
    match name {
        Some(n) if !n.is_empty() => {
            let safe: String = n.chars().take(LONGEST_OUTPUT_NAME).map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
            format!("{index}_{safe}.npy")
        }
        _ => format!("{index}.npy"),
    }
}

fn add_outputs(files: &mut Batch, graph: &Graph, outputs: &[Tensor], dir: &Path) -> Result<(), String> {
    for (i, (id, tensor)) in graph.outputs.iter().zip(outputs).enumerate() {
        files.add(dir.join(output_file_name(i, graph.node(*id).name.as_deref())), npy_bytes(tensor)?);
    }
    Ok(())
}

/// The summary printed without `--output-dir`: each output's first values.
fn describe_outputs(graph: &Graph, outputs: &[Tensor]) -> String {
    let mut text = String::new();
    for (i, (id, t)) in graph.outputs.iter().zip(outputs).enumerate() {
        let node = graph.node(*id);
        let head: Vec<String> = t.data.iter().take(8).map(|x| format!("{x}")).collect();
        let more = if t.len() > 8 { ", …" } else { "" };
        text += &format!("output {i} %{} {:?}: [{}{more}]\n", node.label, t.shape, head.join(", "));
    }
    text
}

#[derive(serde::Serialize)]
struct Summary {
    runs: usize,
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    signals_per_s: f64,
}

/// `{"runs":N,"median_ms":…,"min_ms":…,"max_ms":…,"signals_per_s":…}`.
fn summary(graph: &Graph, times_ms: &[f64], outputs: &[Tensor]) -> String {
    let mut sorted = times_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let s = Summary {
        runs: times_ms.len(),
        median_ms: median,
        min_ms: sorted[0],
        max_ms: sorted[sorted.len() - 1],
        signals_per_s: signals(graph, outputs) as f64 / (median / 1e3),
    };
    serde_json::to_string(&s).expect("summaries serialise")
}

/// Signals per run: the batch entries of the Welch-peaks ops (every dim of
/// their result but the last), or else the first output's leading dim.
fn signals(graph: &Graph, outputs: &[Tensor]) -> usize {
    let peaks: usize = graph
        .nodes()
        .iter()
        .filter(|n| matches!(n.op.kind(), OpKind::WelchPeaks { .. }) || crate::analysis::io_profile::is_fused_op(n.op.kind()))
        .map(|n| n.ty.static_dims().map_or(0, |d| d[..d.len().saturating_sub(1)].iter().product::<u64>() as usize))
        .sum();
    if peaks > 0 { peaks } else { outputs.first().and_then(|t| t.shape.first().copied()).unwrap_or(1) }
}

/// Chrome trace events (Perfetto, chrome://tracing): one complete event per
/// executed node, its op kind as category (`fused` for fused kernels).
fn chrome_trace(graph: &Graph, executed: &[Executed], target: Target) -> String {
    let events: Vec<serde_json::Value> = executed
        .iter()
        .map(|e| {
            let node = graph.node(e.node);
            let fused = crate::analysis::io_profile::is_fused_op(node.op.kind());
            let name = match node.op.kind() {
                OpKind::Custom { name, .. } => name.clone(),
                _ => node.op.name().to_string(),
            };
            serde_json::json!({
                "name": format!("%{} {name}", node.label),
                "cat": if fused { "fused".to_string() } else { node.op.name().to_string() },
                "ph": "X",
                "ts": e.start.as_secs_f64() * 1e6,
                "dur": e.duration.as_secs_f64() * 1e6,
                "pid": 1,
                "tid": 1,
                "args": {"bytes_read": e.bytes_read, "bytes_written": e.bytes_written, "shape": node.ty.to_string()},
            })
        })
        .collect();
    serde_json::json!({"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"tool": "rlx-run", "device": target.name()}}).to_string() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine with no backend for CUDA (as rlx-ext's without its `cuda`
    /// feature): nothing is measured there.
    struct CpuOnly;

    impl RlxEngine for CpuOnly {
        fn backend(&self, target: Target) -> Result<(), EngineError> {
            if target == Target::Cpu { Ok(()) } else { Err("no backend".into()) }
        }
        fn calibrate_unfused(&self, target: Target, _: &mut dyn FnMut(&str)) -> Result<Vec<crate::analysis::device_profile::UnfusedCost>, EngineError> {
            panic!("measured {target}")
        }
        fn calibrate_unfused_log_mel(&self, target: Target, _: &mut dyn FnMut(&str)) -> Result<Vec<crate::analysis::device_profile::UnfusedLogMelCost>, EngineError> {
            panic!("measured {target}")
        }
        fn compile(&self, _: &Graph, _: Target) -> Result<Box<dyn RlxCompiled>, EngineError> {
            unreachable!("not compiled in this test")
        }
    }

    /// `--calibrate` where RLX has no backend for the target, or rlx-run no
    /// RLX: RLX's unfused chain is skipped, with the reason, before anything
    /// of it is measured; the profile is written without it.
    #[test]
    fn the_unfused_chain_without_an_rlx_backend_is_skipped() {
        let costs = |engine: Option<&dyn RlxEngine>, target| unfused_measurable(engine, target).and_then(|rlx| rlx.calibrate_unfused(target, &mut |what| panic!("measured {what}")));
        let reason = costs(Some(&CpuOnly), Target::Cuda).unwrap_err();
        assert_eq!(reason.to_string(), "no backend");
        let reason = costs(None, Target::Cpu).unwrap_err();
        assert!(reason.to_string().contains("no RLX"), "{reason}");
        assert!(unfused_measurable(Some(&CpuOnly), Target::Cuda).is_err());
        assert!(unfused_measurable(Some(&CpuOnly), Target::Cpu).is_ok());
        assert!(unfused_measurable(None, Target::Cpu).is_err());
    }
}
