//! The verifier: structural rules for every graph, and operand counts and
//! result types for the ops rlx-opt understands. Ops it does not understand
//! are only checked for well-formed operands. Runs after parsing and after
//! every pass; the first violation is reported at the node that breaks it.

use crate::diag::Diagnostic;
use crate::ir::{DType, Dim, Graph, Loc, Node, NodeId, OpKind, TensorType, view};

/// The first rule a graph breaks, at the node (or `return`) that breaks it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("%{label} uses a node that does not exist (index {index})")]
    MissingOperand { label: u32, index: u32, loc: Option<Loc> },
    #[error("an output names a node that does not exist (index {index})")]
    MissingOutput { index: u32, loc: Option<Loc> },
    #[error("%{label} is defined twice")]
    DuplicateLabel { label: u32, loc: Option<Loc> },
    #[error("%{label} is part of a cycle: it depends on its own result")]
    Cycle { label: u32, loc: Option<Loc> },
    /// An op's operands or result type break its rules.
    #[error("`{op}` op %{label}: {message}")]
    Op { op: String, label: u32, message: String, loc: Option<Loc> },
}

impl VerifyError {
    /// Where in the source the error is, when the node came from one.
    pub fn loc(&self) -> Option<Loc> {
        match self {
            VerifyError::MissingOperand { loc, .. }
            | VerifyError::MissingOutput { loc, .. }
            | VerifyError::DuplicateLabel { loc, .. }
            | VerifyError::Cycle { loc, .. }
            | VerifyError::Op { loc, .. } => *loc,
        }
    }
}

impl From<VerifyError> for Diagnostic {
    fn from(e: VerifyError) -> Diagnostic {
        Diagnostic::maybe_at(e.loc(), e.to_string())
    }
}

pub fn verify(graph: &Graph) -> Result<(), VerifyError> {
    check_structure(graph)?;
    for node in graph.nodes() {
        check_op(graph, node).map_err(|message| VerifyError::Op { op: node.op.name().to_string(), label: node.label, message, loc: node.loc })?;
    }
    Ok(())
}

/// Operands and outputs exist, labels are unique, and there is no cycle.
fn check_structure(graph: &Graph) -> Result<(), VerifyError> {
    let len = graph.len();
    for node in graph.nodes() {
        if let Some(bad) = node.operands.iter().find(|o| o.index() >= len) {
            return Err(VerifyError::MissingOperand { label: node.label, index: bad.0, loc: node.loc });
        }
    }
    if let Some(bad) = graph.outputs.iter().find(|o| o.index() >= len) {
        return Err(VerifyError::MissingOutput { index: bad.0, loc: graph.return_loc });
    }
    let mut labels: Vec<(u32, u32)> = graph.nodes().iter().enumerate().map(|(i, n)| (n.label, i as u32)).collect();
    labels.sort_unstable();
    if let Some(pair) = labels.windows(2).find(|w| w[0].0 == w[1].0) {
        let node = graph.node(NodeId(pair[1].1));
        return Err(VerifyError::DuplicateLabel { label: node.label, loc: node.loc });
    }
    if !graph.is_topologically_ordered()
        && let Err(on_cycle) = view::topological_order(&view::build(graph))
    {
        let node = graph.node(on_cycle);
        return Err(VerifyError::Cycle { label: node.label, loc: node.loc });
    }
    Ok(())
}

// Over 80 lines: one short arm per op kind, the verifier's rule table; split, the table would no longer read as one.
fn check_op(graph: &Graph, node: &Node) -> Result<(), String> {
    let operand = |i: usize| &graph.node(node.operands[i]).ty;
    let result = &node.ty;
    let arity = |n: usize| expect_operands(node, n);
    match node.op.kind() {
        OpKind::Input { .. } | OpKind::Param { .. } => arity(0),
        OpKind::Constant { data } => {
            arity(0)?;
            match result.byte_size() {
                Some(size) if size != data.len() as u64 => {
                    Err(format!("holds {} bytes but {result} needs {size}", data.len()))
                }
                _ => Ok(()),
            }
        }
        OpKind::Activation(_) => {
            arity(1)?;
            expect_type(result, &operand(0).dims, operand(0).dtype)
        }
        OpKind::Binary(_) => {
            arity(2)?;
            let dims = broadcast(&operand(0).dims, &operand(1).dims)?;
            expect_type(result, &dims, operand(0).dtype)
        }
        OpKind::Reshape { new_shape } => {
            arity(1)?;
            check_reshape(operand(0), new_shape, result)
        }
        OpKind::Transpose { perm } => {
            arity(1)?;
            let input = operand(0);
            let mut seen = vec![false; input.rank()];
            for &p in perm {
                match seen.get_mut(p as usize) {
                    Some(s) if !*s => *s = true,
                    _ => return Err(format!("perm {perm:?} is not a permutation of the {} axes", input.rank())),
                }
            }
            if perm.len() != input.rank() {
                return Err(format!("perm {perm:?} is not a permutation of the {} axes", input.rank()));
            }
            let dims: Vec<Dim> = perm.iter().map(|&p| input.dims[p as usize]).collect();
            expect_type(result, &dims, input.dtype)
        }
        OpKind::Narrow { axis, start, len } => {
            arity(1)?;
            let input = operand(0);
            let extent = axis_extent(input, *axis)?;
            if let Some(n) = extent
                && start.checked_add(*len).is_none_or(|end| end > n)
            {
                return Err(format!("window {start}..{start}+{len} exceeds axis {axis} of extent {n}"));
            }
            expect_type(result, &with_dim(input, *axis, *len), input.dtype)
        }
        OpKind::Slice { axis, start, len, step } => {
            arity(1)?;
            let input = operand(0);
            let extent = axis_extent(input, *axis)?;
            if *step == 0 {
                return Err("step must not be 0".into());
            }
            if let Some(n) = extent
                && *len > 0
            {
                let last = *start as i128 + (*len as i128 - 1) * *step as i128;
                if *start >= n || last < 0 || last >= n as i128 {
                    return Err(format!("indices {start}, {start}{step:+}, … ({len} of them) leave axis {axis} of extent {n}"));
                }
            }
            expect_type(result, &with_dim(input, *axis, *len), input.dtype)
        }
        OpKind::Concat { axis } => check_concat(graph, node, *axis),
        OpKind::Reduce { axes, keep_dim, .. } => {
            arity(1)?;
            let input = operand(0);
            for (i, a) in axes.iter().enumerate() {
                if *a as usize >= input.rank() {
                    return Err(format!("reduction axis {a} is out of range for rank {}", input.rank()));
                }
                if axes[..i].contains(a) {
                    return Err(format!("reduction axis {a} is listed twice"));
                }
            }
            let dims: Vec<Dim> = input
                .dims
                .iter()
                .enumerate()
                .filter_map(|(i, d)| match axes.contains(&(i as u64)) {
                    true => keep_dim.then_some(Dim::Static(1)),
                    false => Some(*d),
                })
                .collect();
            expect_type(result, &dims, input.dtype)
        }
        OpKind::TopK { k } => {
            arity(1)?;
            let input = operand(0);
            let last = input.last().ok_or("operand must have rank ≥ 1")?;
            if *k == 0 {
                return Err("k must be at least 1".into());
            }
            if let Dim::Static(n) = last
                && *k > n
            {
                return Err(format!("k = {k} exceeds the last dim ({n})"));
            }
            expect_dims(result, &with_dim(input, input.rank() as u64 - 1, *k))
        }
        OpKind::GatherElements { axis } => {
            arity(2)?;
            let (data, indices) = (operand(0), operand(1));
            let rank = data.rank() as i64;
            if !(-rank..rank).contains(&(*axis as i64)) {
                return Err(format!("axis {axis} is out of range for rank {rank}"));
            }
            if indices.rank() != data.rank() {
                return Err(format!("indices have rank {} but data has rank {rank}", indices.rank()));
            }
            expect_type(result, &indices.dims, data.dtype)
        }
        OpKind::ComplexNormSq => {
            arity(1)?;
            let input = operand(0);
            let real = match input.dtype {
                DType::C64 => DType::F32,
                DType::C128 => DType::F64,
                other => return Err(format!("operand must be complex (c64 or c128), not {other}")),
            };
            expect_type(result, &input.dims, real)
        }
        OpKind::Fft { .. } => {
            arity(1)?;
            let input = operand(0);
            let last = input.last().ok_or("operand must have rank ≥ 1")?;
            if matches!(input.dtype, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
                && let Dim::Static(n) = last
                && (n == 0 || n % 2 != 0)
            {
                return Err(format!("the last dim ({n}) must be even and non-zero: real and imaginary planes of equal length"));
            }
            expect_type(result, &input.dims, input.dtype)
        }
        OpKind::WelchPeaks { k, n_segments } => {
            arity(1)?;
            check_welch_peaks(operand(0), *k, *n_segments, result)
        }
        OpKind::LogMel => {
            arity(2)?;
            let (spectrum, filters) = (operand(0), operand(1));
            if filters.rank() != 2 {
                return Err(format!("filters must be [n_mels, n_bins], got {filters}"));
            }
            if let Some(Dim::Static(width)) = spectrum.last()
                && (width == 0 || width % 2 != 0)
            {
                return Err(format!("the spectrum's last dim ({width}) must be even and non-zero: real and imaginary planes of equal length"));
            }
            // The spectrum's bins: n_fft / 2 + 1 of its n_fft = width / 2.
            if let (Some(Dim::Static(width)), Dim::Static(bins)) = (spectrum.last(), filters.dims[1])
                && width / 2 / 2 + 1 != bins
            {
                let has = width / 2 / 2 + 1;
                return Err(format!("filters have {bins} bin{} but a spectrum of width {width} has {has} bin{}", plural(bins), plural(has)));
            }
            // The result's last dim is n_mels, the filters' rows: dynamic
            // filters (`[?, n_bins]`, a filterbank chosen at run time) give a
            // dynamic last dim, which any declared n_mels matches, as every
            // other dynamic dim does. (It once became 0, refusing `[4, 40]`.)
            let mut dims = spectrum.dims.to_vec();
            match dims.last_mut() {
                None => Err("spectrum must have rank ≥ 1".into()),
                Some(last) => {
                    *last = filters.dims[0];
                    expect_dims(result, &dims)
                }
            }
        }
        OpKind::LogMelBackward => {
            arity(3)?;
            expect_dims(result, &operand(0).dims)
        }
        OpKind::Custom { num_inputs, .. } => {
            arity(*num_inputs as usize)?;
            match (node.op.welch_peaks(), node.op.log_mel()) {
                (Some(attrs), _) => check_fused_welch_peaks(attrs?, node, graph),
                (_, Some(attrs)) => check_fused_log_mel(attrs?, node, graph),
                _ => Ok(()),
            }
        }
        OpKind::Opaque { name } if &**name == "MatMul" => {
            arity(2)?;
            check_matmul(operand(0), operand(1), result)
        }
        OpKind::Opaque { .. } => Ok(()),
    }
}

/// `[…, m, k] × […, k, n] → […, m, n]`, the batch dims broadcast (RLX's
/// `matmul_shape`); the interpreter runs the 2-D case.
fn check_matmul(lhs: &TensorType, rhs: &TensorType, result: &TensorType) -> Result<(), String> {
    if lhs.rank() < 2 || rhs.rank() < 2 {
        return Err(format!("operands must have rank ≥ 2, got {lhs} and {rhs}"));
    }
    if lhs.dtype != rhs.dtype {
        return Err(format!("operands have different element types: {lhs} and {rhs}"));
    }
    let (l, r) = (&lhs.dims, &rhs.dims);
    let (m, k) = (l[l.len() - 2], l[l.len() - 1]);
    let (k2, n) = (r[r.len() - 2], r[r.len() - 1]);
    if !dims_agree(&[k], &[k2]) {
        return Err(format!("inner dims differ: {lhs} × {rhs}"));
    }
    let mut dims = broadcast(&l[..l.len() - 2], &r[..r.len() - 2])?;
    dims.extend([m, n]);
    expect_type(result, &dims, lhs.dtype)
}

fn expect_operands(node: &Node, n: usize) -> Result<(), String> {
    if node.operands.len() == n {
        Ok(())
    } else {
        Err(format!("expects {n} operand{}, got {}", plural(n as u64), node.operands.len()))
    }
}

/// The plural ending for `n` of something.
fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Dims agree where both are static; a dynamic dim matches anything.
pub fn dims_agree(a: &[Dim], b: &[Dim]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Dim::Static(x), Dim::Static(y)) => x == y,
            _ => true,
        })
}

fn show(dims: &[Dim]) -> String {
    TensorType { dims: dims.into(), dtype: DType::F32 }.to_string().trim_end_matches(" f32").to_string()
}

fn expect_dims(result: &TensorType, dims: &[Dim]) -> Result<(), String> {
    if dims_agree(&result.dims, dims) {
        Ok(())
    } else {
        Err(format!("result is declared {} but the operands give {}", show(&result.dims), show(dims)))
    }
}

fn expect_type(result: &TensorType, dims: &[Dim], dtype: DType) -> Result<(), String> {
    expect_dims(result, dims)?;
    if result.dtype != dtype {
        return Err(format!("result is declared {} but the operands give {dtype}", result.dtype));
    }
    Ok(())
}

fn axis_extent(input: &TensorType, axis: u64) -> Result<Option<u64>, String> {
    input
        .dims
        .get(axis as usize)
        .map(|d| d.as_static())
        .ok_or_else(|| format!("axis {axis} is out of range for rank {}", input.rank()))
}

fn with_dim(input: &TensorType, axis: u64, extent: u64) -> Vec<Dim> {
    let mut dims = input.dims.to_vec();
    dims[axis as usize] = Dim::Static(extent);
    dims
}

fn broadcast(a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>, String> {
    let rank = a.len().max(b.len());
    let at = |d: &[Dim], i: usize| if i < rank - d.len() { Dim::Static(1) } else { d[i - (rank - d.len())] };
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (Dim::Static(1), d) | (d, Dim::Static(1)) => Ok(d),
            (Dim::Static(x), Dim::Static(y)) if x != y => {
                Err(format!("operands {} and {} do not broadcast (dim {i}: {x} vs {y})", show(a), show(b)))
            }
            (Dim::Dynamic(_), d) if matches!(d, Dim::Static(_)) => Ok(d),
            (d, _) => Ok(d),
        })
        .collect()
}

fn check_reshape(input: &TensorType, new_shape: &[i64], result: &TensorType) -> Result<(), String> {
    if new_shape.iter().filter(|&&d| d == -1).count() > 1 {
        return Err("at most one dim may be -1".into());
    }
    if let Some(d) = new_shape.iter().find(|&&d| d < -1) {
        return Err(format!("invalid dim {d} in new_shape"));
    }
    if new_shape.len() != result.rank() {
        return Err(format!("new_shape {new_shape:?} has rank {} but the result has rank {}", new_shape.len(), result.rank()));
    }
    for (want, got) in new_shape.iter().zip(&result.dims) {
        if let Dim::Static(got) = got
            && *want >= 0
            && *want as u64 != *got
        {
            return Err(format!("result is declared {result} but new_shape is {new_shape:?}"));
        }
    }
    if let (Some(a), Some(b)) = (input.num_elements(), result.num_elements())
        && a != b
    {
        return Err(format!("reshape of {a} elements into {b}"));
    }
    if result.dtype != input.dtype {
        return Err(format!("result is declared {} but the operand is {}", result.dtype, input.dtype));
    }
    Ok(())
}

fn check_concat(graph: &Graph, node: &Node, axis: u64) -> Result<(), String> {
    let first = &graph.node(*node.operands.first().ok_or("expects at least 1 operand, got 0")?).ty;
    let ax = axis as usize;
    if ax >= first.rank() {
        return Err(format!("axis {axis} is out of range for rank {}", first.rank()));
    }
    let mut total = Some(0u64);
    for (i, id) in node.operands.iter().enumerate() {
        let ty = &graph.node(*id).ty;
        if ty.rank() != first.rank() || ty.dtype != first.dtype {
            return Err(format!("operand {i} is {ty} but operand 0 is {first}"));
        }
        for d in (0..ty.rank()).filter(|&d| d != ax) {
            if let (Dim::Static(a), Dim::Static(b)) = (ty.dims[d], first.dims[d])
                && a != b
            {
                return Err(format!("operand {i} has dim {d} = {a} but operand 0 has {b}; all dims but the concat axis must match"));
            }
        }
        total = total.zip(ty.dims[ax].as_static()).and_then(|(t, n)| t.checked_add(n));
    }
    let mut dims = first.dims.to_vec();
    dims[ax] = total.map_or(node.ty.dims.get(ax).copied().unwrap_or(Dim::Static(0)), Dim::Static);
    expect_type(&node.ty, &dims, first.dtype)
}

/// rlx-ir's WelchPeaks geometry: `[B·S, 2N] f32 → [B, 2k] f32`, 1 ≤ k ≤ N/2+1.
fn check_welch_peaks(input: &TensorType, k: u64, segments: u64, result: &TensorType) -> Result<(), String> {
    if input.rank() != 2 || input.dtype != DType::F32 {
        return Err(format!("spectrum must be [rows, 2·n_fft] f32, got {input}"));
    }
    if segments == 0 {
        return Err("n_segments must be at least 1".into());
    }
    if k == 0 {
        return Err("k must be at least 1".into());
    }
    let mut batch = None;
    if let Dim::Static(rows) = input.dims[0] {
        if rows % segments != 0 {
            return Err(format!("{rows} spectrum rows do not split into segments of {segments}"));
        }
        batch = Some(rows / segments);
    }
    if let Dim::Static(width) = input.dims[1] {
        if width == 0 || width % 2 != 0 {
            return Err(format!("spectrum width {width} is not 2·n_fft"));
        }
        let bins = width / 2 / 2 + 1;
        if k > bins {
            return Err(format!("k = {k} exceeds the {bins} one-sided bins of n_fft = {}", width / 2));
        }
    }
    // A result row holds 2k values (bin, power pairs). With a dynamic
    // spectrum width nothing above bounds k, and 2k must not wrap: k = 2^63
    // would declare a result row of 0 values. The fused op refuses the same
    // k in `WelchPeaksAttrs::check`.
    let row = k.checked_mul(2).ok_or_else(|| format!("k = {k} is too large: a result row holds 2k values, and 2k must be below 2^64"))?;
    let dims = [batch.map_or(input.dims[0], Dim::Static), Dim::Static(row)];
    expect_type(result, &dims, DType::F32)
}

/// rlx-opt's fused op: its attributes hold together and fit its operands and result.
fn check_fused_welch_peaks(attrs: &crate::fused::WelchPeaksAttrs, node: &Node, graph: &Graph) -> Result<(), String> {
    attrs.check().map_err(|e| e.to_string())?;
    // The operands must be what the attributes say before either is read.
    if node.operands.len() != attrs.num_inputs() as usize {
        let what = if attrs.window { "the segments and a window" } else { "the segments (no window)" };
        return Err(format!("the attributes call for {} operand(s), {what}, but the op has {}", attrs.num_inputs(), node.operands.len()));
    }
    let input = &graph.node(node.operands[0]).ty;
    if input.dtype != DType::F32 {
        return Err(format!("segments must be f32, got {input}"));
    }
    let batch = attrs.batch_of(input).map_err(|e| e.to_string())?;
    if attrs.window {
        let window = &graph.node(node.operands[1]).ty;
        if window.dims.as_slice() != [Dim::Static(attrs.frame_len)] {
            return Err(format!("the window must be [{}], got {window}", attrs.frame_len));
        }
    }
    expect_type(&node.ty, &attrs.result_type(&batch).dims, DType::F32)
}

fn check_fused_log_mel(attrs: &crate::fused::LogMelAttrs, node: &Node, graph: &Graph) -> Result<(), String> {
    use crate::fused::LogMelOperandError;
    attrs.check().map_err(|e| e.to_string())?;
    if node.operands.len() != attrs.num_inputs() as usize {
        let what = if attrs.window { "the frames, the filters and a window" } else { "the frames and the filters (no window)" };
        return Err(format!("the attributes call for {} operand(s), {what}, but the op has {}", attrs.num_inputs(), node.operands.len()));
    }
    let [input, filters] = [0, 1].map(|i| &graph.node(node.operands[i]).ty);
    for (what, ty) in [("frames", input), ("filters", filters)] {
        if ty.dtype != DType::F32 {
            return Err(format!("{what} must be f32, got {ty}"));
        }
    }
    let lead = attrs.lead_of(input).map_err(|e| e.to_string())?;
    let expected = attrs.filters_type();
    if filters.dims != expected.dims {
        return Err(LogMelOperandError::Filters { expected: Box::new(expected), got: Box::new(filters.clone()) }.to_string());
    }
    if attrs.window {
        let window = &graph.node(node.operands[2]).ty;
        if window.dims.as_slice() != [Dim::Static(attrs.frame_len)] || window.dtype != DType::F32 {
            return Err(LogMelOperandError::Window { frame_len: attrs.frame_len, got: window.clone() }.to_string());
        }
    }
    expect_type(&node.ty, &attrs.result_type(&lead).dims, DType::F32)
}
