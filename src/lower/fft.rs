//! The GPU kernels' FFT front end, one per language and shared by both
//! fused ops: a mixed-radix FFT (radices 4, 2, 3, 5) in workgroup (shared)
//! memory, `kernels/fft_mixed_radix.wgsl` and `kernels/fft_mixed_radix.cuh`,
//! pasted into a kernel for its `{{FFT}}` placeholder and specialised here
//! for one length. The Welch-peaks one-pass kernels and the log-mel kernels
//! include it; the Welch multi-pass plan (n_fft > 4096) keeps its radix-2
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

/// The WGSL FFT of length `n`, specialised.
pub fn wgsl(n: u64) -> Result<String, LowerError> {
    super::fill_constants(WGSL, &constants(&fft_radices(n)?))
}

/// The CUDA FFT of length `n`, specialised, with its twiddle table.
pub fn cuda(n: u64) -> Result<String, LowerError> {
    let mut constants = constants(&fft_radices(n)?);
    constants.push(("FFT_TWIDDLES", twiddle_table(n)));
    super::fill_constants(CUDA, &constants)
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
