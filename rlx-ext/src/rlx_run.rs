//! RLX for rlx-opt's `rlx-run` driver: `--engine=rlx` and `--calibrate`'s
//! RLX unfused chain, through [`rlx_opt::run_cli::RlxEngine`].

use crate::engine;
use rlx_opt::analysis::Target;
use rlx_opt::analysis::device_profile::{UnfusedCost, UnfusedLogMelCost};
use rlx_opt::ir::Graph;
use rlx_opt::run_cli::{EngineError, KernelCall, RlxCompiled, RlxEngine};
use rlx_opt::runtime::Tensor;
use std::collections::HashMap;
use std::time::Duration;

/// RLX's own `Session` as rlx-run's `--engine=rlx`, and RLX's unfused chain
/// measured by `--calibrate`: what rlx-ext's `rlx-run` hands the driver
/// (`rlx_opt::run_cli::main_with_engine(args, &SessionEngine)`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionEngine;

impl RlxEngine for SessionEngine {
    fn backend(&self, target: Target) -> Result<(), EngineError> {
        engine::device_for(target).map(drop).map_err(|e| EngineError::from(crate::Error::from(e)))
    }

    fn calibrate_unfused(&self, target: Target, progress: &mut dyn FnMut(&str)) -> Result<Vec<UnfusedCost>, EngineError> {
        crate::calibrate::calibrate_unfused(target, progress).map_err(|e| EngineError::from(crate::Error::from(e)))
    }

    fn calibrate_unfused_log_mel(&self, target: Target, progress: &mut dyn FnMut(&str)) -> Result<Vec<UnfusedLogMelCost>, EngineError> {
        crate::calibrate::calibrate_unfused_log_mel(target, progress).map_err(|e| EngineError::from(crate::Error::from(e)))
    }

    fn compile(&self, graph: &Graph, target: Target) -> Result<Box<dyn RlxCompiled>, EngineError> {
        Ok(Box::new(Session(engine::compile(graph, target).map_err(|e| EngineError::from(crate::Error::from(e)))?)))
    }
}

/// A graph compiled for rlx-run.
struct Session(engine::Compiled);

impl RlxCompiled for Session {
    /// The run, with the CPU kernel calls made meanwhile (a recording of its
    /// own: another caller's is not disturbed).
    fn run(&mut self, inputs: &HashMap<String, Tensor>, calls: &mut Vec<KernelCall>) -> Result<Vec<Tensor>, EngineError> {
        let recording = crate::Recording::start();
        let outputs = self.0.run(inputs).map_err(|e| EngineError::from(crate::Error::from(e)))?;
        *calls = recording.take().into_iter().map(|c| KernelCall { name: c.name, start: c.start, duration: c.duration }).collect();
        Ok(outputs)
    }

    fn compile_time(&self) -> Duration {
        self.0.compile_time
    }

    fn gpu_kernels(&self) -> usize {
        self.0.gpu_kernels
    }
}
