//! The pass registered inside RLX, as installed: made once at the install
//! (its profile read then), its failures reported through the `log` crate
//! and `take_pass_failures`, and back as installed after calibration
//! measured RLX alone. The registered pass and the logger are process-wide:
//! the tests take turns.

use rlx_fusion::pass::run_registered_ir_passes;
use rlx_opt::testgen::welch_chains;
use std::sync::Mutex;

/// One test at a time: they install the process's one registered pass.
static TURN: Mutex<()> = Mutex::new(());

/// This process's logger, installed once, and the turn of the test.
fn setup() -> std::sync::MutexGuard<'static, ()> {
    static LOGGER: std::sync::Once = std::sync::Once::new();
    LOGGER.call_once(|| {
        log::set_logger(&Capture).unwrap();
        log::set_max_level(log::LevelFilter::Debug);
    });
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

fn chain() -> rlx_ir::Graph {
    rlx_ir::text::parse(&welch_chains(1, 2048 * 8, 256, 8, 16).replace("return %3, %4", "return %4")).unwrap()
}

/// Every record logged, as (level, target, message).
static LOGGED: Mutex<Vec<(log::Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        LOGGED.lock().unwrap().push((record.level(), record.target().to_string(), record.args().to_string()));
    }
    fn flush(&self) {}
}

fn fused_ops(graph: &rlx_ir::Graph) -> Vec<String> {
    graph.nodes().iter().filter_map(|n| match &n.op {
        rlx_ir::Op::Custom { name, .. } if name.starts_with("rlx_opt.welch_peaks") => Some(name.clone()),
        _ => None,
    }).collect()
}

/// The profile is read at the install: removed afterwards, it still
/// decides (lavapipe's sends this chain to the host call, which the
/// uncalibrated gate would fit to the wgpu kernel).
#[test]
fn the_profile_is_read_once_at_the_install() {
    let _turn = setup();
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("lavapipe.json");
    std::fs::copy("../examples/profiles/wgpu_lavapipe.json", &profile).unwrap();
    rlx_ext::install_with(&format!("target=wgpu profile={}", profile.display())).unwrap();
    std::fs::remove_file(&profile).unwrap();
    rlx_ext::take_pass_failures();
    assert_eq!(fused_ops(&run_registered_ir_passes(chain())), ["rlx_opt.welch_peaks"]);
    assert!(rlx_ext::take_pass_failures().is_empty());
}

/// A graph the pass cannot take (17 rows of segments, 8 to an entry) is
/// left as it was; why is logged and can be taken, once. The registered
/// pass is called as RLX calls it, without RLX's debug verifier after it,
/// which refuses this graph too.
#[test]
fn failures_are_logged_and_can_be_taken() {
    let _turn = setup();
    rlx_ext::install("cpu").unwrap();
    let broken = rlx_ir::text::parse(&welch_chains(1, 17, 256, 8, 16)).unwrap();
    let registered = rlx_fusion::pass::registered_ir_passes();
    let ours = registered.iter().find(|p| p.name() == "rlx_opt.fuse-welch-peaks").expect("installed");
    rlx_ext::take_pass_failures();
    LOGGED.lock().unwrap().clear();
    let after = ours.run(broken.clone());
    assert_eq!(rlx_ir::text::print(&after), rlx_ir::text::print(&broken));
    let failures = rlx_ext::take_pass_failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    let why = failures[0].to_string();
    assert!(why.contains("17 rows do not split into 8 segments"), "{why}");
    let logged = LOGGED.lock().unwrap().clone();
    let warned: Vec<_> = logged.iter().filter(|(level, target, _)| *level == log::Level::Warn && target == "rlx_ext").collect();
    assert_eq!(warned.len(), 1, "{logged:?}");
    assert!(warned[0].2.contains(&why), "{warned:?} does not say {why}");
    assert!(rlx_ext::take_pass_failures().is_empty(), "taken once");
}

/// Calibration measures RLX alone, then gives the pass back as it was
/// installed, whether it measured or failed (no RLX ROCm backend here).
#[test]
fn calibration_gives_the_installed_pass_back() {
    let _turn = setup();
    rlx_ext::install("cpu").unwrap();
    let installed = rlx_ext::installed_options();
    assert_eq!(installed.as_deref(), Some("target=cpu"));
    let no_backend = rlx_ext::calibrate_unfused(rlx_opt::analysis::Target::Rocm, &mut |_| {});
    assert!(no_backend.is_err());
    assert_eq!(rlx_ext::installed_options(), installed);
}

/// What is installed or uninstalled while the pass is suspended stays so
/// when the suspension ends; otherwise the suspended pass comes back.
#[test]
fn a_suspension_keeps_what_happened_meanwhile() {
    use rlx_ext::{install_with, installed_options, suspend, uninstall};
    let _turn = setup();
    rlx_ext::install("cpu").unwrap();
    drop(suspend());
    assert_eq!(installed_options().as_deref(), Some("target=cpu"));
    let suspended = suspend();
    assert_eq!(installed_options(), None);
    uninstall();
    drop(suspended);
    assert_eq!(installed_options(), None, "an uninstall during a suspension was undone");
    rlx_ext::install("cpu").unwrap();
    let suspended = suspend();
    install_with("target=wgpu").unwrap();
    drop(suspended);
    assert_eq!(installed_options().as_deref(), Some("target=wgpu"));
}

/// What the installed pass decided, per graph it ran on: the same JSON as
/// `rlx-opt --fuse-welch-peaks=… --fusion-report=FILE` writes for the
/// graph, taken once; `fuse_reporting` gives a caller one graph's own,
/// without the process's queue. A graph with no candidate is not looked at.
#[test]
fn what_the_pass_decided_is_reported_per_graph() {
    let _turn = setup();
    rlx_ext::install("cpu").unwrap();
    rlx_ext::take_fusion_reports();
    let fused = run_registered_ir_passes(chain());
    let reports = rlx_ext::take_fusion_reports();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!((reports[0].graph.as_str(), reports[0].options.as_str()), ("welch_chains_1", "target=cpu"));
    assert_eq!(reports[0].fused(), fused_ops(&fused).len());
    assert_eq!(reports[0].fused(), 1, "{}", reports[0].to_table());
    assert!(rlx_ext::take_fusion_reports().is_empty(), "taken once");
    // rlx-opt's own report of the same graph, from its driver.
    let dir = tempfile::tempdir().unwrap();
    let (graph, report) = (dir.path().join("chain.graph"), dir.path().join("report.json"));
    std::fs::write(&graph, rlx_ir::text::print(&chain())).unwrap();
    let args = ["rlx-opt", "--fuse-welch-peaks=target=cpu", "--fusion-report", report.to_str().unwrap(), graph.to_str().unwrap(), "-o", "/dev/null"];
    assert_eq!(rlx_opt::driver::main_with_args(args.map(String::from).to_vec(), rlx_opt::passes::registry()), 0);
    assert_eq!(reports[0].to_json(), std::fs::read_to_string(&report).unwrap());
    // One graph's own report, the queue untouched.
    let (_, own) = rlx_ext::fuse_reporting(&chain(), "target=cpu").unwrap();
    assert_eq!(own, reports[0]);
    assert!(rlx_ext::take_fusion_reports().is_empty());
    // Nothing to fuse: not looked at, not reported.
    let plain = rlx_ir::text::parse("graph @plain {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [4] f32\n  return %0\n}\n").unwrap();
    run_registered_ir_passes(plain);
    assert!(rlx_ext::take_fusion_reports().is_empty());
    rlx_ext::uninstall();
}

/// One pass per process: a second install with other options replaces the
/// first, and says so through the `log` crate; the same options again do not.
#[test]
fn a_replaced_install_is_logged() {
    let _turn = setup();
    rlx_ext::install("cpu").unwrap();
    LOGGED.lock().unwrap().clear();
    rlx_ext::install("cpu").unwrap();
    rlx_ext::install_with("target=wgpu").unwrap();
    let logged = LOGGED.lock().unwrap().clone();
    let warnings: Vec<_> = logged.iter().filter(|(level, target, _)| *level == log::Level::Warn && target == rlx_ext::LOG_TARGET).collect();
    assert_eq!(warnings.len(), 1, "{logged:?}");
    assert!(warnings[0].2.contains("installing `target=wgpu` replaces the pass installed with `target=cpu`"), "{}", warnings[0].2);
}

/// A caller's own view of what the pass did: a `Recording` keeps the reports
/// and failures made while it lives, even when another caller empties the
/// process's queues first.
#[test]
fn a_recording_keeps_its_own_reports_and_failures() {
    let _turn = setup();
    rlx_ext::install("cpu").unwrap();
    let before = run_registered_ir_passes(chain());
    let mine = rlx_ext::Recording::start();
    run_registered_ir_passes(chain());
    let broken = rlx_ir::text::parse(&welch_chains(1, 17, 256, 8, 16)).unwrap();
    let registered = rlx_fusion::pass::registered_ir_passes();
    registered.iter().find(|p| p.name() == "rlx_opt.fuse-welch-peaks").expect("installed").run(broken);
    // Another caller takes the process's queues.
    assert!(!rlx_ext::take_fusion_reports().is_empty());
    assert!(!rlx_ext::take_pass_failures().is_empty());
    let reports = mine.take_fusion_reports();
    assert_eq!(reports.len(), 1, "only what the pass did while recording: {reports:?}");
    assert_eq!(reports[0].fused(), fused_ops(&before).len());
    let failures = mine.take_pass_failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(mine.take_fusion_reports().is_empty() && mine.take_pass_failures().is_empty(), "taken once");
    rlx_ext::uninstall();
}
