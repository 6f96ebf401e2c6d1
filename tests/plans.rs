//! Every plan of the fused op (`batch`, `split`, `multipass`,
//! `split-multipass`) against the op's definition (`welch::reference`), on
//! every backend that runs here: the CPU kernel always, wgpu on Vulkan
//! (lavapipe in CI), CUDA where an NVIDIA GPU is; NVRTC compiles every
//! plan's CUDA where it is installed. Shapes: batch 1 with 10^5 segments,
//! chunks that do not divide the pairs evenly, odd segment counts,
//! windows, zero padding, every input layout, k above the workgroup size.

mod common;
#[path = "cuda_emulation/run.rs"]
mod cuda_emulation;

use rand::{RngExt, SeedableRng};
use rlx_opt::analysis::Target;
use rlx_opt::analysis::plan::{DeviceLimits, plan};
use rlx_opt::fused::{ChainForm, Doubling, InputLayout, OutputLayout, PlanName, WelchPeaksAttrs};
use rlx_opt::runtime::welch::{cpu_kernel, cpu_kernel_split, geometry, reference};
use rlx_opt::runtime::{FusedKernel, Tensor};

/// One shape: attributes, the input's shape, and the window when there is one.
struct Case {
    name: &'static str,
    attrs: WelchPeaksAttrs,
    shape: Vec<usize>,
    /// Samples set to ±∞ (flat indices into the input), in one batch entry
    /// of a case whose op has `inf_is_nan` (RLX's `Sub(x, x)` plane): that
    /// entry's powers are all NaN, the other entries' unchanged.
    infinities: Vec<(usize, f32)>,
}

fn attrs(layout: InputLayout, n_fft: u64, frame_len: u64, segments: u64, k: u64, window: bool) -> WelchPeaksAttrs {
    WelchPeaksAttrs {
        form: ChainForm::SpectrogramTopk,
        input_layout: layout,
        frame_len,
        hop: (layout == InputLayout::Signal).then_some(frame_len / 2),
        window,
        ..WelchPeaksAttrs::rlx(n_fft, segments, k)
    }
}

fn cases() -> Vec<Case> {
    // RLX's `Sub(x, x)` imaginary plane (`inf_is_nan`), ±∞ in one entry
    // (see the case's infinities): the pairs', packed, register-FFT and
    // four-step loads; and ±∞ at sample 0 of a lone segment without a
    // window, which an FFT never multiplies by a twiddle: the entry's
    // powers come out ∞, not NaN, unless the load makes it NaN.
    let sub_plane = |a: WelchPeaksAttrs| WelchPeaksAttrs { inf_is_nan: true, ..a };
    let signal = |batch: usize, a: &WelchPeaksAttrs| vec![batch, a.signal_len(a.hop.unwrap()).unwrap() as usize + 3];
    let long = attrs(InputLayout::Rows, 64, 64, 100_000, 4, false);
    let padded = attrs(InputLayout::Signal, 256, 200, 1001, 16, true);
    let wide_k = WelchPeaksAttrs { output_layout: OutputLayout::Planar, doubling: Doubling::None, ..attrs(InputLayout::Rows, 1024, 1024, 37, 300, false) };
    let frames = sub_plane(attrs(InputLayout::Frames, 128, 100, 21, 8, true));
    let long_fft = attrs(InputLayout::Signal, 8192, 8192, 9, 5, true);
    let one = sub_plane(attrs(InputLayout::Rows, 16, 16, 1, 3, false));
    // One segment an entry at lengths CUDA's packed form halves into
    // blocks of several warps (1024: a 512-point FFT on 64 threads) and
    // into a mixed radix (400 → 200 = 4·2·5·5), the frame odd and padded
    // (333 samples: the last packed point's odd sample is padding).
    let one_1024 = attrs(InputLayout::Rows, 1024, 1024, 1, 16, false);
    let one_400 = sub_plane(attrs(InputLayout::Signal, 400, 333, 1, 8, true));
    // …and into an FFT of 3 points on a block of 4 threads.
    let one_6 = sub_plane(attrs(InputLayout::Rows, 6, 6, 1, 2, false));
    // Past lavapipe's loop budget in one workgroup (450 pairs of n_fft 4096;
    // 200 pairs with a top-2049): lavapipe truncated both silently before
    // the plans kept within it.
    let many_pairs = attrs(InputLayout::Rows, 4096, 4096, 900, 16, false);
    let all_bins = attrs(InputLayout::Rows, 4096, 4096, 400, 2049, false);
    // Lengths that are not powers of two (the one-pass kernels' mixed-radix
    // FFT): Whisper's 400, an odd 375 (no Nyquist bin), 1000 windowed over
    // a signal, and 6 (a workgroup of 4 for 6 points).
    let n400 = attrs(InputLayout::Rows, 400, 400, 16, 16, false);
    let n375 = attrs(InputLayout::Frames, 375, 300, 9, 8, true);
    let n1000 = attrs(InputLayout::Signal, 1000, 1000, 5, 10, true);
    let n6 = attrs(InputLayout::Rows, 6, 6, 4, 4, false);
    // A one-warp length of two radices a lane (192 = 32·2·3: CUDA's
    // register FFT), an odd segment count (the last pair's second zeros).
    let n192 = sub_plane(attrs(InputLayout::Frames, 192, 180, 5, 12, true));
    // Past one workgroup's 4096 points and not a power of two: the
    // four-step FFT (WGSL's 75·80; CUDA's too, even with its four-step form
    // off: the radix-2 stages do not take it).
    let n6000 = sub_plane(attrs(InputLayout::Frames, 6000, 5000, 3, 7, true));
    // `Ortho` (power scaled by 1/n_fft), loud (see `input`).
    let ortho = WelchPeaksAttrs { power_scale: 1.0 / 256.0, ..attrs(InputLayout::Rows, 256, 256, 8, 8, false) };
    // …and one segment an entry, which CUDA's packed form halves (its own
    // power formula, not the pair's).
    let ortho_one = WelchPeaksAttrs { power_scale: 1.0 / 400.0, ..attrs(InputLayout::Rows, 400, 400, 1, 8, false) };
    vec![
        Case { name: "batch1_segments1e5", shape: vec![100_000, 64], attrs: long, infinities: vec![] },
        Case { name: "signal_padded_window_odd", shape: signal(2, &padded), attrs: padded, infinities: vec![] },
        Case { name: "k300_planar", shape: vec![3 * 37, 1024], attrs: wide_k, infinities: vec![] },
        // Frames [21, 3, 100]: entry 1 holds +∞ in frame 4 and −∞ in frame 20
        // (the odd one out, paired with zeros).
        Case { name: "frames_window", shape: vec![21, 3, 100], attrs: frames, infinities: vec![((4 * 3 + 1) * 100 + 50, f32::INFINITY), ((20 * 3 + 1) * 100 + 99, f32::NEG_INFINITY)] },
        Case { name: "n8192_signal", shape: signal(1, &long_fft), attrs: long_fft, infinities: vec![] },
        Case { name: "one_segment", shape: vec![5, 16], attrs: one, infinities: vec![(2 * 16, f32::NEG_INFINITY)] },
        Case { name: "one_segment_n1024", shape: vec![6, 1024], attrs: one_1024, infinities: vec![] },
        Case { name: "one_segment_n400_ortho_loud", shape: vec![3, 400], attrs: ortho_one, infinities: vec![] },
        // −∞ at entry 2's sample 331: the odd sample of a packed point.
        Case { name: "one_segment_n400_signal_window", shape: signal(3, &one_400), infinities: vec![(2 * signal(3, &one_400)[1] + 331, f32::NEG_INFINITY)], attrs: one_400 },
        Case { name: "one_segment_n6", shape: vec![3, 6], attrs: one_6, infinities: vec![(6, f32::INFINITY)] },
        Case { name: "n4096_pairs450", shape: vec![900, 4096], attrs: many_pairs, infinities: vec![] },
        Case { name: "n4096_k2049", shape: vec![400, 4096], attrs: all_bins, infinities: vec![] },
        Case { name: "n400_rows", shape: vec![3 * 16, 400], attrs: n400, infinities: vec![] },
        Case { name: "n375_frames_window", shape: vec![9, 2, 300], attrs: n375, infinities: vec![] },
        Case { name: "n1000_signal_window", shape: signal(2, &n1000), attrs: n1000, infinities: vec![] },
        Case { name: "n6_rows", shape: vec![5 * 4, 6], attrs: n6, infinities: vec![] },
        Case { name: "n192_frames_window", shape: vec![5, 3, 180], attrs: n192, infinities: vec![((2 * 3) * 180 + 7, f32::NEG_INFINITY)] },
        Case { name: "n6000_frames_window", shape: vec![3, 2, 5000], attrs: n6000, infinities: vec![((2 + 1) * 5000 + 2500, f32::INFINITY)] },
        Case { name: "n256_ortho_loud", shape: vec![3 * 8, 256], attrs: ortho, infinities: vec![] },
    ]
}

/// The gain of the cases under a norm that scales (`Ortho`): their strongest
/// bin, about 3e19 at n_fft 256 (5e19 at 400), squares past f32's 3.4e38
/// unscaled, and under the norm's 1/16 to 4e36 (a pair's sum, doubled, 3e37;
/// at 400, 1/20: 6e36); so a kernel that squared before scaling would give
/// ∞ where RLX does not.
const LOUD: f32 = 5e16;

/// The case's input: [`input`], [`LOUD`] where its norm scales, and its
/// infinities.
fn case_input(case: &Case, seed: u64) -> Tensor {
    let mut x = input(&case.shape, seed);
    if case.attrs.power_scale != 1.0 {
        x.data.iter_mut().for_each(|v| *v *= LOUD);
    }
    for &(at, v) in &case.infinities {
        x.data[at] = v;
    }
    x
}

/// Noise with a few tones of distinct strength per batch entry, so that the
/// leading peaks are well apart.
fn input(shape: &[usize], seed: u64) -> Tensor {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let row = *shape.last().unwrap();
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|i| {
            let t = (i % row) as f32;
            let tones: f32 = (1..5).map(|f| (6.0 - f as f32) * (t * 0.37 * f as f32 + (i / row) as f32).sin()).sum();
            tones + rng.random_range(-1.0f32..1.0)
        })
        .collect();
    Tensor::new(shape.to_vec(), data)
}

fn window_for(a: &WelchPeaksAttrs) -> Option<Tensor> {
    a.window.then(|| {
        let n = a.frame_len as usize;
        Tensor::new(vec![n], (0..n).map(|t| 0.5 - 0.5 * (std::f32::consts::TAU * t as f32 / n as f32).cos()).collect())
    })
}

/// What a kernel's result is checked against: the reference's peaks, and
/// the reference's power of every bin of every row, for ties.
struct Want {
    peaks: Tensor,
    /// Row-major, `bins` a row: the reference's power at each bin.
    powers: Vec<f32>,
}

impl Want {
    fn of(a: &WelchPeaksAttrs, x: &Tensor, w: Option<&Tensor>) -> Want {
        let peaks = reference(a, x, w).unwrap();
        // Every bin, sorted: the reference's power at each one.
        let bins = a.bins() as usize;
        let every = WelchPeaksAttrs { k: bins as u64, output_layout: OutputLayout::Interleaved, plan: None, ..a.clone() };
        let all = reference(&every, x, w).unwrap();
        let mut powers = vec![f32::NAN; all.data.len() / 2];
        let mut given = vec![false; powers.len()];
        for (r, row) in all.data.chunks(2 * bins).enumerate() {
            for pair in row.chunks(2) {
                powers[r * bins + pair[0] as usize] = pair[1];
                given[r * bins + pair[0] as usize] = true;
            }
        }
        assert!(given.iter().all(|g| *g), "every bin has a power");
        // An entry's powers are all NaN (it held ±∞ under `inf_is_nan`) or
        // none; some are, and not all, exactly where the input holds ±∞.
        let nan_rows = powers.chunks(bins).filter(|row| row.iter().all(|p| p.is_nan())).count();
        assert!(powers.chunks(bins).all(|row| row.iter().all(|p| p.is_nan()) || !row.iter().any(|p| p.is_nan())), "an entry's powers are NaN in part");
        let rows = powers.len() / bins;
        match x.data.iter().any(|v| v.is_infinite()) {
            true => assert!(a.inf_is_nan && (1..rows).contains(&nan_rows), "{nan_rows} of {rows} entries NaN"),
            false => assert_eq!(nan_rows, 0, "NaN powers of finite input"),
        }
        Want { peaks, powers }
    }
}

/// The kernel's result equals the reference's: powers within 1e-4 of the
/// row's largest, the same bin at every peak, no bin twice in a row. Where
/// the bins differ, the reference's powers at the two bins must tie within
/// the same tolerance: equal powers in another order are a tie that
/// summation order may break either way; anything else is a wrong bin.
fn check_matches(what: &str, a: &WelchPeaksAttrs, want: &Want, got: &Tensor) -> Result<(), String> {
    if want.peaks.shape != got.shape {
        return Err(format!("{what}: shape {:?}, reference {:?}", got.shape, want.peaks.shape));
    }
    let (k, bins) = (a.k as usize, a.bins() as usize);
    let peak = |row: &[f32], i: usize| match a.output_layout {
        OutputLayout::Interleaved => (row[2 * i], row[2 * i + 1]),
        OutputLayout::Planar => (row[i], row[k + i]),
    };
    for (r, (w, g)) in want.peaks.data.chunks(2 * k).zip(got.data.chunks(2 * k)).enumerate() {
        let scale = (0..k).map(|i| peak(w, i).1).filter(|p| p.is_finite()).fold(0f32, |m, p| m.max(p.abs()));
        let tolerance = 1e-4 * scale;
        // The reference's power at a bin of this row; None for a bin out of range.
        let power_at = |bin: f32| (bin >= 0.0 && bin.fract() == 0.0 && (bin as usize) < bins).then(|| want.powers[r * bins + bin as usize]);
        let mut seen = std::collections::HashSet::new();
        for i in 0..k {
            let ((wb, wp), (gb, gp)) = (peak(w, i), peak(g, i));
            // NaN is NaN's match (an entry that held ±∞), at the same bin.
            let close = wp == gp || (wp - gp).abs() <= tolerance || (wp.is_nan() && gp.is_nan());
            if !close {
                return Err(format!("{what}: row {r} peak {i}: power {gp}, reference {wp}"));
            }
            if gb != -1.0 && !seen.insert(gb.to_bits()) {
                return Err(format!("{what}: row {r} peak {i}: bin {gb} a second time"));
            }
            if wb != gb {
                let tie = match (power_at(wb), power_at(gb)) {
                    (Some(p), Some(q)) => (p - q).abs() <= tolerance,
                    _ => false,
                };
                if !tie {
                    return Err(format!(
                        "{what}: row {r} peak {i}: bin {gb} (reference power there {:?}), reference bin {wb} (power {:?})",
                        power_at(gb),
                        power_at(wb)
                    ));
                }
            }
        }
    }
    Ok(())
}

fn assert_matches(what: &str, a: &WelchPeaksAttrs, want: &Want, got: &Tensor) {
    if let Err(difference) = check_matches(what, a, want, got) {
        panic!("{difference}");
    }
}

/// The plans of a target, each with its reference result, for every case;
/// returns the (case, plan) pairs that ran. A plan that runs in another
/// form on a shape (see `Plan::name`) is left to that form.
fn each_plan(target: Target, limits: &DeviceLimits, mut check: impl FnMut(&str, &WelchPeaksAttrs, &Tensor, Option<&Tensor>, &Want)) -> Vec<(&'static str, PlanName)> {
    let mut runs = Vec::new();
    for (i, case) in cases().into_iter().enumerate() {
        let x = case_input(&case, i as u64);
        let w = window_for(&case.attrs);
        let want = Want::of(&case.attrs, &x, w.as_ref());
        for name in PlanName::ALL {
            let a = WelchPeaksAttrs { plan: Some(name), ..case.attrs.clone() };
            let Ok(p) = plan(&a, &rlx_opt::analysis::plan::f32_type(&case.shape), target, limits) else { continue };
            if p.name != name {
                continue;
            }
            check(&format!("{} with {name} on {}", case.name, target.name()), &a, &x, w.as_ref(), &want);
            runs.push((case.name, name));
        }
    }
    runs
}

/// Every plan ran on some case, and every case under at least two plans
/// (one pair per entry splits into nothing: its `split` runs as `batch`),
/// in either multi-pass form: with the radix-2 stages asked for
/// (`limits.four_step` off), a length past one block that is not a power
/// of two takes the four-step FFT, never a refusal.
fn assert_every_plan_ran(target: Target, runs: &[(&str, PlanName)]) {
    for plan in PlanName::ALL {
        assert!(runs.iter().any(|(_, p)| *p == plan), "{plan} never ran: {runs:?}");
    }
    for case in cases() {
        let plans = runs.iter().filter(|(c, _)| *c == case.name).count();
        let want = 1 + usize::from(case.attrs.segments > 2);
        assert!(plans >= want, "{} on {}: {plans} plan(s) ran", case.name, target.name());
    }
}

/// CUDA's assumed limits with every plan form off (the radix-2 multi-pass
/// stages, a one-segment entry paired with zeros, a block per log-mel
/// frame): the base each test adds one form to, so that both sides of
/// every form stay covered whatever the defaults.
fn first_cuda_forms() -> DeviceLimits {
    DeviceLimits::assumed(Target::Cuda).with_opt_ins(|_| Some(false))
}

#[test]
fn cpu_plans_match_the_reference() {
    let runs = each_plan(Target::Cpu, &DeviceLimits::assumed(Target::Cpu), |what, a, x, w, want| {
        assert_matches(what, a, want, &cpu_kernel(a, x.view(), w.map(Tensor::view)).unwrap());
        // Chunk counts that do and do not divide the pairs, down to one.
        let g = geometry(a, x.view(), w.map(Tensor::view)).unwrap();
        for parallelism in [1, 3, 7, 64, 100_000] {
            let mut out = vec![0f32; want.peaks.data.len()];
            let device = DeviceLimits { parallelism, ..DeviceLimits::assumed(Target::Cpu) };
            cpu_kernel_split(a, &g, x.view(), w.map(Tensor::view), &mut out, &device);
            assert_matches(&format!("{what}, parallelism {parallelism}"), a, want, &Tensor::new(want.peaks.shape.clone(), out));
        }
    });
    // Batch on every case; split wherever an entry has pairs to spread (one
    // pair per entry splits into one chunk: the batch plan itself).
    for case in cases() {
        let want = 1 + usize::from(case.attrs.segments > 2);
        assert_eq!(runs.iter().filter(|(c, _)| *c == case.name).count(), want, "{}: {runs:?}", case.name);
    }
}

/// Every GPU plan's launch list (`lower::launches`) run launch by launch
/// through the CPU passes (`runtime::welch::passes`), as RLX runs a plan
/// split into ops where an op has no GPU kernel: a launch missing or out of
/// order leaves a buffer unwritten or read too early, and the peaks wrong.
#[test]
fn every_gpu_plans_launches_on_the_cpu_match_the_reference() {
    use rlx_opt::runtime::welch::passes::run_launches;
    // CUDA in both multi-pass forms (radix-2 stages, four-step).
    let cuda = DeviceLimits { parallelism: 7, ..first_cuda_forms() };
    let wgpu = DeviceLimits { parallelism: 7, ..DeviceLimits::assumed(Target::Wgpu) };
    for (target, limits) in [(Target::Wgpu, wgpu), (Target::Cuda, cuda), (Target::Cuda, DeviceLimits { four_step: true, ..cuda })] {
        let runs = each_plan(target, &limits, |what, a, x, w, want| {
            let k = plan(a, &rlx_opt::analysis::plan::f32_type(&x.shape), target, &limits).unwrap().kernel.unwrap();
            let got = run_launches(a, &k, x.view(), w.map(Tensor::view)).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_matches(&format!("{what}, its launches on the CPU"), a, want, &got);
        });
        assert_every_plan_ran(target, &runs);
    }
}

#[test]
fn wgpu_plans_match_the_reference() {
    let Some(forms) = common::wgpu_forms("wgpu_plans_match_the_reference") else { return };
    for (form, kernels) in forms {
        // Uneven chunks: 7 workgroups' worth of parallelism.
        let uneven = DeviceLimits { parallelism: 7, ..kernels.limits() };
        let kernels = kernels.planning_with(uneven);
        let limits = kernels.limits();
        let runs = each_plan(Target::Wgpu, &limits, |what, a, x, w, want| {
            let what = format!("{what} ({form})");
            assert_matches(&what, a, want, &kernels.run(a, x, w).unwrap_or_else(|e| panic!("{what}: {e}")));
        });
        assert_every_plan_ran(Target::Wgpu, &runs);
    }
}

/// The loop-budget model (`analysis::loop_budget`) against lavapipe at
/// shapes it was not fitted to (n_fft 512 and 64; the fit took n_fft 16,
/// 256 and 4096): one workgroup of the batch plan, planned with no budget,
/// over a tenth fewer pairs than the model's most runs right, over a tenth
/// more is cut short by lavapipe's limiter. Only lavapipe has the limiter;
/// elsewhere this skips, visibly.
#[test]
fn the_loop_budget_model_predicts_lavapipe_where_it_was_not_fitted() {
    let what = "the_loop_budget_model_predicts_lavapipe_where_it_was_not_fitted";
    let Some(forms) = common::wgpu_forms(what) else { return };
    for (form, kernels) in forms {
        if !kernels.adapter.contains("llvmpipe") {
            return common::skip(what, &format!("{} is not lavapipe, which alone has the limiter", kernels.adapter), false);
        }
        let unlimited = DeviceLimits { max_loop_iterations: u64::MAX, ..kernels.limits() };
        the_model_predicts(form, &kernels.planning_with(unlimited), &unlimited);
    }
}

/// [`the_loop_budget_model_predicts_lavapipe_where_it_was_not_fitted`] for one form of the kernels.
fn the_model_predicts(form: &str, kernels: &rlx_opt::runtime::wgpu_kernel::WgpuKernels, unlimited: &DeviceLimits) {
    use rlx_opt::analysis::loop_budget::{KernelLoops, LAVAPIPE_LOOP_ITERATIONS};
    for (n_fft, k) in [(512u64, 16u64), (64, 8)] {
        let loops = KernelLoops { n_fft, threads: n_fft.min(256), bins: n_fft / 2 + 1, k };
        let most = (1..).find(|p| loops.one_pass_batch(p + 1) > LAVAPIPE_LOOP_ITERATIONS).unwrap();
        for (pairs, fits) in [(most * 9 / 10, true), (most * 11 / 10, false)] {
            let a = WelchPeaksAttrs { plan: Some(PlanName::Batch), ..attrs(InputLayout::Rows, n_fft, n_fft, 2 * pairs, k, false) };
            let x = input(&[2 * pairs as usize, n_fft as usize], pairs);
            let p = plan(&a, &rlx_opt::analysis::plan::f32_type(&x.shape), Target::Wgpu, unlimited).unwrap();
            assert_eq!((p.name, p.kernel.as_ref().map(|k| k.groups)), (PlanName::Batch, Some(1)), "n_fft {n_fft}: one workgroup of the batch plan");
            let got = kernels.run(&a, &x, None).unwrap();
            let result = check_matches(&format!("n_fft {n_fft}, {pairs} pairs (the model's most: {most})"), &a, &Want::of(&a, &x, None), &got);
            assert_eq!(result.is_ok(), fits, "{form}: n_fft {n_fft}, {pairs} pairs, the model's most {most}: {result:?}");
        }
    }
}

/// Every CUDA plan case, both multi-pass FFT forms (the radix-2 stages,
/// `RLX_OPT_CUDA_FOUR_STEP=0`, and the four-step FFT, the default): NVRTC compiles it (for sm_90 with an
/// argument per operand, for sm_80 with RLX's entry points; for sm_90 with
/// the occupancy bound `lower::cuda::compile_for` keeps, and the other
/// source forms), each launch's entry there, no warning, no spill.
#[cfg(feature = "cuda")]
#[test]
fn cuda_plans_compile_for_every_arch_and_form() {
    use rlx_opt::lower::{Bindings, cuda, specialize_for};
    if !cuda::nvrtc_available() {
        return common::skip("cuda_plans_compile_for_every_arch_and_form", "NVRTC (libnvrtc.so.12) not on LD_LIBRARY_PATH", true);
    }
    let radix_2 = DeviceLimits { parallelism: 7, ..first_cuda_forms() };
    for limits in [radix_2, DeviceLimits { four_step: true, ..radix_2 }] {
        let compiled = each_plan(Target::Cuda, &limits, |what, a, x, _, _| {
            let spec = specialize_for(a, &x.shape, Target::Cuda, &limits).unwrap();
            // Both archs and both kinds of entry points, two compiles a case.
            // Once more with the other source forms together (the occupancy
            // bound, the warps' top-k and the load pass, what a GPU session
            // compares): no NVRTC warning and no spill in any case, and some
            // occupancy bound kept.
            // A kernel takes the register FFT or the load pass, never both:
            // once more with the register FFT, and the occupancy bound,
            // where it fits.
            let default = cuda::SourceForms::default();
            let opt_in = cuda::SourceForms { occupancy: true, warp_topk: true, load_pass: true, register_fft: false };
            let register = cuda::SourceForms { occupancy: true, register_fft: true, ..default };
            let mut opt_ins = if limits.four_step { vec![] } else { vec![("sm_90", Bindings::Buffers, opt_in), ("sm_80", Bindings::RlxArena { stage: 0 }, opt_in)] };
            if !limits.four_step && cuda::register_fft_fits(&spec) {
                opt_ins.extend([("sm_90", Bindings::Buffers, register), ("sm_80", Bindings::RlxArena { stage: 0 }, register)]);
            }
            for (arch, bindings, forms) in [("sm_90", Bindings::Buffers, default), ("sm_80", Bindings::RlxArena { stage: 0 }, default)].into_iter().chain(opt_ins) {
                let (source, ptx, log) = cuda::compile_for(&spec, bindings, arch, forms).unwrap_or_else(|e| panic!("{what}, {bindings:?}, {arch}, {forms:?}: {e}"));
                assert!(!log.contains("warning"), "{what}, {bindings:?}, {arch}, {forms:?}: NVRTC warns:\n{log}");
                // The one-pass entries keep an occupancy bound (compile_for
                // drops each that spills, down to none).
                let one_pass = spec.kernel.fft == rlx_opt::analysis::FftPasses::OnePass;
                let bounded = !source.contains("#define MIN_BLOCKS 1u\n");
                assert!(!(forms.occupancy && one_pass) || bounded, "{what}, {bindings:?}, {arch}, {forms:?}: every occupancy bound spilled");
                for rlx_opt::lower::Launch { entry, .. } in rlx_opt::lower::launches(&spec.kernel) {
                    let entry = if bindings == Bindings::Buffers { entry.name().to_string() } else { cuda::rlx_entry(entry) };
                    assert!(ptx.contains(&format!(".entry {entry}(")), "{what}, {bindings:?}: no entry point {entry}");
                }
            }
        });
        assert_every_plan_ran(Target::Cuda, &compiled);
    }
    // The packed one-segment form: NVRTC compiles each case it changes,
    // with every source form, without a warning or a spill.
    let packed = DeviceLimits { packed_segment: true, ..radix_2 };
    let mut packed_cases = std::collections::BTreeSet::new();
    each_plan(Target::Cuda, &packed, |what, a, x, _, _| {
        let spec = specialize_for(a, &x.shape, Target::Cuda, &packed).unwrap();
        if !spec.kernel.packed {
            return;
        }
        let opt_in = cuda::SourceForms { occupancy: true, warp_topk: true, load_pass: true, register_fft: true };
        for forms in [cuda::SourceForms::default(), opt_in] {
            for (arch, bindings, entry) in [("sm_90", Bindings::Buffers, ".entry welch_peaks("), ("sm_80", Bindings::RlxArena { stage: 0 }, ".entry rlx_welch_peaks(")] {
                let (source, ptx, log) = cuda::compile_for(&spec, bindings, arch, forms).unwrap_or_else(|e| panic!("{what}, packed, {bindings:?}, {arch}, {forms:?}: {e}"));
                assert!(!log.contains("warning"), "{what}, packed, {bindings:?}, {arch}, {forms:?}: NVRTC warns:\n{log}");
                assert!(ptx.contains(entry), "{what}, packed, {bindings:?}: no {entry}");
                assert!(!forms.occupancy || !source.contains("#define MIN_BLOCKS 1u\n"), "{what}, packed, {bindings:?}, {arch}: every occupancy bound spilled");
            }
        }
        packed_cases.insert(what.split(' ').next().unwrap_or_default().to_string());
    });
    assert_eq!(packed_cases.iter().map(String::as_str).collect::<Vec<_>>(), PACKED_CASES, "the cases CUDA packs");
}

/// Where a GPU is, every CUDA plan case runs under the device's own limits
/// against the reference, in the source forms the environment asks for
/// (`scripts/gpu-run.sh`'s plans steps run this test and skip the
/// compile-only one above, minutes of NVRTC that CI has already done).
#[cfg(feature = "cuda")]
#[test]
fn cuda_plans_match_the_reference_on_a_gpu() {
    let kernels = match rlx_opt::runtime::cuda_kernel::CudaKernels::new() {
        Ok(k) => k,
        Err(reason) => return common::skip("cuda_plans_match_the_reference_on_a_gpu", &reason.to_string(), false),
    };
    let runs = each_plan(Target::Cuda, &kernels.limits(), |what, a, x, w, want| {
        assert_matches(what, a, want, &kernels.run(a, x, w).unwrap_or_else(|e| panic!("{what}: {e}")));
    });
    assert_every_plan_ran(Target::Cuda, &runs);
}

/// Every CUDA plan's kernels run on the CPU (`tests/cuda_emulation`: the
/// specialised source compiled by the host C++ compiler against a shim in
/// which each CUDA thread is a fiber, switched at every barrier, shuffle
/// and warp reduction), against the reference: the first forms (every
/// form off) with the radix-2 stages and with the four-step FFT, then each
/// source form alone where it changes the source (the warps' top-k, the
/// load pass, the register FFT), and the packed segment with and without
/// the load pass; the warp reductions of sm_80 and later everywhere and the shuffles of
/// older GPUs on the batch plans (multi-pass plans of up to 2^20 points:
/// beyond, a form takes most of a minute). A kernel that reads shared memory before
/// the barrier that publishes it, or indexes a bin wrongly, fails here
/// before a GPU session spends its minutes on it; whether a form is fast,
/// and whether NVRTC's code matches, only a GPU says.
#[test]
fn cuda_plans_emulated_on_the_cpu_match_the_reference() {
    use rlx_opt::lower::{Bindings, cuda, specialize_for};
    let mut emulator = match cuda_emulation::compiler() {
        Ok(gxx) => cuda_emulation::Emulator::new(gxx, "plans"),
        Err(cuda_emulation::NoCompiler(reason)) => return common::skip("cuda_plans_emulated_on_the_cpu_match_the_reference", &reason, true),
    };
    let radix_2 = DeviceLimits { parallelism: 7, ..first_cuda_forms() };
    // A source both forms share (every one-pass plan) runs once.
    let mut seen = std::collections::HashSet::new();
    let mut warp_topk_runs = 0;
    let mut load_pass_cases = std::collections::BTreeSet::new();
    let mut register_fft_runs = std::collections::BTreeSet::new();
    for limits in [radix_2, DeviceLimits { four_step: true, ..radix_2 }] {
        let runs = each_plan(Target::Cuda, &limits, |what, a, x, w, want| {
            let spec = specialize_for(a, &x.shape, Target::Cuda, &limits).unwrap();
            // A multi-pass plan over millions of points takes most of a
            // minute a form emulated; the smaller cases cover its kernels.
            if spec.kernel.spectra_len > 1 << 20 {
                return;
            }
            // The warps' top-k only changes the one-pass batch kernel's
            // blocks of several warps.
            let warps = spec.kernel.threads > 32 && a.plan == Some(PlanName::Batch);
            let one_pass = spec.kernel.fft == rlx_opt::analysis::FftPasses::OnePass;
            let forms = [
                cuda::SourceForms::default(),
                cuda::SourceForms { warp_topk: warps, ..Default::default() },
                cuda::SourceForms { load_pass: one_pass, ..Default::default() },
                cuda::SourceForms { register_fft: one_pass, ..Default::default() },
            ];
            for forms in forms {
                let source = cuda::source_for(&spec, Bindings::Buffers, forms).unwrap();
                if !seen.insert(source.clone()) {
                    continue;
                }
                let archs: &[u32] = if a.plan == Some(PlanName::Batch) { &[800, 700] } else { &[800] };
                for &arch in archs {
                    let what = format!("{what}, {forms:?}, emulated for sm_{}", arch / 10);
                    let got = emulator.run_welch(&spec, &source, arch, x, w).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_matches(&what, a, want, &Tensor::new(want.peaks.shape.clone(), got));
                    warp_topk_runs += usize::from(forms.warp_topk);
                    if source.contains("#define LOAD_PASS 1\n") {
                        load_pass_cases.insert(what.split(' ').next().unwrap_or_default().to_string());
                    }
                    if source.contains("#define REGISTER_FFT 1\n") {
                        register_fft_runs.insert(format!("{} {}", what.split(' ').next().unwrap_or_default(), a.plan.map_or("-".into(), |p| p.to_string())));
                    }
                }
            }
        });
        assert_every_plan_ran(Target::Cuda, &runs);
    }
    // The packed one-segment form (its sources differ from every unpacked
    // one), with and without the load pass, against the reference: the
    // split of each bin from the half-length FFT, its twiddle and weight,
    // and a frame padded past an odd length.
    let packed = DeviceLimits { packed_segment: true, ..radix_2 };
    let (mut packed_cases, mut packed_load_passes) = (std::collections::BTreeSet::new(), 0);
    each_plan(Target::Cuda, &packed, |what, a, x, w, want| {
        let spec = specialize_for(a, &x.shape, Target::Cuda, &packed).unwrap();
        if !spec.kernel.packed {
            return;
        }
        for forms in [cuda::SourceForms::default(), cuda::SourceForms { load_pass: true, ..Default::default() }] {
            let source = cuda::source_for(&spec, Bindings::Buffers, forms).unwrap();
            if !seen.insert(source.clone()) {
                continue;
            }
            for arch in [800, 700] {
                let what = format!("{what}, packed, {forms:?}, emulated for sm_{}", arch / 10);
                let got = emulator.run_welch(&spec, &source, arch, x, w).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_matches(&what, a, want, &Tensor::new(want.peaks.shape.clone(), got));
            }
            packed_load_passes += usize::from(source.contains("#define LOAD_PASS 1\n"));
        }
        packed_cases.insert(what.split(' ').next().unwrap_or_default().to_string());
    });
    assert_eq!(packed_cases.iter().map(String::as_str).collect::<Vec<_>>(), PACKED_CASES, "the cases CUDA packs");
    // 1024 packed: a 512-point FFT, 8 points a thread of 64, whole first-pass butterflies.
    assert_eq!(packed_load_passes, 1, "the load pass ran on the packed 1024 alone");
    // k300_planar, n1000 and n4096_pairs450 have blocks of several warps
    // whose lists fit (n4096_k2049's do not), under both archs.
    assert!(warp_topk_runs >= 6, "the warps' top-k ran {warp_topk_runs} times");
    // The load pass fits the cases of the powers of two from 128 points.
    let fits = ["frames_window", "k300_planar", "n256_ortho_loud", "n4096_k2049", "n4096_pairs450", "one_segment_n1024", "signal_padded_window_odd"];
    assert_eq!(load_pass_cases.iter().map(String::as_str).collect::<Vec<_>>(), fits, "the cases the load pass ran");
    // The register FFT fits the one-warp lengths of 64 to 256 points that
    // 32 divides (192 of radices 2 and 3 a lane), in both one-pass plans.
    let want = ["batch1_segments1e5 batch", "batch1_segments1e5 split", "frames_window batch", "frames_window split", "n192_frames_window batch", "n192_frames_window split", "n256_ortho_loud batch", "n256_ortho_loud split", "signal_padded_window_odd batch", "signal_padded_window_odd split"];
    let register: Vec<&str> = register_fft_runs.iter().map(String::as_str).collect();
    assert_eq!(register, want, "the cases and plans the register FFT ran");
}

/// Every CUDA plan's kernels in RLX's signature (`rlx_…` entries over one
/// arena, `Bindings::RlxArena`), emulated on the CPU as rlx-ext's ops
/// launch them (`cuda_emulation::Emulator::run_welch_rlx`: an op a launch
/// on a 1-D grid, each result a tensor of its own at a 16-byte boundary,
/// sentinels between, a radix-2 stage's index in extra e0), against the
/// reference: the first forms (every form off) in every plan case, the
/// four-step FFT in the multi-pass ones, the packed segment and the
/// register FFT where they apply: the forms RLX's CUDA sessions take (GPU
/// runs of this signature: the first forms, then every form on, on an
/// H200). Every entry of
/// RLX's signature is emulated (asserted), and a value written to an
/// operand or between the tensors fails too.
#[test]
fn cuda_plans_in_rlx_s_signature_emulated_match_the_reference() {
    use rlx_opt::analysis::FftPasses;
    use rlx_opt::lower::{Bindings, cuda, specialize_for};
    let mut emulator = match cuda_emulation::compiler() {
        Ok(gxx) => cuda_emulation::Emulator::new(gxx, "plans-rlx"),
        Err(cuda_emulation::NoCompiler(reason)) => return common::skip("cuda_plans_in_rlx_s_signature_emulated_match_the_reference", &reason, true),
    };
    let radix_2 = DeviceLimits { parallelism: 7, ..first_cuda_forms() };
    let limits = [
        ("first", radix_2),
        ("four-step", DeviceLimits { four_step: true, ..radix_2 }),
        ("packed", DeviceLimits { packed_segment: true, ..radix_2 }),
    ];
    let mut ran = std::collections::BTreeMap::<String, usize>::new();
    let mut signatures = std::collections::HashSet::new();
    // The entries each form's emulation ran: what the test claims to cover.
    let mut emulated = std::collections::BTreeMap::<String, std::collections::BTreeSet<&'static str>>::new();
    for (form, limits) in limits {
        let runs = each_plan(Target::Cuda, &limits, |what, a, x, w, want| {
            let spec = specialize_for(a, &x.shape, Target::Cuda, &limits).unwrap();
            // The smaller cases (up to 2^18 values in, 2^18 points of
            // spectra) take every entry; the larger take most of a minute
            // each emulated.
            let changed = match form {
                "four-step" => matches!(spec.kernel.fft, FftPasses::FourStep { .. }),
                "packed" => spec.kernel.packed,
                _ => true,
            };
            if x.data.len() > 1 << 18 || spec.kernel.spectra_len > 1 << 18 || !changed {
                return;
            }
            // What the signature changes is which operand and extra each
            // entry reads: one case for each form's launches, with and
            // without a window (the Buffers emulation above runs them all).
            let entries: Vec<&'static str> = rlx_opt::lower::launches(&spec.kernel).iter().map(|l| l.entry.name()).collect();
            // Whether the register FFT fits is part of the key: else the
            // first case of a signature decides whether that form runs.
            if !signatures.insert((form, entries.clone(), w.is_some(), cuda::register_fft_fits(&spec))) {
                return;
            }
            let mut sources = vec![(form.to_string(), cuda::SourceForms::default())];
            if form == "first" && cuda::register_fft_fits(&spec) {
                sources.push(("register-fft".into(), cuda::SourceForms { register_fft: true, ..Default::default() }));
            }
            for (name, forms) in sources {
                let source = cuda::source_for(&spec, Bindings::RlxArena { stage: 0 }, forms).unwrap();
                let what = format!("{what}, {name}, in RLX's signature");
                let got = emulator.run_welch_rlx(&spec, &source, 800, x, w).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_matches(&what, a, want, &Tensor::new(want.peaks.shape.clone(), got));
                emulated.entry(name.clone()).or_default().extend(entries.iter().copied());
                *ran.entry(name).or_default() += 1;
            }
        });
        if form == "first" {
            assert_every_plan_ran(Target::Cuda, &runs);
        }
    }
    let counts: Vec<(&str, bool)> = ran.iter().map(|(form, n)| (form.as_str(), *n > 0)).collect();
    assert_eq!(counts, [("first", true), ("four-step", true), ("packed", true), ("register-fft", true)], "{ran:?}");
    println!("in RLX's signature: {ran:?}; entries {emulated:?}");
    // The radix-2 multi-pass launches in the first forms, the four-step's
    // columns and rows in its own; between them every entry of the signature.
    let first = &emulated["first"];
    assert!(["welch_peaks", "partial_psd", "load", "stage", "peaks_of", "partial_of", "peaks_of_partials"].iter().all(|e| first.contains(e)), "the first forms emulated only {first:?}");
    assert!(["columns", "rows"].iter().all(|e| emulated["four-step"].contains(e)), "the four-step form emulated only {:?}", emulated["four-step"]);
    let every: std::collections::BTreeSet<&str> = emulated.values().flatten().copied().collect();
    assert_eq!(every.len(), 9, "entries emulated: {every:?}");
}

/// A multi-pass plan's spectra at an odd offset of RLX's arena (RLX places
/// every tensor at a 16-byte boundary, but its kernel contract does not
/// promise it): the kernels read and write the spectra as `float2`, so the
/// first launch that would touch them there stops with `__trap()` (an
/// error RLX reports), rather than running with misaligned accesses
/// (which the host CPU, unlike a GPU, would take in its stride). The same
/// plan with its results aligned matches the reference.
#[test]
fn cuda_multipass_spectra_at_an_odd_offset_stop_the_launch() {
    use rlx_opt::lower::{Bindings, cuda, specialize_for};
    let mut emulator = match cuda_emulation::compiler() {
        Ok(gxx) => cuda_emulation::Emulator::new(gxx, "plans-rlx-odd"),
        Err(cuda_emulation::NoCompiler(reason)) => return common::skip("cuda_multipass_spectra_at_an_odd_offset_stop_the_launch", &reason, true),
    };
    let limits = DeviceLimits::assumed(Target::Cuda);
    let case = cases().into_iter().find(|c| c.name == "frames_window").expect("the frames_window case");
    let x = input(&case.shape, 3);
    let w = window_for(&case.attrs);
    let want = Want::of(&case.attrs, &x, w.as_ref());
    let a = WelchPeaksAttrs { plan: Some(PlanName::Multipass), ..case.attrs.clone() };
    let spec = specialize_for(&a, &x.shape, Target::Cuda, &limits).unwrap();
    assert!(rlx_opt::lower::launches(&spec.kernel).iter().any(|l| l.writes() == rlx_opt::lower::KernelBuffer::Spectra), "a multi-pass plan writes spectra");
    let source = cuda::source_for(&spec, Bindings::RlxArena { stage: 0 }, cuda::SourceForms::default()).unwrap();
    let aligned = emulator.run_welch_rlx(&spec, &source, 800, &x, w.as_ref()).unwrap_or_else(|e| panic!("aligned: {e}"));
    assert_matches("frames_window, multi-pass, in RLX's signature, aligned", &a, &want, &Tensor::new(want.peaks.shape.clone(), aligned));
    match emulator.run_welch_rlx_placed(&spec, &source, 800, &x, w.as_ref(), cuda_emulation::Results::Odd) {
        Err(e) => assert!(e.contains("__trap(): the kernel stopped the launch"), "the launch failed, but not by the kernel's trap: {e}"),
        Ok(_) => panic!("spectra at an odd offset ran to the end"),
    }
}

/// The register FFT (`fft_warp_run`: each lane's own DFT, the twiddles,
/// five stages of shuffles) against rustfft at every length it takes
/// (`fft::warp_radices`: lanes of one and of two radices, 2 to 8
/// points), one warp emulated on the CPU: each bin where
/// `fft_warp_lane` says it is.
#[test]
fn the_register_fft_emulated_matches_rustfft() {
    let mut emulator = match cuda_emulation::compiler() {
        Ok(gxx) => cuda_emulation::Emulator::new(gxx, "register_fft"),
        Err(cuda_emulation::NoCompiler(reason)) => return common::skip("the_register_fft_emulated_matches_rustfft", &reason, true),
    };
    let lengths: Vec<u64> = (2..=16).map(|p| 32 * p).filter(|n| rlx_opt::lower::fft::warp_radices(*n).is_some()).collect();
    assert_eq!(lengths, [64, 96, 128, 160, 192, 256]);
    for n in lengths {
        let fft = rlx_opt::lower::fft::cuda(n).unwrap();
        let kernel = format!(
            r#"
#define WG 32u
{fft}
extern "C" __global__ void k(float* out) {{
    const unsigned int lane = threadIdx.x;
    float2 v[FFT_WARP_POINTS];
    for (unsigned int m = 0u; m < FFT_WARP_POINTS; m++) {{
        const unsigned int t = lane + 32u * m;
        v[m] = make_float2((float)(t * 37u % 101u) - 50.0f, (float)(t * 11u % 53u) - 26.0f);
    }}
    fft_warp_run(v, lane);
    for (unsigned int q = 0u; q < FFT_WARP_POINTS; q++) {{
        const unsigned int bin = q + FFT_WARP_POINTS * fft_warp_lane(lane);
        out[2u * bin] = v[q].x;
        out[2u * bin + 1u] = v[q].y;
    }}
}}
"#
        );
        let buffers = [cuda_emulation::Buffer { name: "out", element: "float", len: 2 * n, input: None }];
        let calls = [cuda_emulation::Call { entry: "k".into(), grid: (1, 1), threads: 32, args: vec!["out".into()] }];
        let got = emulator.run(&kernel, 800, &buffers, &calls, "out").unwrap_or_else(|e| panic!("n {n}: {e}"));
        let mut want: Vec<rustfft::num_complex::Complex<f32>> = (0..n).map(|t| rustfft::num_complex::Complex::new((t * 37 % 101) as f32 - 50.0, (t * 11 % 53) as f32 - 26.0)).collect();
        rustfft::FftPlanner::new().plan_fft_forward(n as usize).process(&mut want);
        for (bin, (out, want)) in got.chunks_exact(2).zip(&want).enumerate() {
            let error = (out[0] - want.re).abs().max((out[1] - want.im).abs());
            assert!(error < 1e-6 * 50.0 * n as f32, "n {n}: bin {bin} is {out:?}, rustfft's {want}");
        }
    }
}

/// The cases of one segment an entry and an even n_fft from 4: what CUDA's
/// packed form (`RLX_OPT_CUDA_PACKED_SEGMENT`) changes.
const PACKED_CASES: [&str; 5] = ["one_segment", "one_segment_n1024", "one_segment_n400_ortho_loud", "one_segment_n400_signal_window", "one_segment_n6"];

/// The load pass (`fft_load_first_pass`, then `fft_run_after_first`) is
/// the FFT's first pass, bit for bit: one block stores its samples both
/// ways and transforms both, emulated on the CPU, over first passes of one
/// stage and of two (R2 2 and 4: the radix-16 passes of
/// `RLX_OPT_CUDA_PASS_POINTS=16`, and 1000's pass of 4·2), and several
/// butterflies a thread; the default way also against rustfft.
#[test]
fn the_load_pass_emulated_is_the_first_pass_bit_for_bit() {
    let mut emulator = match cuda_emulation::compiler() {
        Ok(gxx) => cuda_emulation::Emulator::new(gxx, "load_pass"),
        Err(cuda_emulation::NoCompiler(reason)) => return common::skip("the_load_pass_emulated_is_the_first_pass_bit_for_bit", &reason, true),
    };
    // (n, threads, most points a pass): first passes of 4 (two and four
    // butterflies a thread), 4·4 and 4·2.
    for (n, threads, max_points) in [(256u64, 32u32, 10u32), (128, 8, 4), (1024, 64, 16), (512, 32, 16), (1000, 25, 10)] {
        let fft = rlx_opt::lower::fft::cuda_with_pass_points(n, max_points).unwrap();
        let kernel = format!(
            r#"
#define WG {threads}u
{fft}
static_assert(FFT_N % WG == 0u && (FFT_N / FFT_FIRST_POINTS) % WG == 0u, "whole butterflies a thread");
extern "C" __global__ void k(float* out) {{
    __shared__ float2 stored[FFT_BUF_LEN];
    __shared__ float2 passed[FFT_BUF_LEN];
    const unsigned int tid = threadIdx.x;
    float2 v[FFT_N / WG];
    for (unsigned int i = 0u; i < FFT_N / WG; i++) {{
        const unsigned int t = tid + i * WG;
        v[i] = make_float2((float)(t * 37u % 101u) - 50.0f, (float)(t * 11u % 53u) - 26.0f);
        stored[fft_at(fft_position(t))] = v[i];
    }}
    fft_load_first_pass(passed, v, tid);
    fft_sync();
    fft_run(stored, tid);
    fft_run_after_first(passed, tid);
    for (unsigned int t = tid; t < FFT_N; t += WG) {{
        out[4u * t] = stored[fft_at(t)].x;
        out[4u * t + 1u] = stored[fft_at(t)].y;
        out[4u * t + 2u] = passed[fft_at(t)].x;
        out[4u * t + 3u] = passed[fft_at(t)].y;
    }}
}}
"#
        );
        let buffers = [cuda_emulation::Buffer { name: "out", element: "float", len: 4 * n, input: None }];
        let calls = [cuda_emulation::Call { entry: "k".into(), grid: (1, 1), threads, args: vec!["out".into()] }];
        let got = emulator.run(&kernel, 800, &buffers, &calls, "out").unwrap_or_else(|e| panic!("n {n}: {e}"));
        let mut want: Vec<rustfft::num_complex::Complex<f32>> = (0..n).map(|t| rustfft::num_complex::Complex::new((t * 37 % 101) as f32 - 50.0, (t * 11 % 53) as f32 - 26.0)).collect();
        rustfft::FftPlanner::new().plan_fft_forward(n as usize).process(&mut want);
        for (bin, (out, want)) in got.chunks_exact(4).zip(&want).enumerate() {
            assert_eq!(out[..2], out[2..], "n {n}, {max_points} points a pass: bin {bin}, read back against the load pass");
            let error = (out[0] - want.re).abs().max((out[1] - want.im).abs());
            assert!(error < 1e-3 * want.norm().max(n as f32), "n {n}: bin {bin} is {:?}, rustfft's {want}", &out[..2]);
        }
    }
}

/// The check itself: a result with a bin shifted, or with the right powers
/// under the wrong bins, is rejected; bins swapped between two peaks of equal
/// power (a tie) are not. On a real case, the reference's own result.
#[test]
fn the_check_rejects_a_wrong_bin_and_accepts_a_tie() {
    // A row of 5 bins, k 3: bins 3 and 1 tie at 8.0.
    let a = attrs(InputLayout::Rows, 8, 8, 1, 3, false);
    assert_eq!(a.bins(), 5);
    let want = Want { peaks: Tensor::new(vec![1, 6], vec![4.0, 9.0, 3.0, 8.0, 1.0, 8.0]), powers: vec![0.5, 8.0, 2.0, 8.0, 9.0] };
    let with = |data: [f32; 6]| check_matches("synthetic", &a, &want, &Tensor::new(vec![1, 6], data.to_vec()));
    assert_eq!(with([4.0, 9.0, 3.0, 8.0, 1.0, 8.0]), Ok(()));
    // The tie broken the other way.
    assert_eq!(with([4.0, 9.0, 1.0, 8.0, 3.0, 8.0]), Ok(()));
    // The right powers, the leading peak's bin shifted by one.
    let shifted = with([3.0, 9.0, 3.0, 8.0, 1.0, 8.0]).unwrap_err();
    assert!(shifted.contains("row 0 peak 0: bin 3"), "{shifted}");
    // The right powers under bins the reference gives other powers.
    assert!(with([4.0, 9.0, 2.0, 8.0, 1.0, 8.0]).is_err());
    assert!(with([0.0, 9.0, 3.0, 8.0, 1.0, 8.0]).is_err());
    // A bin past the spectrum, or none.
    assert!(with([5.0, 9.0, 3.0, 8.0, 1.0, 8.0]).is_err());
    assert!(with([-1.0, 9.0, 3.0, 8.0, 1.0, 8.0]).is_err());
    // A power off by more than the tolerance.
    assert!(with([4.0, 9.01, 3.0, 8.0, 1.0, 8.0]).is_err());

    // A real case: the reference's result passes, and with one bin moved one
    // place (its power kept) it fails.
    let case = cases().into_iter().find(|c| c.name == "frames_window").unwrap();
    let x = input(&case.shape, 3);
    let w = window_for(&case.attrs);
    let want = Want::of(&case.attrs, &x, w.as_ref());
    assert_eq!(check_matches("reference", &case.attrs, &want, &want.peaks), Ok(()));
    let mut moved = want.peaks.clone();
    moved.data[2 * 5] += 1.0; // row 0, peak 5's bin (interleaved)
    assert!(check_matches("moved", &case.attrs, &want, &moved).is_err());
    // A kernel's result likewise.
    let mut kernel = cpu_kernel(&case.attrs, x.view(), w.as_ref().map(Tensor::view)).unwrap();
    assert_eq!(check_matches("kernel", &case.attrs, &want, &kernel), Ok(()));
    let last_row = kernel.data.len() - 2 * case.attrs.k as usize;
    kernel.data[last_row] -= 1.0;
    assert!(check_matches("kernel, a bin shifted", &case.attrs, &want, &kernel).is_err());
}
