//! Pass machinery: the [`Pass`] trait, named options, statistics, and the
//! mlir-opt pipeline syntax (`dce,print-io-profile{target=cuda}`). The passes
//! themselves live in `passes/`, one per file, registered in `passes/mod.rs`.

use crate::analysis::Target;
use crate::diag::Diagnostic;
use crate::ir::Graph;
use std::any::Any;

/// One transformation or analysis over a graph. `Send + Sync`: MLIR hosts may
/// run copies of a pass on several threads.
pub trait Pass: Send + Sync {
    fn name(&self) -> &'static str;
    fn run(&self, graph: &mut Graph, cx: &mut PassContext) -> Result<Statistics, Diagnostic>;
}

/// How analysis passes write the reports they leave in [`PassContext::reports`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Text,
    Json,
}

/// What a pass may read of the invocation, and where its results go.
pub struct PassContext {
    /// `--target`, for passes whose own `target` option is unset.
    pub target: Target,
    pub report_format: ReportFormat,
    /// Text an analysis pass reports, printed by the host in order.
    pub reports: Vec<String>,
    /// Results a host asked passes for, one value per type (a pass's own
    /// report type stays the pass's): the host [`request`](Self::request)s
    /// one, passes that make such results [`results`](Self::results) it,
    /// the host [`take`](Self::take)s it.
    results: Vec<Box<dyn Any + Send>>,
}

impl PassContext {
    pub fn new(target: Target, report_format: ReportFormat) -> Self {
        PassContext { target, report_format, reports: Vec::new(), results: Vec::new() }
    }

    /// Ask passes for results of type `T` (starting empty).
    pub fn request<T: Default + Any + Send>(&mut self) {
        if self.results::<T>().is_none() {
            self.results.push(Box::new(T::default()));
        }
    }

    /// Where a pass puts results of type `T`, if the host asked for them.
    pub fn results<T: Any + Send>(&mut self) -> Option<&mut T> {
        self.results.iter_mut().find_map(|r| r.downcast_mut::<T>())
    }

    /// The results of type `T` so far, leaving an empty `T` for later passes.
    pub fn take<T: Default + Any + Send>(&mut self) -> T {
        self.results::<T>().map(std::mem::take).unwrap_or_default()
    }
}

/// A counter a pass reports under `--pass-statistics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statistic {
    pub name: &'static str,
    pub description: &'static str,
    pub value: u64,
}

pub type Statistics = Vec<Statistic>;

/// A named option a pass accepts.
pub struct OptionSpec {
    pub name: &'static str,
    pub help: &'static str,
    pub default: &'static str,
}

/// A registered pass: how to describe it and how to build it from options.
pub struct PassInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub options: &'static [OptionSpec],
    pub create: fn(&PassOptions) -> Result<Box<dyn Pass>, String>,
}

/// `key=value` options as written, checked against a pass's [`OptionSpec`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassOptions {
    values: Vec<(String, String)>,
}

impl PassOptions {
    /// Parse `key=value` items separated by spaces or commas.
    pub fn parse(text: &str, info: &PassInfo) -> Result<PassOptions, String> {
        let mut values: Vec<(String, String)> = Vec::new();
        for item in text.split([' ', ',', '\t', '\n']).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("option `{item}` of pass `{}` is not of the form key=value", info.name))?;
            if !info.options.iter().any(|o| o.name == key) {
                let known: Vec<&str> = info.options.iter().map(|o| o.name).collect();
                return Err(format!(
                    "pass `{}` has no option `{key}` (options: {})",
                    info.name,
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ));
            }
            if values.iter().any(|(k, _)| k == key) {
                return Err(format!("option `{key}` of pass `{}` is given twice", info.name));
            }
            values.push((key.to_string(), value.to_string()));
        }
        Ok(PassOptions { values })
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The `target` option, if set.
    pub fn target(&self) -> Result<Option<Target>, String> {
        self.get("target")
            .map(|t| {
                Target::from_name(t).ok_or_else(|| {
                    let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
                    format!("unknown target `{t}` (expected one of {})", names.join(", "))
                })
            })
            .transpose()
    }
}

/// Split a pipeline at top-level commas into `(pass name, option text)`.
pub fn parse_pipeline(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in text.char_indices().chain([(text.len(), ',')]) {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.checked_sub(1).ok_or_else(|| format!("unbalanced `}}` in pipeline `{}`", crate::diag::clip(text)))?,
            ',' if depth == 0 => {
                let item = text[start..i].trim();
                start = i + 1;
                if item.is_empty() {
                    if i == text.len() && items.is_empty() {
                        break;
                    }
                    return Err(format!("empty pass name in pipeline `{}`", crate::diag::clip(text)));
                }
                let (name, options) = match item.split_once('{') {
                    Some((name, rest)) => {
                        let options = rest
                            .strip_suffix('}')
                            .ok_or_else(|| format!("text after the options of `{}` in pipeline `{}`", name.trim(), crate::diag::clip(text)))?;
                        (name.trim(), options)
                    }
                    None => (item, ""),
                };
                items.push((name.to_string(), options.to_string()));
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced `{{` in pipeline `{}`", crate::diag::clip(text)));
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_split_at_top_level_commas() {
        let p = parse_pipeline("dce, print-io-profile{target=cuda}, x{a=1 b=2,c=3}").unwrap();
        assert_eq!(
            p,
            vec![
                ("dce".into(), "".into()),
                ("print-io-profile".into(), "target=cuda".into()),
                ("x".into(), "a=1 b=2,c=3".into())
            ]
        );
        assert_eq!(parse_pipeline("").unwrap(), vec![]);
        assert!(parse_pipeline("dce{").is_err());
        assert!(parse_pipeline("dce,,dce").is_err());
        assert!(parse_pipeline("dce{a=1}x").is_err());
    }
}
