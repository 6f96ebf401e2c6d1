//! A CUDA plan's kernels run on the CPU: the specialised source compiled by
//! the host C++ compiler against `shim.h` (each CUDA thread a fiber,
//! switched at the barriers, shuffles and warp reductions), its launches in
//! order over host buffers. It checks what the kernels compute, their
//! indexing and the order of their synchronisation where no GPU is; a GPU
//! run still decides whether a form becomes the default.

#![allow(dead_code)]

use rlx_opt::lower::{KernelBuffer, KernelEntry, Specialization, launches};
use rlx_opt::runtime::Tensor;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why nothing can be emulated here (no host compiler): a visible skip.
pub struct NoCompiler(pub String);

/// The host C++ compiler (`CXX`, else `g++`), if there is one.
pub fn compiler() -> Result<PathBuf, NoCompiler> {
    let gxx = PathBuf::from(std::env::var("CXX").unwrap_or_else(|_| "g++".into()));
    match Command::new(&gxx).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(gxx),
        _ => Err(NoCompiler(format!("no host C++ compiler ({}) to emulate the CUDA kernels with", gxx.display()))),
    }
}

/// A host buffer of the emulated program: its name in the launches'
/// arguments, its element type (`float`, `float2`, `uint2`), its length in
/// elements, and its values where it is an input (f32 values, read in).
pub struct Buffer {
    pub name: &'static str,
    pub element: &'static str,
    pub len: u64,
    pub input: Option<Vec<f32>>,
}

/// One launch: an entry point over a grid of (x, y) blocks of `threads`,
/// its arguments (buffer names, or literals such as a stage index).
pub struct Call {
    pub entry: String,
    pub grid: (u32, u32),
    pub threads: u32,
    pub args: Vec<String>,
}

/// The host compiler and a scratch folder of its own for each program.
pub struct Emulator {
    pub gxx: PathBuf,
    pub dir: PathBuf,
    programs: usize,
}

impl Emulator {
    pub fn new(gxx: PathBuf, what: &str) -> Emulator {
        Emulator { gxx, dir: std::env::temp_dir().join(format!("rlx-opt-cuda-emulation-{what}-{}", std::process::id())), programs: 0 }
    }

    /// `source` (one kernel file, its entries with an argument per
    /// operand) compiled for `arch` (`__CUDA_ARCH__`: 800 takes the warp
    /// reductions, 700 the shuffles), `calls` run in order over `buffers`;
    /// the f32 values of the buffer named `output`.
    pub fn run(&mut self, source: &str, arch: u32, buffers: &[Buffer], calls: &[Call], output: &str) -> Result<Vec<f32>, String> {
        self.programs += 1;
        let dir = self.dir.join(self.programs.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for b in buffers {
            if let Some(values) = &b.input {
                std::fs::write(dir.join(format!("{}.bin", b.name)), values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).map_err(|e| e.to_string())?;
            }
        }
        std::fs::write(dir.join("kernel.cu"), source).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("main.cpp"), main_cpp(buffers, calls, output)).map_err(|e| e.to_string())?;
        let shim = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cuda_emulation/shim.h");
        let binary = dir.join("program");
        let built = Command::new(&self.gxx)
            .args(["-std=c++20", "-O1", "-w", &format!("-D__CUDA_ARCH__={arch}"), "-include"])
            .arg(&shim)
            .arg(dir.join("main.cpp"))
            .arg("-o")
            .arg(&binary)
            .output()
            .map_err(|e| format!("{}: {e}", self.gxx.display()))?;
        if !built.status.success() {
            return Err(format!("the host compiler refused the kernel:\n{}", String::from_utf8_lossy(&built.stderr)));
        }
        let ran = Command::new(&binary).current_dir(&dir).output().map_err(|e| e.to_string())?;
        if !ran.status.success() {
            return Err(format!("the emulated launches failed ({}): {}", ran.status, String::from_utf8_lossy(&ran.stderr)));
        }
        let bytes = std::fs::read(dir.join(format!("{output}.bin"))).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    /// A Welch-peaks plan (`spec`, its CUDA `source`) on the input `x` and
    /// window `w`: the op's output values.
    pub fn run_welch(&mut self, spec: &Specialization, source: &str, arch: u32, x: &Tensor, w: Option<&Tensor>) -> Result<Vec<f32>, String> {
        let k = &spec.kernel;
        if x.data.len() as u64 != KernelBuffer::Segments.len(k) {
            return Err(format!("the input holds {} values, the plan binds {}", x.data.len(), KernelBuffer::Segments.len(k)));
        }
        let window = w.map_or_else(|| vec![1.0; KernelBuffer::Window.len(k) as usize], |w| w.data.clone());
        let buffer = |b: KernelBuffer, input: Option<Vec<f32>>| Buffer { name: b.name(), element: if b == KernelBuffer::Spectra { "float2" } else { "float" }, len: b.len(k).max(1), input };
        let buffers = [
            buffer(KernelBuffer::Segments, Some(x.data.clone())),
            buffer(KernelBuffer::Window, Some(window)),
            buffer(KernelBuffer::Peaks, None),
            buffer(KernelBuffer::Spectra, None),
            buffer(KernelBuffer::Partials, None),
        ];
        let calls: Vec<Call> = launches(k)
            .into_iter()
            .map(|launch| {
                let mut args: Vec<String> = launch.buffers().iter().map(|b| b.name().to_string()).collect();
                if launch.entry == KernelEntry::Stage {
                    args.push(format!("{}u", launch.stage.unwrap_or(0)));
                }
                Call { entry: launch.entry.name().to_string(), grid: launch.grid(), threads: k.threads, args }
            })
            .collect();
        self.run(source, arch, &buffers, &calls, KernelBuffer::Peaks.name())
    }
}

/// A one-arena layout as RLX's CUDA backend gives its ops: each tensor at
/// a 16-byte boundary after 7 sentinel values (1e30, what an operand read
/// out of place takes in), placed in the order asked.
#[derive(Default)]
pub struct Arena {
    pub values: Vec<f32>,
}

impl Arena {
    /// Place `len` values (`values`, the rest sentinels): their (offset, length).
    pub fn place(&mut self, values: &[f32], len: u64) -> (u32, u32) {
        self.values.extend([SENTINEL; 7]);
        while !self.values.len().is_multiple_of(4) {
            self.values.push(SENTINEL);
        }
        let off = self.values.len();
        self.values.extend_from_slice(values);
        self.values.resize(off + len as usize, SENTINEL);
        (off as u32, len as u32)
    }

    /// RLX's custom-kernel arguments (`RLX_CUSTOM_ARGS`): the arena, the
    /// result, the operands (up to four), the extras.
    pub fn args(out: (u32, u32), inputs: &[(u32, u32)], extras: [u32; 4]) -> Vec<String> {
        assert!(inputs.len() <= 4, "RLX's signature takes four operands, not {}", inputs.len());
        let mut args = vec!["arena".to_string(), format!("{}u", out.0), format!("{}u", out.1), format!("{}u", inputs.len())];
        for i in 0..4 {
            let (off, len) = inputs.get(i).copied().unwrap_or((0, 0));
            args.extend([format!("{off}u"), format!("{len}u")]);
        }
        args.extend(extras.map(|e| format!("{e}u")));
        args
    }

    /// Whether `after` (the arena once run) differs from this one only in
    /// the `written` ranges; else the first value that changed outside them.
    /// It sees the arena after every launch: an op that wrote another op's
    /// result (before that op wrote it) does not show here, a write to an
    /// operand, the padding or a sentinel does.
    pub fn changed_outside(&self, after: &[f32], written: &[(u32, u32)]) -> Option<String> {
        if after.len() != self.values.len() {
            return Some(format!("the arena came back with {} values, not {}", after.len(), self.values.len()));
        }
        let inside = |j: usize| written.iter().any(|(off, len)| (*off as usize..(*off + *len) as usize).contains(&j));
        self.values.iter().zip(after).enumerate().find(|(j, (a, b))| !inside(*j) && a.to_bits() != b.to_bits()).map(|(j, (a, b))| format!("arena value {j} changed from {a} to {b}"))
    }
}

/// Where [`Emulator::run_welch_rlx_placed`] puts the ops' results.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Results {
    /// At 16-byte boundaries, as RLX's CUDA backend places every tensor.
    Aligned,
    /// One value past them: an odd offset, which RLX's kernel contract
    /// does not rule out, and where a complex spectrum cannot be read as
    /// `float2`.
    Odd,
}

/// What an arena holds where nothing was placed.
pub const SENTINEL: f32 = 1e30;

impl Emulator {
    /// A Welch-peaks plan's kernels in RLX's signature (`source` made for
    /// `Bindings::RlxArena`), launched as rlx-ext's ops launch them: one op
    /// a launch (a 1-D grid), the first taking the segments and the window
    /// when there is one, each later op the one before's result, a
    /// radix-2 stage's index in extra e0; each result a tensor of its own.
    /// The arena holds the results (last first), then the window, then the
    /// segments. The op's output values, or what went wrong (a value
    /// written outside the ops' results included).
    pub fn run_welch_rlx(&mut self, spec: &Specialization, source: &str, arch: u32, x: &Tensor, w: Option<&Tensor>) -> Result<Vec<f32>, String> {
        self.run_welch_rlx_placed(spec, source, arch, x, w, Results::Aligned)
    }

    /// [`Self::run_welch_rlx`] with the ops' results placed as `results` says.
    pub fn run_welch_rlx_placed(&mut self, spec: &Specialization, source: &str, arch: u32, x: &Tensor, w: Option<&Tensor>, results: Results) -> Result<Vec<f32>, String> {
        let k = &spec.kernel;
        let launches = launches(k);
        let mut arena = Arena::default();
        let odd = results == Results::Odd;
        let place = |arena: &mut Arena, len: u64| match odd {
            true => {
                let (off, len) = arena.place(&[], len + 1);
                (off + 1, len - 1)
            }
            false => arena.place(&[], len),
        };
        let mut results: Vec<(u32, u32)> = launches.iter().rev().map(|l| place(&mut arena, l.writes().f32_len(k))).collect();
        results.reverse();
        let window = w.map(|w| arena.place(&w.data, w.data.len() as u64));
        let segments = arena.place(&x.data, x.data.len() as u64);
        arena.values.extend([SENTINEL; 7]);
        let calls: Vec<Call> = launches
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let inputs: Vec<(u32, u32)> = if i == 0 { std::iter::once(segments).chain(window).collect() } else { vec![results[i - 1]] };
                let grid = (u32::try_from(l.groups).expect("a 1-D grid"), 1);
                Call { entry: format!("rlx_{}", l.entry.name()), grid, threads: k.threads, args: Arena::args(results[i], &inputs, [l.stage.unwrap_or(0), 0, 0, 0]) }
            })
            .collect();
        let buffers = [Buffer { name: "arena", element: "float", len: arena.values.len() as u64, input: Some(arena.values.clone()) }];
        let after = self.run(source, arch, &buffers, &calls, "arena")?;
        if let Some(change) = arena.changed_outside(&after, &results) {
            return Err(change);
        }
        let (off, len) = *results.last().ok_or("a plan with no launch")?;
        Ok(after[off as usize..(off + len) as usize].to_vec())
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The host program: the buffers (inputs read from `<name>.bin`), each
/// launch over its grid, then `output` written to `<output>.bin`. A buffer
/// argument is its data pointer.
fn main_cpp(buffers: &[Buffer], calls: &[Call], output: &str) -> String {
    let mut text = String::from("#include \"kernel.cu\"\n#include <fstream>\n\n");
    text += "template <typename T>\nstatic std::vector<T> buffer(const char* path, size_t n) {\n    std::vector<T> v(n);\n    if (path) std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(v.data()), n * sizeof(T));\n    return v;\n}\n\nint main() {\n";
    for b in buffers {
        let path = if b.input.is_some() { format!("\"{}.bin\"", b.name) } else { "nullptr".into() };
        text += &format!("    std::vector<{0}> {1} = buffer<{0}>({path}, {2}ull);\n", b.element, b.name, b.len);
    }
    for c in calls {
        let args: Vec<String> = c.args.iter().map(|a| if buffers.iter().any(|b| b.name == a) { format!("{a}.data()") } else { a.clone() }).collect();
        text += &format!("    emulated::launch({}u, {}u, {}u, [&] {{ {}({}); }});\n", c.grid.0, c.grid.1, c.threads, c.entry, args.join(", "));
    }
    text += &format!("    std::ofstream(\"{output}.bin\", std::ios::binary).write(reinterpret_cast<const char*>({output}.data()), {output}.size() * sizeof({output}[0]));\n}}\n");
    text
}
