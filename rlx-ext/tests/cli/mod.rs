//! For the tests of the `rlx-run` binary (this package's, which runs
//! rlx-opt's driver with RLX inside): subprocess helpers, run from the
//! repository root as the README's commands are, and rlx-opt's steps the
//! tests need, done through rlx-opt's library (its binary is the core
//! package's, which this package's tests cannot name).
#![allow(dead_code)]

// The core's child-process helpers, one copy for both packages' tests.
#[path = "../../../tests/common/child.rs"]
pub mod child;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root: rlx-run's working directory in these tests, so
/// paths like `tests/fixtures/…` are the repository's.
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The `.graph` fixtures of the repository.
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures");

/// The rlx-run binary, to be given arguments, in the repository root.
pub fn rlx_run_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rlx-run"));
    command.current_dir(ROOT);
    command
}

/// Run rlx-run to completion.
pub fn rlx_run(args: &[&str]) -> Output {
    rlx_run_command().args(args).output().unwrap()
}

/// rlx-opt's command line, run in this process (its output files are
/// written; what it would print goes to this process's streams): its exit
/// status. Relative paths are the repository root's.
pub fn rlx_opt_in_process(args: &[&str]) -> i32 {
    let mut argv = vec!["rlx-opt".to_string()];
    argv.extend(args.iter().map(|a| if a.starts_with('-') || Path::new(a).is_absolute() { a.to_string() } else { format!("{ROOT}/{a}") }));
    rlx_opt::driver::main_with_args(argv, rlx_opt::passes::registry())
}

/// The table `rlx-opt --fuse-welch-peaks=OPTIONS --fusion-report=- GRAPH`
/// prints on stderr, made by rlx-opt's library as its driver makes it.
pub fn fusion_report_table(graph: &Path, options: &str) -> String {
    use rlx_opt::fusion_report::FusionCandidates;
    use rlx_opt::pass::{PassContext, PassOptions, ReportFormat};
    let info = rlx_opt::passes::lookup("fuse-welch-peaks").unwrap();
    let pass = (info.create)(&PassOptions::parse(options, info).unwrap()).unwrap();
    let mut ir = rlx_opt::format::rlx_text::parse(&std::fs::read_to_string(graph).unwrap()).unwrap();
    let mut cx = PassContext::new(rlx_opt::analysis::Target::Cpu, ReportFormat::Text);
    cx.request::<FusionCandidates>();
    pass.run(&mut ir, &mut cx).unwrap();
    rlx_opt::fusion_report::to_table(&cx.take::<FusionCandidates>().0)
}

/// Write `bytes` to `dir/name`; its path.
pub fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A test path as the `&str` a command line takes.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Run a binary to completion.
pub fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin).current_dir(ROOT).args(args).output().unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A test that cannot run here: one `SKIPPED <what>: <reason>` line on the
/// real stderr, and a failure under CI (`CI` set) when CI provides what is
/// missing.
pub fn skip(what: &str, reason: &str, required_in_ci: bool) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIPPED {what}: {reason}");
    if required_in_ci {
        assert!(std::env::var("CI").is_err(), "{what} must run in CI, which installs what it needs: {reason}");
    }
}

/// `data` as an `.npy` file of `shape` at `path` (an input for rlx-run).
pub fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) {
    use npyz::WriterBuilder;
    let mut w = npyz::WriteOptions::new().default_dtype().shape(shape).writer(std::fs::File::create(path).unwrap()).begin_nd().unwrap();
    w.extend(data.iter().copied()).unwrap();
    w.finish().unwrap();
}
