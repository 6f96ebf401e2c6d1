//! rlx-run's memory budget: the tensors a run holds at once (its inputs,
//! each intermediate until its last use, its outputs), worked out from the
//! graph's static shapes before anything is allocated, so a run that would
//! not fit is refused with a message rather than aborted by the allocator
//! (issue 25: two 23,000-float inputs broadcast into 2.1 GB intermediates).

use super::interp;
use crate::ir::{Graph, NodeId};
use crate::limits::{DEFAULT_RUN_MEMORY, MAX_TENSOR_BYTES, bytes as shown_bytes};

/// How many bytes a run may hold, and where that number came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    /// Said after the number in messages (`--memory-limit`, `the default: …`).
    pub origin: String,
}

impl Budget {
    /// The default: the least of [`DEFAULT_RUN_MEMORY`], half the machine's
    /// memory and half the address-space limit (the rest is for the program,
    /// its threads' stacks and allocator arenas, and other processes).
    pub fn default_for_this_machine() -> Budget {
        Budget::least_of(physical_memory(), address_space_limit())
    }

    fn least_of(memory: Option<u64>, address_space: Option<u64>) -> Budget {
        let mut budget = Budget { bytes: DEFAULT_RUN_MEMORY, origin: format!("the default, {}", shown_bytes(DEFAULT_RUN_MEMORY)) };
        if let Some(m) = memory.map(|m| m / 2).filter(|&m| m < budget.bytes) {
            budget = Budget { bytes: m, origin: "the default: half of this machine's memory".into() };
        }
        if let Some(a) = address_space.map(|a| a / 2).filter(|&a| a < budget.bytes) {
            budget = Budget { bytes: a, origin: "the default: half of the address-space limit (ulimit -v)".into() };
        }
        budget
    }

    /// A budget the user set.
    pub fn given(bytes: u64) -> Budget {
        Budget { bytes, origin: "--memory-limit".into() }
    }
}

/// The most bytes of tensors a run holds at once, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peak {
    pub bytes: u64,
    pub at: PeakAt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeakAt {
    /// Before the first node: the inputs (and a previous run's outputs).
    Inputs,
    /// As this node computes its result.
    Node(NodeId),
    /// As the outputs are copied out of the run.
    Outputs,
}

/// What [`interp::run_traced`] holds at its fullest, by the same rules: the
/// inputs for the whole run, each result from its node until its last use
/// (outputs to the end), each result being computed beside its operands,
/// and the outputs copied out at the end. `held_outputs` adds a previous
/// run's outputs (`--repeat` keeps them while the next run goes). A tensor
/// past the one-tensor limit (or of no static size) is where the run stops
/// with its own error, before allocating it: only what comes before counts.
pub fn peak(graph: &Graph, held_outputs: bool) -> Peak {
    let size = |id: NodeId| graph.node(id).ty.byte_size().filter(|&b| b <= MAX_TENSOR_BYTES);
    let outputs = graph.outputs.iter().map(|&o| size(o)).sum::<Option<u64>>();
    let mut live = if held_outputs { outputs.unwrap_or(0) } else { 0 };
    // The inputs are all made (or read) before the first node runs, one
    // tensor per name (nodes of one name share it, see `graph_inputs`).
    let mut names = rustc_hash::FxHashSet::default();
    for id in graph.ids().filter(|&id| interp::is_input(graph.node(id))) {
        if let crate::ir::OpKind::Input { name } | crate::ir::OpKind::Param { name } = graph.node(id).op.kind()
            && !names.insert(name.as_str())
        {
            continue;
        }
        match size(id) {
            Some(bytes) => live = live.saturating_add(bytes),
            None => return Peak { bytes: live, at: PeakAt::Inputs },
        }
    }
    let mut peak = Peak { bytes: live, at: PeakAt::Inputs };
    let mut remaining_uses = graph.use_counts();
    for id in &graph.outputs {
        remaining_uses[id.index()] += 1;
    }
    for id in graph.ids() {
        let node = graph.node(id);
        if !interp::is_input(node) {
            let Some(bytes) = size(id) else { return peak };
            live = live.saturating_add(bytes);
            // What the node works in beside its result, for as long as it computes.
            let working = live.saturating_add(working_bytes(graph, id));
            if working > peak.bytes {
                peak = Peak { bytes: working, at: PeakAt::Node(id) };
            }
        }
        for o in &node.operands {
            remaining_uses[o.index()] -= 1;
            if remaining_uses[o.index()] == 0 && !interp::is_input(graph.node(*o)) {
                live = live.saturating_sub(size(*o).unwrap_or(0));
            }
        }
    }
    // The outputs are copied out of the run's values before those go.
    let end = live.saturating_add(outputs.unwrap_or(0));
    if end > peak.bytes {
        peak = Peak { bytes: end, at: PeakAt::Outputs };
    }
    peak
}

/// The bytes a node works in beside its operands and result: an FFT's
/// (the interpreter's `Fft`), and a fused op's CPU kernel's, whose every
/// task (one a thread at once) holds its own transform of n_fft points
/// (a log-mel task [`CPU_FRAMES_PER_GROUP`] frames' spectra, halves and
/// powers too: about 10 bytes a point and frame). At n_fft 2^24 that is
/// 0.5 to 1.5 GB a thread (a review).
fn working_bytes(graph: &Graph, id: NodeId) -> u64 {
    use crate::analysis::plan::CPU_FRAMES_PER_GROUP;
    let node = graph.node(id);
    let threads = rayon::current_num_threads() as u64;
    match node.op.kind() {
        crate::ir::OpKind::Fft { .. } => node.ty.dims.last().and_then(|d| d.as_static()).map_or(0, |width| fft_working_bytes(width / 2)),
        crate::ir::OpKind::Custom { .. } => match (node.op.welch_peaks(), node.op.log_mel()) {
            (Some(Ok(attrs)), _) => threads.saturating_mul(fft_working_bytes(attrs.n_fft)),
            (_, Some(Ok(attrs))) => {
                let frames = attrs.n_fft.saturating_mul(10 * CPU_FRAMES_PER_GROUP);
                threads.saturating_mul(fft_working_bytes(attrs.n_fft).saturating_add(frames))
            }
            _ => 0,
        },
        _ => 0,
    }
}

/// What a rustfft transform of `n` points holds beside its data: a row's
/// complex buffer, the plan's scratch and twiddles, measured at about 3
/// rows for lengths of small factors (≤ 31, rustfft's butterflies) and
/// about 11 for others (Bluestein's inner transform is a power of two ≥
/// 2n−1, Rader's recursion). Counted at 4 and 16 rows: a 10^8-point FFT (under a 4 GB
/// address-space limit) aborted in the allocator past a check that
/// counted only the tensors (an adversarial run).
pub fn fft_working_bytes(n: u64) -> u64 {
    let mut rest = n.max(1);
    for p in [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31] {
        while rest.is_multiple_of(p) {
            rest /= p;
        }
    }
    let rows = if rest == 1 { 4 } else { 16 };
    n.saturating_mul(8).saturating_mul(rows)
}

/// A run past its budget, refused before it allocated anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the run would hold {} of tensors at once ({}); the memory limit is {} ({})", shown_bytes(*peak), exact_and_where(*peak, at), shown_bytes(budget.bytes), budget.origin)]
pub struct OverBudget {
    pub peak: u64,
    /// Where the peak is, spelled (`, as %3 `Binary` computes its result`).
    pub at: String,
    pub budget: Budget,
}

/// The peak's exact byte count where [`shown_bytes`] rounded it (it shows
/// fewer than 1 KiB exactly: "48 bytes (48 bytes, …)" said it twice), and
/// where it is.
fn exact_and_where(peak: u64, at: &str) -> String {
    match peak < 1024 {
        true => at.trim_start_matches(", ").to_string(),
        false => format!("{peak} bytes{at}"),
    }
}

/// `Ok` when `graph` runs within `budget`.
pub fn check(graph: &Graph, budget: &Budget, held_outputs: bool) -> Result<(), OverBudget> {
    let p = peak(graph, held_outputs);
    if p.bytes <= budget.bytes {
        return Ok(());
    }
    let at = match p.at {
        PeakAt::Node(id) => {
            let node = graph.node(id);
            let working = match working_bytes(graph, id) {
                0 => String::new(),
                bytes => format!(" with {} of working memory", shown_bytes(bytes)),
            };
            format!(", as `{}` %{} computes its {} result{working}", node.op.name(), node.label, node.ty)
        }
        PeakAt::Inputs => ", its inputs".to_string(),
        PeakAt::Outputs => ", as its outputs are copied out".to_string(),
    };
    Err(OverBudget { peak: p.bytes, at, budget: budget.clone() })
}

/// `8GiB`, `512MiB`, `1000000`, `2G`: a byte count with an optional binary
/// unit (K, M, G, T, with or without `iB`), at least 1 byte.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let bad = || SizeError::NotAByteCount(text.into());
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        "T" | "TiB" => 40,
        _ => return Err(bad()),
    };
    let bytes = n.checked_mul(1 << shift).ok_or_else(|| SizeError::TooLarge(text.into()))?;
    if bytes == 0 {
        return Err(SizeError::Zero);
    }
    Ok(bytes)
}

/// Why a `--memory-limit` is not a byte count (the text as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("`{0}` is not a byte count (BYTES, or N with KiB, MiB, GiB or TiB)")]
    NotAByteCount(String),
    #[error("`{0}` does not fit in 64 bits")]
    TooLarge(String),
    #[error("the memory limit must be at least 1 byte")]
    Zero,
}

/// The machine's memory (`MemTotal` in /proc/meminfo), where Linux says.
fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = info.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
    kib.checked_mul(1024)
}

/// The soft address-space limit (`ulimit -v`, `prlimit --as`), where set.
fn address_space_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..].split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fused op's CPU kernel counts a transform's working memory a thread.
    #[test]
    fn a_fused_op_counts_its_tasks_working_memory() {
        let attrs = crate::fused::WelchPeaksAttrs::rlx(1 << 20, 1, 1);
        let mut graph = Graph::new("f");
        let input = graph.add_node(crate::ir::Op::parse(r#"{"Input":{"name":"x"}}"#).unwrap(), &[], crate::ir::TensorType::new(&[1, 1 << 20], crate::ir::DType::F32));
        let fused = graph.add_node(crate::ir::Op::from_welch_peaks(&attrs), &[input], crate::ir::TensorType::new(&[1, 2], crate::ir::DType::F32));
        graph.outputs = vec![fused];
        let threads = rayon::current_num_threads() as u64;
        assert_eq!(peak(&graph, false).bytes, (4 << 20) + 8 + threads * fft_working_bytes(1 << 20));
    }

    /// An FFT's working memory is counted while it computes: 4 rows of
    /// complex values for lengths of small factors, 16 for others.
    #[test]
    fn an_fft_counts_its_working_memory() {
        assert_eq!(fft_working_bytes(1 << 20), (4 * 8) << 20);
        assert_eq!(fft_working_bytes(1_000_003), 16 * 8 * 1_000_003);
        let graph = crate::format::rlx_text::parse(
            "graph @f {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [2, 2048] f32\n  %1 = {\"Fft\":{\"inverse\":false,\"norm\":\"Backward\",\"algo\":\"Native\"}}(%0) : [2, 2048] f32\n  return %1\n}\n",
        )
        .unwrap();
        let tensors = 2 * 2 * 2048 * 4;
        assert_eq!(peak(&graph, false), Peak { bytes: tensors + fft_working_bytes(1024), at: PeakAt::Node(NodeId(1)) });
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("8GiB"), Ok(8 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("0"), Err(SizeError::Zero));
        assert_eq!(parse_size("1.5GiB"), Err(SizeError::NotAByteCount("1.5GiB".into())));
        assert_eq!(parse_size("99999999999TiB").unwrap_err().to_string(), "`99999999999TiB` does not fit in 64 bits");
    }

    #[test]
    fn the_default_is_the_least_of_its_bounds() {
        assert_eq!(Budget::least_of(None, None).bytes, DEFAULT_RUN_MEMORY);
        assert_eq!(Budget::least_of(Some(24 << 30), None).bytes, DEFAULT_RUN_MEMORY);
        assert_eq!(Budget::least_of(Some(4 << 30), None).bytes, 2 << 30);
        let limited = Budget::least_of(Some(24 << 30), Some(4_000_000_000));
        assert_eq!(limited.bytes, 2_000_000_000);
        assert!(limited.origin.contains("address-space"));
    }

    /// The interpreter's liveness: an intermediate goes after its last use,
    /// inputs and outputs stay.
    /// Input nodes of one name share one tensor (`graph_inputs`), held once.
    #[test]
    fn inputs_of_one_name_count_once() {
        let text = r#"graph @g {
  %0 = {"Input":{"name":"a"}} : [1000] f32
  %1 = {"Input":{"name":"a"}} : [1000] f32
  %2 = {"Binary":"Add"}(%0, %1) : [1000] f32
  return %2
}"#;
        let g = crate::format::rlx_text::parse(text).unwrap();
        // The one input, %2 beside it, then %2 copied out.
        assert_eq!(peak(&g, false), Peak { bytes: 12000, at: PeakAt::Outputs });
    }

    #[test]
    fn peak_follows_liveness() {
        let text = r#"graph @g {
  %0 = {"Input":{"name":"a"}} : [1000] f32
  %1 = {"Activation":"Exp"}(%0) : [1000] f32
  %2 = {"Activation":"Exp"}(%1) : [1000] f32
  %3 = {"Activation":"Exp"}(%2) : [1000] f32
  return %3
}"#;
        let g = crate::format::rlx_text::parse(text).unwrap();
        // The input, %2 and %3 beside it, then %3 copied out.
        assert_eq!(peak(&g, false), Peak { bytes: 12000, at: PeakAt::Node(NodeId(2)) });
        assert_eq!(peak(&g, true).bytes, 16000);
        // A tensor past the one-tensor limit ends the run with its own
        // error before it is allocated: what comes after never exists.
        let text = text.replace("%3 = {\"Activation\":\"Exp\"}(%2) : [1000] f32", "%3 = {\"Activation\":\"Exp\"}(%2) : [2000000000] f32");
        let g = crate::format::rlx_text::parse(&text).unwrap();
        assert_eq!(peak(&g, false), Peak { bytes: 12000, at: PeakAt::Node(NodeId(2)) });
    }
}
