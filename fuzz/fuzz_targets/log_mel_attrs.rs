//! The fused log-mel op's attributes (`rlx_opt.log_mel`): any bytes, as a
//! custom op in an RLX graph, go through parse → verify → the interpreter.
//! Attributes are refused with a clean error or round-trip; a graph verifies
//! only when its attributes pass their own check; attributes that pass it,
//! given the operands they describe, verify; verified attributes give the
//! GPU kernels' sources (both bindings) or a clean refusal; a verified graph
//! small enough to run gives its declared shape or a clean error on the CPU
//! kernel and on the op's reference. Nothing panics.
//!
//! Input: the attribute bytes up to the first NUL (JSON has no raw NUL), the
//! rest drives the operand shapes. With nothing after the attributes the
//! operands are the ones the attributes describe, so a seed of bare
//! attributes (fuzz/seed.sh) reaches the kernels.
#![no_main]
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use rlx_opt::format::rlx_text;
use rlx_opt::fused::{LOG_MEL, LogMelAttrs, LogMelInput};
use rlx_opt::ir::TensorType;
use rlx_opt::runtime::{CpuKernel, FusedKernel, Reference, random_inputs, run};
use rlx_opt::verify::verify;

/// Bounds on what is run (elements of any tensor, FFT points, frames × FFT
/// points): the interpreter and the kernels must stay fast per input.
const MAX_ELEMENTS: u64 = 1 << 16;
const MAX_N_FFT: u64 = 1 << 12;
const MAX_WORK: u64 = 1 << 18;

/// Longest error message accepted past what it may quote of the input
/// (serde names an unknown field or variant whole): errors name what is
/// wrong, they do not grow with anything else.
const MAX_MESSAGE: usize = 4096;

#[derive(Arbitrary, Debug)]
struct Shapes {
    /// Take every shape below as given instead of deriving the operands
    /// from the attributes: reaches each of verify's refusals.
    as_given: bool,
    /// Leading dims of the frames (batch dims of a signal), each 0..=3 when derived.
    lead: Vec<u8>,
    /// Samples past the last frame's end (signal layout).
    tail: u8,
    /// An operand made i32 (1: frames, 2: filters, 3: window).
    wrong_dtype: u8,
    /// Given shapes: frames, filters, window, result; operand count and `num_inputs`.
    frames: Vec<u16>,
    filters: Vec<u16>,
    window: Vec<u16>,
    result: Vec<u16>,
    operands: u8,
    num_inputs: u8,
    seed: u64,
}

fn clean(what: &str, message: String, input: &[u8]) {
    let bound = MAX_MESSAGE + 2 * input.len();
    assert!(!message.is_empty() && message.len() <= bound, "{what}: an error of {} bytes: {message:.200}", message.len());
}

fn dims_text(dims: &[u64]) -> String {
    let d: Vec<String> = dims.iter().map(u64::to_string).collect();
    format!("[{}]", d.join(", "))
}

/// The operands and result the attributes describe, or `None` when they
/// describe none (sizes past u64).
fn derived(attrs: &LogMelAttrs, s: &Shapes) -> Option<[Vec<u64>; 4]> {
    let lead: Vec<u64> = s.lead.iter().take(3).map(|d| u64::from(d % 4)).collect();
    let last = match attrs.input_layout {
        LogMelInput::Frames => attrs.frame_len,
        LogMelInput::Signal => attrs.signal_len(attrs.hop?, attrs.frames?)?.checked_add(u64::from(s.tail))?,
    };
    let frames: Vec<u64> = lead.iter().copied().chain([last]).collect();
    let ty = TensorType::new(&frames, rlx_opt::ir::DType::F32);
    let result = match attrs.lead_of(&ty) {
        Ok(lead) => attrs.result_type(&lead).dims.iter().map(|d| d.as_static()).collect::<Option<Vec<u64>>>()?,
        Err(_) => s.result.iter().take(4).map(|d| u64::from(*d)).collect(),
    };
    Some([frames, vec![attrs.n_mels, attrs.bins()], vec![attrs.frame_len], result])
}

fn elements(dims: &[u64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |n, d| n.checked_mul(*d))
}

/// The GPU kernels' sources for verified attributes on their operand, in
/// both bindings (their own, and RLX's arena as rlx-ext fits the op), and
/// on CUDA in both forms (a block or a warp per frame): specialised with
/// every placeholder filled, or refused with a clean error.
fn gpu_sources(attrs: &LogMelAttrs, frames: &[u64], input: &[u8]) {
    use rlx_opt::analysis::Target;
    use rlx_opt::analysis::plan::DeviceLimits;
    use rlx_opt::lower::{Bindings, log_mel};
    let Some(shape) = frames.iter().map(|d| usize::try_from(*d).ok()).collect::<Option<Vec<usize>>>() else { return };
    let blocks = DeviceLimits { log_mel_warps: false, ..DeviceLimits::assumed(Target::Cuda) };
    let warps = DeviceLimits { log_mel_warps: true, ..blocks };
    for (target, limits) in [(Target::Wgpu, DeviceLimits::assumed(Target::Wgpu)), (Target::Metal, DeviceLimits::assumed(Target::Metal)), (Target::Cuda, blocks), (Target::Cuda, warps)] {
        let spec = match log_mel::specialize(attrs, &shape, target, &limits) {
            Ok(spec) => spec,
            Err(e) => {
                clean("log-mel specialize", e.to_string(), input);
                continue;
            }
        };
        for bindings in [Bindings::Buffers, Bindings::RlxArena { stage: 0 }] {
            let source = if target == Target::Cuda { log_mel::cuda_source_with(&spec, bindings) } else { log_mel::wgsl_source_with(&spec, bindings) };
            match source {
                Ok(text) => assert!(!text.contains("{{"), "{target} {bindings:?}: a placeholder left unfilled"),
                Err(e) => clean("log-mel source", e.to_string(), input),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|b| *b == 0).unwrap_or(data.len());
    let bytes = &data[..split];
    let Ok(shapes) = Shapes::arbitrary(&mut Unstructured::new(data.get(split + 1..).unwrap_or_default())) else { return };

    // The attributes alone: refused cleanly, or printed and read back the same.
    let checked = LogMelAttrs::from_bytes(bytes);
    match &checked {
        Ok(attrs) => {
            let back = LogMelAttrs::from_bytes(&attrs.to_bytes()).unwrap_or_else(|e| panic!("printed attributes do not read back: {e}"));
            // serde_json (without `float_roundtrip`) may read a float one ulp off.
            let ulps = (back.power_scale - attrs.power_scale).abs() / (attrs.power_scale * f64::EPSILON);
            assert!(ulps <= 1.0, "power_scale {} reads back as {}", attrs.power_scale, back.power_scale);
            assert_eq!(LogMelAttrs { power_scale: attrs.power_scale, ..back }, *attrs, "attributes do not round-trip");
        }
        Err(e) => clean("attributes", e.to_string(), data),
    }

    // As the op's attributes, with operands the attributes describe or given ones.
    let unchecked: Option<LogMelAttrs> = serde_json::from_slice(bytes).ok();
    let described = unchecked.as_ref().filter(|_| !shapes.as_given).and_then(|a| Some((derived(a, &shapes)?, a.num_inputs())));
    // Only the operands the attributes describe, all f32, must verify with checked attributes.
    let described_ok = described.is_some() && shapes.wrong_dtype % 4 == 0;
    let (operand_dims, operands, num_inputs) = match described {
        Some((dims, n)) => (dims, n as usize, n),
        None => {
            let given = |v: &[u16]| v.iter().take(4).map(|d| u64::from(*d)).collect::<Vec<u64>>();
            let dims = [given(&shapes.frames), given(&shapes.filters), given(&shapes.window), given(&shapes.result)];
            (dims, 1 + usize::from(shapes.operands % 4), u32::from(shapes.num_inputs % 5))
        }
    };
    let [frames, filters, window, result] = &operand_dims;
    let dtype = |i: u8| if shapes.wrong_dtype % 4 == i { "i32" } else { "f32" };
    let mut text = format!("graph @fuzz {{\n  %0 = {{\"Input\":{{\"name\":\"x\"}}}} : {} {} #\"x\"\n", dims_text(frames), dtype(1));
    let names = ["filters", "window", "extra"];
    let shapes_of = [filters, window, filters];
    for i in 1..operands {
        text += &format!("  %{i} = {{\"Input\":{{\"name\":\"{}\"}}}} : {} {} #\"{}\"\n", names[i - 1], dims_text(shapes_of[i - 1]), dtype(i as u8 + 1), names[i - 1]);
    }
    let args: Vec<String> = (0..operands).map(|i| format!("%{i}")).collect();
    let attrs_json = serde_json::to_string(bytes).expect("bytes serialise");
    text += &format!(
        "  %{operands} = {{\"Custom\":{{\"name\":\"{LOG_MEL}\",\"num_inputs\":{num_inputs},\"attrs\":{attrs_json}}}}}({}) : {} f32 #\"logmel\"\n  return %{operands}\n}}\n",
        args.join(", "),
        dims_text(result)
    );

    let graph = match rlx_text::parse(&text) {
        Ok(graph) => graph,
        Err(e) => {
            // Dims past what the text reader takes (derived ones reach u64); its messages quote the line.
            assert!(!e.to_string().is_empty(), "parse: an empty error");
            return;
        }
    };
    if let Err(e) = verify(&graph) {
        clean("verify", e.to_string(), data);
        assert!(!(described_ok && checked.is_ok()), "checked attributes with the operands they describe do not verify: {e}\n{text}");
        return;
    }
    let attrs = checked.unwrap_or_else(|e| panic!("a graph verifies with attributes their check refuses ({e})\n{text}"));
    gpu_sources(&attrs, frames, data);

    // Run it when it is small: every tensor, the FFT and the work bounded.
    let all_small = operand_dims[..operands.min(3)].iter().chain([result]).all(|d| elements(d).is_some_and(|n| n <= MAX_ELEMENTS));
    let frame_count = elements(result).unwrap_or(u64::MAX).checked_div(attrs.n_mels).unwrap_or(u64::MAX);
    if !all_small || attrs.n_fft > MAX_N_FFT || frame_count.saturating_mul(attrs.n_fft) > MAX_WORK {
        return;
    }
    let inputs = match random_inputs(&graph, shapes.seed) {
        Ok(inputs) => inputs,
        Err(e) => return clean("inputs", e.to_string(), data),
    };
    let declared: Vec<usize> = result.iter().map(|d| *d as usize).collect();
    for kernel in [&CpuKernel as &dyn FusedKernel, &Reference] {
        match run(&graph, &inputs, kernel) {
            Ok(out) => {
                assert_eq!(out.len(), 1);
                assert_eq!(out[0].shape, declared, "{}: result shape", kernel.name());
                assert_eq!(out[0].data.len(), declared.iter().product::<usize>(), "{}: result length", kernel.name());
            }
            Err(e) => clean(&kernel.name(), e.to_string(), data),
        }
    }
});
