//! The pass registered inside RLX, as installed: made once at the install
//! (its profile read then), its failures reported through the `log` crate
//! and `take_pass_failures`, and back as installed after calibration
//! measured RLX alone. One test: the registered pass and the logger are
//! process-wide.

use rlx_fusion::pass::run_registered_ir_passes;
use rlx_opt::testgen::welch_chains;
use std::sync::Mutex;

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

#[test]
fn the_installed_pass_is_made_once_and_says_why_it_fails() {
    log::set_logger(&Capture).unwrap();
    log::set_max_level(log::LevelFilter::Debug);
    let graph = rlx_ir::text::parse(&welch_chains(1, 2048 * 8, 256, 8, 16).replace("return %3, %4", "return %4")).unwrap();

    // The profile is read at the install: removed afterwards, it still
    // decides (lavapipe's sends this chain to the host call, which the
    // uncalibrated gate would fit to the wgpu kernel).
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("lavapipe.json");
    std::fs::copy("../examples/profiles/wgpu_lavapipe.json", &profile).unwrap();
    rlx_ext::install_with(&format!("target=wgpu profile={}", profile.display())).unwrap();
    std::fs::remove_file(&profile).unwrap();
    assert_eq!(fused_ops(&run_registered_ir_passes(graph.clone())), ["rlx_opt.welch_peaks"]);
    assert!(rlx_ext::take_pass_failures().is_empty());

    // A graph the pass cannot take (17 rows of segments, 8 to an entry) is
    // left as it was; why is logged and can be taken, once. The registered
    // pass is called as RLX calls it, without RLX's debug verifier after
    // it, which refuses this graph too.
    let broken = rlx_ir::text::parse(&welch_chains(1, 17, 256, 8, 16)).unwrap();
    let registered = rlx_fusion::pass::registered_ir_passes();
    let ours = registered.iter().find(|p| p.name() == "rlx_opt.fuse-welch-peaks").expect("installed");
    LOGGED.lock().unwrap().clear();
    let after = ours.run(broken.clone());
    assert_eq!(rlx_ir::text::print(&after), rlx_ir::text::print(&broken));
    let failures = rlx_ext::take_pass_failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    let why = failures[0].to_string();
    let logged = LOGGED.lock().unwrap().clone();
    let warned: Vec<_> = logged.iter().filter(|(level, target, _)| *level == log::Level::Warn && target == "rlx_ext").collect();
    assert_eq!(warned.len(), 1, "{logged:?}");
    assert!(warned[0].2.contains(&why), "{warned:?} does not say {why}");
    assert!(rlx_ext::take_pass_failures().is_empty(), "taken once");

    // Calibration measures RLX alone, then gives the pass back as it was
    // installed, whether it measured or failed (no RLX ROCm backend here).
    rlx_ext::install("cpu").unwrap();
    let installed = rlx_opt::rlx_host::ir_pass::installed_options();
    assert_eq!(installed.as_deref(), Some("target=cpu"));
    let no_backend = rlx_opt::rlx_host::calibrate::calibrate_unfused(rlx_opt::analysis::Target::Rocm, &mut |_| {});
    assert!(no_backend.is_err());
    assert_eq!(rlx_opt::rlx_host::ir_pass::installed_options(), installed);
}
