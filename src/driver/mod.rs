//! The `rlx-opt` command line, with mlir-opt's conventions: input file or
//! `-`, `-o`, one flag per registered pass (`--dce`,
//! `--fuse-welch-peaks="target=cuda"`) run in command-line order, or
//! `--pass-pipeline='dce,…'`; `--split-input-file`, `--verify-each`,
//! `--print-ir-after-all`, `--timing`, `--pass-statistics`.

use crate::analysis::Target;
use crate::diag::{Diagnostic, loc_of_offset};
use crate::format::{Chunk, Emit, InputFormat, SPLIT_MARKER, split_input};
use crate::ir::{Graph, view};
use crate::fusion_report::FusionCandidates;
use crate::pass::{Pass, PassContext, PassInfo, PassOptions, ReportFormat, parse_pipeline};
use crate::verify::verify;
// Output paths are `PathBuf`s, read from the OS's own strings: a name that
// is not UTF-8 is written where it says (`PathBufValueParser` refuses an
// empty one, as a usage error).
use clap::builder::PathBufValueParser;
use std::path::PathBuf;
use clap::{Arg, ArgAction, CommandFactory, FromArgMatches, Parser};
mod instrument;
mod printed;

use crate::cli::{EXIT_FAILURE, EXIT_USAGE, StreamError, one_of, output_failed, print_err, print_out, say, say_error, usage_error};
use instrument::{IrPrinter, PassInstrumentation, PassStatistics, Timings};
use printed::Printed;
use crate::limits::{MAX_INPUT_BYTES, MAX_OUTPUT_BYTES};
use crate::output::{Batch, Sink};
use std::io::{Read, Write};
use std::time::Instant;

/// The version, with `(mlir)` when MLIR itself checks MLIR input and output.
const VERSION: &str = if cfg!(feature = "mlir") { concat!(env!("CARGO_PKG_VERSION"), " (mlir)") } else { env!("CARGO_PKG_VERSION") };

#[derive(Parser, Debug)]
#[command(
    name = "rlx-opt",
    version = VERSION,
    about = "Optimizer for RLX tensor graphs in the style of mlir-opt",
    after_help = "Each registered pass is also a flag (see --list-passes); pass flags run in the order given."
)]
struct Cli {
    /// Input graph (`.graph` RLX text, `.json` serde form or `.mlir`); `-` reads stdin.
    #[arg(default_value = "-", value_parser = PathBufValueParser::new())]
    input: PathBuf,
    /// Output file (`-` or /dev/stdout: stdout); written only when everything
    /// succeeded, atomically where it is a regular file, through the path
    /// where it is a device or FIFO.
    #[arg(short = 'o', value_name = "FILE", value_parser = PathBufValueParser::new())]
    output: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_parser = one_of(&Emit::ALL, Emit::name), default_value = "graph")]
    emit: Emit,
    /// Input format; by default `.json` files are JSON, `.mlir` MLIR and everything else RLX text.
    #[arg(long, value_parser = one_of(&InputFormat::ALL, InputFormat::name))]
    input_format: Option<InputFormat>,
    /// Treat `// -----` lines as separators between independent graphs.
    #[arg(long)]
    split_input_file: bool,
    /// Target for passes that take one and are not given their own.
    #[arg(long, value_parser = one_of(&Target::ALL, Target::name), default_value = "cpu")]
    target: Target,
    /// Passes to run, comma-separated, with `{key=value …}` options.
    #[arg(long, value_name = "PIPELINE")]
    pass_pipeline: Option<String>,
    /// List the registered passes with their options, then exit.
    #[arg(long)]
    list_passes: bool,
    /// Print the graph to stderr after every pass.
    #[arg(long)]
    print_ir_after_all: bool,
    /// Print wall time of parsing, each pass, verification and printing to stderr.
    #[arg(long)]
    timing: bool,
    /// Print the statistics each pass collected to stderr.
    #[arg(long)]
    pass_statistics: bool,
    /// Write the fusion report: JSON to FILE, or a table to stderr with `-`.
    #[arg(long, value_name = "FILE", value_parser = PathBufValueParser::new())]
    fusion_report: Option<PathBuf>,
    /// Write, for every fused op, its kernels and a manifest.json under DIR.
    #[arg(long, value_name = "DIR", value_parser = PathBufValueParser::new())]
    emit_kernels: Option<PathBuf>,
    /// Run the verifier after every pass (`--verify-each=false` to skip).
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set, value_name = "BOOL")]
    verify_each: bool,
}

const TOOL: &str = "rlx-opt";

/// Why a chunk was not processed: bad input (said, and the next chunk
/// goes on), or stderr refusing a report (the run ends).
enum Failure {
    Input(Diagnostic),
    Stream(StreamError),
}

impl From<Diagnostic> for Failure {
    fn from(d: Diagnostic) -> Self {
        Failure::Input(d)
    }
}

impl From<crate::format::FormatError> for Failure {
    fn from(e: crate::format::FormatError) -> Self {
        Failure::Input(e.into())
    }
}

impl From<StreamError> for Failure {
    fn from(e: StreamError) -> Self {
        Failure::Stream(e)
    }
}

/// Run rlx-opt with `args` (the program name first) and the passes of
/// `registry` (the binary hands in `passes::registry()`); returns the exit code.
pub fn main_with_args(args: Vec<String>, registry: &'static [PassInfo]) -> i32 {
    main_with_os_args(args, registry)
}

/// [`main_with_args`] with the OS's own strings (`std::env::args_os`): a
/// path that is not UTF-8 reaches the file system as it is.
pub fn main_with_os_args<I, T>(args: I, registry: &'static [PassInfo]) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = Cli::command();
    for info in registry {
        command = command.arg(
            Arg::new(info.name)
                .long(info.name)
                .help(info.description)
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("")
                .value_name("OPTIONS")
                .action(ArgAction::Append),
        );
    }
    let matches = match command.try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return usage_error(e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    if cli.list_passes {
        return print_out(&list_passes(registry)).map_or_else(|e| e.exit(TOOL), |()| 0);
    }
    let (pipeline, reads) = match build_pipeline(&cli, &matches, registry) {
        Ok(p) => p,
        Err(message) => {
            // Escaped and clipped: the message echoes the command line.
            say_error(TOOL, &message);
            return EXIT_USAGE;
        }
    };
    run(&cli, &pipeline, &reads)
}

fn list_passes(registry: &[PassInfo]) -> String {
    let mut out = String::from("Available passes (as flags, or in --pass-pipeline):\n");
    for info in registry {
        out.push_str(&format!("  --{:<22} {}\n", info.name, info.description));
        for o in info.options {
            out.push_str(&format!("      {:<20} {} (default: {})\n", format!("{}=…", o.name), o.help, o.default));
        }
    }
    out
}

/// The passes to run, and the files their options name for them to read.
type PassesAndReads = (Vec<Box<dyn Pass>>, Vec<PathBuf>);

/// The passes to run: `--pass-pipeline`, or the pass flags in command-line
/// order; and the files their options name for them to read (`profile=`).
fn build_pipeline(cli: &Cli, matches: &clap::ArgMatches, registry: &[PassInfo]) -> Result<PassesAndReads, String> {
    let mut flagged: Vec<(usize, &str, String)> = Vec::new();
    for info in registry {
        if let (Some(indices), Some(values)) = (matches.indices_of(info.name), matches.get_many::<String>(info.name)) {
            flagged.extend(indices.zip(values).map(|(i, v)| (i, info.name, v.clone())));
        }
    }
    flagged.sort_by_key(|(i, _, _)| *i);
    let items: Vec<(String, String)> = match &cli.pass_pipeline {
        Some(_) if !flagged.is_empty() => {
            return Err("give passes either as flags or with --pass-pipeline, not both".into());
        }
        Some(text) => parse_pipeline(text).map_err(|e| e.to_string())?,
        None => flagged.into_iter().map(|(_, name, options)| (name.to_string(), options)).collect(),
    };
    let target_given = matches.value_source("target") == Some(clap::parser::ValueSource::CommandLine);
    let mut reads = Vec::new();
    let passes = items
        .iter()
        .map(|(name, options)| {
            let info = registry.iter().find(|p| p.name == name).ok_or_else(|| format!("unknown pass `{}` (see --list-passes)", crate::diag::clip(name)))?;
            let mut options = PassOptions::parse(options, info).map_err(|e| e.to_string())?;
            // A profile decides a pass's target where nothing else does; a
            // `--target` given on the command line is the pass's target, as
            // its own `target=` would be, and a profile of another device is
            // refused alike (it was silently overridden: an adversarial run).
            if target_given && options.get("profile").is_some() && info.options.iter().any(|o| o.name == "target") {
                options.set_default("target", cli.target.name());
            }
            reads.extend(options.get("profile").map(PathBuf::from));
            (info.create)(&options).map_err(|e| e.to_string())
        })
        .collect::<Result<_, String>>()?;
    Ok((passes, reads))
}

struct Session<'a> {
    cli: &'a Cli,
    pipeline: &'a [Box<dyn Pass>],
    timings: Timings,
    stats: PassStatistics,
    candidates: Vec<crate::fusion_report::Candidate>,
    /// Files besides the output (kernels, the JSON fusion report): written
    /// at the end, all or none, and only when every graph succeeded.
    files: Batch,
    /// The folders `--emit-kernels` filled (DIR/<graph>/n<label>: unique
    /// within a graph, so a folder met again is another graph's of the
    /// same name).
    kernel_folders: std::collections::HashSet<String>,
}

impl<'a> Session<'a> {
    fn new(cli: &'a Cli, pipeline: &'a [Box<dyn Pass>], reads: &[PathBuf]) -> Self {
        let mut files = Batch::default();
        // No output may replace a device profile a pass reads; the fusion
        // report and the kernels may not replace the graph read either
        // (`-o` may: a rewrite in place).
        files.input_rewritten_in_place(&cli.input);
        reads.iter().for_each(|path| files.input(path));
        let (timings, stats) = (Timings::default(), PassStatistics::default());
        Session { cli, pipeline, timings, stats, candidates: Vec::new(), files, kernel_folders: Default::default() }
    }
}

fn run(cli: &Cli, pipeline: &[Box<dyn Pass>], reads: &[PathBuf]) -> i32 {
    let file = if cli.input.as_os_str() == "-" { "<stdin>".to_string() } else { cli.input.to_string_lossy().into_owned() };
    let mut session = Session::new(cli, pipeline, reads);
    let text = match session.timings.time("read", || read_input(&cli.input)) {
        Ok(text) => text,
        Err(d) => {
            say(&d.render(&file));
            return EXIT_FAILURE;
        }
    };
    let format = cli.input_format.unwrap_or_else(|| InputFormat::for_path(&cli.input));
    let chunks = if cli.split_input_file { split_input(&text) } else { split_input_whole(&text) };

    let sink = match Sink::open(cli.output.as_deref()) {
        Ok(sink) => sink,
        Err(e) => return output_failed(TOOL, &e),
    };
    let mut out = Printed::new(sink, cli.emit, format == InputFormat::Mlir, &file);
    for chunk in &chunks {
        out.start_chunk();
        match session.process(chunk, format, &mut |timings, graph| out.add(timings, graph)) {
            Ok(()) => {}
            Err(Failure::Input(d)) => {
                say(&d.render(&file));
                out.drop_chunk();
                continue;
            }
            Err(Failure::Stream(e)) => return e.exit(TOOL),
        }
        match session.timings.time("print", || out.end_chunk()) {
            Ok(()) => {}
            // A reader that went away (`| head`) wants no more output.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return 0,
            Err(e) => return output_failed(TOOL, &out.sink.error(e)),
        }
    }
    let (failed, mlir_modules, mut sink) = (out.failed, out.mlir_modules, out.sink);
    if cli.emit == Emit::Mlir && !failed && let Err(code) = write_mlir(&mut session.timings, &mut sink, &mlir_modules, &file) {
        return code;
    }
    finish(&mut session, sink, failed)
}

/// The reports, then every file of the run in one batch (nothing when a
/// graph failed), then the timing report: the exit code.
fn finish(session: &mut Session<'_>, sink: Sink, failed: bool) -> i32 {
    let cli = session.cli;
    // Reports on stderr come before any file is written: a stderr that
    // refuses one (`2>/dev/full`) fails the run, and nothing is written.
    let table = match cli.fusion_report.as_deref() {
        // A failed run writes nothing: the table says so, lest its `fused`
        // rows, or its "(no candidates)" for a graph that never reached the
        // passes, read as done (an adversarial run).
        Some(dash) if dash.as_os_str() == "-" => {
            let mut table = crate::fusion_report::to_table(&session.candidates);
            // Graphs printed to stdout as they were done stand (a review).
            match (failed, &sink) {
                (true, Sink::Stdout(_)) => table.push_str("(the run failed: no file was written; the graphs that got through were printed to stdout)\n"),
                (true, _) => table.push_str("(the run failed, and nothing was written: no decision above was applied)\n"),
                (false, _) => {}
            }
            Some(table)
        }
        Some(path) => {
            session.files.add(path, crate::fusion_report::to_json(&session.candidates).into_bytes());
            None
        }
        None => None,
    };
    let reports = [cli.pass_statistics.then(|| session.stats.report()), table];
    if let Err(e) = reports.iter().flatten().try_for_each(|report| print_err(report)) {
        return e.exit(TOOL);
    }
    // Every output of the run, the `-o` file (or stdout) with the kernels and
    // the report, goes in one batch: all of them or none.
    let mut files = std::mem::take(&mut session.files);
    let finished = session.timings.time("write", || {
        if failed {
            return Ok(());
        }
        files.add_sink(sink);
        files.finish()
    });
    // The timing report covers the write, so it comes after it: a stderr
    // that refuses it fails the run with the files already in place.
    if cli.timing && let Err(e) = print_err(&session.timings.report()) {
        return e.exit(TOOL);
    }
    if let Err(e) = finished {
        return output_failed(TOOL, &e);
    }
    if failed { EXIT_FAILURE } else { 0 }
}

/// MLIR output: one module per input chunk, holding its graphs, printed at
/// the end (as mlir-opt prints split input), measured before it is written.
/// `Err` is the exit code, the error said.
fn write_mlir(timings: &mut Timings, sink: &mut Sink, modules: &[Vec<Graph>], file: &str) -> Result<(), i32> {
    let module = timings.time("print", || {
        let printed = modules.iter().map(|graphs| crate::mlir_pass::print_module(graphs, file)).collect::<Result<Vec<_>, _>>()?;
        Ok::<_, Diagnostic>(printed.join(&format!("{SPLIT_MARKER}\n")))
    });
    let written = match module {
        // Built in memory: measured before it is written.
        Ok(text) if text.len() as u64 > MAX_OUTPUT_BYTES => {
            say(&Diagnostic::whole_file(crate::format::OutputTooLarge { size: text.len() as u64, at_least: false }.to_string()).render(file));
            return Err(EXIT_FAILURE);
        }
        Ok(text) => sink.write_all(text.as_bytes()).map_err(|e| sink.error(e)),
        Err(d) => {
            say(&d.render(file));
            return Err(EXIT_FAILURE);
        }
    };
    if let Err(e) = written {
        return Err(output_failed(TOOL, &e));
    }
    Ok(())
}

fn split_input_whole(text: &str) -> Vec<Chunk<'_>> {
    vec![Chunk { first_line: 1, text }]
}

impl Session<'_> {
    /// Parse, verify and run the pipeline on the graphs of one chunk,
    /// handing each to `each` as soon as it is done.
    fn process(&mut self, chunk: &Chunk<'_>, format: InputFormat, each: &mut dyn FnMut(&mut Timings, Graph)) -> Result<(), Failure> {
        // Only a split file's chunk may be empty: an empty file is an error.
        if self.cli.split_input_file && chunk.holds_nothing(format) {
            return Ok(());
        }
        // Parsing interleaves with the graphs' work: its time is what the
        // read took beside theirs.
        let (start, mut theirs) = (Instant::now(), std::time::Duration::ZERO);
        self.timings.add("parse", std::time::Duration::ZERO);
        let read = crate::mlir_pass::parse_each(format, chunk.text, chunk.first_line, |graph| {
            let started = Instant::now();
            let done = self.process_graph(graph).map(|graph| each(&mut self.timings, graph));
            theirs += started.elapsed();
            done
        });
        self.timings.add("parse", start.elapsed().saturating_sub(theirs));
        read
    }

    fn process_graph(&mut self, mut graph: Graph) -> Result<Graph, Failure> {
        self.timings.time("verify", || verify(&graph)).map_err(Diagnostic::from)?;
        view::ensure_dependency_order(&mut graph);
        let format = if self.cli.emit == Emit::Json { ReportFormat::Json } else { ReportFormat::Text };
        let mut cx = PassContext::new(self.cli.target, format);
        if self.cli.fusion_report.is_some() {
            cx.request::<FusionCandidates>();
        }
        for pass in self.pipeline {
            let start = Instant::now();
            let stats = pass.run(&mut graph, &mut cx)?;
            let elapsed = start.elapsed();
            for report in cx.reports.drain(..) {
                print_err(&report)?;
            }
            self.candidates.append(&mut cx.take::<FusionCandidates>().0);
            let mut printer = self.cli.print_ir_after_all.then(|| IrPrinter::new(self.cli.emit));
            let hooks: [Option<&mut dyn PassInstrumentation>; 3] =
                [Some(&mut self.timings), Some(&mut self.stats), printer.as_mut().map(|p| p as &mut dyn PassInstrumentation)];
            for hook in hooks.into_iter().flatten() {
                hook.run_after_pass(pass.name(), &graph, &stats, elapsed);
            }
            if let Some(e) = printer.and_then(|p| p.error) {
                return Err(e.into());
            }
            if self.cli.verify_each {
                self.timings
                    .time("verify", || verify(&graph))
                    .map_err(|e| Diagnostic::maybe_at(e.loc(), format!("after pass `{}`: {e}", pass.name())))?;
            }
        }
        if let Some(dir) = &self.cli.emit_kernels {
            let folders = crate::lower::emit::emit_kernels(&graph, dir, &mut self.files).map_err(|e| Diagnostic::whole_file(e.to_string()))?;
            if folders.into_iter().any(|folder| !self.kernel_folders.insert(folder)) {
                return Err(Diagnostic::whole_file(format!(
                    "--emit-kernels: two graphs of this run are named @{}, and each graph's kernels go under '{}': give them distinct names",
                    crate::diag::clip(&graph.name),
                    dir.join(&graph.name).display()
                ))
                .into());
            }
        }
        Ok(graph)
    }
}

/// The text of an input graph (`-` is stdin): at most [`MAX_INPUT_BYTES`],
/// UTF-8, a leading byte-order mark dropped.
pub fn read_input(path: impl AsRef<std::path::Path>) -> Result<String, Diagnostic> {
    let path = path.as_ref();
    let mut bytes = Vec::new();
    let limit = MAX_INPUT_BYTES + 1;
    let read = if path.as_os_str() == "-" {
        std::io::stdin().take(limit).read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::File::open(path).and_then(|f| f.take(limit).read_to_end(&mut bytes)).map(|_| ())
    };
    read.map_err(|e| Diagnostic::whole_file(format!("cannot read input: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(Diagnostic::whole_file(format!("the input is larger than {}, the most rlx-opt reads", crate::limits::bytes(MAX_INPUT_BYTES))));
    }
    if bytes.starts_with(b"\xef\xbb\xbf") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let byte = e.as_bytes()[offset];
        Diagnostic::at(loc_of_offset(e.as_bytes(), offset), format!("invalid UTF-8 (byte 0x{byte:02x}): input must be UTF-8 text"))
    })
}

/// Parse, verify and print a graph with no passes: the round trip tests use.
pub fn round_trip(text: &str, format: InputFormat, emit: Emit) -> Result<String, Diagnostic> {
    let mut graph: Graph = format.parse(text, 1)?;
    verify(&graph)?;
    view::ensure_dependency_order(&mut graph);
    Ok(emit.print(&graph))
}
