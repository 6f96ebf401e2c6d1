//! Golden snapshots, one per fixture in `tests/fixtures/` and kept beside it
//! in `tests/fixtures/snapshots/`: the graph after `dce`, and RLX's IO
//! profile of it for each target. Adding a case is adding a `.graph` file;
//! `cargo insta review` shows what changed.

use insta::{assert_snapshot, glob, with_settings};
use rlx_opt::analysis::{IoFusionGate, Target, profile};
use rlx_opt::format::rlx_text;
use rlx_opt::verify::verify;
use std::fmt::Write as _;

#[test]
fn fixtures() {
    with_settings!({ snapshot_path => "fixtures/snapshots" }, {
        glob!("fixtures/*.graph", |path| {
            let text = std::fs::read_to_string(path).unwrap();
            let mut graph = rlx_text::parse(&text).unwrap();
            verify(&graph).unwrap();
            let removed = rlx_opt::passes::dce::eliminate_dead_nodes(&mut graph);
            verify(&graph).unwrap();

            let mut out = format!("// dce removed {removed} node(s)\n{}\n", rlx_text::print(&graph));
            out.push_str("target  launches  syncs  output_bytes  traffic_bytes  readback_bytes\n");
            for target in [Target::Cpu, Target::Cuda, Target::Metal, Target::Wgpu] {
                let p = profile(&graph);
                let unified = IoFusionGate::for_target(target).unified;
                let _ = writeln!(
                    out,
                    "{:<7} {:>9} {:>6} {:>13} {:>14} {:>15}",
                    target.name(),
                    p.kernel_launches,
                    p.sync_points,
                    p.host_output_bytes,
                    p.device_traffic_bytes,
                    p.host_readback_bytes(unified)
                );
            }
            assert_snapshot!(out);
        });
    });
}
