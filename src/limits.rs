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

/// Values all of a module's attributes may grow to through their aliases,
/// together (2^24): each attribute within [`MAX_ALIAS_EXPANSION`], 10^4 ops
/// each naming a 10^6-value alias are still 190 KB of text that read as
/// gigabytes. Attributes spelled alike are read once and count once.
pub const MAX_ALIAS_EXPANSION_TOTAL: usize = 1 << 24;

/// The largest graph file (any format) a tool reads (1 GiB).
pub const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Bytes of dense elements an MLIR module's constants may decode to,
/// together (1 GiB, what an input file may hold): a splat is a few bytes
/// of text however large its tensor.
pub const MAX_DENSE_BYTES_TOTAL: u64 = 1 << 30;

/// Bytes of one tensor a tool allocates: an input, a result, a constant or
/// dense literal it decodes (4 GiB).
pub const MAX_TENSOR_BYTES: u64 = 4 << 30;

/// The most bytes `rlx-opt` prints (1 GiB, [`MAX_INPUT_BYTES`]): what it
/// prints must be readable again by rlx-opt and rlx-run, which read at most
/// that much. Without a bound a few bytes of input print as gigabytes: a
/// 200-byte MLIR splat `dense<1.0> : tensor<100000000xf32>` is 1.1 GB of
/// RLX text, an attribute alias used by every op is spelled out each time.
/// Checked before printing.
pub const MAX_OUTPUT_BYTES: u64 = MAX_INPUT_BYTES;

/// The default budget for the tensors one `rlx-run` holds at once (inputs,
/// intermediates until their last use, outputs), when the machine allows
/// more: the least of this, half the machine's memory and half the process's
/// address-space limit (`--memory-limit` sets it). Fixed rather than all the
/// memory there is, so a graph that runs on one machine runs on another of
/// the same size class; 8 GiB is two of the largest tensors a tool
/// allocates ([`MAX_TENSOR_BYTES`]).
pub const DEFAULT_RUN_MEMORY: u64 = 8 << 30;

/// The longest FFT a CPU kernel plans (2^24 points).
pub const MAX_CPU_N_FFT: u64 = 1 << 24;

/// The largest header an `.npy` file may declare (numpy writes at most a few
/// hundred bytes).
pub const MAX_NPY_HEADER: u64 = 1 << 16;

/// The deepest nesting of brackets an `.npy` header may have outside its
/// strings: numpy's own is 2 deep (`{…: (rows, cols)}`), a structured dtype
/// (which rlx-run refuses anyway) 4 (`{…: [(…, (2,))]}`). npyz's parser
/// takes time exponential in the depth of nested dicts (22 levels in a
/// 246-byte header took 27 s, each level doubling it), so deeper headers
/// are refused before it reads them; at this depth a header of the
/// largest size filled with such dicts reads in milliseconds.
pub const MAX_NPY_HEADER_NESTING: usize = 4;

/// The largest trace file `rlx-trace` reads, after decompression (1 GiB).
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// The most GPU kernels `rlx-trace` keeps from one trace (2^24, about
/// 2.1 GB of kernels and their classes, measured). A real trace's kernel event is
/// 300–500 bytes of JSON, so a trace of [`MAX_TRACE_BYTES`] holds about 3
/// million; only a file of bare minimal events reaches this, and it held
/// 5 GB for a 1 GiB input (an adversarial run).
pub const MAX_TRACE_KERNELS: usize = 1 << 24;

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
    match unit {
        0 if n == 1 => "1 byte".to_string(),
        0 => format!("{n} bytes"),
        _ => format!("{value:.1} {}", UNITS[unit]),
    }
}
