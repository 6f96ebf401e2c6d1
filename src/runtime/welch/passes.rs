//! The GPU plans' launches on the CPU: each entry point of the kernels
//! ([`KernelEntry`]) as a CPU pass, and a plan's launch list
//! ([`lower::launches`]) run pass by pass. RLX runs a plan split into ops
//! (one per launch) through these passes wherever an op has no GPU kernel
//! (a CPU session, or a GPU backend staging it through the host); the
//! tests run every plan's list through them against the reference.
//!
//! The passes hand the spectra to each other in their own layout
//! ([`pair_spectra_into`]'s: the spectrum of each segment pair, in order,
//! not bit-reversed, nor in the four-step FFT's rows and columns): a
//! `stage` or `rows` copies them on, the work is done by the first pass
//! (`load`, `columns`) and the last. Partial spectra are laid out as the GPU kernels
//! write them (batch × chunks × bins).

use super::cpu_kernel::{CpuRun, Scratch, add_pair_power, load_pair, pair_weights};
use super::{Geometry, forward_fft, geometry, top_k, write_peaks};
use crate::analysis::plan::KernelGeometry;
use crate::fused::WelchPeaksAttrs;
use crate::lower::{self, KernelBuffer, KernelEntry, Launch};
use crate::runtime::RuntimeError;
use crate::runtime::tensor::{Tensor, TensorRef};
use rayon::prelude::*;
use rustfft::num_complex::Complex;

/// A launch as the CPU runs it: its entry point, and how the split plans
/// cut an entry's segment pairs (`chunks` chunks of `per_chunk` pairs,
/// the last what remains), which the GPU kernels hold as constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuPass {
    pub entry: KernelEntry,
    pub chunks: usize,
    pub per_chunk: usize,
}

impl CpuPass {
    /// `launch` of the geometry `k` ([`lower::launches`]).
    pub fn of(launch: &Launch, k: &KernelGeometry) -> CpuPass {
        CpuPass { entry: launch.entry, chunks: k.chunks as usize, per_chunk: k.pairs_per_chunk as usize }
    }

    /// Whether it reads the op's operands (the segments and the window);
    /// the other passes read the buffer the pass before them wrote.
    pub fn reads_operands(&self) -> bool {
        self.entry.buffers().first() == Some(&KernelBuffer::Segments)
    }
}

/// What a CPU pass reads.
#[derive(Clone, Copy)]
pub enum PassInput<'a> {
    /// The op's operands, for a pass that [`CpuPass::reads_operands`].
    Operands { input: TensorRef<'a>, window: Option<TensorRef<'a>> },
    /// The buffer the pass before it wrote.
    Buffer(&'a [f32]),
    /// Its own output, which it rewrites (a `stage` in one buffer).
    InPlace,
}

fn check_len(have: usize, want: usize) -> Result<(), RuntimeError> {
    match have == want {
        true => Ok(()),
        false => Err(RuntimeError::Operands(format!("a buffer holds {have} values, the step needs {want}"))),
    }
}

/// Run `pass` of an op with `attrs` from `from` into `out`, every length
/// checked first (RLX hands over buffers it sized from shapes).
pub fn run_pass(attrs: &WelchPeaksAttrs, pass: CpuPass, from: PassInput<'_>, out: &mut [f32]) -> Result<(), RuntimeError> {
    let per_entry = 2 * attrs.n_fft as usize * attrs.segments.div_ceil(2) as usize;
    let (bins, row) = (attrs.bins() as usize, 2 * attrs.k as usize);
    let CpuPass { entry, chunks, per_chunk } = pass;
    match (entry, from) {
        (KernelEntry::WelchPeaks | KernelEntry::PartialPsd | KernelEntry::Load | KernelEntry::Columns, PassInput::Operands { input, window }) => {
            let g = geometry(attrs, input, window)?;
            match entry {
                KernelEntry::PartialPsd => {
                    check_len(out.len(), g.batch * chunks * bins)?;
                    partial_psds_into(attrs, &g, input, window, chunks, per_chunk, out);
                }
                KernelEntry::Load | KernelEntry::Columns => {
                    check_len(out.len(), g.batch * per_entry)?;
                    pair_spectra_into(attrs, &g, input, window, out);
                }
                _ => {
                    check_len(out.len(), g.batch * row)?;
                    super::cpu_kernel_rows(attrs, &g, input, window, 0, out, true);
                }
            }
        }
        (KernelEntry::Stage | KernelEntry::Rows, PassInput::InPlace) => {}
        (KernelEntry::Stage | KernelEntry::Rows, PassInput::Buffer(spectra)) => {
            check_len(out.len(), spectra.len())?;
            out.copy_from_slice(spectra);
        }
        (KernelEntry::PeaksOf, PassInput::Buffer(spectra)) => {
            check_len(out.len(), out.len() / row * row)?;
            check_len(spectra.len(), out.len() / row * per_entry)?;
            peaks_from_pair_spectra(attrs, spectra, out);
        }
        (KernelEntry::PartialOf, PassInput::Buffer(spectra)) => {
            check_len(out.len(), out.len() / (chunks * bins) * chunks * bins)?;
            check_len(spectra.len(), out.len() / (chunks * bins) * per_entry)?;
            partial_psds_of_pair_spectra(attrs, spectra, chunks, per_chunk, out);
        }
        (KernelEntry::PeaksOfPartials, PassInput::Buffer(partials)) => {
            check_len(out.len(), out.len() / row * row)?;
            check_len(partials.len(), out.len() / row * chunks * bins)?;
            peaks_of_partials(attrs, partials, chunks, out);
        }
        (entry, _) => {
            let wants = if pass.reads_operands() { "the op's operands" } else { "the buffer the pass before it wrote" };
            return Err(RuntimeError::Operands(format!("the {entry} pass reads {wants}")));
        }
    }
    Ok(())
}

/// The launches of the geometry `k` run on the CPU, pass by pass, each
/// reading the buffers the launches before it wrote: the op's result as
/// the GPU plan computes it (up to FFT rounding). The CPU buffers have
/// the plan's lengths; the spectra are in the passes' own layout.
pub fn run_launches(attrs: &WelchPeaksAttrs, k: &KernelGeometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>) -> Result<Tensor, RuntimeError> {
    let g = geometry(attrs, input, window)?;
    let launches = lower::launches(k);
    let mut buffers: Vec<(KernelBuffer, Vec<f32>)> = Vec::new();
    for buffer in lower::buffers_of(&launches).into_iter().filter(|b| b.written()) {
        buffers.push((buffer, vec![0f32; buffer.f32_len(k) as usize]));
    }
    let missing = |b: KernelBuffer| RuntimeError::Operands(format!("no {} buffer for the plan's launches", b.name()));
    for launch in &launches {
        let at = buffers.iter().position(|(b, _)| *b == launch.writes()).ok_or_else(|| missing(launch.writes()))?;
        let mut out = std::mem::take(&mut buffers[at].1);
        let pass = CpuPass::of(launch, k);
        let result = match launch.reads().first() {
            Some(KernelBuffer::Segments) => run_pass(attrs, pass, PassInput::Operands { input, window }, &mut out),
            Some(read) => match buffers.iter().find(|(b, _)| b == read) {
                Some((_, from)) => run_pass(attrs, pass, PassInput::Buffer(from), &mut out),
                None => Err(missing(*read)),
            },
            None => run_pass(attrs, pass, PassInput::InPlace, &mut out),
        };
        buffers[at].1 = out;
        result?;
    }
    let peaks = buffers.into_iter().find(|(b, _)| *b == KernelBuffer::Peaks).ok_or_else(|| missing(KernelBuffer::Peaks))?.1;
    Ok(Tensor::new(super::output_shape(attrs, &g), peaks))
}

/// The first half of [`super::cpu_kernel_into`], for a plan split into passes: the
/// spectrum of every pair of segments (`n_fft` complex values, re then im)
/// into `spectra`, batch entry by batch entry.
pub fn pair_spectra_into(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, spectra: &mut [f32]) {
    let n = attrs.n_fft as usize;
    let fft = forward_fft(n);
    let pairs = (attrs.segments as usize).div_ceil(2);
    let scratch = || (vec![Complex::new(0f32, 0f32); n], vec![Complex::new(0f32, 0f32); fft.get_inplace_scratch_len()]);
    spectra.par_chunks_mut(2 * n).enumerate().for_each_init(scratch, |(buf, work), (i, out)| {
        load_pair(attrs, g, input, window, i / pairs, 2 * (i % pairs), buf);
        fft.process_with_scratch(buf, work);
        for (o, z) in out.chunks_exact_mut(2).zip(buf.iter()) {
            o[0] = z.re;
            o[1] = z.im;
        }
    });
}

/// The second half of [`super::cpu_kernel_into`]: the peaks of each batch entry
/// from its pair spectra as [`pair_spectra_into`] wrote them.
pub fn peaks_from_pair_spectra(attrs: &WelchPeaksAttrs, spectra: &[f32], out: &mut [f32]) {
    let pairs = (attrs.segments as usize).div_ceil(2);
    let mut psd = vec![0f32; out.len() / (2 * attrs.k as usize).max(1) * attrs.bins() as usize];
    partial_psds_of_pair_spectra(attrs, spectra, 1, pairs, &mut psd);
    peaks_of_partials(attrs, &psd, 1, out);
}

/// The first pass of a split plan run as ops of its own (RLX's GPU
/// backends launch one kernel per op): the power spectrum of each of the
/// `chunks` chunks of every entry's segment pairs (`per_chunk` pairs each,
/// the last what remains), into `partials` (batch × chunks × bins), as the
/// GPU kernels' `partial_psd` writes them.
pub fn partial_psds_into(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, chunks: usize, per_chunk: usize, partials: &mut [f32]) {
    let run = CpuRun::new(attrs, g, input, window);
    let pairs = (attrs.segments as usize).div_ceil(2);
    partials.par_chunks_mut(g.bins).enumerate().for_each_init(
        || run.scratch(),
        |Scratch { buf, work, .. }, (item, psd)| {
            let (b, c) = (item / chunks, item % chunks);
            psd.fill(0.0);
            run.add_pairs(buf, work, b, (c * per_chunk).min(pairs)..((c + 1) * per_chunk).min(pairs), psd);
        },
    );
}

/// [`partial_psds_into`] from the pair spectra of a multi-pass plan's
/// stages ([`pair_spectra_into`]'s layout): the GPU's `partial_of`.
pub fn partial_psds_of_pair_spectra(attrs: &WelchPeaksAttrs, spectra: &[f32], chunks: usize, per_chunk: usize, partials: &mut [f32]) {
    let n = attrs.n_fft as usize;
    let bins = n / 2 + 1;
    let weights = pair_weights(attrs, bins);
    let pairs = (attrs.segments as usize).div_ceil(2);
    let per_entry = 2 * n * pairs;
    partials.par_chunks_mut(bins).enumerate().for_each_init(
        || vec![Complex::new(0f32, 0f32); n],
        |buf, (item, psd)| {
            let (b, c) = (item / chunks, item % chunks);
            let entry = &spectra[b * per_entry..(b + 1) * per_entry];
            psd.fill(0.0);
            for pair in entry.chunks_exact(2 * n).take(((c + 1) * per_chunk).min(pairs)).skip(c * per_chunk) {
                buf.iter_mut().zip(pair.chunks_exact(2)).for_each(|(z, v)| *z = Complex::new(v[0], v[1]));
                add_pair_power(&weights, buf, psd);
            }
        },
    );
}

/// The last pass of a split plan: per entry, the partial spectra of its
/// `chunks` chunks summed in chunk order, then its top-k (the GPU's
/// `peaks_of_partials`).
pub fn peaks_of_partials(attrs: &WelchPeaksAttrs, partials: &[f32], chunks: usize, out: &mut [f32]) {
    let k = attrs.k as usize;
    let bins = attrs.bins() as usize;
    let scratch = || (vec![0f32; bins], Vec::with_capacity(bins), Vec::with_capacity(k.min(bins)));
    out.par_chunks_mut(2 * k).zip(partials.par_chunks(chunks * bins)).for_each_init(scratch, |(psd, keys, peaks), (out, parts)| {
        psd.fill(0.0);
        for part in parts.chunks_exact(bins) {
            psd.iter_mut().zip(part).for_each(|(p, x)| *p += x);
        }
        top_k(psd, k, keys, peaks);
        write_peaks(attrs, peaks, out);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass handed the wrong kind of input, or a buffer of the wrong
    /// length (RLX sizes them from shapes), is an error, not a panic.
    #[test]
    fn a_pass_with_the_wrong_input_is_an_error() {
        let attrs = WelchPeaksAttrs::rlx(8, 4, 2);
        let data = vec![0f32; 2 * 4 * 8];
        let input = TensorRef { shape: &[8, 8], data: &data };
        let pass = |entry| CpuPass { entry, chunks: 1, per_chunk: 2 };
        let mut out = vec![0f32; 2 * 2 * 2];
        let operands = PassInput::Operands { input, window: None };
        assert!(run_pass(&attrs, pass(KernelEntry::WelchPeaks), operands, &mut out).is_ok());
        let e = run_pass(&attrs, pass(KernelEntry::PeaksOf), operands, &mut out).unwrap_err();
        assert_eq!(e.to_string(), "the peaks_of pass reads the buffer the pass before it wrote");
        let e = run_pass(&attrs, pass(KernelEntry::Load), PassInput::Buffer(&data), &mut out).unwrap_err();
        assert_eq!(e.to_string(), "the load pass reads the op's operands");
        let e = run_pass(&attrs, pass(KernelEntry::Load), operands, &mut out).unwrap_err();
        assert_eq!(e.to_string(), "a buffer holds 8 values, the step needs 64");
        let mut spectra = vec![0f32; 64];
        assert!(run_pass(&attrs, pass(KernelEntry::Load), operands, &mut spectra).is_ok());
        assert!(run_pass(&attrs, pass(KernelEntry::PeaksOf), PassInput::Buffer(&spectra[1..]), &mut out).is_err());
        assert!(run_pass(&attrs, pass(KernelEntry::Stage), PassInput::Buffer(&spectra[1..]), &mut spectra.clone()).is_err());
    }
}
