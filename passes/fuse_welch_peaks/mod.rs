//! `fuse-welch-peaks`: find FFT → Welch-peaks chains, ask the target's IO
//! gate whether fusing each one pays, and replace the ones it accepts with
//! one `rlx_opt.welch_peaks` op (see `src/fused.rs` for its meaning).
//!
//! Two chain forms, one file each: RLX's own `WelchPeaks` op (`native.rs`),
//! and the spectrogram + mean + TopK chain RLX users build from primitives
//! (`spectrogram.rs`). Both produce a [`Plan`]; this file prices a plan and
//! carries it out. Intermediate results other nodes still use are kept, and
//! priced as kept.

mod native;
mod spectrogram;

use crate::analysis::io_profile::{ProfileRules, node_profile, op_profile, profile_with};
use crate::analysis::{CostModel, GateKnob, IoFusionGate, IoProfile, Target, fusion_benefit};
use crate::diag::Diagnostic;
use crate::analysis::device_profile::{Alternative, DeviceProfile};
use crate::analysis::picker::{Pick, ProfileChoice, pick, pick_with_profile};
use crate::analysis::plan::{DeviceLimits, lowering_for};
use crate::fused::{ChainForm, Lowering, PlanName, WelchPeaksAttrs};
use crate::fusion_report::{Candidate, Decision, FusionCandidates};
use crate::ir::{Dim, Graph, NodeId, Op, OpCode, OpKind, TensorType};
use crate::matcher::{MatchResult, Miss};
use crate::pass::{OptionError, OptionSpec, Pass, PassContext, PassInfo, PassOptions, Statistic, Statistics};
use crate::rewrite::{Pattern, Rewriter, apply_patterns_greedily};

pub const INFO: PassInfo = PassInfo {
    name: "fuse-welch-peaks",
    description: "Fuse FFT→Welch-peaks chains into one rlx_opt.welch_peaks op where the target's IO gate says it pays",
    options: &[
        OptionSpec { name: "target", help: "target whose gate decides", default: "--target" },
        OptionSpec { name: "dispatch-ns", help: "cost of a kernel launch", default: "per target" },
        OptionSpec { name: "roundtrip-ns", help: "cost of a host sync", default: "per target" },
        OptionSpec { name: "memory-bw", help: "device memory bandwidth, bytes/ns", default: "per target" },
        OptionSpec { name: "readback-bw", help: "host readback bandwidth, bytes/ns", default: "per target" },
        OptionSpec { name: "unified", help: "host and device share memory (true|false)", default: "per target" },
        OptionSpec { name: "thunk-penalty-ns", help: "penalty per added host thunk", default: "per target" },
        OptionSpec { name: "min-gain-ns", help: "fuse when the score reaches this", default: "per target" },
        OptionSpec { name: "model", help: "rlx (RLX's formula) or corrected (unified readback at memory bandwidth)", default: "rlx" },
        OptionSpec { name: "force", help: "fuse every matched chain whatever the gate says (still reported)", default: "false" },
        OptionSpec {
            name: "native-kernels",
            help: "the runtime has the target's native kernels for the fused op; false prices and lowers every fused op as a host call (RLX's Metal, MLX, ROCm)",
            default: "true",
        },
        OptionSpec {
            name: "profile",
            help: "a device profile from `rlx-run --calibrate` (JSON): fuse where a fused plan is predicted faster than the chain, and pick the fastest plan",
            default: "none: the gate (model) decides, the rule picks",
        },
        OptionSpec {
            name: "force-plan",
            help: "run every fused op with this plan where it runs on the target: batch, split (any target), multipass, split-multipass (GPUs)",
            default: "picked per op",
        },
        OptionSpec {
            name: "drop-spectrum-output",
            help: "remove a fused chain's spectrum from the graph outputs (RLX's peaks-only readback; changes the interface)",
            default: "false",
        },
    ],
    create,
};

/// The largest value a gate knob takes (ns, or bytes per ns).
const MAX_KNOB: f64 = 1e15;

fn create(options: &PassOptions) -> Result<Box<dyn Pass>, OptionError> {
    let mut gate_overrides: Vec<(GateKnob, f64)> = Vec::new();
    for knob in GateKnob::ALL {
        let key = knob.option();
        if let Some(v) = options.get(key) {
            let value: f64 = v.parse().map_err(|_| OptionError::NotANumber { pass: INFO.name, key, value: v.into() })?;
            // Bounded so that every term of the score stays finite: byte
            // counts reach 1.8e19, and 1e15 ns is eleven days.
            if !(0.0..=MAX_KNOB).contains(&value) {
                return Err(OptionError::OutOfRange { pass: INFO.name, key, value: v.into(), range: "0..=1e15" });
            }
            gate_overrides.push((knob, value));
        }
    }
    let flag = |key: &str| -> Result<Option<bool>, OptionError> {
        options
            .get(key)
            .map(|v| v.parse::<bool>().map_err(|_| OptionError::NotABool { pass: INFO.name, key: key.into(), value: v.into() }))
            .transpose()
    };
    let model = match options.get("model") {
        None => CostModel::Rlx,
        Some(m) => CostModel::from_name(m).ok_or_else(|| OptionError::UnknownModel { name: m.into(), expected: "rlx or corrected" })?,
    };
    let force_plan = match options.get("force-plan") {
        None => None,
        Some(name) => Some(PlanName::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = PlanName::ALL.iter().map(|p| p.name()).collect();
            OptionError::UnknownPlan { name: name.into(), key: "force-plan", expected: names.join(", ") }
        })?),
    };
    let target = options.target()?;
    let device = match options.get("profile") {
        None => None,
        Some(path) => {
            let profile = DeviceProfile::load(path)?;
            if let (Some(t), Some(measured)) = (target, profile.target_kind()) {
                if t != measured {
                    return Err(OptionError::ProfileTarget { pass: INFO.name, path: path.into(), measured, target: t });
                }
            }
            Some(std::sync::Arc::new(profile))
        }
    };
    Ok(Box::new(FuseWelchPeaks {
        device,
        force_plan,
        target,
        gate_overrides,
        unified: flag("unified")?,
        model,
        force: flag("force")?.unwrap_or(false),
        native_kernels: flag("native-kernels")?.unwrap_or(true),
        drop_spectrum_output: flag("drop-spectrum-output")?.unwrap_or(false),
    }))
}

pub struct FuseWelchPeaks {
    pub target: Option<Target>,
    /// `profile=PATH`: the measured device that decides and picks.
    pub device: Option<std::sync::Arc<DeviceProfile>>,
    /// `force-plan=NAME`: the plan of every fused op, where it runs.
    pub force_plan: Option<PlanName>,
    gate_overrides: Vec<(GateKnob, f64)>,
    unified: Option<bool>,
    pub model: CostModel,
    pub force: bool,
    /// False where the runtime has no native kernel for the target: every
    /// fused op is then a host call, and priced as one.
    pub native_kernels: bool,
    pub drop_spectrum_output: bool,
}

impl FuseWelchPeaks {
    /// The gate for `target` with this pass's overrides applied.
    pub fn gate(&self, target: Target) -> IoFusionGate {
        let mut gate = IoFusionGate { model: self.model, ..IoFusionGate::for_target(target) };
        for (knob, value) in &self.gate_overrides {
            gate = gate.with(*knob, *value);
        }
        if let Some(unified) = self.unified {
            gate.unified = unified;
        }
        gate
    }
}

impl Pass for FuseWelchPeaks {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&self, graph: &mut Graph, cx: &mut PassContext) -> Result<Statistics, Diagnostic> {
        let target = match (&self.device, self.target) {
            (Some(device), None) => device.target_kind().unwrap_or(cx.target),
            (_, target) => target.unwrap_or(cx.target),
        };
        if let Some(measured) = self.device.as_ref().and_then(|d| d.target_kind()).filter(|m| *m != target) {
            return Err(Diagnostic::whole_file(format!("fuse-welch-peaks: the profile measured a {measured} device, the pass targets {target}")));
        }
        let rules = ProfileRules { count_view_outputs: self.model == CostModel::Corrected };
        let mut fuser = Fuser {
            graph_name: graph.name.clone(),
            target,
            gate: self.gate(target),
            rules,
            force: self.force,
            device: self.device.clone(),
            force_plan: self.force_plan,
            native_kernels: self.native_kernels,
            drop_spectrum_output: self.drop_spectrum_output,
            profile: profile_with(graph, rules),
            report: cx.results::<FusionCandidates>().is_some(),
            decisions: Vec::new(),
            candidates: Vec::new(),
            last_op: None,
        };
        let patterns: [&dyn Pattern<Fuser>; 2] = [&native::PATTERN, &spectrogram::PATTERN];
        let rewritten = apply_patterns_greedily(graph, &patterns, &mut fuser)?;
        let count = |d: Decision| fuser.decisions.iter().filter(|x| **x == d).count() as u64;
        let stats = vec![
            Statistic { name: "candidates", description: "Chains whose root op was found", value: fuser.decisions.len() as u64 },
            Statistic { name: "fused", description: "Chains fused because the gate accepted them", value: count(Decision::Fused) },
            Statistic { name: "forced", description: "Chains fused by force=true against the gate", value: count(Decision::Forced) },
            Statistic { name: "rejected", description: "Chains the gate rejected", value: count(Decision::Rejected) },
            Statistic { name: "not-matched", description: "Roots whose chain is not a fusable form", value: count(Decision::NotMatched) },
            Statistic { name: "nodes-removed", description: "Nodes the rewrites left unused, removed", value: rewritten.nodes_removed },
        ];
        if let Some(report) = cx.results::<FusionCandidates>() {
            report.0.append(&mut fuser.candidates);
        }
        Ok(stats)
    }
}

/// One chain form: where it is rooted and how it is matched into a [`Plan`];
/// pricing and rewriting are shared.
pub struct ChainPattern {
    name: &'static str,
    root_op: OpCode,
    form: ChainForm,
    plan: fn(&Rewriter<'_>, NodeId) -> MatchResult<Plan>,
}

impl Pattern<Fuser> for ChainPattern {
    fn name(&self) -> &'static str {
        self.name
    }

    fn root_op(&self) -> OpCode {
        self.root_op
    }

    fn match_and_rewrite(&self, root: NodeId, rw: &mut Rewriter<'_>, fuser: &mut Fuser) -> bool {
        match (self.plan)(rw, root) {
            Ok(mut plan) => {
                let input = &rw.node(plan.input).ty;
                // Where no kernel takes the op, it is priced and recorded as the host call it runs as.
                let native = if fuser.native_kernels { lowering_for(&plan.attrs, input, fuser.target).ok() } else { None };
                plan.attrs.lowering = Some(native.unwrap_or(Lowering::Host));
                // A native kernel runs the plan the picker names; a host call has none.
                if native.is_some() {
                    let limits = DeviceLimits::assumed(fuser.target);
                    if let Ok(picked) = pick(&plan.attrs, input, fuser.target, &limits, fuser.force_plan) {
                        plan.attrs.plan = Some(picked.plan);
                        plan.pick = Some(picked);
                    }
                }
                fuser.decide(rw, plan)
            }
            Err(miss) => {
                fuser.near_miss(rw, self.form, root, miss);
                false
            }
        }
    }
}

/// A matched chain and the rewrite that fuses it.
pub struct Plan {
    pub form: ChainForm,
    pub root: NodeId,
    /// Every node of the chain, root first.
    pub matched: Vec<NodeId>,
    pub attrs: WelchPeaksAttrs,
    /// Operand 0 of the fused op.
    pub input: NodeId,
    /// The window constant, when there is one.
    pub window: Option<NodeId>,
    pub batch: Vec<Dim>,
    /// Nodes to replace: by the fused node itself (`None`), or by a view of
    /// its last axis (`Some((start, len))`).
    pub replacements: Vec<(NodeId, Option<(u64, u64)>)>,
    /// The FFT, whose result may also be a graph output.
    pub spectrum: NodeId,
    /// The plan picked for the fused op, and why (none for a host call).
    pub pick: Option<Pick>,
}

/// What the two patterns share: the gate, the running profile, the report.
pub struct Fuser {
    graph_name: String,
    target: Target,
    gate: IoFusionGate,
    rules: ProfileRules,
    force: bool,
    device: Option<std::sync::Arc<DeviceProfile>>,
    force_plan: Option<PlanName>,
    native_kernels: bool,
    drop_spectrum_output: bool,
    /// The profile of the graph as it stands, kept up to date as chains fuse,
    /// so each candidate is priced in O(chain) rather than O(graph).
    profile: IoProfile,
    /// Describe every candidate (only when a report was asked for: at 10^5
    /// chains the descriptions cost more than the matching).
    report: bool,
    decisions: Vec<Decision>,
    candidates: Vec<Candidate>,
    /// The last fused op built, reused while the attributes repeat.
    last_op: Option<(WelchPeaksAttrs, Op)>,
}

impl Fuser {
    fn candidate(&self, rw: &Rewriter<'_>, form: ChainForm, root: NodeId, nodes: &[NodeId]) -> Candidate {
        let g = rw.graph();
        Candidate {
            graph: self.graph_name.clone(),
            form: form_name(form),
            root: format!("%{}", g.node(root).label),
            nodes: nodes.iter().map(|n| format!("%{}", g.node(*n).label)).collect(),
            names: nodes.iter().filter_map(|n| g.node(*n).name.clone()).collect(),
            target: self.target,
            model: self.gate.model,
            decision: Decision::NotMatched,
            reason: String::new(),
            before: None,
            after: None,
            benefit: None,
            gate: None,
            fused_attrs: None,
            fused_node: None,
            plan: None,
            plan_reason: None,
            predictions: Vec::new(),
        }
    }

    /// Record a root whose chain did not match.
    fn near_miss(&mut self, rw: &Rewriter<'_>, form: ChainForm, root: NodeId, miss: Miss) {
        self.decisions.push(Decision::NotMatched);
        if self.report {
            let nodes = if miss.node == root { vec![root] } else { vec![root, miss.node] };
            let mut c = self.candidate(rw, form, root, &nodes);
            c.reason = miss.reason;
            self.candidates.push(c);
        }
    }

    /// The fused op for `attrs`, sharing its text with the previous one when equal.
    fn fused_op(&mut self, attrs: &WelchPeaksAttrs) -> Op {
        match &self.last_op {
            Some((a, op)) if a == attrs => op.clone(),
            _ => {
                let op = attrs.to_op();
                self.last_op = Some((attrs.clone(), op.clone()));
                op
            }
        }
    }

    /// Price `plan`, record the decision, and rewrite when it is to fuse.
    fn decide(&mut self, rw: &mut Rewriter<'_>, mut plan: Plan) -> bool {
        let mut priced = self.price(rw, &plan);
        let choice = self.choose(rw, &mut plan, &priced);
        if choice.is_some() {
            // The pick may change the op's plan or lowering: price what is built.
            priced = self.price(rw, &plan);
        }
        let fuse = match &choice {
            Some(c) if !priced.before.saturated() && !priced.after.saturated() => c.fuse,
            _ => priced.score.fuse,
        };
        let decision = match (fuse, self.force) {
            (true, _) => Decision::Fused,
            (false, true) => Decision::Forced,
            (false, false) => Decision::Rejected,
        };
        self.decisions.push(decision);
        let mut candidate = self.report.then(|| self.describe(rw, &plan, &priced, decision, choice.as_ref()));
        let fuse = decision != Decision::Rejected;
        if fuse {
            let fused = apply(rw, &plan, priced.fused_op, priced.fused_ty, &priced.dropped);
            self.profile = priced.after;
            if let Some(c) = &mut candidate {
                c.fused_node = Some(format!("%{}", rw.node(fused).label));
            }
        }
        self.candidates.extend(candidate);
        fuse
    }

    /// With a device profile: every alternative predicted, the fastest fused
    /// one recorded in the op's attributes (its plan, or a host call), and
    /// the choice returned; without one, or for a dynamic batch, `None`.
    fn choose(&self, rw: &Rewriter<'_>, plan: &mut Plan, priced: &Priced) -> Option<ProfileChoice> {
        let device = self.device.as_ref()?;
        let native = plan.attrs.lowering.is_some_and(|l| l != Lowering::Host);
        let choice = pick_with_profile(device, &plan.attrs, &rw.node(plan.input).ty, &priced.chain, native)?;
        // A forced plan applies where it runs, whatever its prediction.
        let forced = self.force_plan.filter(|p| choice.considered(Alternative::Fused(*p)));
        match forced.map(Alternative::Fused).or(choice.picked) {
            // Nothing fused has a finite prediction: the rule's plan stays
            // (the chain is not fused unless `force=true`).
            None => {}
            Some(Alternative::Fused(name)) => {
                plan.attrs.plan = Some(name);
                let reason = if forced.is_some() { format!("force-plan={name}") } else { format!("profile: predicted fastest of {} alternatives", choice.predictions.len()) };
                plan.pick = Some(Pick { plan: name, reason });
            }
            Some(_) => {
                plan.attrs.lowering = Some(Lowering::Host);
                plan.attrs.plan = None;
                plan.pick = None;
            }
        }
        Some(choice)
    }

    /// The graph's profile with `plan` applied, and the gate's score for it.
    /// Before: the nodes that go, and the outputs that are dropped. After:
    /// the fused node, its views, and dropped outputs as plain nodes.
    fn price(&mut self, rw: &Rewriter<'_>, plan: &Plan) -> Priced {
        let dropped: Vec<NodeId> = if self.drop_spectrum_output && rw.is_output(plan.spectrum) {
            vec![plan.spectrum]
        } else {
            Vec::new()
        };
        let roots: Vec<NodeId> = plan.replacements.iter().map(|(r, _)| *r).collect();
        let dead = rw.dead_after_replacing(&roots, &plan.matched, &dropped);
        let g = rw.graph();
        let mut before_local = IoProfile::default();
        let mut after_local = IoProfile::default();
        for &n in &dead {
            before_local = before_local.plus(node_profile(g, n, rw.is_output(n), self.rules));
        }
        // A dropped output that stays computed (something else uses it) costs
        // the same before and after, less its output write.
        for &n in dropped.iter().filter(|d| !dead.contains(d)) {
            before_local = before_local.plus(node_profile(g, n, rw.is_output(n), self.rules));
            after_local = after_local.plus(node_profile(g, n, false, self.rules));
        }
        let fused_op = self.fused_op(&plan.attrs);
        let fused_ty = plan.attrs.result_type(&plan.batch);
        let mut fused_operands = vec![&g.node(plan.input).ty];
        if let Some(w) = plan.window {
            fused_operands.push(&g.node(w).ty);
        }
        let fused_is_output = plan.replacements.iter().any(|(r, view)| view.is_none() && rw.is_output(*r));
        after_local = after_local.plus(op_profile(&fused_op, fused_operands, &fused_ty, fused_is_output, self.rules));
        for (root, view) in &plan.replacements {
            if let Some((_, len)) = view {
                let view_ty = view_type(&fused_ty, *len);
                let narrow = Op::from_kind(OpKind::Narrow { axis: 0, start: 0, len: *len });
                after_local = after_local.plus(op_profile(&narrow, [&fused_ty], &view_ty, rw.is_output(*root), self.rules));
            }
        }
        let before = self.profile;
        let after = before.minus(before_local).plus(after_local);
        let benefit = fusion_benefit(&before, &after);
        let mut score = self.gate.score(&benefit);
        // Byte counts past 2^64 make every term meaningless: never fuse on them.
        if before.saturated() || after.saturated() {
            score.fuse = false;
        }
        let kept = plan.matched.len() - dead.len().min(plan.matched.len());
        Priced { dropped, kept, before, after, chain: before_local, benefit, score, fused_op, fused_ty }
    }

    /// The report's entry for a priced chain.
    fn describe(&self, rw: &Rewriter<'_>, plan: &Plan, priced: &Priced, decision: Decision, choice: Option<&ProfileChoice>) -> Candidate {
        let mut c = self.candidate(rw, plan.form, plan.root, &plan.matched);
        let score = &priced.score;
        let kept_note = if priced.kept > 0 { format!("; {} node(s) of the chain stay for other users", priced.kept) } else { String::new() };
        let unpriceable = priced.before.saturated() || priced.after.saturated();
        c.reason = match decision {
            _ if unpriceable => format!("the graph's byte counts overflow 64 bits: the gate cannot price this chain{}{kept_note}", if decision == Decision::Forced { "; fused because force=true" } else { "" }),
            Decision::Fused | Decision::Rejected if choice.is_some() => format!("{}{kept_note}", choice.map(ProfileChoice::reason).unwrap_or_default()),
            Decision::Forced if choice.is_some() => format!("force=true; {}{kept_note}", choice.map(ProfileChoice::reason).unwrap_or_default()),
            Decision::Fused => format!("score {:.1} ns ≥ min-gain {:.1} ns{kept_note}", score.score_ns, score.min_gain_ns),
            Decision::Forced => {
                format!("force=true; the gate alone would not fuse (score {:.1} ns < {:.1} ns){kept_note}", score.score_ns, score.min_gain_ns)
            }
            _ => format!("score {:.1} ns < min-gain {:.1} ns{kept_note}", score.score_ns, score.min_gain_ns),
        };
        c.decision = decision;
        c.before = Some(priced.before);
        c.after = Some(priced.after);
        c.benefit = Some(priced.benefit);
        c.gate = Some(priced.score);
        c.fused_attrs = serde_json::to_value(&plan.attrs).ok();
        c.plan = plan.pick.as_ref().map(|p| p.plan);
        c.plan_reason = plan.pick.as_ref().map(|p| p.reason.clone());
        c.predictions = choice.map(|c| c.predictions.clone()).unwrap_or_default();
        c
    }
}

/// A chain's price: what the rewrite would change, and the gate's verdict.
struct Priced {
    /// Graph outputs the rewrite drops (`drop-spectrum-output`).
    dropped: Vec<NodeId>,
    /// Nodes of the chain that stay for other users.
    kept: usize,
    before: IoProfile,
    after: IoProfile,
    /// What the nodes fusing removes cost as they are.
    chain: IoProfile,
    benefit: crate::analysis::FusionBenefit,
    score: crate::analysis::GateScore,
    fused_op: Op,
    fused_ty: TensorType,
}

fn view_type(fused: &TensorType, len: u64) -> TensorType {
    let mut ty = fused.clone();
    if let Some(last) = ty.dims.last_mut() {
        *last = Dim::Static(len);
    }
    ty
}

/// Build the fused node and its views and rewire the chain's results to them.
fn apply(rw: &mut Rewriter<'_>, plan: &Plan, op: Op, ty: TensorType, dropped: &[NodeId]) -> NodeId {
    rw.set_insertion_point(plan.root);
    let mut operands = vec![plan.input];
    if let Some(w) = plan.window {
        let frame_len = plan.attrs.frame_len;
        let window_ty = &rw.node(w).ty;
        let window = if window_ty.rank() == 1 {
            w
        } else {
            let flat = TensorType::new(&[frame_len], window_ty.dtype);
            rw.create(Op::from_kind(OpKind::Reshape { new_shape: vec![frame_len as i64] }), &[w], flat)
        };
        operands.push(window);
    }
    let fused = rw.create(op, &operands, ty.clone());
    for (root, view) in &plan.replacements {
        let replacement = match view {
            None => fused,
            Some((start, len)) => {
                let axis = ty.rank() as u64 - 1;
                rw.create(Op::from_kind(OpKind::Narrow { axis, start: *start, len: *len }), &[fused], view_type(&ty, *len))
            }
        };
        rw.replace_all_uses(*root, replacement);
    }
    for d in dropped {
        rw.remove_output(*d);
    }
    fused
}

pub fn form_name(form: ChainForm) -> &'static str {
    match form {
        ChainForm::WelchPeaks => "welch_peaks",
        ChainForm::SpectrogramTopk => "spectrogram_topk",
    }
}

/// Power factor an FFT norm puts on |X|² of a forward transform, relative to
/// the unnormalized one. RLX scales forward transforms only under `Ortho`
/// (by 1/√n; its `Forward` norm scales the inverse), so power scales by 1/n.
pub fn power_scale(norm: crate::ir::FftNorm, n_fft: u64) -> f64 {
    match norm {
        crate::ir::FftNorm::Backward | crate::ir::FftNorm::Forward => 1.0,
        crate::ir::FftNorm::Ortho => 1.0 / n_fft as f64,
    }
}

/// The norm of a matched forward FFT.
pub fn fft_norm(fft: &crate::matcher::At<'_>) -> crate::matcher::MatchResult<crate::ir::FftNorm> {
    match *fft.kind() {
        OpKind::Fft { norm, .. } => Ok(norm),
        _ => Err(fft.miss(format!("%{} is not an FFT", fft.node().label))),
    }
}

/// `at` is provably a zero imaginary plane for the real plane `real`:
/// `Sub(real, real)` or a constant of zero bytes.
pub fn zero_plane(at: crate::matcher::At<'_>, real: NodeId) -> crate::matcher::MatchResult<()> {
    let zero = match at.kind() {
        OpKind::Binary(op) if op == "Sub" => at.node().operands.iter().all(|o| *o == real),
        OpKind::Constant { data } => data.iter().all(|b| *b == 0),
        _ => false,
    };
    if zero {
        Ok(())
    } else {
        Err(at.miss(format!("the imaginary plane %{} is not zero (`Sub(x, x)` or a zero constant)", at.node().label)))
    }
}
