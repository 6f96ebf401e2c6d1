//! The GPU kernels' FFT front end, one per language and shared by both
//! fused ops: a mixed-radix FFT (radices 4, 2, 3, 5) in workgroup (shared)
//! memory, `kernels/fft_mixed_radix.wgsl` and `kernels/fft_mixed_radix.cuh`,
//! pasted into a kernel for its `{{FFT}}` placeholder and specialised here
//! for one length. The Welch-peaks one-pass kernels and the log-mel kernels
//! include it, and so do both passes of the WGSL four-step multi-pass FFT
//! and of CUDA's (`kernels/welch_peaks_four_step.wgsl` and `.cu`: two
//! lengths in one module, the FFT pasted in twice under two prefixes),
//! which CUDA's multi-pass plans (n_fft > 4096) take by default. With
//! `RLX_OPT_CUDA_FOUR_STEP=0` they take, for a power of two, the radix-2
//! stages in device memory, a launch each.

use super::LowerError;

pub const WGSL: &str = include_str!("../../kernels/fft_mixed_radix.wgsl");
pub const CUDA: &str = include_str!("../../kernels/fft_mixed_radix.cuh");

/// The radices of the GPU kernels' mixed-radix FFT of length `n` (stage
/// order), or, for a length with a prime factor above 5, the error naming
/// it ([`crate::analysis::plan::fft_radices`]).
pub fn fft_radices(n: u64) -> Result<Vec<u32>, LowerError> {
    Ok(crate::analysis::plan::fft_radices(n)?)
}

/// The FFT's placeholders for its stages' radices (`FFT_N`, `FFT_STAGES`,
/// `FFT_RADICES`, `FFT_SPANS`: each stage's span, the product of the
/// radices before it), and for the WGSL FFT straight-line code
/// (`FFT_POSITION`: the digit reversal; `FFT_RUN`: the stages).
pub fn constants(radices: &[u32]) -> Vec<(&'static str, String)> {
    let list = |values: &[u32]| values.iter().map(|v| format!("{v}u")).collect::<Vec<_>>().join(", ");
    let spans: Vec<u32> = radices.iter().scan(1u32, |span, r| Some(std::mem::replace(span, *span * r))).collect();
    let n: u32 = radices.iter().product();
    // The digit reversal, a line per stage, last stage first (no loop: see the WGSL).
    let position: Vec<String> =
        radices.iter().zip(&spans).rev().map(|(r, span)| format!("    position += (rest % {r}u) * {span}u;\n    rest /= {r}u;")).collect();
    // The stages, in order, each a call with constants (the WGSL's `fft_run`).
    let run: Vec<String> = radices.iter().zip(&spans).map(|(r, span)| format!("    fft_stage{r}(tid, {span}u);\n    workgroupBarrier();")).collect();
    vec![
        ("FFT_N", n.to_string()),
        ("FFT_STAGES", radices.len().to_string()),
        ("FFT_RADICES", list(radices)),
        ("FFT_SPANS", list(&spans)),
        ("FFT_POSITION", position.join("\n")),
        ("FFT_RUN", run.join("\n")),
    ]
}

/// Most points a CUDA pass holds in registers by default: two stages share
/// a pass while their radices multiply to at most this (4·2, 2·3, 2·5 do
/// not exceed 10; 4·4 does). ptxas gives a radix-16 pass twice the
/// registers of a radix-4 stage (140 against 72 at n_fft 256, sm_90): half
/// the warps resident. On an H100 radix-16 passes ran the goal cell in 63
/// µs against 51.7 (`scripts/gpu-run.sh ab-passes`).
pub const MAX_PASS_POINTS: u32 = 10;

/// The CUDA FFT's passes in order, each its stages' radices (one or two)
/// and the span of its first stage: consecutive stages join while their
/// product is at most `max_points`, one round trip through shared memory
/// and one barrier where each stage alone takes its own.
pub fn passes(radices: &[u32], max_points: u32) -> Vec<(Vec<u32>, u32)> {
    let mut passes = Vec::new();
    let (mut i, mut span) = (0, 1u32);
    while i < radices.len() {
        let take = if i + 1 < radices.len() && radices[i] * radices[i + 1] <= max_points { 2 } else { 1 };
        let stages = radices[i..i + take].to_vec();
        let points: u32 = stages.iter().product();
        passes.push((stages, span));
        span *= points;
        i += take;
    }
    passes
}

/// The CUDA `fft_run`'s body (`FFT_PASSES`) for `passes`, or
/// `fft_run_after_first`'s for all but the first: a call a pass, with its
/// constants, each followed by the barrier.
fn pass_calls(passes: &[(Vec<u32>, u32)]) -> String {
    passes
        .iter()
        .map(|(stages, span)| {
            let call = match stages[..] {
                [r] => format!("fft_stage<{r}u>(buf, {span}u, tid);"),
                [r1, r2] => format!("fft_pass<{r1}u, {r2}u>(buf, {span}u, tid);"),
                _ => unreachable!("a pass holds one or two stages"),
            };
            format!("    {call}\n    fft_sync();")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The WGSL FFT of length `n`, specialised, its stage twiddles from a
/// table in workgroup memory or computed (the plan's `twiddle_table`).
pub fn wgsl(n: u64, twiddle_table: bool) -> Result<String, LowerError> {
    super::fill_constants(&wgsl_twiddles(WGSL, twiddle_table), &constants(&fft_radices(n)?))
}

/// The WGSL FFT of length `n` with its names' prefix `fft_`/`FFT_` changed
/// to `prefix`'s lower and upper case (`col` → `col_run`, `COL_N`), so
/// that a kernel can take FFTs of two lengths; its includer then gives
/// `<prefix>_get`, `<prefix>_set` and `<PREFIX>_LANES`. A length of 1 (the
/// four-step FFT of 2 or 3 points) has no stages.
pub fn wgsl_prefixed(n: u64, twiddle_table: bool, prefix: &str) -> Result<String, LowerError> {
    let radices = if n == 1 { Vec::new() } else { fft_radices(n)? };
    Ok(prefixed(&super::fill_constants(&wgsl_twiddles(WGSL, twiddle_table), &constants(&radices))?, prefix))
}

/// The CUDA FFT of length `n` (at least 2) with its names' prefix changed
/// as [`wgsl_prefixed`] does; its includer may define `<PREFIX>_LANES`
/// first (the threads of one FFT; WG otherwise).
pub fn cuda_prefixed(n: u64, prefix: &str) -> Result<String, LowerError> {
    Ok(prefixed(&cuda(n)?, prefix))
}

/// `text`, an FFT specialised for one length, with its `fft_`/`FFT_` names
/// under `prefix`'s lower and upper case.
fn prefixed(text: &str, prefix: &str) -> String {
    text.replace("fft_", &format!("{}_", prefix.to_lowercase())).replace("FFT_", &format!("{}_", prefix.to_uppercase()))
}

/// The WGSL stage twiddles' snippets, pasted in for `{{FFT_TWIDDLES}}`.
pub const WGSL_TWIDDLES_TABLE: &str = include_str!("../../kernels/fft_twiddles_table.wgsl");
pub const WGSL_TWIDDLES_COMPUTED: &str = include_str!("../../kernels/fft_twiddles_computed.wgsl");

/// `text` (holding the WGSL FFT) with its twiddles' snippet pasted in.
pub fn wgsl_twiddles(text: &str, twiddle_table: bool) -> String {
    text.replace("{{FFT_TWIDDLES}}", if twiddle_table { WGSL_TWIDDLES_TABLE } else { WGSL_TWIDDLES_COMPUTED })
}

/// The CUDA FFT of length `n`, specialised, with its twiddle table.
pub fn cuda(n: u64) -> Result<String, LowerError> {
    cuda_with_pass_points(n, pass_points())
}

/// [`cuda`] with passes of at most `max_points` (see [`passes`]), for a
/// test that compares the groupings without the environment.
pub fn cuda_with_pass_points(n: u64, max_points: u32) -> Result<String, LowerError> {
    let radices = fft_radices(n)?;
    let mut constants = constants(&radices);
    constants.extend(cuda_constants_with(&radices, max_points));
    super::fill_constants(CUDA, &constants)
}

/// The CUDA FFT's own placeholders, beside [`constants`]: its twiddle
/// table (`FFT_TWIDDLES`) and its passes (`FFT_PASSES`). Filled into the
/// source, not kept in a spec's constants (the table would fill a
/// manifest).
pub fn cuda_constants(radices: &[u32]) -> Vec<(&'static str, String)> {
    cuda_constants_with(radices, pass_points())
}

fn cuda_constants_with(radices: &[u32], max_points: u32) -> Vec<(&'static str, String)> {
    let n: u32 = radices.iter().product();
    let passes = passes(radices, max_points);
    // The first pass's radices (the second 1 for a pass of one stage), for
    // a kernel that runs it on samples in registers (`fft_first_pass`),
    // and the passes after it (`fft_run_after_first`). No stage at all (a
    // length of 1, which no plan takes) is a first pass of 1·1.
    let first = passes.first().map_or(&[][..], |(stages, _)| &stages[..]);
    // The register FFT's radices, or 0 where it does not take the length.
    let warp = warp_radices(n.into()).unwrap_or_default();
    vec![
        ("FFT_TWIDDLES", twiddle_table(n.into())),
        ("FFT_PASSES", pass_calls(&passes)),
        ("FFT_FIRST_R1", first.first().copied().unwrap_or(1).to_string()),
        ("FFT_FIRST_R2", first.get(1).copied().unwrap_or(1).to_string()),
        ("FFT_PASSES_AFTER_FIRST", pass_calls(passes.get(1..).unwrap_or(&[]))),
        ("FFT_WARP_R1", warp.first().copied().unwrap_or(0).to_string()),
        ("FFT_WARP_R2", warp.get(1).copied().unwrap_or(1).to_string()),
    ]
}

/// Lanes of the warp that runs the register FFT (`fft_warp_run`).
pub const WARP_LANES: u64 = 32;

/// Most points a lane of the register FFT holds: 8 (n_fft 256). A lane
/// keeps a pair's points, the next pair's and its bins' powers in
/// registers; ptxas (sm_90) gave the Welch kernel 96 registers at 8 points
/// (the shared-memory FFT 72–76), and past 8 far more than the
/// shared-memory form: 100–108 at 9 (288), 127–128 at 12 (384), 167 at
/// 15 (480, where no occupancy bound compiled without a spill) and 205 at
/// 16 (512, against 134–140).
pub const MAX_WARP_POINTS: u64 = 8;

/// The radices of the P-point DFT each lane of the CUDA register FFT
/// (`fft_warp_run` in kernels/fft_mixed_radix.cuh) takes of its own
/// points, P = n / 32, in `fft_first_pass`'s order: where 32 divides `n`
/// and P is 2 to [`MAX_WARP_POINTS`] points of at most two radices (64,
/// 96, 128, 160, 192 and 256 points); none otherwise.
pub fn warp_radices(n: u64) -> Option<Vec<u32>> {
    let points = n / WARP_LANES;
    if !n.is_multiple_of(WARP_LANES) || !(2..=MAX_WARP_POINTS).contains(&points) {
        return None;
    }
    fft_radices(points).ok().filter(|r| r.len() <= 2)
}

/// Points of the CUDA FFT's first pass at length `n` (`FFT_FIRST_POINTS`).
pub fn cuda_first_pass_points(n: u64) -> Result<u32, LowerError> {
    Ok(passes(&fft_radices(n)?, pass_points()).first().map_or(1, |(stages, _)| stages.iter().product()))
}

/// The most points a pass holds: [`MAX_PASS_POINTS`], or the environment's
/// `RLX_OPT_CUDA_PASS_POINTS` (4: a stage a pass; 16: radix-16 passes) so
/// that a bench can compare the groupings on one device in one run.
fn pass_points() -> u32 {
    std::env::var("RLX_OPT_CUDA_PASS_POINTS").ok().and_then(|v| v.parse().ok()).filter(|p| (2..=25).contains(p)).unwrap_or(MAX_PASS_POINTS)
}

/// `W_n^i = exp(−2πi·i/n)` for i < n, as CUDA `float2` initialisers:
/// computed in f64 and rounded once, so every twiddle the kernel loads is
/// the nearest f32 (the kernel's `sincospif` was within 2 ulp). `{:?}`
/// prints the shortest decimal that reads back as the same f32.
pub fn twiddle_table(n: u64) -> String {
    (0..n)
        .map(|i| {
            let angle = -2.0 * std::f64::consts::PI * i as f64 / n as f64;
            format!("{{{:?}f, {:?}f}}", angle.cos() as f32, angle.sin() as f32)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stages pair up while their radices multiply to at most the limit;
    /// each pass's span is the product of the radices before it; every
    /// stage is in exactly one pass, in order.
    #[test]
    fn stages_pair_into_passes_of_bounded_points() {
        let of = |n: u64, max: u32| passes(&fft_radices(n).unwrap(), max);
        assert_eq!(of(256, 16), vec![(vec![4, 4], 1), (vec![4, 4], 16)]);
        assert_eq!(of(256, 10), vec![(vec![4], 1), (vec![4], 4), (vec![4], 16), (vec![4], 64)]);
        assert_eq!(of(400, 16), vec![(vec![4, 4], 1), (vec![5], 16), (vec![5], 80)]);
        assert_eq!(of(1000, 10), vec![(vec![4, 2], 1), (vec![5], 8), (vec![5], 40), (vec![5], 200)]);
        assert_eq!(of(480, 10), vec![(vec![4], 1), (vec![4, 2], 4), (vec![3], 32), (vec![5], 96)]);
        assert_eq!(of(2, 16), vec![(vec![2], 1)]);
        for n in [2, 6, 64, 128, 160, 320, 375, 512, 1024, 3000, 4096] {
            for max in [4, 10, 16] {
                let flat: Vec<u32> = of(n, max).iter().flat_map(|(stages, _)| stages.clone()).collect();
                assert_eq!(flat, fft_radices(n).unwrap(), "n {n}");
                assert!(of(n, max).iter().all(|(stages, _)| stages.len() == 1 || stages.iter().product::<u32>() <= max), "n {n}");
            }
        }
        let sixteen = pass_calls(&passes(&fft_radices(256).unwrap(), 16));
        assert_eq!(sixteen, "    fft_pass<4u, 4u>(buf, 1u, tid);\n    fft_sync();\n    fft_pass<4u, 4u>(buf, 16u, tid);\n    fft_sync();");
        assert!(cuda(1000).unwrap().contains("fft_pass<4u, 2u>(buf, 1u, tid);\n    fft_sync();\n    fft_stage<5u>(buf, 8u, tid);"));
    }

    /// The register FFT's lane DFT: P = n/32 points of one or two radices
    /// in `fft_first_pass`'s order, 2 to 8 points; none where 32 does not
    /// divide n, or P is 1 or above 8. The specialised
    /// source says so (0 where none: `fft_warp_run` is then left out).
    #[test]
    fn the_register_fft_takes_two_radices_a_lane() {
        assert_eq!(warp_radices(64), Some(vec![2]));
        assert_eq!(warp_radices(160), Some(vec![5]));
        assert_eq!(warp_radices(192), Some(vec![2, 3]));
        assert_eq!(warp_radices(256), Some(vec![4, 2]));
        for n in [32, 48, 288, 400, 480, 512, 544, 1024, 16 * 32 * 7] {
            assert_eq!(warp_radices(n), None, "n {n}");
        }
        assert!(cuda(192).unwrap().contains("#define FFT_WARP_R1 2u\n#define FFT_WARP_R2 3u\n"));
        assert!(cuda(64).unwrap().contains("#define FFT_WARP_R1 2u\n#define FFT_WARP_R2 1u\n"));
        assert!(cuda(400).unwrap().contains("#define FFT_WARP_R1 0u\n"));
    }

    /// The table's (cos, sin) pairs, read back from the CUDA initialisers.
    fn parsed(n: u64) -> Vec<(f32, f32)> {
        let table = twiddle_table(n);
        let pair = |entry: &str| -> (f32, f32) {
            let mut values = entry.trim_matches(|c| c == '{' || c == '}').split(", ").map(|v| v.trim_end_matches('f').parse::<f32>().unwrap());
            (values.next().unwrap(), values.next().unwrap())
        };
        table.split("}, {").map(pair).collect()
    }

    /// Entry i is W_n^i = exp(−2πi·i/n): the forward transform's sign, each
    /// value within one f32 rounding of the f64 one, n entries.
    #[test]
    fn the_twiddle_table_is_w_n_to_the_i() {
        let eight = parsed(8);
        assert_eq!(eight.len(), 8);
        assert_eq!(eight[0], (1.0, -0.0));
        assert_eq!(eight[1], (std::f32::consts::FRAC_1_SQRT_2, -std::f32::consts::FRAC_1_SQRT_2));
        assert!(eight[2].0.abs() < 1e-7 && eight[2].1 == -1.0, "{:?}", eight[2]);
        for (i, (c, s)) in parsed(400).into_iter().enumerate() {
            let angle = -2.0 * std::f64::consts::PI * i as f64 / 400.0;
            assert!((c as f64 - angle.cos()).abs() < 6e-8 && (s as f64 - angle.sin()).abs() < 6e-8, "entry {i}: ({c}, {s})");
        }
        // Pasted into the specialised CUDA FFT, whole.
        assert!(cuda(400).unwrap().contains(&format!("FFT_TWIDDLES[FFT_N] = {{ {} }}", twiddle_table(400))));
    }
}
