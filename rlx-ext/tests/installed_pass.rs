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
