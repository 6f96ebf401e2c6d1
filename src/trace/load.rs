//! Streaming loader for Chrome-trace JSON (PyTorch profiler / Kineto, and
//! rlx-run's `--trace`), plain or gzipped, object form or bare array. Events
//! are deserialised one at a time and only what the analysis needs is kept,
//! so a trace of hundreds of MB is never held as a document.

use super::TraceError;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::io::{BufReader, Read};
use std::sync::Arc;
use crate::limits::{MAX_TRACE_BYTES, MAX_TRACE_KERNELS, MAX_TRACE_STRING};

/// What ran the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    Nvidia,
    Amd,
    RlxRunCpu,
    RlxRunWgpu,
    RlxRunCuda,
    Unknown,
}

/// Kernel names, categories and operators repeat across events: each
/// distinct string is held once (an event costs its numbers, not its text).
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub name: Arc<str>,
    /// The trace's own category (`kernel`, or rlx-run's op kind).
    pub cat: Arc<str>,
    pub ts: f64,
    pub dur: f64,
    pub stream: i64,
    pub device: i64,
    /// The operator that launched it (`cpu_op` via `External id`), when the trace has one.
    pub cpu_op: Option<Arc<str>>,
    /// Groups the kernels of one operator invocation.
    pub launch: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyKind {
    DeviceToHost,
    HostToDevice,
    DeviceToDevice,
    Memset,
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Copy {
    pub kind: CopyKind,
    pub bytes: u64,
    pub dur: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub platform: Platform,
    pub device: Option<String>,
    pub kernels: Vec<Kernel>,
    pub copies: Vec<Copy>,
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(default)]
    ph: Option<String>,
    #[serde(default)]
    cat: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
    /// The thread, an integer within ±2^53 as the args' ids (a string that
    /// is no number counts as absent).
    #[serde(default, deserialize_with = "number")]
    tid: Option<i64>,
    #[serde(default)]
    args: Option<RawArgs>,
}

#[derive(Deserialize, Default)]
struct RawArgs {
    #[serde(rename = "External id", default, deserialize_with = "number")]
    external_id: Option<i64>,
    #[serde(default, deserialize_with = "number")]
    stream: Option<i64>,
    #[serde(default, deserialize_with = "number")]
    device: Option<i64>,
    #[serde(default, deserialize_with = "number")]
    bytes: Option<i64>,
}

/// An integer written as a number or a numeric string (ROCm traces do both);
/// anything else counts as absent, and a number that is no integer is an
/// error.
///
/// One range for every spelling: integers within ±2^53, where a trace
/// written through f64 (JavaScript, Python's json with floats) still counts
/// exactly; anything past it, either sign, as an integer, a float or a
/// string, is refused with the same message. (`i64::abs` once wrapped at
/// −2^63 and let it through while 2^53+1 was refused.)
fn number<'de, D: de::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    const EXACT: u64 = 1 << 53;
    let past = |text: &dyn fmt::Display| de::Error::custom(format!("{text} is past ±2^53, where a trace stops counting exactly"));
    // i128 holds every integer JSON spells as i64 or u64, with its sign.
    let i: i128 = match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i128::from(i),
            (_, Some(u), _) => i128::from(u),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() <= EXACT as f64 => f as i128,
            (_, _, Some(f)) if f.fract() == 0.0 => return Err(past(&n)),
            _ => return Err(de::Error::custom(format!("{n} is not an integer a trace can count"))),
        },
        serde_json::Value::String(s) => {
            let digits = s.trim();
            match digits.parse::<i128>() {
                Ok(i) => i,
                // Digits past even i128 are past the range too, not absent.
                Err(_) if is_whole(digits) => return Err(past(&digits)),
                Err(_) => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    if i.unsigned_abs() > u128::from(EXACT) {
        return Err(past(&i));
    }
    // Within ±2^53, so within i64.
    Ok(Some(i as i64))
}

/// Optional sign, then one or more decimal digits.
fn is_whole(text: &str) -> bool {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Events kept while streaming, before cpu_ops are linked to kernels.
/// Made by [`Collector::keeping`] only: a derived `Default` would keep no
/// kernel at all.
struct Collector {
    /// Each with its `External id` in `launch`, linked to its cpu_op at the end.
    kernels: Vec<Kernel>,
    /// The most kernels kept ([`MAX_TRACE_KERNELS`]; less in tests).
    max_kernels: usize,
    copies: Vec<Copy>,
    cpu_ops: HashMap<i64, Arc<str>>,
    /// Every distinct name and category, held once.
    strings: std::collections::HashSet<Arc<str>>,
    device_name: Option<String>,
    warp_size: Option<i64>,
    roctracer: bool,
    rlx_run_device: Option<String>,
}

/// rlx-run's categories are op kinds; anything Kineto calls a kernel counts too.
fn is_kernel(cat: &str, ph: &str) -> bool {
    ph == "X" && !matches!(cat, "cpu_op" | "python_function" | "user_annotation" | "cuda_runtime" | "cuda_driver" | "gpu_memcpy" | "gpu_memset" | "gpu_user_annotation" | "Trace" | "ac2g" | "cpu_instant_event" | "")
}

/// The longest duration an event may last, in µs (about eleven days).
const MAX_DUR_US: f64 = 1e12;

impl Collector {
    fn keeping(max_kernels: usize) -> Self {
        Collector {
            kernels: Vec::new(),
            max_kernels,
            copies: Vec::new(),
            cpu_ops: HashMap::new(),
            strings: std::collections::HashSet::new(),
            device_name: None,
            warp_size: None,
            roctracer: false,
            rlx_run_device: None,
        }
    }

    fn intern(&mut self, s: &str) -> Arc<str> {
        match self.strings.get(s) {
            Some(held) => held.clone(),
            None => {
                let held: Arc<str> = Arc::from(s);
                self.strings.insert(held.clone());
                held
            }
        }
    }

    /// Keep what the analysis needs of one event, or say why it is invalid.
    fn event(&mut self, mut e: RawEvent) -> Result<(), String> {
        // A duration of −0.0 is 0 (a total of "-0.0 µs" was printed).
        e.dur = e.dur.map(|d| d + 0.0);
        let (Some(cat), Some(ph)) = (e.cat.as_deref(), e.ph.as_deref()) else { return Ok(()) };
        let name = e.name.as_deref().unwrap_or_default();
        for (what, text) in [("name", name), ("category", cat)] {
            if text.len() > MAX_TRACE_STRING {
                return Err(format!("an event's {what} is {} bytes long; the limit is {MAX_TRACE_STRING}", text.len()));
            }
        }
        if let Some(ts) = e.ts
            && !ts.is_finite()
        {
            return Err(format!("timestamp {ts} is not a finite number"));
        }
        if let Some(dur) = e.dur
            && !(0.0..=MAX_DUR_US).contains(&dur)
        {
            return Err(format!("duration {dur} µs is not in 0..=1e12"));
        }
        let args = e.args.unwrap_or_default();
        if let Some(bytes) = args.bytes
            && bytes < 0
        {
            return Err(format!("a copy of {bytes} bytes"));
        }
        match cat {
            "cpu_op" => {
                if let Some(id) = args.external_id {
                    let name = self.intern(name);
                    self.cpu_ops.insert(id, name);
                }
            }
            "gpu_memcpy" | "gpu_memset" => {
                let kind = match name {
                    n if cat == "gpu_memset" || n.contains("Memset") => CopyKind::Memset,
                    n if n.contains("DtoH") => CopyKind::DeviceToHost,
                    n if n.contains("HtoD") => CopyKind::HostToDevice,
                    n if n.contains("DtoD") => CopyKind::DeviceToDevice,
                    _ => CopyKind::Other,
                };
                self.copies.push(Copy { kind, bytes: args.bytes.unwrap_or(0) as u64, dur: e.dur.unwrap_or(0.0) });
            }
            _ if is_kernel(cat, ph) => {
                if self.kernels.len() >= self.max_kernels {
                    return Err(format!("the trace has more than {} GPU kernels, the most rlx-trace keeps", self.max_kernels));
                }
                let stream = args.stream.or(e.tid).unwrap_or(0);
                let kernel = Kernel {
                    name: self.intern(name),
                    cat: self.intern(cat),
                    ts: e.ts.unwrap_or(0.0),
                    dur: e.dur.unwrap_or(0.0),
                    stream,
                    device: args.device.unwrap_or(0),
                    cpu_op: None,
                    launch: args.external_id,
                };
                self.kernels.push(kernel);
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Trace, TraceError> {
        for kernel in &mut self.kernels {
            kernel.cpu_op = kernel.launch.and_then(|id| self.cpu_ops.get(&id).cloned());
        }
        let mut kernels = self.kernels;
        kernels.shrink_to_fit();
        if kernels.is_empty() {
            return Err(TraceError::NoKernels { file: None });
        }
        let name = self.device_name.clone().unwrap_or_default().to_lowercase();
        let platform = match &self.rlx_run_device {
            Some(d) if d == "cuda" => Platform::RlxRunCuda,
            Some(d) if d == "wgpu" => Platform::RlxRunWgpu,
            Some(_) => Platform::RlxRunCpu,
            None if self.roctracer || self.warp_size == Some(64) || name.contains("amd") || name.contains("instinct") || name.contains("mi3") => Platform::Amd,
            None if name.contains("nvidia") || name.contains("h100") || name.contains("a100") || self.warp_size == Some(32) => Platform::Nvidia,
            None if kernels.iter().any(|k| k.name.starts_with("Cijk_")) => Platform::Amd,
            None if kernels.iter().any(|k| k.name.starts_with("nvjet") || k.name.contains("sm90_") || k.name.contains("ampere_")) => Platform::Nvidia,
            None => Platform::Unknown,
        };
        Ok(Trace { platform, device: self.device_name, kernels, copies: self.copies })
    }
}

struct Events<'a>(&'a mut Collector);

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(event) = seq.next_element::<RawEvent>()? {
            self.0.event(event).map_err(de::Error::custom)?;
        }
        Ok(())
    }
}

/// The top level: `{ "traceEvents": [...], "deviceProperties": [...], ... }` or `[...]`.
struct Document<'a>(&'a mut Collector);

impl<'de> DeserializeSeed<'de> for Document<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

#[derive(Deserialize)]
struct DeviceProperties {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "warpSize")]
    warp_size: Option<i64>,
}

#[derive(Deserialize)]
struct OtherData {
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    device: Option<String>,
}

impl<'de> Visitor<'de> for Document<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Chrome trace: an object with `traceEvents`, or an array of events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Events(self.0).visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // A field read twice is refused, as serde refuses it in a struct
        // (two `traceEvents` lists were read as one: an adversarial run).
        const READ: [&str; 4] = ["traceEvents", "deviceProperties", "roctracer_version", "otherData"];
        let mut seen = [false; READ.len()];
        while let Some(key) = map.next_key::<String>()? {
            if let Some(i) = READ.iter().position(|k| *k == key)
                && std::mem::replace(&mut seen[i], true)
            {
                return Err(de::Error::duplicate_field(READ[i]));
            }
            match key.as_str() {
                "traceEvents" => map.next_value_seed(Events(self.0))?,
                "deviceProperties" => {
                    let props: Vec<DeviceProperties> = map.next_value()?;
                    if let Some(p) = props.into_iter().next() {
                        self.0.device_name = p.name;
                        self.0.warp_size = p.warp_size;
                    }
                }
                "roctracer_version" => {
                    self.0.roctracer = true;
                    map.next_value::<IgnoredAny>()?;
                }
                "otherData" => {
                    let other: OtherData = map.next_value()?;
                    if other.tool.as_deref() == Some("rlx-run") {
                        self.0.rlx_run_device = Some(other.device.unwrap_or_else(|| "cpu".into()));
                        self.0.device_name = Some(format!("rlx-run ({})", self.0.rlx_run_device.as_deref().unwrap_or("cpu")));
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Load a trace from a file (`.gz` detected by its magic bytes).
pub fn load_file(path: &str) -> Result<Trace, TraceError> {
    let file = std::fs::File::open(path).map_err(|source| TraceError::Io { file: None, source }.in_file(path))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let gz = {
        use std::io::BufRead;
        reader.fill_buf().map(|b| b.starts_with(&[0x1f, 0x8b])).unwrap_or(false)
    };
    let result = if gz { load_from(BufReader::with_capacity(1 << 20, GzMembers::new(reader)), true) } else { load_from(reader, false) };
    result.map_err(|e| e.in_file(path))
}

/// The decompressed bytes of every member of a gzip file, in order, and an
/// error for anything after the last member that is not another member.
///
/// A gzip file is a series of members whose contents concatenate (RFC 1952
/// 2.2; `cat a.gz b.gz`, `gzip` of a file that grew, pigz's blocks), so a
/// trace split over members is one trace: reading only the first once made
/// a valid two-member trace "EOF while parsing a string". Bytes after a
/// member that start no member (padding, a truncated copy, another file)
/// are refused rather than ignored, as `gzip -t` refuses them: a trace with
/// a second, valid member after a complete first one is then read whole,
/// and two concatenated JSON documents are "text after the trace".
struct GzMembers<R: std::io::BufRead> {
    /// The member being read; `None` once the input has ended.
    decoder: Option<flate2::bufread::GzDecoder<Counted<R>>>,
    /// 1-based number of the member being read.
    member: u64,
}

impl<R: std::io::BufRead> GzMembers<R> {
    fn new(reader: R) -> Self {
        GzMembers { decoder: Some(flate2::bufread::GzDecoder::new(Counted { inner: reader, consumed: 0 })), member: 1 }
    }
}

impl<R: std::io::BufRead> Read for GzMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::{BufRead, Error, ErrorKind};
        loop {
            let Some(decoder) = self.decoder.as_mut() else { return Ok(0) };
            let member = self.member;
            let n = decoder.read(buf).map_err(|e| if member > 1 { Error::new(e.kind(), format!("gzip member {member}: {e}")) } else { e })?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // This member is done: the bufread decoder consumed exactly its bytes.
            let mut rest = self.decoder.take().expect("a member was being read").into_inner();
            let offset = rest.consumed;
            let next = rest.fill_buf()?;
            match next {
                [] => return Ok(0),
                // A member starts with the magic 1f 8b (only its first byte
                // may be buffered yet: the header check then tells).
                [0x1f, 0x8b, ..] | [0x1f] => {
                    self.member += 1;
                    self.decoder = Some(flate2::bufread::GzDecoder::new(rest));
                }
                bytes => {
                    let head: Vec<String> = bytes.iter().take(4).map(|b| format!("0x{b:02x}")).collect();
                    return Err(Error::new(
                        ErrorKind::InvalidData,
                        format!("trailing data after gzip member {member}: the bytes from offset {offset} on ({}…) are not a gzip member", head.join(" ")),
                    ));
                }
            }
        }
    }
}

/// A reader that counts the bytes consumed from it: where a member ends.
struct Counted<R> {
    inner: R,
    consumed: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed += n as u64;
        Ok(n)
    }
}

impl<R: std::io::BufRead> std::io::BufRead for Counted<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amount: usize) {
        self.consumed += amount as u64;
        self.inner.consume(amount);
    }
}

/// Load a trace. Errors name no file (they display as `:line:col: error: …`
/// or `: error: …`); [`TraceError::in_file`] adds it.
pub fn load(reader: impl Read) -> Result<Trace, TraceError> {
    load_from(reader, false)
}

/// [`load`], where a failing read is a decompression error when `gzip`.
fn load_from(reader: impl Read, gzip: bool) -> Result<Trace, TraceError> {
    load_keeping(reader, gzip, MAX_TRACE_KERNELS)
}

/// [`load_from`], keeping at most `max_kernels` kernels.
fn load_keeping(reader: impl Read, gzip: bool, max_kernels: usize) -> Result<Trace, TraceError> {
    let mut collector = Collector::keeping(max_kernels);
    let mut de = serde_json::Deserializer::from_reader(Limited { inner: reader, left: MAX_TRACE_BYTES });
    Document(&mut collector).deserialize(&mut de).map_err(|e| json_error(e, gzip, false))?;
    de.end().map_err(|e| json_error(e, gzip, true))?;
    collector.finish()
}

/// A reader that fails past [`MAX_TRACE_BYTES`] (after decompression): a
/// small `.gz` may hold gigabytes, and serde_json holds one string whole.
struct Limited<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One more byte means the trace is past the limit.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::FileTooLarge,
                    format!("the trace is larger than {}, the most rlx-trace reads", crate::limits::bytes(MAX_TRACE_BYTES)),
                )),
            };
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// serde_json reports a failing read as one of its own errors: tell it
/// apart from bad JSON, which has a place.
fn json_error(e: serde_json::Error, gzip: bool, after_the_trace: bool) -> TraceError {
    let (file, line, column) = (None, e.line(), e.column());
    if e.is_io() {
        // The reader's own error, without serde_json's place in the JSON.
        let source = std::io::Error::from(e);
        // Past the size limit is no decompression error, gzip or not.
        let inflating = gzip && source.kind() != std::io::ErrorKind::FileTooLarge;
        return if inflating { TraceError::Gzip { file, source } } else { TraceError::Io { file, source } };
    }
    if after_the_trace { TraceError::TrailingText { file, line, column, source: e } } else { TraceError::Json { file, line, column, source: e } }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace of more kernels than are kept is refused where the first
    /// kernel past the bound is, not held whole (2^24: 5 GB of a 1 GiB
    /// file of bare events, an adversarial run).
    #[test]
    fn kernels_past_the_bound_are_refused() {
        let event = r#"{"ph":"X","cat":"kernel","name":"k"}"#;
        let text = |n: usize| format!("[{}]", vec![event; n].join(","));
        assert_eq!(load_keeping(text(3).as_bytes(), false, 3).unwrap().kernels.len(), 3);
        let e = load_keeping(text(4).as_bytes(), false, 3).unwrap_err();
        assert!(e.to_string().starts_with(":1:149: error: invalid trace JSON: the trace has more than 3 GPU kernels, the most rlx-trace keeps"), "{e}");
    }

    /// Issue 15: a 4.7 MB `.gz` holding one 1 GB kernel name took 2.1 GB.
    #[test]
    fn reading_stops_at_the_size_limit() {
        let text = br#"[{"ph":"X","cat":"kernel","name":"a long name","ts":0,"dur":1}]"#;
        let mut limited = Limited { inner: &text[..], left: 20 };
        let mut sink = Vec::new();
        let e = limited.read_to_end(&mut sink).unwrap_err();
        assert!(e.to_string().contains("the trace is larger than"), "{e}");
        assert_eq!(sink.len(), 20);
        let mut whole = Limited { inner: &text[..], left: text.len() as u64 };
        assert!(whole.read_to_end(&mut Vec::new()).is_ok(), "exactly the limit is read");
    }

    #[test]
    fn names_are_held_once() {
        let text = br#"[{"ph":"X","cat":"kernel","name":"gemm","ts":0,"dur":1},{"ph":"X","cat":"kernel","name":"gemm","ts":2,"dur":1}]"#;
        let trace = load(&text[..]).unwrap();
        assert!(Arc::ptr_eq(&trace.kernels[0].name, &trace.kernels[1].name));
    }

    #[test]
    fn errors_say_what_and_where() {
        let e = load(&b"hello"[..]).unwrap_err();
        assert!(matches!(e, TraceError::Json { line: 1, column: 1, .. }), "{e:?}");
        assert_eq!(e.to_string(), ":1:1: error: invalid trace JSON: expected value at line 1 column 1");
        assert_eq!(e.in_file("t.json").to_string(), "t.json:1:1: error: invalid trace JSON: expected value at line 1 column 1");
        let e = load(&b"[] x"[..]).unwrap_err();
        assert!(matches!(e, TraceError::TrailingText { line: 1, column: 4, .. }), "{e:?}");
        assert_eq!(load(&b"[]"[..]).unwrap_err().to_string(), ": error: the trace has no GPU kernels or rlx-run op events");
        let e = load_from(flate2::read::GzDecoder::new(&b"\x1f\x8bnot gzip"[..]), true).unwrap_err();
        assert!(matches!(e, TraceError::Gzip { .. }), "{e:?}");
    }
}
