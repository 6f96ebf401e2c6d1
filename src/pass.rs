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
    pub create: fn(&PassOptions) -> Result<Box<dyn Pass>, OptionError>,
}

/// Why a pass cannot be built from its options. The messages are the ones
/// the drivers print (and tests compare), so each variant keeps its text.
#[derive(Debug, thiserror::Error)]
pub enum OptionError {
    #[error("option `{item}` of pass `{pass}` is not of the form key=value")]
    NotKeyValue { pass: &'static str, item: String },
    /// A `"` that nothing closes.
    #[error("options of pass `{pass}`: a quote `\"` is not closed")]
    UnclosedQuote { pass: &'static str },
    /// `known`: the pass's option names, comma-separated (`none` for none).
    #[error("pass `{pass}` has no option `{key}` (options: {known})")]
    UnknownOption { pass: &'static str, key: String, known: String },
    #[error("option `{key}` of pass `{pass}` is given twice")]
    GivenTwice { pass: &'static str, key: String },
    /// `expected`: every target name, comma-separated.
    #[error("unknown target `{name}` (expected one of {expected})")]
    UnknownTarget { name: String, expected: String },
    /// An option given without the value it needs (`needs` says what).
    #[error("option `{key}` needs {needs}")]
    MissingValue { key: &'static str, needs: &'static str },
    #[error("option `{key}` of `{pass}` takes a number, got `{value}`")]
    NotANumber { pass: &'static str, key: &'static str, value: String },
    #[error("option `{key}` of `{pass}` must be a number in {range}, got `{value}`")]
    OutOfRange { pass: &'static str, key: &'static str, value: String, range: &'static str },
    #[error("option `{key}` of `{pass}` takes true or false, got `{value}`")]
    NotABool { pass: &'static str, key: String, value: String },
    #[error("unknown model `{name}` (expected {expected})")]
    UnknownModel { name: String, expected: &'static str },
    #[error("unknown plan `{name}` for option `{key}` (expected one of {expected})")]
    UnknownPlan { name: String, key: &'static str, expected: String },
    /// `profile=PATH` cannot be read or used.
    #[error(transparent)]
    Profile(#[from] crate::analysis::device_profile::ProfileError),
    #[error("option `profile` of `{pass}`: {path} measured a {measured} device, the pass targets {target}")]
    ProfileTarget { pass: &'static str, path: String, measured: Target, target: Target },
}

/// Why a pipeline's text cannot be split into passes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// `pipeline`: the text, clipped for the message.
    #[error("unbalanced `}}` in pipeline `{pipeline}`")]
    UnbalancedClose { pipeline: String },
    #[error("unbalanced `{{` in pipeline `{pipeline}`")]
    UnbalancedOpen { pipeline: String },
    #[error("a quote `\"` is not closed in pipeline `{pipeline}`")]
    UnclosedQuote { pipeline: String },
    #[error("empty pass name in pipeline `{pipeline}`")]
    EmptyPassName { pipeline: String },
    #[error("text after the options of `{pass}` in pipeline `{pipeline}`")]
    TextAfterOptions { pass: String, pipeline: String },
}

/// `key=value` options as written, checked against a pass's [`OptionSpec`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassOptions {
    values: Vec<(String, String)>,
}

impl PassOptions {
    /// Parse `key=value` items separated by spaces or commas; a value in
    /// double quotes, as MLIR's pass options take it, may hold both
    /// (`profile="my profiles/a,b.json"`).
    pub fn parse(text: &str, info: &PassInfo) -> Result<PassOptions, OptionError> {
        let mut values: Vec<(String, String)> = Vec::new();
        for item in unquoted_items(text).ok_or(OptionError::UnclosedQuote { pass: info.name })? {
            let item = item.as_str();
            let (key, value) = item.split_once('=').ok_or_else(|| OptionError::NotKeyValue { pass: info.name, item: item.into() })?;
            if !info.options.iter().any(|o| o.name == key) {
                let known: Vec<&str> = info.options.iter().map(|o| o.name).collect();
                let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                return Err(OptionError::UnknownOption { pass: info.name, key: key.into(), known });
            }
            if values.iter().any(|(k, _)| k == key) {
                return Err(OptionError::GivenTwice { pass: info.name, key: key.into() });
            }
            values.push((key.to_string(), value.to_string()));
        }
        Ok(PassOptions { values })
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Set `key` to `value` where it is not set.
    pub fn set_default(&mut self, key: &str, value: &str) {
        if self.get(key).is_none() {
            self.values.push((key.to_string(), value.to_string()));
        }
    }

    /// The `target` option, if set.
    pub fn target(&self) -> Result<Option<Target>, OptionError> {
        self.get("target")
            .map(|t| {
                Target::from_name(t).ok_or_else(|| {
                    let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
                    OptionError::UnknownTarget { name: t.into(), expected: names.join(", ") }
                })
            })
            .transpose()
    }
}

/// `text` split at spaces, commas, tabs and line breaks outside double
/// quotes, the quotes dropped (`a="x y",b=z` is `a=x y` and `b=z`); `None`
/// where a quote is not closed.
fn unquoted_items(text: &str) -> Option<Vec<String>> {
    let (mut items, mut item, mut quoted) = (Vec::new(), String::new(), false);
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' | ',' | '\t' | '\n' if !quoted => {
                if !item.is_empty() {
                    items.push(std::mem::take(&mut item));
                }
            }
            c => item.push(c),
        }
    }
    if !item.is_empty() {
        items.push(item);
    }
    (!quoted).then_some(items)
}

/// Split a pipeline at top-level commas into `(pass name, option text)`.
pub fn parse_pipeline(text: &str) -> Result<Vec<(String, String)>, PipelineError> {
    let pipeline = || crate::diag::clip(text);
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    // Inside double quotes (an option's value) braces and commas are text.
    let mut quoted = false;
    for (i, c) in text.char_indices().chain([(text.len(), ',')]) {
        if c == '"' {
            quoted = !quoted;
        }
        if quoted && i < text.len() {
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => depth = depth.checked_sub(1).ok_or_else(|| PipelineError::UnbalancedClose { pipeline: pipeline() })?,
            ',' if depth == 0 => {
                let item = text[start..i].trim();
                start = i + 1;
                if item.is_empty() {
                    if i == text.len() && items.is_empty() {
                        break;
                    }
                    return Err(PipelineError::EmptyPassName { pipeline: pipeline() });
                }
                let (name, options) = match item.split_once('{') {
                    Some((name, rest)) => {
                        // The options are what the first `{` holds, up to the
                        // `}` that closes it, which must end the item
                        // (`p{a=1}{b=2}` read as the options `a=1}{b=2`).
                        let close = rest
                            .char_indices()
                            .scan((1usize, false), |(open, quoted), (j, c)| {
                                match c {
                                    '"' => *quoted = !*quoted,
                                    '{' if !*quoted => *open += 1,
                                    '}' if !*quoted => *open -= 1,
                                    _ => {}
                                }
                                Some((j, *open))
                            })
                            .find(|(_, open)| *open == 0)
                            .map(|(j, _)| j);
                        let options = match close {
                            Some(j) if j + 1 == rest.len() => &rest[..j],
                            _ => return Err(PipelineError::TextAfterOptions { pass: name.trim().into(), pipeline: pipeline() }),
                        };
                        (name.trim(), options)
                    }
                    None => (item, ""),
                };
                items.push((name.to_string(), options.to_string()));
            }
            _ => {}
        }
    }
    if quoted {
        return Err(PipelineError::UnclosedQuote { pipeline: pipeline() });
    }
    if depth != 0 {
        return Err(PipelineError::UnbalancedOpen { pipeline: pipeline() });
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
        assert!(matches!(parse_pipeline("dce{"), Err(PipelineError::UnbalancedOpen { .. })));
        assert!(matches!(parse_pipeline("dce,,dce"), Err(PipelineError::EmptyPassName { .. })));
        let e = parse_pipeline("dce{a=1}x").unwrap_err();
        assert_eq!(e, PipelineError::TextAfterOptions { pass: "dce".into(), pipeline: "dce{a=1}x".into() });
        // Two option groups (an adversarial run: read as the options `a=1}{b=2`).
        let twice = parse_pipeline("dce{a=1}{b=2}").unwrap_err();
        assert_eq!(twice, PipelineError::TextAfterOptions { pass: "dce".into(), pipeline: "dce{a=1}{b=2}".into() });
        // Braces inside the options still nest.
        assert_eq!(parse_pipeline("p{a={x}},q").unwrap(), [("p".to_string(), "a={x}".to_string()), ("q".to_string(), String::new())]);
        assert_eq!(e.to_string(), "text after the options of `dce` in pipeline `dce{a=1}x`");
        assert_eq!(parse_pipeline("dce}").unwrap_err().to_string(), "unbalanced `}` in pipeline `dce}`");
    }

    /// A value in double quotes holds spaces, commas and braces, as MLIR's
    /// pass options take it (a profile under `my profiles/a,b.json` could
    /// not be named: an adversarial run).
    #[test]
    fn quoted_values_hold_separators() {
        static INFO: PassInfo = PassInfo {
            name: "p",
            description: "",
            options: &[OptionSpec { name: "profile", help: "", default: "" }, OptionSpec { name: "target", help: "", default: "" }],
            create: |_| Err(OptionError::MissingValue { key: "target", needs: "a target" }),
        };
        let p = parse_pipeline(r#"p{profile="my profiles/a,b}{.json" target=cpu},q"#).unwrap();
        assert_eq!(p, [("p".to_string(), r#"profile="my profiles/a,b}{.json" target=cpu"#.to_string()), ("q".to_string(), String::new())]);
        let options = PassOptions::parse(&p[0].1, &INFO).unwrap();
        assert_eq!((options.get("profile"), options.get("target")), (Some("my profiles/a,b}{.json"), Some("cpu")));
        assert_eq!(PassOptions::parse(r#"profile=a" "b,target=cpu"#, &INFO).unwrap().get("profile"), Some("a b"));
        let e = PassOptions::parse(r#"profile="a b"#, &INFO).unwrap_err();
        assert_eq!(e.to_string(), r#"options of pass `p`: a quote `"` is not closed"#);
        assert_eq!(parse_pipeline(r#"p{profile="a}"#).unwrap_err().to_string(), r#"a quote `"` is not closed in pipeline `p{profile="a}`"#);
    }

    #[test]
    fn option_errors_say_which_option_is_wrong() {
        static INFO: PassInfo = PassInfo {
            name: "p",
            description: "",
            options: &[OptionSpec { name: "target", help: "", default: "" }],
            create: |_| Err(OptionError::MissingValue { key: "target", needs: "a target" }),
        };
        let e = PassOptions::parse("target", &INFO).unwrap_err();
        assert!(matches!(&e, OptionError::NotKeyValue { pass: "p", item } if item == "target"), "{e}");
        assert_eq!(e.to_string(), "option `target` of pass `p` is not of the form key=value");
        let e = PassOptions::parse("x=1", &INFO).unwrap_err();
        assert!(matches!(&e, OptionError::UnknownOption { key, known, .. } if key == "x" && known == "target"), "{e}");
        assert_eq!(e.to_string(), "pass `p` has no option `x` (options: target)");
        assert!(matches!(PassOptions::parse("target=a target=b", &INFO), Err(OptionError::GivenTwice { .. })));
        let e = PassOptions::parse("target=gpu9", &INFO).unwrap().target().unwrap_err();
        assert!(matches!(&e, OptionError::UnknownTarget { name, .. } if name == "gpu9"), "{e}");
        assert!(e.to_string().starts_with("unknown target `gpu9` (expected one of cpu, "), "{e}");
    }
}
