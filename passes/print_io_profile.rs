//! `print-io-profile`: report RLX's static IO profile of the graph for a
//! target. The graph is left as it is; the report goes to stderr (JSON with
//! `--emit=json`), so stdout keeps carrying the graph, as with mlir-opt's
//! analysis printers.

use crate::analysis::{IoFusionGate, Target, profile};
use crate::diag::Diagnostic;
use crate::ir::Graph;
use crate::pass::{OptionSpec, Pass, PassContext, PassInfo, PassOptions, ReportFormat, Statistics};
use serde::Serialize;

pub const INFO: PassInfo = PassInfo {
    name: "print-io-profile",
    description: "Print RLX's static IO profile (launches, sync points, output, traffic and readback bytes) to stderr",
    options: &[OptionSpec { name: "target", help: "target whose memory model sets the readback estimate", default: "--target" }],
    create,
};

fn create(options: &PassOptions) -> Result<Box<dyn Pass>, crate::pass::OptionError> {
    Ok(Box::new(PrintIoProfile { target: options.target()? }))
}

pub struct PrintIoProfile {
    pub target: Option<Target>,
}

#[derive(Serialize)]
struct Report<'a> {
    graph: &'a str,
    target: Target,
    unified_memory: bool,
    kernel_launches: u64,
    sync_points: u64,
    host_output_bytes: u64,
    device_traffic_bytes: u64,
    host_readback_bytes: u64,
}

impl Pass for PrintIoProfile {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&self, graph: &mut Graph, cx: &mut PassContext) -> Result<Statistics, Diagnostic> {
        let target = self.target.unwrap_or(cx.target);
        let unified = IoFusionGate::for_target(target).unified;
        let p = profile(graph);
        let report = Report {
            graph: &graph.name,
            target,
            unified_memory: unified,
            kernel_launches: p.kernel_launches,
            sync_points: p.sync_points,
            host_output_bytes: p.host_output_bytes,
            device_traffic_bytes: p.device_traffic_bytes,
            host_readback_bytes: p.host_readback_bytes(unified),
        };
        cx.reports.push(match cx.report_format {
            ReportFormat::Json => serde_json::to_string(&report).expect("reports serialise") + "\n",
            ReportFormat::Text => render_text(&report),
        });
        Ok(Vec::new())
    }
}

fn render_text(r: &Report<'_>) -> String {
    let memory = if r.unified_memory { "unified memory" } else { "discrete memory" };
    let readback_rule = if r.unified_memory { "outputs" } else { "outputs + traffic/4" };
    format!(
        "IO profile of @{} for target {} ({memory}):\n  kernel_launches       {}\n  sync_points           {}\n  host_output_bytes     {}\n  device_traffic_bytes  {}\n  host_readback_bytes   {}  ({readback_rule})\n",
        r.graph, r.target, r.kernel_launches, r.sync_points, r.host_output_bytes, r.device_traffic_bytes, r.host_readback_bytes
    )
}
