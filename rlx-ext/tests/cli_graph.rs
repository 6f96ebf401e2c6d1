//! A graph written by `rlx-opt --fuse-welch-peaks` loads with
//! `rlx_ir::text::parse` and runs in RLX's `Session` after
//! `install_kernels()` (no pass), equal to the unfused graph run by RLX.

mod common;
use common::{assert_close, inputs, run, surplus_slots};
use rlx_runtime::Device;

#[test]
fn a_graph_fused_by_the_command_line_runs_in_rlx() {
    let dir = tempfile::tempdir().unwrap();
    rlx_ext::install_kernels();
    rlx_ext::install_kernels(); // idempotent
    for file in ["welch_native.graph", "spectrogram_mean_topk.graph", "../../tests/fixtures/spectrogram_batched.graph"] {
        let source = format!("../examples/graphs/{file}");
        let out = dir.path().join("fused.graph");
        let args = ["rlx-opt", "--fuse-welch-peaks=force=true", "--target=cpu", &source, "-o", out.to_str().unwrap()];
        let code = rlx_opt::driver::main_with_args(args.iter().map(|s| s.to_string()).collect(), rlx_opt::passes::registry());
        assert_eq!(code, 0, "rlx-opt on {source}");
        let fused_text = std::fs::read_to_string(&out).unwrap();
        assert!(fused_text.contains("rlx_opt.welch_peaks"), "{source} was fused");
        let unfused = rlx_ir::text::parse(&std::fs::read_to_string(&source).unwrap()).unwrap();
        let fused = rlx_ir::text::parse(&fused_text).unwrap();
        let x = inputs(&unfused);
        assert_close(&source, surplus_slots(&unfused), &run(Device::Cpu, unfused, &x), &run(Device::Cpu, fused, &x), 1e-5);
    }
}
