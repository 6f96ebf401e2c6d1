//! What fuse-welch-peaks decided for one graph RLX compiled: the report the
//! installed pass queues and a [`Recording`](crate::Recording) keeps (its
//! own module: both the pass and the recordings use it).

use rlx_opt::fusion_report::Candidate;

/// What fuse-welch-peaks decided for one graph: every candidate chain,
/// fused or not, with the numbers and the reason, as `rlx-opt
/// --fusion-report` reports them.
#[derive(Debug, Clone, PartialEq)]
pub struct FusionReport {
    /// The graph's name (RLX's `Graph::name`).
    pub graph: String,
    /// The options the pass ran with (`"target=cpu"`).
    pub options: String,
    /// One entry per candidate chain, in the graph's order.
    pub candidates: Vec<Candidate>,
}

impl FusionReport {
    /// The report as `rlx-opt --fusion-report=FILE` writes it: a JSON array,
    /// one object per candidate.
    pub fn to_json(&self) -> String {
        rlx_opt::fusion_report::to_json(&self.candidates)
    }

    /// The report as `rlx-opt --fusion-report=-` prints it: a table.
    pub fn to_table(&self) -> String {
        rlx_opt::fusion_report::to_table(&self.candidates)
    }

    /// How many chains were rewritten into the fused op (`fused` or `forced`).
    pub fn fused(&self) -> usize {
        use rlx_opt::fusion_report::Decision;
        self.candidates.iter().filter(|c| matches!(c.decision, Decision::Fused | Decision::Forced)).count()
    }
}
