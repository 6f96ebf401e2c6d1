//! Generators of RLX graphs for tests and benchmarks.

use std::fmt::Write as _;

/// `chains` independent copies of RLX's native Welch-peaks chain
/// (Input → Sub → Concat → Fft → WelchPeaks, 5 nodes each), every spectrum and
/// peak tensor a graph output, as RLX prints such a graph.
pub fn welch_chains(chains: usize, rows: u64, n_fft: u64, segments: u64, k: u64) -> String {
    let mut out = String::with_capacity(chains * 5 * 100 + 64);
    let _ = writeln!(out, "graph @welch_chains_{chains} {{");
    let mut outputs = Vec::with_capacity(chains * 2);
    for c in 0..chains {
        let base = c * 5;
        let (i, sub, cat, fft, peaks) = (base, base + 1, base + 2, base + 3, base + 4);
        let _ = writeln!(out, "  %{i} = {{\"Input\":{{\"name\":\"segs{c}\"}}}} : [{rows}, {n_fft}] f32 #\"segs{c}\"");
        let _ = writeln!(out, "  %{sub} = {{\"Binary\":\"Sub\"}}(%{i}, %{i}) : [{rows}, {n_fft}] f32");
        let _ = writeln!(out, "  %{cat} = {{\"Concat\":{{\"axis\":1}}}}(%{i}, %{sub}) : [{rows}, {}] f32", 2 * n_fft);
        let _ = writeln!(
            out,
            "  %{fft} = {{\"Fft\":{{\"inverse\":false,\"norm\":\"Backward\",\"algo\":\"Native\"}}}}(%{cat}) : [{rows}, {}] f32",
            2 * n_fft
        );
        let _ = writeln!(
            out,
            "  %{peaks} = {{\"WelchPeaks\":{{\"k\":{k},\"n_segments\":{segments}}}}}(%{fft}) : [{}, {}] f32",
            rows / segments,
            2 * k
        );
        outputs.push(format!("%{fft}"));
        outputs.push(format!("%{peaks}"));
    }
    let _ = writeln!(out, "  return {}", outputs.join(", "));
    out.push_str("}\n");
    out
}
