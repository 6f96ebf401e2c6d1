//! The backends RLX compiles for.

use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    Cpu,
    Cuda,
    Rocm,
    Metal,
    Mlx,
    Wgpu,
    Tpu,
}

impl Target {
    pub const ALL: [Target; 7] = [Target::Cpu, Target::Cuda, Target::Rocm, Target::Metal, Target::Mlx, Target::Wgpu, Target::Tpu];

    /// The name `--target` takes.
    pub fn name(self) -> &'static str {
        match self {
            Target::Cpu => "cpu",
            Target::Cuda => "cuda",
            Target::Rocm => "rocm",
            Target::Metal => "metal",
            Target::Mlx => "mlx",
            Target::Wgpu => "wgpu",
            Target::Tpu => "tpu",
        }
    }

    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
