//! The reference interpreter: every op the chain forms use, in plain,
//! obvious code. It is the oracle the fused kernels are checked against, so
//! clarity wins over speed. Runs f32 graphs with static shapes.

use super::tensor::Tensor;
use super::{FusedKernel, RuntimeError, welch};
use crate::ir::{Graph, Node, NodeId, OpKind, ReduceOp};
use rustfft::num_complex::Complex;
use std::borrow::Cow;
use std::collections::HashMap;

/// One executed node, for traces.
#[derive(Debug, Clone)]
pub struct Executed {
    pub node: NodeId,
    pub start: std::time::Duration,
    pub duration: std::time::Duration,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// Run `graph` on `inputs` (by `Input`/`Param` name), the fused op with
/// `fused`; returns the outputs in order.
pub fn run(graph: &Graph, inputs: &HashMap<String, Tensor>, fused: &dyn FusedKernel) -> Result<Vec<Tensor>, RuntimeError> {
    run_traced(graph, inputs, fused, &mut Vec::new())
}

pub fn run_traced(
    graph: &Graph,
    inputs: &HashMap<String, Tensor>,
    fused: &dyn FusedKernel,
    trace: &mut Vec<Executed>,
) -> Result<Vec<Tensor>, RuntimeError> {
    let epoch = std::time::Instant::now();
    // Inputs are borrowed, not copied: a run holds its inputs once.
    let mut values: Vec<Option<Cow<'_, Tensor>>> = vec![None; graph.len()];
    let mut remaining_uses = graph.use_counts();
    for id in &graph.outputs {
        remaining_uses[id.index()] += 1;
    }
    let narrows = NarrowChains::of(graph, &remaining_uses);
    for id in graph.ids() {
        let node = graph.node(id);
        if narrows.folded_into_next[id.index()] {
            continue;
        }
        // A chain of views reads its first view's operand, at the offset of all of them.
        let chain_base: [NodeId; 1];
        let (operands, window) = match narrows.source[id.index()] {
            Some((base, start)) => {
                chain_base = [base];
                (&chain_base[..], Some(start))
            }
            None => (&node.operands[..], None),
        };
        let args: Vec<&Tensor> = operands.iter().map(|o| values[o.index()].as_deref().expect("operands run first")).collect();
        let start = epoch.elapsed();
        let value = match (node.op.kind(), window) {
            (OpKind::Input { name } | OpKind::Param { name }, _) => {
                Cow::Borrowed(inputs.get(name).ok_or_else(|| RuntimeError::MissingInput(name.clone()))?)
            }
            (OpKind::Narrow { axis, len, .. }, Some(from)) => {
                let out_shape = Tensor::dims_of(&node.ty).map_err(|e| RuntimeError::Type { label: node.label, message: e.to_string() })?;
                Cow::Owned(slice(args[0], *axis as usize, from as i64, *len as usize, 1, out_shape))
            }
            _ => Cow::Owned(eval(node, &args, fused).map_err(|message| RuntimeError::Op { op: node.op.name().to_string(), label: node.label, message })?),
        };
        let expected = Tensor::dims_of(&node.ty).map_err(|e| RuntimeError::Type { label: node.label, message: e.to_string() })?;
        if value.shape != expected {
            return Err(RuntimeError::Shape { label: node.label, computed: value.shape.clone(), declared: expected });
        }
        trace.push(Executed {
            node: id,
            start,
            duration: epoch.elapsed() - start,
            bytes_read: args.iter().map(|a| 4 * a.len() as u64).sum(),
            bytes_written: 4 * value.len() as u64,
        });
        // Free what no later node needs, so big graphs run in bounded memory.
        for o in operands {
            remaining_uses[o.index()] -= 1;
            if remaining_uses[o.index()] == 0 {
                values[o.index()] = None;
            }
        }
        values[id.index()] = Some(value);
    }
    Ok(graph.outputs.iter().map(|o| values[o.index()].as_deref().expect("outputs are kept").clone()).collect())
}

/// Chains of `Narrow`s along one axis, each the only use of the one before
/// and next to it in the graph's order (100,000 nested views of one signal,
/// say), run as one slice of the chain's first operand: copying every view
/// in turn took time quadratic in the chain. Only adjacent nodes fold, so no
/// other node runs while the first operand is kept past its last use in the
/// graph, and a run never holds more than the node-by-node liveness that
/// `memory::peak` budgets (the operand and the last view, against the
/// operand and the first view).
struct NarrowChains {
    /// Nodes whose only user, the next node, reads through them.
    folded_into_next: Vec<bool>,
    /// For the last view of a chain: the chain's first operand and the start
    /// of the whole chain's window in it.
    source: Vec<Option<(NodeId, u64)>>,
}

impl NarrowChains {
    fn of(graph: &Graph, uses: &[u32]) -> NarrowChains {
        let mut folded_into_next = vec![false; graph.len()];
        let mut source: Vec<Option<(NodeId, u64)>> = vec![None; graph.len()];
        for id in graph.ids() {
            let OpKind::Narrow { axis, start, .. } = *graph.node(id).op.kind() else { continue };
            let Some(&inner) = graph.node(id).operands.first() else { continue };
            let OpKind::Narrow { axis: inner_axis, start: inner_start, .. } = *graph.node(inner).op.kind() else { continue };
            // `uses` counts graph outputs too: an output is never folded away.
            let foldable = inner_axis == axis && uses[inner.index()] == 1 && inner.index() + 1 == id.index();
            let (base, offset) = source[inner.index()].unwrap_or((graph.node(inner).operands[0], inner_start));
            if let (true, Some(from)) = (foldable, offset.checked_add(start)) {
                folded_into_next[inner.index()] = true;
                source[inner.index()] = None;
                source[id.index()] = Some((base, from));
            }
        }
        NarrowChains { folded_into_next, source }
    }
}

/// Whether the run takes this node's value from its inputs (held for the whole run).
pub(crate) fn is_input(node: &Node) -> bool {
    matches!(node.op.kind(), OpKind::Input { .. } | OpKind::Param { .. })
}

fn eval(node: &Node, args: &[&Tensor], fused: &dyn FusedKernel) -> Result<Tensor, String> {
    let out_shape = Tensor::dims_of(&node.ty).map_err(|e| e.to_string())?;
    Ok(match node.op.kind() {
        OpKind::Constant { data } => Tensor::new(out_shape, data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()),
        OpKind::Activation(kind) => {
            let f = activation(kind.as_str().unwrap_or_default())?;
            Tensor::new(out_shape, args[0].data.iter().map(|x| f(*x)).collect())
        }
        OpKind::Binary(op) => binary(op, args[0], args[1], out_shape)?,
        OpKind::Reshape { .. } => Tensor::new(out_shape, args[0].data.clone()),
        OpKind::Transpose { perm } => transpose(args[0], perm, out_shape),
        OpKind::Narrow { axis, start, len } => slice(args[0], *axis as usize, *start as i64, *len as usize, 1, out_shape),
        OpKind::Slice { axis, start, len, step } => slice(args[0], *axis as usize, *start as i64, *len as usize, *step, out_shape),
        OpKind::Concat { axis } => concat(args, *axis as usize, out_shape),
        OpKind::Reduce { op, axes, .. } => reduce(args[0], *op, axes, out_shape),
        OpKind::TopK { k } => top_k(args[0], *k as usize, out_shape),
        OpKind::GatherElements { axis } => gather_elements(args[0], args[1], *axis, out_shape)?,
        OpKind::Fft { inverse, norm, .. } => fft(args[0], *inverse, *norm),
        // c64 values are stored as (re, im) pairs.
        OpKind::ComplexNormSq => Tensor::new(out_shape, args[0].data.chunks_exact(2).map(|z| z[0] * z[0] + z[1] * z[1]).collect()),
        OpKind::WelchPeaks { k, n_segments } => welch_peaks(args[0], *k, *n_segments),
        OpKind::LogMel => log_mel(args[0], args[1], out_shape),
        OpKind::Custom { .. } => match (node.op.welch_peaks(), node.op.log_mel()) {
            (Some(attrs), _) => fused.run(attrs?, args[0], args.get(1).copied()).map_err(|e| e.to_string())?,
            (_, Some(attrs)) => fused.run_log_mel(attrs?, args[0], args[1], args.get(2).copied()).map_err(|e| e.to_string())?,
            _ => return Err("custom ops other than rlx_opt.welch_peaks and rlx_opt.log_mel cannot be run".into()),
        },
        OpKind::Opaque { name } if &**name == "MatMul" => matmul(args[0], args[1], out_shape)?,
        _ => return Err("this op cannot be run by the interpreter".into()),
    })
}

fn activation(name: &str) -> Result<fn(f32) -> f32, String> {
    Ok(match name {
        "Relu" => |x: f32| x.max(0.0),
        "Exp" => f32::exp,
        "Log" => f32::ln,
        "Tanh" => f32::tanh,
        "Sigmoid" => |x: f32| 1.0 / (1.0 + (-x).exp()),
        "Sqrt" => f32::sqrt,
        "Abs" => f32::abs,
        "Neg" => |x: f32| -x,
        "Sin" => f32::sin,
        "Cos" => f32::cos,
        other => return Err(format!("activation `{other}` is not supported")),
    })
}

/// Index of `out_index` (row-major over `out_shape`) in an operand broadcast to it.
fn broadcast_index(out_index: usize, out_shape: &[usize], shape: &[usize]) -> usize {
    let offset = out_shape.len() - shape.len();
    let (mut rest, mut index, mut stride) = (out_index, 0, 1);
    for axis in (0..out_shape.len()).rev() {
        let coord = rest % out_shape[axis];
        rest /= out_shape[axis];
        if axis >= offset {
            let dim = shape[axis - offset];
            index += if dim == 1 { 0 } else { coord * stride };
            stride *= dim;
        }
    }
    index
}

fn binary(op: &str, a: &Tensor, b: &Tensor, out_shape: Vec<usize>) -> Result<Tensor, String> {
    let f: fn(f32, f32) -> f32 = match op {
        "Add" => |x, y| x + y,
        "Sub" => |x, y| x - y,
        "Mul" => |x, y| x * y,
        "Div" => |x, y| x / y,
        "Max" => f32::max,
        "Min" => f32::min,
        "Pow" => f32::powf,
        other => return Err(format!("binary op `{other}` is not supported")),
    };
    let n: usize = out_shape.iter().product();
    let data = (0..n)
        .map(|i| f(a.data[broadcast_index(i, &out_shape, &a.shape)], b.data[broadcast_index(i, &out_shape, &b.shape)]))
        .collect();
    Ok(Tensor::new(out_shape, data))
}

fn transpose(x: &Tensor, perm: &[u64], out_shape: Vec<usize>) -> Tensor {
    let in_strides = Tensor::strides(&x.shape);
    let n = x.len();
    let mut data = vec![0.0; n];
    for (i, d) in data.iter_mut().enumerate() {
        let (mut rest, mut src) = (i, 0);
        for axis in (0..out_shape.len()).rev() {
            let coord = rest % out_shape[axis];
            rest /= out_shape[axis];
            src += coord * in_strides[perm[axis] as usize];
        }
        *d = x.data[src];
    }
    Tensor::new(out_shape, data)
}

/// Elements `start + j·step` for j in 0..len along `axis`.
fn slice(x: &Tensor, axis: usize, start: i64, len: usize, step: i64, out_shape: Vec<usize>) -> Tensor {
    let (outer, extent, inner) = Tensor::split_at_axis(&x.shape, axis);
    let mut data = Vec::with_capacity(outer * len * inner);
    for o in 0..outer {
        for j in 0..len {
            let src = (start + j as i64 * step) as usize;
            let base = (o * extent + src) * inner;
            data.extend_from_slice(&x.data[base..base + inner]);
        }
    }
    Tensor::new(out_shape, data)
}

fn concat(args: &[&Tensor], axis: usize, out_shape: Vec<usize>) -> Tensor {
    let outer: usize = out_shape[..axis].iter().product();
    let mut data = Vec::with_capacity(out_shape.iter().product());
    for o in 0..outer {
        for a in args {
            let chunk = a.shape[axis..].iter().product::<usize>();
            data.extend_from_slice(&a.data[o * chunk..(o + 1) * chunk]);
        }
    }
    Tensor::new(out_shape, data)
}

fn reduce(x: &Tensor, op: ReduceOp, axes: &[u64], out_shape: Vec<usize>) -> Tensor {
    let n: usize = out_shape.iter().product();
    let kept: Vec<usize> = (0..x.shape.len()).filter(|a| !axes.contains(&(*a as u64))).collect();
    let count: usize = axes.iter().map(|a| x.shape[*a as usize]).product();
    let (init, f): (f32, fn(f32, f32) -> f32) = match op {
        ReduceOp::Sum | ReduceOp::Mean => (0.0, |a, b| a + b),
        ReduceOp::Prod => (1.0, |a, b| a * b),
        ReduceOp::Max => (f32::NEG_INFINITY, f32::max),
        ReduceOp::Min => (f32::INFINITY, f32::min),
    };
    let mut acc = vec![init; n];
    let strides = Tensor::strides(&x.shape);
    let kept_shape: Vec<usize> = kept.iter().map(|a| x.shape[*a]).collect();
    let kept_strides = Tensor::strides(&kept_shape);
    for (i, v) in x.data.iter().enumerate() {
        let dst: usize = kept.iter().zip(&kept_strides).map(|(a, s)| (i / strides[*a]) % x.shape[*a] * s).sum();
        acc[dst] = f(acc[dst], *v);
    }
    if op == ReduceOp::Mean {
        acc.iter_mut().for_each(|a| *a /= count as f32);
    }
    Tensor::new(out_shape, acc)
}

/// Indices (as f32) of the k largest along the last axis: ties to the
/// smaller index, NaN largest, as `torch.topk`.
fn top_k(x: &Tensor, k: usize, out_shape: Vec<usize>) -> Tensor {
    let width = *x.shape.last().unwrap_or(&1);
    let mut data = Vec::new();
    for row in x.data.chunks(width) {
        let mut order: Vec<(usize, f32)> = row.iter().copied().enumerate().collect();
        order.sort_by(|a, b| welch::peak_order(*a, *b));
        data.extend(order.iter().take(k).map(|(i, _)| *i as f32));
    }
    Tensor::new(out_shape, data)
}

fn gather_elements(data: &Tensor, indices: &Tensor, axis: i32, out_shape: Vec<usize>) -> Result<Tensor, String> {
    let rank = data.shape.len();
    let axis = if axis < 0 { (axis + rank as i32) as usize } else { axis as usize };
    let data_strides = Tensor::strides(&data.shape);
    let out = indices
        .data
        .iter()
        .enumerate()
        .map(|(i, idx)| {
            let (mut rest, mut src) = (i, 0);
            for a in (0..rank).rev() {
                let coord = rest % indices.shape[a];
                rest /= indices.shape[a];
                let coord = if a == axis { gather_index(*idx, data.shape[a])? } else { coord };
                src += coord * data_strides[a];
            }
            Ok(data.data[src])
        })
        .collect::<Result<Vec<f32>, String>>()?;
    Ok(Tensor::new(out_shape, out))
}

/// A gather index as ONNX reads it (a negative one counts from the end),
/// refused when it is not a whole number inside `-len..len` (casting would
/// have turned NaN and negatives into 0).
fn gather_index(idx: f32, len: usize) -> Result<usize, String> {
    if !idx.is_finite() || idx.fract() != 0.0 {
        return Err(format!("index {idx} is not a whole number"));
    }
    let at = if idx < 0.0 { idx as f64 + len as f64 } else { idx as f64 };
    if at < 0.0 || at >= len as f64 {
        return Err(format!("index {idx} is out of range for an axis of {len}"));
    }
    Ok(at as usize)
}

/// RLX's block layout: the last axis is n real parts then n imaginary parts.
fn fft(x: &Tensor, inverse: bool, norm: crate::ir::FftNorm) -> Tensor {
    let width = *x.shape.last().unwrap_or(&0);
    let n = width / 2;
    let mut planner = rustfft::FftPlanner::<f32>::new();
    let plan = if inverse { planner.plan_fft_inverse(n) } else { planner.plan_fft_forward(n) };
    // RLX: Backward scales nothing, Forward scales the inverse by 1/n, Ortho both by 1/√n.
    let scale = match norm {
        crate::ir::FftNorm::Backward => 1.0,
        crate::ir::FftNorm::Forward if inverse => 1.0 / n as f32,
        crate::ir::FftNorm::Forward => 1.0,
        crate::ir::FftNorm::Ortho => 1.0 / (n as f32).sqrt(),
    };
    let mut out = x.data.clone();
    // One row's buffer and the plan's scratch, made once for every row
    // (what `memory::fft_working_bytes` counts, beside the plan's own).
    let mut buf = vec![Complex::new(0.0f32, 0.0); n];
    let mut scratch = vec![Complex::new(0.0f32, 0.0); plan.get_inplace_scratch_len()];
    for row in out.chunks_mut(width) {
        for (j, z) in buf.iter_mut().enumerate() {
            *z = Complex::new(row[j], row[n + j]);
        }
        plan.process_with_scratch(&mut buf, &mut scratch);
        for (j, c) in buf.iter().enumerate() {
            row[j] = c.re * scale;
            row[n + j] = c.im * scale;
        }
    }
    Tensor::new(x.shape.clone(), out)
}

/// RLX's `WelchPeaks` on a block-layout spectrum `[B·S, 2N]`, written out
/// on its own (not through the fused op's code) so that it can check it:
/// per batch entry the mean over segments of the one-sided power, bins other
/// than 0 and N/2 doubled, each term scaled by 1/S before summing; then the
/// k largest, ties to the lower bin, NaN largest, surplus slots (-1, -inf).
fn welch_peaks(spectrum: &Tensor, k: u64, segments: u64) -> Tensor {
    let (k, segments) = (k as usize, segments as usize);
    let width = spectrum.shape[1];
    let n = width / 2;
    let bins = n / 2 + 1;
    let batch = spectrum.shape[0] / segments;
    let scale = 1.0 / segments as f32;
    let mut out = Vec::with_capacity(batch * 2 * k);
    for b in 0..batch {
        let mut psd = vec![0f32; bins];
        for s in 0..segments {
            let block = &spectrum.data[(b * segments + s) * width..][..width];
            for (j, p) in psd.iter_mut().enumerate() {
                let c = if j == 0 || j == bins - 1 { 1.0 } else { 2.0 };
                *p += scale * c * (block[j] * block[j] + block[n + j] * block[n + j]);
            }
        }
        let mut order: Vec<(usize, f32)> = psd.into_iter().enumerate().collect();
        order.sort_by(|a, b| welch::peak_order(*a, *b));
        for i in 0..k {
            let (bin, power) = order.get(i).map_or((-1.0, f32::NEG_INFINITY), |(j, p)| (*j as f32, *p));
            out.extend([bin, power]);
        }
    }
    Tensor::new(vec![batch, 2 * k], out)
}

/// RLX's LogMel: per frame, mel-filtered power of the one-sided bins, then
/// `log10(max(·, 1e-10))`, floored at the frame's max − 8, and `(x + 4)/4`.
/// Each filter is summed over its band only, from its first non-zero weight
/// to its last, as RLX sums it (`rlx_ir::audio::MelBands`): a bin outside
/// the band never enters, so an infinite power there is not turned into NaN
/// by a zero weight.
fn log_mel(spectrum: &Tensor, filters: &Tensor, out_shape: Vec<usize>) -> Tensor {
    let width = *spectrum.shape.last().unwrap_or(&0);
    let n = width / 2;
    let (mels, bins) = (filters.shape[0], filters.shape[1]);
    let bands: Vec<(usize, &[f32])> = filters
        .data
        .chunks(bins.max(1))
        .take(mels)
        .map(|row| {
            let first = row.iter().position(|w| *w != 0.0).unwrap_or(row.len());
            let end = row.iter().rposition(|w| *w != 0.0).map_or(first, |last| last + 1);
            (first, &row[first..end])
        })
        .collect();
    let mut data = Vec::with_capacity(out_shape.iter().product());
    for frame in spectrum.data.chunks(width) {
        let power: Vec<f32> = (0..bins).map(|j| frame[j] * frame[j] + frame[n + j] * frame[n + j]).collect();
        let mel: Vec<f32> = bands.iter().map(|(first, weights)| weights.iter().zip(&power[*first..]).map(|(w, p)| w * p).sum::<f32>().max(1e-10).log10()).collect();
        let floor = mel.iter().copied().fold(f32::NEG_INFINITY, f32::max) - 8.0;
        data.extend(mel.iter().map(|v| (v.max(floor) + 4.0) / 4.0));
    }
    Tensor::new(out_shape, data)
}

fn matmul(a: &Tensor, b: &Tensor, out_shape: Vec<usize>) -> Result<Tensor, String> {
    if a.shape.len() != 2 || b.shape.len() != 2 || a.shape[1] != b.shape[0] {
        return Err(format!("only 2-D matmul is supported, got {:?} × {:?}", a.shape, b.shape));
    }
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let mut data = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            data[i * n + j] = (0..k).map(|t| a.data[i * k + t] * b.data[t * n + j]).sum();
        }
    }
    Ok(Tensor::new(out_shape, data))
}

#[cfg(test)]
mod narrow_chain_tests {
    use super::*;
    use crate::format::rlx_text;

    fn run_on(text: &str, x: Vec<f32>) -> Vec<Tensor> {
        let g = rlx_text::parse(text).unwrap();
        let n = x.len();
        let inputs = HashMap::from([("x".to_string(), Tensor::new(vec![n], x))]);
        run(&g, &inputs, &super::super::Reference).unwrap()
    }

    const CHAIN: &str = r#"graph @g {
  %0 = {"Input":{"name":"x"}} : [10] f32
  %1 = {"Narrow":{"axis":0,"start":1,"len":9}}(%0) : [9] f32
  %2 = {"Narrow":{"axis":0,"start":2,"len":7}}(%1) : [7] f32
  %3 = {"Narrow":{"axis":0,"start":3,"len":4}}(%2) : [4] f32
  return %3
}"#;

    /// Nested views fold into one slice of the first operand, which reads
    /// the same values as slicing view by view.
    #[test]
    fn a_chain_of_views_is_one_slice() {
        let g = rlx_text::parse(CHAIN).unwrap();
        let mut uses = g.use_counts();
        uses[3] += 1;
        let chains = NarrowChains::of(&g, &uses);
        assert_eq!(chains.folded_into_next, [false, true, true, false]);
        assert_eq!(chains.source[3], Some((NodeId(0), 6)));
        let x: Vec<f32> = (0..10).map(|i| i as f32).collect();
        assert_eq!(run_on(CHAIN, x)[0].data, [6.0, 7.0, 8.0, 9.0]);
    }

    /// A view with a second user, one the graph returns, or one not next
    /// to its user stays a node of its own.
    #[test]
    fn views_that_are_used_elsewhere_stay() {
        let x: Vec<f32> = (0..10).map(|i| i as f32).collect();
        let returned = CHAIN.replace("return %3", "return %3, %2");
        let outputs = run_on(&returned, x.clone());
        assert_eq!((outputs[0].data.clone(), outputs[1].data.clone()), (vec![6.0, 7.0, 8.0, 9.0], vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]));
        let g = rlx_text::parse(&returned).unwrap();
        let mut uses = g.use_counts();
        uses[3] += 1;
        uses[2] += 1;
        assert_eq!(NarrowChains::of(&g, &uses).folded_into_next, [false, true, false, false]);
        let apart = CHAIN.replace("  %3 = ", "  %4 = {\"Activation\":\"Exp\"}(%0) : [10] f32\n  %3 = ").replace("return %3", "return %3, %4");
        let g = rlx_text::parse(&apart).unwrap();
        assert_eq!(NarrowChains::of(&g, &g.use_counts()).folded_into_next, [false, true, false, false, false]);
        assert_eq!(run_on(&apart, x)[0].data, [6.0, 7.0, 8.0, 9.0]);
    }
}

#[cfg(test)]
mod log_mel_tests {
    use super::*;

    /// The interpreter's LogMel is RLX's (`rlx_ir::audio::log_mel_block_f32`)
    /// value for value, where it differed too: a bin whose power overflows
    /// to infinity outside a filter's band (a dense sum made it NaN there,
    /// and the frame's floor with it), a zero weight inside a band, a filter
    /// of zeros.
    #[test]
    fn log_mel_sums_each_filter_over_its_band_as_rlx_does() {
        let (n, bins, mels) = (8usize, 5usize, 3usize);
        let filters = vec![
            1.0, 1.0, 0.0, 0.0, 0.0, // bins 0–1
            0.0, 0.0, 0.0, 0.5, 0.25, // bins 3–4
            0.0, 0.0, 0.0, 0.0, 0.0, // none
        ];
        let mut spectrum = Vec::new();
        for frame in 0..3 {
            let mut re: Vec<f32> = (0..n).map(|j| 0.3 * (j + frame) as f32 - 0.7).collect();
            let im: Vec<f32> = (0..n).map(|j| 0.11 * (j * frame) as f32).collect();
            if frame == 1 {
                re[2] = 1e20; // its power is infinite: bin 2 is in no band
            }
            spectrum.extend(re.iter().chain(&im));
        }
        let mut want = vec![0.0; 3 * mels];
        rlx_ir::audio::log_mel_block_f32(&spectrum, &filters, 3, n, bins, mels, &mut want);
        let got = log_mel(&Tensor::new(vec![3, 2 * n], spectrum), &Tensor::new(vec![mels, bins], filters), vec![3, mels]);
        assert!(want.iter().all(|v| v.is_finite()), "RLX's values {want:?}");
        assert_eq!(got.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "interpreter {:?}, RLX {want:?}", got.data);
    }
}
