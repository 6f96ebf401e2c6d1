//! `dce`: remove nodes that no graph output depends on.
//!
//! Inputs and Params are the graph's interface and always stay. Ops rlx-opt
//! does not understand also stay, with everything they use: they may have
//! effects it cannot see, and a pass never drops what it does not understand.

use crate::diag::Diagnostic;
use crate::ir::{Graph, view};
use crate::pass::{Pass, PassContext, PassInfo, PassOptions, Statistic, Statistics};

pub const INFO: PassInfo = PassInfo {
    name: "dce",
    description: "Remove nodes no graph output depends on (keeps inputs, params and ops it does not understand)",
    options: &[],
    create,
};

fn create(_: &PassOptions) -> Result<Box<dyn Pass>, crate::pass::OptionError> {
    Ok(Box::new(Dce))
}

pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&self, graph: &mut Graph, _: &mut PassContext) -> Result<Statistics, Diagnostic> {
        let removed = eliminate_dead_nodes(graph);
        Ok(vec![Statistic { name: "nodes-removed", description: "Dead nodes removed", value: removed as u64 }])
    }
}

/// Remove dead nodes; returns how many went.
pub fn eliminate_dead_nodes(graph: &mut Graph) -> usize {
    let roots = graph.ids().filter(|id| !graph.node(*id).op.is_removable());
    let roots: Vec<_> = graph.outputs.iter().copied().chain(roots).collect();
    let live = view::reaching(&view::build(graph), roots);
    let removed = live.iter().filter(|l| !**l).count();
    if removed > 0 {
        graph.retain(&live);
    }
    removed
}
