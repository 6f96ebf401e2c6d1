//! Kernel categories from `categories.toml` (data, not code): ordered
//! case-insensitive globs over the kernel name or `cat:name`.

use super::TraceError;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

#[derive(Deserialize)]
struct File {
    category: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    #[serde(default)]
    fused: bool,
    #[serde(default)]
    view: bool,
    patterns: Vec<String>,
}

pub struct Category {
    pub name: String,
    pub fused: bool,
    pub view: bool,
    globs: GlobSet,
}

/// What a kernel is, for the analysis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    pub category: String,
    pub fused: bool,
    pub view: bool,
}

pub struct Classifier {
    categories: Vec<Category>,
}

pub const DEFAULT: &str = include_str!("categories.toml");

impl Classifier {
    pub fn from_toml(text: &str) -> Result<Classifier, TraceError> {
        let file: File = toml::from_str(text).map_err(|source| TraceError::Categories { source })?;
        let categories = file
            .category
            .into_iter()
            .map(|entry| {
                let mut set = GlobSetBuilder::new();
                for pattern in &entry.patterns {
                    let glob = GlobBuilder::new(pattern).case_insensitive(true).literal_separator(false).build();
                    set.add(glob.map_err(|source| TraceError::Pattern { category: entry.name.clone(), pattern: pattern.clone(), source })?);
                }
                let globs = set.build().map_err(|source| TraceError::Category { category: entry.name.clone(), source })?;
                Ok(Category { name: entry.name, fused: entry.fused, view: entry.view, globs })
            })
            .collect::<Result<_, TraceError>>()?;
        Ok(Classifier { categories })
    }

    pub fn default_set() -> Classifier {
        Classifier::from_toml(DEFAULT).expect("the shipped categories file is valid")
    }

    /// The category of a kernel; unknown names stay visible as themselves.
    pub fn classify(&self, cat: &str, name: &str) -> Class {
        let qualified = format!("{cat}:{name}");
        for c in &self.categories {
            if c.globs.is_match(name) || c.globs.is_match(&qualified) {
                return Class { category: c.name.clone(), fused: c.fused, view: c.view };
            }
        }
        Class { category: format!("other: {}", short(name)), fused: false, view: false }
    }
}

/// A kernel name without its template arguments, at most 60 characters;
/// an op of rlx-run's (`%7 LogMel`) without its node's label, so that one
/// kind of op is one category (each node was its own: an adversarial run).
pub fn short(name: &str) -> String {
    let base = name.split('<').next().unwrap_or(name).trim_start_matches("void ");
    let base = match base.strip_prefix('%').and_then(|rest| rest.split_once(' ')) {
        Some((label, op)) if !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()) && !op.is_empty() => op,
        _ => base,
    };
    base.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_what_wafer_core_misses_and_this_project_needs() {
        let c = Classifier::default_set();
        for (name, want) in [
            ("ampere_sgemm_128x64_tn", "GEMM"),
            ("sm90_xmma_gemm_bf16bf16_bf16f32", "GEMM"),
            ("nvjet_tst_64x8_64x16_2x1_v_bz_TNT", "GEMM"),
            ("Cijk_Ailk_Bljk_BBS_BH_MT64x64x64", "GEMM"),
            ("void vector_fft<256u, 8u>(…)", "FFT"),
            ("regular_fft_factor", "FFT"),
            ("void at::native::sbtopk::gatherTopK<float>", "Top-k / sort"),
            ("triton_poi_fused_add_mul_0", "Triton fused"),
            ("void at::native::vectorized_elementwise_kernel<4>", "Elementwise"),
        ] {
            assert_eq!(c.classify("kernel", name).category, want, "{name}");
        }
        let fused = c.classify("fused", "%4 rlx_opt.welch_peaks");
        assert_eq!((fused.category.as_str(), fused.fused), ("Welch peaks (fused)", true));
        // The log-mel op is not Welch's (it was, by `fused:*`), and an op
        // nobody matches is one category whatever its node.
        for (cat, name) in [("fused", "%5 rlx_opt.log_mel"), ("fused", "rlx_opt.log_mel"), ("kernel", "rlx_log_mel"), ("kernel", "mel_bands")] {
            let c = c.classify(cat, name);
            assert_eq!((c.category.as_str(), c.fused), ("Log-mel (fused)", true), "{name}");
        }
        assert_eq!(c.classify("LogMel", "%7 LogMel").category, "Log-mel");
        assert_eq!(c.classify("Frobnicate", "%5 Frobnicate").category, "other: Frobnicate");
        assert_eq!(c.classify("Frobnicate", "%12 Frobnicate").category, "other: Frobnicate");
        assert_eq!(c.classify("kernel", "%x kernel").category, "other: %x kernel");
        assert_eq!(c.classify("kernel", "%5 ").category, "other: %5 ");
        assert_eq!(c.classify("Fft", "%3 Fft").category, "FFT");
        assert!(c.classify("Narrow", "%5 Narrow").view);
        assert_eq!(c.classify("kernel", "void mystery_kernel<int>(int)").category, "other: mystery_kernel");
    }
}
