//! The `split` plan on a CPU: an entry's segment pairs cut into chunks
//! that keep every core busy when the batch is small.

use super::cpu_kernel::{CpuRun, Scratch, cpu_kernel_rows};
use super::Geometry;
use crate::analysis::Target;
use crate::analysis::plan::{CPU_TASKS_PER_THREAD, DeviceLimits, split_chunks};
use crate::fused::WelchPeaksAttrs;
use crate::runtime::tensor::TensorRef;
use rayon::prelude::*;

/// This machine's CPU as the split plan sees it: rayon's threads, a few
/// tasks each so that uneven chunks still balance.
pub fn this_cpu() -> DeviceLimits {
    let threads = rayon::current_num_threads() as u64;
    DeviceLimits { parallelism: CPU_TASKS_PER_THREAD * threads, ..DeviceLimits::assumed(Target::Cpu) }
}

/// The `split` plan: the segment pairs of each entry cut into chunks
/// ([`split_chunks`]) so that batch × chunks tasks keep `device` busy; each
/// task adds up its chunk's power, the chunks of an entry are summed, then
/// its top-k taken. Entries go a group at a time, so the partial spectra
/// held at once stay near `device.parallelism` rows whatever the batch.
pub fn cpu_kernel_split(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, out: &mut [f32], device: &DeviceLimits) {
    let run = CpuRun::new(attrs, g, input, window);
    let pairs = (attrs.segments as usize).div_ceil(2);
    let (chunks, per_chunk) = split_chunks(g.batch as u64, pairs as u64, device.parallelism, u64::MAX);
    let (chunks, per_chunk) = (chunks as usize, per_chunk as usize);
    if chunks == 1 {
        // One chunk per entry is the batch plan.
        return cpu_kernel_rows(attrs, g, input, window, 0, out, true);
    }
    let row_len = 2 * attrs.k as usize;
    let entries_per_group = (4 * device.parallelism as usize).div_ceil(chunks).max(1);
    for (group, rows) in out.chunks_mut(entries_per_group * row_len).enumerate() {
        let first = group * entries_per_group;
        let entries = rows.len() / row_len.max(1);
        let partials: Vec<Vec<f32>> = (0..entries * chunks)
            .into_par_iter()
            .map_init(
                || run.scratch(),
                |Scratch { buf, work, .. }, item| {
                    let (b, c) = (first + item / chunks, item % chunks);
                    let mut psd = vec![0f32; g.bins];
                    run.add_pairs(buf, work, b, c * per_chunk..((c + 1) * per_chunk).min(pairs), &mut psd);
                    psd
                },
            )
            .collect();
        let combine = |scratch: &mut Scratch, (out, parts): (&mut [f32], &[Vec<f32>])| {
            scratch.psd.fill(0.0);
            for part in parts {
                scratch.psd.iter_mut().zip(part).for_each(|(p, x)| *p += x);
            }
            run.write_row(scratch, out);
        };
        // One entry's combining runs here (see `cpu_kernel_rows`).
        if entries > 1 {
            rows.par_chunks_mut(row_len).zip(partials.par_chunks(chunks)).for_each_init(|| run.scratch(), combine);
        } else {
            let mut scratch = run.scratch();
            rows.chunks_mut(row_len).zip(partials.chunks(chunks)).for_each(|item| combine(&mut scratch, item));
        }
    }
}
