//! The launch list: what a plan runs, written once. [`launches`] turns a
//! kernel geometry into its launches in order (entry point, workgroups,
//! the buffers each binds, the stage parameter); every place that runs or
//! describes a plan interprets that list: the kernel manifest
//! (`--emit-kernels`), wgpu and CUDA (`runtime::{wgpu_kernel, cuda_kernel}`),
//! the CPU emulation of each launch (`runtime::welch`'s passes), and RLX's
//! registration of one op per launch. A new plan or entry point is added
//! here, and the compiler then points at every interpreter that must learn it.

use crate::analysis::plan::{FftPasses, FourStep, KernelGeometry};

/// An entry point of the fused op's kernels. The names in the sources
/// (`kernels/*.wgsl`, `kernels/*.cu`, the same in both) are [`Self::name`]:
/// the one place an entry is spelled as a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelEntry {
    /// The batch plan in one pass: the FFT in workgroup memory, the
    /// power summed, the top-k (segments → peaks).
    WelchPeaks,
    /// The split plan's first pass: the power of one chunk of an entry's
    /// segment pairs (segments → partial spectra).
    PartialPsd,
    /// CUDA's radix-2 multi-pass FFT's first pass: windowed segment pairs,
    /// bit-reversed (segments → spectra).
    Load,
    /// One stage of CUDA's radix-2 multi-pass FFT, in place (spectra → spectra).
    Stage,
    /// The four-step FFT's first pass (WGSL, and CUDA by default): windowed
    /// segment pairs, the column FFTs, twiddled (segments → spectra).
    Columns,
    /// The four-step FFT's second pass: the row FFTs, in place (spectra → spectra).
    Rows,
    /// The multi-pass batch plan's last pass (spectra → peaks).
    PeaksOf,
    /// The multi-pass split plan's power of one chunk (spectra → partial spectra).
    PartialOf,
    /// The split plans' last pass: an entry's partial spectra summed, then
    /// its top-k (partial spectra → peaks).
    PeaksOfPartials,
}

impl KernelEntry {
    /// Every entry point, in the order a module declares them.
    pub const ALL: [KernelEntry; 9] = [
        KernelEntry::WelchPeaks,
        KernelEntry::PartialPsd,
        KernelEntry::Load,
        KernelEntry::Stage,
        KernelEntry::Columns,
        KernelEntry::Rows,
        KernelEntry::PeaksOf,
        KernelEntry::PartialOf,
        KernelEntry::PeaksOfPartials,
    ];

    /// The entry point's name in the kernel sources, WGSL and CUDA alike.
    pub const fn name(self) -> &'static str {
        match self {
            KernelEntry::WelchPeaks => "welch_peaks",
            KernelEntry::PartialPsd => "partial_psd",
            KernelEntry::Load => "load",
            KernelEntry::Stage => "stage",
            KernelEntry::Columns => "columns",
            KernelEntry::Rows => "rows",
            KernelEntry::PeaksOf => "peaks_of",
            KernelEntry::PartialOf => "partial_of",
            KernelEntry::PeaksOfPartials => "peaks_of_partials",
        }
    }

    /// The buffers the entry point binds, in the order of its CUDA
    /// arguments: the ones it reads, then the one it writes (last). `stage`
    /// and `rows` read and write the spectra in place; a stage's index is
    /// the launch's parameter ([`Launch::stage`]), not a buffer.
    pub const fn buffers(self) -> &'static [KernelBuffer] {
        use KernelBuffer::*;
        match self {
            KernelEntry::WelchPeaks => &[Segments, Window, Peaks],
            KernelEntry::PartialPsd => &[Segments, Window, Partials],
            KernelEntry::Load => &[Segments, Window, Spectra],
            KernelEntry::Stage | KernelEntry::Rows => &[Spectra],
            KernelEntry::Columns => &[Segments, Window, Spectra],
            KernelEntry::PeaksOf => &[Spectra, Peaks],
            KernelEntry::PartialOf => &[Spectra, Partials],
            KernelEntry::PeaksOfPartials => &[Partials, Peaks],
        }
    }
}

impl std::fmt::Display for KernelEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A buffer the kernels bind, by its role in a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KernelBuffer {
    /// The op's input (operand 0), read only.
    Segments,
    /// The window (operand 1), read only: one value of 1 when the op has none.
    Window,
    /// The op's result.
    Peaks,
    /// The multi-pass plans' spectrum of every segment pair (complex values).
    Spectra,
    /// The split plans' partial power spectra (batch × chunks × bins).
    Partials,
}

impl KernelBuffer {
    /// Every buffer, in binding order.
    pub const ALL: [KernelBuffer; 5] = [KernelBuffer::Segments, KernelBuffer::Window, KernelBuffer::Peaks, KernelBuffer::Spectra, KernelBuffer::Partials];

    /// Its binding in the WGSL kernels' group 0 (and its Metal buffer index).
    pub const fn binding(self) -> u32 {
        match self {
            KernelBuffer::Segments => 0,
            KernelBuffer::Window => 1,
            KernelBuffer::Peaks => 2,
            KernelBuffer::Spectra => 3,
            KernelBuffer::Partials => 5,
        }
    }

    /// Its name in the kernel sources and the manifest.
    pub const fn name(self) -> &'static str {
        match self {
            KernelBuffer::Segments => "segs",
            KernelBuffer::Window => "window",
            KernelBuffer::Peaks => "peaks",
            KernelBuffer::Spectra => "spectra",
            KernelBuffer::Partials => "partials",
        }
    }

    /// Whether a kernel writes it (the operands are only read).
    pub const fn written(self) -> bool {
        !matches!(self, KernelBuffer::Segments | KernelBuffer::Window)
    }

    /// Its element type in WGSL: the spectra are complex.
    pub const fn element(self) -> &'static str {
        match self {
            KernelBuffer::Spectra => "vec2<f32>",
            _ => "f32",
        }
    }

    /// Its elements under the geometry `k` (complex values for the spectra).
    pub fn len(self, k: &KernelGeometry) -> u64 {
        match self {
            KernelBuffer::Segments => k.input_len,
            KernelBuffer::Window => k.window_len,
            KernelBuffer::Peaks => k.output_len,
            KernelBuffer::Spectra => k.spectra_len,
            KernelBuffer::Partials => k.partials_len,
        }
    }

    /// Its f32 values under the geometry `k` (two per complex value).
    pub fn f32_len(self, k: &KernelGeometry) -> u64 {
        match self {
            KernelBuffer::Spectra => 2 * k.spectra_len,
            other => other.len(k),
        }
    }
}

/// One launch of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub entry: KernelEntry,
    /// Workgroups (CUDA blocks), laid out as [`super::grid`] says.
    pub groups: u64,
    /// The radix-2 stage a [`KernelEntry::Stage`] launch runs (`None` for
    /// every other entry): the last kernel argument on CUDA, a constant of
    /// its own RLX op.
    pub stage: Option<u32>,
}

impl Launch {
    /// The buffers it binds, the written one last ([`KernelEntry::buffers`]).
    pub fn buffers(&self) -> &'static [KernelBuffer] {
        self.entry.buffers()
    }

    /// The buffer it writes.
    pub fn writes(&self) -> KernelBuffer {
        // Every entry binds at least the buffer it writes.
        *self.entry.buffers().last().unwrap_or(&KernelBuffer::Peaks)
    }

    /// The buffers it only reads.
    pub fn reads(&self) -> &'static [KernelBuffer] {
        let all = self.entry.buffers();
        &all[..all.len().saturating_sub(1)]
    }

    /// Its workgroups as (x, y) ([`super::grid`]).
    pub fn grid(&self) -> (u32, u32) {
        super::grid(self.groups)
    }
}

/// The launches of the geometry `k`, in order: the one-pass kernel, or the
/// four-step `columns`, `rows` and its last pass (WGSL, and CUDA by
/// default), or the multi-pass `load`, a `stage` per radix-2 stage and its
/// last pass (CUDA's power-of-two lengths with `RLX_OPT_CUDA_FOUR_STEP=0`);
/// split plans end with `peaks_of_partials`.
pub fn launches(k: &KernelGeometry) -> Vec<Launch> {
    let threads = k.threads as u64;
    let split = k.plan.is_split();
    let launch = |entry, groups| Launch { entry, groups, stage: None };
    let mut out = Vec::with_capacity(k.log2n as usize + 3);
    match k.fft {
        FftPasses::OnePass if split => out.push(launch(KernelEntry::PartialPsd, k.groups * k.chunks)),
        FftPasses::OnePass => out.push(launch(KernelEntry::WelchPeaks, k.groups)),
        FftPasses::MultiPass => {
            out.push(launch(KernelEntry::Load, k.spectra_len.div_ceil(threads)));
            let stage_groups = (k.spectra_len / 2).div_ceil(threads);
            out.extend((0..k.log2n).map(|s| Launch { entry: KernelEntry::Stage, groups: stage_groups, stage: Some(s) }));
        }
        FftPasses::FourStep { n1, n2 } => {
            let f = FourStep { n1: n1.into(), n2: n2.into() };
            let [columns, rows] = f.passes(k.threads);
            // Every pair of every entry: n2 column FFTs and n1 row FFTs, `ffts` a workgroup.
            let pairs = k.spectra_len / (f.n1 * f.n2);
            out.push(launch(KernelEntry::Columns, (pairs * f.n2).div_ceil(columns.ffts)));
            out.push(launch(KernelEntry::Rows, (pairs * f.n1).div_ceil(rows.ffts)));
        }
    }
    if k.fft != FftPasses::OnePass {
        out.push(match split {
            true => launch(KernelEntry::PartialOf, k.groups * k.chunks),
            false => launch(KernelEntry::PeaksOf, k.groups),
        });
    }
    if split {
        out.push(launch(KernelEntry::PeaksOfPartials, k.groups));
    }
    out
}

/// The buffers the launches bind, in binding order: what a runtime
/// allocates and the manifest lists.
pub fn buffers_of(launches: &[Launch]) -> Vec<KernelBuffer> {
    KernelBuffer::ALL.into_iter().filter(|b| launches.iter().any(|l| l.buffers().contains(b))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Target;
    use crate::analysis::plan::{DeviceLimits, f32_type, plan};
    use crate::fused::{OutputLayout, PlanName, WelchPeaksAttrs};
    use KernelEntry::*;

    /// The geometry of `name` for an op of `n_fft`, 8 segments, with or
    /// without a window, in `layout`, on 16 rows (4 chunks of 1 pair when
    /// split), on `target`; past 4096 points the plan takes its multi-pass form.
    fn geometry_on(target: Target, name: PlanName, n_fft: u64, window: bool, layout: OutputLayout) -> KernelGeometry {
        geometry_with(target, DeviceLimits::assumed(target), name, n_fft, window, layout)
    }

    /// CUDA's multi-pass plans with radix-2 stages (`RLX_OPT_CUDA_FOUR_STEP=0`).
    fn cuda_stages() -> DeviceLimits {
        DeviceLimits { four_step: false, ..DeviceLimits::assumed(Target::Cuda) }
    }

    fn geometry_with(target: Target, limits: DeviceLimits, name: PlanName, n_fft: u64, window: bool, layout: OutputLayout) -> KernelGeometry {
        let attrs = WelchPeaksAttrs { plan: Some(name), window, output_layout: layout, ..WelchPeaksAttrs::rlx(n_fft, 8, 5) };
        let limits = DeviceLimits { parallelism: 64, ..limits };
        plan(&attrs, &f32_type(&[16, n_fft as usize]), target, &limits).unwrap().kernel.unwrap()
    }

    fn geometry(name: PlanName, n_fft: u64, window: bool, layout: OutputLayout) -> KernelGeometry {
        geometry_on(Target::Wgpu, name, n_fft, window, layout)
    }

    /// Every plan's launches, in order, with their workgroups and stages,
    /// with and without a window, in both output layouts (which change no
    /// launch: they are constants of the same kernels).
    #[test]
    fn every_plan_has_its_launches_in_order() {
        for window in [false, true] {
            for layout in [OutputLayout::Interleaved, OutputLayout::Planar] {
                for name in PlanName::ALL {
                    assert_eq!(geometry(name, 256, window, layout).plan, name, "the case runs its own plan");
                }
                let batch = geometry(PlanName::Batch, 256, window, layout);
                assert_eq!(launches(&batch), [Launch { entry: WelchPeaks, groups: 2, stage: None }]);

                let split = geometry(PlanName::Split, 256, window, layout);
                assert_eq!((split.groups, split.chunks), (2, 4));
                assert_eq!(launches(&split), [Launch { entry: PartialPsd, groups: 8, stage: None }, Launch { entry: PeaksOfPartials, groups: 2, stage: None }]);

                // WGSL's four-step FFT: 256 = 16·16, 8 pairs of 16 columns
                // and 16 rows, 64 FFTs of 4 lanes a workgroup.
                let multi = geometry(PlanName::Multipass, 256, window, layout);
                let four_step = [Launch { entry: Columns, groups: 2, stage: None }, Launch { entry: Rows, groups: 2, stage: None }];
                assert_eq!(launches(&multi), [&four_step[..], &[Launch { entry: PeaksOf, groups: 2, stage: None }]].concat());
                let both = geometry(PlanName::SplitMultipass, 256, window, layout);
                let tail = [Launch { entry: PartialOf, groups: 8, stage: None }, Launch { entry: PeaksOfPartials, groups: 2, stage: None }];
                assert_eq!(launches(&both), [&four_step[..], &tail].concat());

                // CUDA's four-step FFT (its default), as WGSL's.
                let multi = geometry_on(Target::Cuda, PlanName::Multipass, 256, window, layout);
                assert_eq!(launches(&multi), [&four_step[..], &[Launch { entry: PeaksOf, groups: 2, stage: None }]].concat());

                // CUDA's radix-2 stages.
                let multi = geometry_with(Target::Cuda, cuda_stages(), PlanName::Multipass, 256, window, layout);
                let stages = (0..8).map(|s| Launch { entry: Stage, groups: 2 * 4 * 256 / 2 / 256, stage: Some(s) });
                let want: Vec<Launch> = std::iter::once(Launch { entry: Load, groups: 8, stage: None })
                    .chain(stages.clone())
                    .chain([Launch { entry: PeaksOf, groups: 2, stage: None }])
                    .collect();
                assert_eq!(launches(&multi), want);
                let both = geometry_with(Target::Cuda, cuda_stages(), PlanName::SplitMultipass, 256, window, layout);
                let want: Vec<Launch> = std::iter::once(Launch { entry: Load, groups: 8, stage: None }).chain(stages).chain(tail).collect();
                assert_eq!(launches(&both), want);
            }
        }
    }

    /// Each launch reads only what an earlier one wrote (or the op's
    /// operands), and the last one writes the peaks: a launch missing or
    /// out of order breaks the chain.
    #[test]
    fn each_launch_reads_what_an_earlier_one_wrote() {
        let targets = [(Target::Wgpu, DeviceLimits::assumed(Target::Wgpu)), (Target::Cuda, DeviceLimits::assumed(Target::Cuda)), (Target::Cuda, cuda_stages())];
        for ((target, limits), name) in targets.into_iter().flat_map(|t| PlanName::ALL.map(|n| (t, n))) {
            for n_fft in [256, 8192] {
                let k = geometry_with(target, limits, name, n_fft, true, OutputLayout::Interleaved);
                let name = k.plan;
                let list = launches(&k);
                let mut written = vec![KernelBuffer::Segments, KernelBuffer::Window];
                for (i, l) in list.iter().enumerate() {
                    // `stage` and `rows` read the spectra they rewrite in place: an earlier launch must have written them.
                    let reads = if l.reads().is_empty() { l.buffers() } else { l.reads() };
                    for read in reads {
                        assert!(written.contains(read), "{name} n_fft {n_fft}: launch {i} ({}) reads {read:?} before any launch wrote it", l.entry);
                    }
                    written.push(l.writes());
                }
                assert_eq!(list.last().map(Launch::writes), Some(KernelBuffer::Peaks), "{name}: the last launch writes the peaks");
                let stages: Vec<u32> = list.iter().filter_map(|l| l.stage).collect();
                let radix2 = k.fft == FftPasses::MultiPass;
                assert_eq!(stages, (0..if radix2 { k.log2n } else { 0 }).collect::<Vec<_>>(), "{name}: every stage once, in order");
                assert_eq!(radix2, !limits.four_step && name.is_multipass(), "{name} on {target}: radix-2 stages only where the four-step FFT is off");
                assert!(list.iter().all(|l| (l.entry == Stage) == l.stage.is_some()));
            }
        }
    }

    #[test]
    fn the_buffers_are_listed_in_binding_order() {
        use KernelBuffer::*;
        let of = |name| buffers_of(&launches(&geometry(name, 256, false, OutputLayout::Planar)));
        assert_eq!(of(PlanName::Batch), [Segments, Window, Peaks]);
        assert_eq!(of(PlanName::Split), [Segments, Window, Peaks, Partials]);
        assert_eq!(of(PlanName::Multipass), [Segments, Window, Peaks, Spectra]);
        assert_eq!(of(PlanName::SplitMultipass), [Segments, Window, Peaks, Spectra, Partials]);
        let names: Vec<&str> = KernelEntry::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(names, ["welch_peaks", "partial_psd", "load", "stage", "columns", "rows", "peaks_of", "partial_of", "peaks_of_partials"]);
    }
}
