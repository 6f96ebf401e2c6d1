//! The `rlx-trace` command line: `summary TRACE` and
//! `diff A B [--format=text|json] [-o FILE] [--labels=A,B]`.

use crate::cli::{EXIT_FAILURE, EXIT_USAGE, output_failed, print_out, say, say_error, usage_error};
use crate::diag::escape_invisible;
use crate::output::write_file_reading;
use crate::trace::{self, classify::Classifier, load};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "rlx-trace", version, about = "Compare GPU kernel traces and explain which kernels one side fuses")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Kernel categories of one trace.
    Summary {
        trace: String,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Which operations one trace runs as several kernels and the other as one.
    Diff {
        a: String,
        b: String,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Write here instead of stdout (atomically).
        #[arg(short = 'o', value_name = "FILE", value_parser = clap::builder::PathBufValueParser::new())]
        output: Option<std::path::PathBuf>,
        /// Names for the two sides (default: the file names).
        #[arg(long, value_name = "NAME_A,NAME_B")]
        labels: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

fn label_of(path: &str) -> String {
    let name = std::path::Path::new(path).file_name().map_or(path.to_string(), |n| n.to_string_lossy().into_owned());
    name.trim_end_matches(".gz").trim_end_matches(".json").to_string()
}

pub fn main_with_args(args: Vec<String>) -> i32 {
    main_with_os_args(args)
}

/// [`main_with_args`] with the OS's own strings (`std::env::args_os`): a
/// path that is not UTF-8 reaches the file system as it is.
pub fn main_with_os_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let classifier = Classifier::default_set();
    let result = match cli.command {
        Command::Summary { trace, format } => load::load_file(&trace).map_err(|e| e.to_string()).map(|t| {
            let (side, rows) = trace::summary(&label_of(&trace), &t, &classifier);
            let text = match format {
                // Names come from the trace (kernels, the device): a terminal
                // is shown their invisible characters escaped. JSON escapes
                // control characters itself.
                Format::Text => escape_invisible(&trace::render_summary(&side, &rows)),
                Format::Json => serde_json::to_string_pretty(&serde_json::json!({"trace": side, "categories": rows})).expect("serialises") + "\n",
            };
            (text, None, Vec::new())
        }),
        Command::Diff { a, b, format, output, labels } => {
            // Two names, distinct and non-empty: `a,b,c` was `a` and `b,c`,
            // `,` two empty columns, `a,a` two alike (an adversarial run).
            let labels = match labels.as_deref().map(|l| l.split_once(',')) {
                Some(Some((x, y))) if !x.trim().is_empty() && !y.trim().is_empty() && !y.contains(',') && x != y => [x.to_string(), y.to_string()],
                Some(_) => {
                    say_error(TOOL, "--labels takes NAME_A,NAME_B: two names, distinct, neither empty nor holding a comma");
                    return EXIT_USAGE;
                }
                // Files of one name (run1/t.json, run2/t.json) told apart.
                None => match [label_of(&a), label_of(&b)] {
                    [x, y] if x == y => [format!("A ({x})"), format!("B ({y})")],
                    labels => labels,
                },
            };
            load::load_file(&a).and_then(|ta| load::load_file(&b).map(|tb| (ta, tb))).map_err(|e| e.to_string()).map(|(ta, tb)| {
                let report = trace::diff(labels, &ta, &tb, &classifier);
                let text = match format {
                    Format::Text => escape_invisible(&trace::render_diff(&report)),
                    Format::Json => serde_json::to_string_pretty(&report).expect("serialises") + "\n",
                };
                (text, output, vec![a.clone(), b.clone()])
            })
        }
    };
    match result {
        Ok((text, None, _)) => print_out(&text).map_or_else(|e| e.exit(TOOL), |()| 0),
        // The report may not replace a trace it was made of.
        Ok((text, Some(path), read)) => {
            let read: Vec<&std::path::Path> = read.iter().map(std::path::Path::new).collect();
            write_file_reading(&path, text.as_bytes(), &read).map_or_else(|e| output_failed(TOOL, &e), |()| 0)
        }
        Err(message) => {
            // Located (`t.json:1:54: error: …`): escaped, as every message,
            // but never clipped: the path and position are one long word.
            say(&crate::diag::escape_invisible(&message));
            EXIT_FAILURE
        }
    }
}

const TOOL: &str = "rlx-trace";
