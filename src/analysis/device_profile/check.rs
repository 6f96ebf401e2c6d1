//! The rules a usable profile keeps.

use super::{DeviceProfile, FORMAT};

/// A profile's number in a message: as written where it is short, else in
/// scientific notation (`{}` spells 5e-324 with 323 zeros).
fn shown(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e15).contains(&v.abs()) { format!("{v}") } else { format!("{v:e}") }
}

/// Which rule of [`DeviceProfile::check`] a profile breaks. The messages
/// name the field and the range it must be in.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidProfile {
    /// The `format` written, not [`FORMAT`].
    #[error("format is `{0}`, expected `{FORMAT}`")]
    Format(String),
    #[error("target `{0}` is not one rlx-run calibrates (cpu, wgpu, cuda)")]
    Target(String),
    /// `name`: the field, and in a list its entry (`fft[1].pair_ns`).
    #[error("{name} is {}, not a time in 0..=1e12 ns", shown(*value))]
    Time { name: String, value: f64 },
    /// `may_be_zero`: 0 is allowed too (upload and readback: the device is the host CPU).
    #[error("{name} is {}, not a bandwidth in 1e-3..=1e6 bytes/ns{}", shown(*value), if *may_be_zero { " (or 0: the device is the host)" } else { "" })]
    Bandwidth { name: &'static str, value: f64, may_be_zero: bool },
    #[error("{name} is {value}, not in 1..={max}")]
    Count { name: String, value: u64, max: u64 },
    #[error("no FFT lengths measured")]
    NoFftLengths,
    /// `list`'s entry `index` has an n_fft not above the one before it.
    #[error("{list}[{index}].n_fft is not above {list}[{}].n_fft: the lengths must be ascending", index - 1)]
    LengthOrder { list: &'static str, index: usize },
    /// The host CPU's own profile breaks a rule.
    #[error("host: {0}")]
    HostCpu(Box<InvalidProfile>),
    #[error("the host profile must be a CPU's")]
    HostCpuNotCpu,
    /// A CPU's profile with a bandwidth to the host, `upload_bw` or
    /// `readback_bw`: its device is the host (taken, and meaningless: an
    /// adversarial run).
    #[error("{0}: a cpu profile's device is the host, so its upload_bw and readback_bw are 0")]
    CpuBandwidthToHost(&'static str),
    /// A CPU's profile with a host profile (taken, and meaningless).
    #[error("a cpu profile has no host profile: its device is the host")]
    CpuWithHost,
    #[error("{name} is {}, not a time in 0..=1e6 ms", shown(*value))]
    CheckTime { name: String, value: f64 },
}

impl DeviceProfile {
    /// A CPU's device is the host: no bandwidth to it, no host profile. A
    /// GPU's host profile is a CPU's, checked as one.
    fn check_host(&self) -> Result<(), InvalidProfile> {
        if self.target == "cpu" {
            if let Some((name, _)) = [("upload_bw", self.upload_bw), ("readback_bw", self.readback_bw)].into_iter().find(|(_, bw)| *bw != 0.0) {
                return Err(InvalidProfile::CpuBandwidthToHost(name));
            }
            if self.host_cpu.is_some() {
                return Err(InvalidProfile::CpuWithHost);
            }
        }
        if let Some(host_cpu) = &self.host_cpu {
            if host_cpu.target != "cpu" {
                return Err(InvalidProfile::HostCpuNotCpu);
            }
            // A CPU's: its own check refuses a host of its own.
            host_cpu.check().map_err(|e| InvalidProfile::HostCpu(Box::new(e)))?;
        }
        Ok(())
    }

    /// The rules a usable profile keeps: its format, a known target, and
    /// every number finite and within a physical range (`crate::limits`):
    /// times 0..=1e12 ns, bandwidths 1e-3..=1e6 bytes/ns (upload and
    /// readback 0 on a CPU, the device being the host, which then has no
    /// host profile; a GPU's host profile a CPU's), parallelism and workers
    /// 1..=2^24, a loop budget ≥ 1, FFT lengths 1..=2^24 ascending. A number
    /// outside them is a hand-edited or broken profile, and the model would
    /// divide by it or multiply by it into infinities and NaNs.
    pub fn check(&self) -> Result<(), InvalidProfile> {
        use crate::limits::{MAX_CPU_N_FFT, MAX_PROFILE_NS, MAX_PROFILE_WORKERS, PROFILE_BW};
        if self.format != FORMAT {
            return Err(InvalidProfile::Format(self.format.clone()));
        }
        if self.target_kind().is_none() {
            return Err(InvalidProfile::Target(self.target.clone()));
        }
        let time = |name: &str, value: f64| if (0.0..=MAX_PROFILE_NS).contains(&value) { Ok(()) } else { Err(InvalidProfile::Time { name: name.into(), value }) };
        let bandwidth = |name: &'static str, value: f64, may_be_zero: bool| {
            if PROFILE_BW.contains(&value) || (may_be_zero && value == 0.0) { Ok(()) } else { Err(InvalidProfile::Bandwidth { name, value, may_be_zero }) }
        };
        let count = |name: &str, value: u64, max: u64| if (1..=max).contains(&value) { Ok(()) } else { Err(InvalidProfile::Count { name: name.into(), value, max }) };
        let length = |name: &str, v: u64| count(name, v, MAX_CPU_N_FFT);
        time("call_ns", self.call_ns)?;
        time("spread_ns", self.spread_ns)?;
        time("pass_ns", self.pass_ns)?;
        bandwidth("upload_bw", self.upload_bw, true)?;
        bandwidth("readback_bw", self.readback_bw, true)?;
        bandwidth("memory_bw", self.memory_bw, false)?;
        count("parallelism", self.parallelism, MAX_PROFILE_WORKERS)?;
        count("workers", self.workers, MAX_PROFILE_WORKERS)?;
        count("max_loop_iterations", self.max_loop_iterations, u64::MAX)?;
        if self.fft.is_empty() {
            return Err(InvalidProfile::NoFftLengths);
        }
        for (i, u) in self.unfused.iter().enumerate() {
            time(&format!("unfused[{i}].call_ns"), u.call_ns)?;
            time(&format!("unfused[{i}].segment_ns"), u.segment_ns)?;
            time(&format!("unfused[{i}].topk_per_k_ns"), u.topk_per_k_ns)?;
            length(&format!("unfused[{i}].n_fft"), u.n_fft)?;
            if i > 0 && self.unfused[i - 1].n_fft >= u.n_fft {
                return Err(InvalidProfile::LengthOrder { list: "unfused", index: i });
            }
        }
        for (i, m) in self.log_mel.iter().enumerate() {
            time(&format!("log_mel[{i}].frame_ns"), m.frame_ns)?;
            length(&format!("log_mel[{i}].n_fft"), m.n_fft)?;
            if i > 0 && self.log_mel[i - 1].n_fft >= m.n_fft {
                return Err(InvalidProfile::LengthOrder { list: "log_mel", index: i });
            }
        }
        for (i, u) in self.unfused_log_mel.iter().enumerate() {
            time(&format!("unfused_log_mel[{i}].call_ns"), u.call_ns)?;
            time(&format!("unfused_log_mel[{i}].frame_ns"), u.frame_ns)?;
            length(&format!("unfused_log_mel[{i}].n_fft"), u.n_fft)?;
            if i > 0 && self.unfused_log_mel[i - 1].n_fft >= u.n_fft {
                return Err(InvalidProfile::LengthOrder { list: "unfused_log_mel", index: i });
            }
        }
        self.check_host()?;
        for (i, f) in self.fft.iter().enumerate() {
            time(&format!("fft[{i}].setup_ns"), f.setup_ns)?;
            time(&format!("fft[{i}].pair_ns"), f.pair_ns)?;
            time(&format!("fft[{i}].topk_base_ns"), f.topk_base_ns)?;
            time(&format!("fft[{i}].topk_per_k_ns"), f.topk_per_k_ns)?;
            // Lengths are interpolated on a log scale: 0 has no place there.
            length(&format!("fft[{i}].n_fft"), f.n_fft)?;
            if i > 0 && self.fft[i - 1].n_fft >= f.n_fft {
                return Err(InvalidProfile::LengthOrder { list: "fft", index: i });
            }
        }
        // The checks predict nothing, but they are printed and compared.
        for (i, c) in self.checks.iter().enumerate() {
            for (name, value) in [("measured_ms", c.measured_ms), ("predicted_ms", c.predicted_ms)] {
                if !(0.0..=MAX_PROFILE_NS / 1e6).contains(&value) {
                    return Err(InvalidProfile::CheckTime { name: format!("checks[{i}].{name}"), value });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::example;
    use super::*;

    #[test]
    fn bad_profiles_are_refused_with_the_reason() {
        let mut p = example();
        assert!(p.check().is_ok());
        p.memory_bw = 0.0;
        let e = p.check().unwrap_err();
        assert_eq!(e, InvalidProfile::Bandwidth { name: "memory_bw", value: 0.0, may_be_zero: false });
        assert_eq!(e.to_string(), "memory_bw is 0, not a bandwidth in 1e-3..=1e6 bytes/ns");
        p.upload_bw = -1.0;
        assert_eq!(p.check().unwrap_err().to_string(), "upload_bw is -1, not a bandwidth in 1e-3..=1e6 bytes/ns (or 0: the device is the host)");
        let mut p = example();
        p.fft[1].pair_ns = f64::NAN;
        assert!(matches!(p.check().unwrap_err(), InvalidProfile::Time { name, .. } if name == "fft[1].pair_ns"));
        assert_eq!(p.check().unwrap_err().to_string(), "fft[1].pair_ns is NaN, not a time in 0..=1e12 ns");
        let mut p = example();
        p.target = "tpu".into();
        assert_eq!(p.check().unwrap_err(), InvalidProfile::Target("tpu".into()));
        let mut p = example();
        p.fft[0].n_fft = 0;
        assert_eq!(p.check().unwrap_err().to_string(), "fft[0].n_fft is 0, not in 1..=16777216");
        let mut p = example();
        p.max_loop_iterations = 0;
        assert!(matches!(p.check().unwrap_err(), InvalidProfile::Count { name, value: 0, .. } if name == "max_loop_iterations"));
        let mut p = DeviceProfile { target: "wgpu".into(), upload_bw: 1.0, readback_bw: 1.0, ..example() };
        p.host_cpu = Some(Box::new(DeviceProfile { call_ns: 1e300, ..example() }));
        let e = p.check().unwrap_err();
        assert!(matches!(&e, InvalidProfile::HostCpu(inner) if matches!(&**inner, InvalidProfile::Time { name, .. } if name == "call_ns")), "{e}");
        assert_eq!(e.to_string(), "host: call_ns is 1e300, not a time in 0..=1e12 ns");
        // A CPU's device is the host: no bandwidth to it, no host profile;
        // a GPU's host is checked as the CPU profile it is.
        let mut p = example();
        p.upload_bw = 5.0;
        assert_eq!(p.check().unwrap_err().to_string(), "upload_bw: a cpu profile's device is the host, so its upload_bw and readback_bw are 0");
        let mut p = example();
        p.host_cpu = Some(Box::new(example()));
        assert_eq!(p.check().unwrap_err(), InvalidProfile::CpuWithHost);
        let mut p = DeviceProfile { target: "wgpu".into(), upload_bw: 1.0, readback_bw: 1.0, ..example() };
        assert_eq!(p.check(), Ok(()));
        p.host_cpu = Some(Box::new(DeviceProfile { readback_bw: 5.0, ..example() }));
        assert_eq!(p.check().unwrap_err().to_string(), "host: readback_bw: a cpu profile's device is the host, so its upload_bw and readback_bw are 0");
        p.host_cpu = Some(Box::new(DeviceProfile { host_cpu: Some(Box::new(example())), ..example() }));
        assert_eq!(p.check().unwrap_err().to_string(), "host: a cpu profile has no host profile: its device is the host");
        p.host_cpu = Some(Box::new(DeviceProfile { target: "wgpu".into(), ..example() }));
        assert_eq!(p.check().unwrap_err(), InvalidProfile::HostCpuNotCpu);
        let mut p = example();
        p.log_mel[0].frame_ns = -1.0;
        assert_eq!(p.check().unwrap_err().to_string(), "log_mel[0].frame_ns is -1, not a time in 0..=1e12 ns");
        let mut p = example();
        p.log_mel[1].n_fft = p.log_mel[0].n_fft;
        assert_eq!(p.check().unwrap_err().to_string(), "log_mel[1].n_fft is not above log_mel[0].n_fft: the lengths must be ascending");
        let mut p = example();
        p.unfused_log_mel = vec![super::super::UnfusedLogMelCost { n_fft: 400, call_ns: 1e3, frame_ns: f64::INFINITY }];
        assert_eq!(p.check().unwrap_err().to_string(), "unfused_log_mel[0].frame_ns is inf, not a time in 0..=1e12 ns");
    }
}
