//! Every limit the tools enforce on their inputs, in one place: the README
//! lists them, and each error that enforces one names it. They keep hostile
//! input from exhausting the stack, memory or time; valid graphs are far
//! inside them.
//!
//! A utility below every layer: plain numbers.

/// Brackets, braces, parentheses, regions or attribute aliases nested inside
/// one another (serde_json's own limit): a reader recursing past this would
/// overflow the stack.
pub const MAX_NESTING: usize = 128;

/// Values an MLIR attribute may grow to once its aliases are expanded
/// (a 1 KB "billion laughs" would otherwise expand to gigabytes).
pub const MAX_ALIAS_EXPANSION: usize = 1 << 20;

/// The largest graph file (any format) a tool reads (1 GiB).
pub const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Bytes of one tensor a tool allocates: an input, a result, a constant or
/// dense literal it decodes (4 GiB).
pub const MAX_TENSOR_BYTES: u64 = 4 << 30;

/// The longest FFT a CPU kernel plans (2^24 points).
pub const MAX_CPU_N_FFT: u64 = 1 << 24;

/// The largest header an `.npy` file may declare (numpy writes at most a few
/// hundred bytes).
pub const MAX_NPY_HEADER: u64 = 1 << 16;

/// The largest trace file `rlx-trace` reads, after decompression (1 GiB).
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// The longest string (kernel name, category) one trace event may carry.
pub const MAX_TRACE_STRING: usize = 1 << 16;

/// A device profile's times, in ns (each term of `rlx-run --calibrate`):
/// 0 (nothing measurable) up to 10^12 ns, about 17 minutes. One call, one
/// launch or one pair of FFTs taking longer is no device that calibrated.
pub const MAX_PROFILE_NS: f64 = 1e12;

/// A device profile's bandwidths, in bytes per ns (GB/s): from 1 MB/s to
/// 1 PB/s. An H200 reads its memory at about 4,800 B/ns and lavapipe uploads
/// at about 1.5; a bandwidth near 0 divides bytes into infinite times (once
/// `memory_bw: 5e-324` made a NaN prediction win the pick).
pub const PROFILE_BW: std::ops::RangeInclusive<f64> = 1e-3..=1e6;

/// A device profile's parallelism and workers: 1 to 2^24 work items at a
/// time (a GPU keeps a few thousand workgroups resident).
pub const MAX_PROFILE_WORKERS: u64 = 1 << 24;

/// `n` bytes as people read them (`4.0 GiB`), for messages that name a limit.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} bytes") } else { format!("{value:.1} {}", UNITS[unit]) }
}
