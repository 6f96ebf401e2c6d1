//! The syntax tree the reader builds: operations with their regions, blocks,
//! attributes, types and locations, each with the byte span it was read from,
//! so that a host can copy what it does not change exactly as written.

use crate::ir::TensorType;
use std::collections::HashMap;
use std::ops::Range;

#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Tensor(TensorType),
    Function(Vec<Type>, Vec<Type>),
    /// Any other type, with why rlx-opt cannot use it; `text` is its spelling.
    Other { text: String, why: String },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Int { value: i128, ty: Option<String> },
    Float(f64),
    Bool(bool),
    Str(String),
    Unit,
    Array(Vec<Attr>),
    /// `array<i64: 1, 2>` and friends.
    DenseArray(Vec<Attr>),
    Dict(Vec<(String, Attr)>),
    /// `dense<…> : type`: the literal between the brackets, decoded on use.
    Dense { literal: String, ty: Type },
    Type(Type),
    /// `#alias`, resolved against the file's alias definitions on use.
    Alias(String),
    /// Anything else, by its spelling.
    Other(String),
}

/// Dictionary entries: name, value, and the span of the value as written.
pub type Entries = Vec<(String, Attr, Range<usize>)>;

#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    Name(String),
    Alias(String),
    File { file: String, line: u32, col: u32 },
    Other,
}

#[derive(Debug, Clone)]
pub struct Operation {
    pub name: String,
    /// From the first result (or the name) to the end of the trailing location.
    pub span: Range<usize>,
    pub results: Vec<String>,
    pub operands: Vec<(String, usize)>,
    /// Properties (`<{…}>`), with the source span of each value. Not read
    /// for ops under [`Options::lazy_attributes_prefix`](super::Options::lazy_attributes_prefix)
    /// (see `dict_spans` and [`parse_dict_at`](super::parse_dict_at)): ops
    /// spelled alike need reading once.
    pub properties: Entries,
    /// Discardable attributes (`{…}`), with the source span of each value;
    /// not read for those ops either.
    pub attributes: Entries,
    pub regions: Vec<Vec<Block>>,
    pub operand_types: Vec<Type>,
    pub result_types: Vec<Type>,
    pub loc: Option<Location>,
    /// The span of the trailing `loc(…)`, as written.
    pub loc_span: Option<Range<usize>>,
    /// The spans of the properties and the attribute dictionary, as written
    /// (empty when absent): equal spellings mean equal attributes.
    pub dict_spans: [Range<usize>; 2],
}

impl Operation {
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.properties.iter().chain(&self.attributes).find(|(k, _, _)| k == name).map(|(_, a, _)| a)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Block {
    pub args: Vec<BlockArg>,
    pub ops: Vec<Operation>,
}

#[derive(Debug, Clone)]
pub struct BlockArg {
    pub name: String,
    pub offset: usize,
    pub ty: Type,
    pub loc: Option<Location>,
    /// The span of the `loc(…)`, as written.
    pub loc_span: Option<Range<usize>>,
}

/// A parsed file: its top-level operations and alias definitions.
#[derive(Debug, Clone, Default)]
pub struct Module {
    pub ops: Vec<Operation>,
    pub attr_aliases: HashMap<String, Attr>,
    pub loc_aliases: HashMap<String, Location>,
}

impl Module {
    /// A location with aliases followed (none where an alias is undefined
    /// or the chain does not end: [`Module::follow`] says which).
    pub fn resolve<'m>(&'m self, loc: Option<&'m Location>) -> Option<&'m Location> {
        self.follow(loc).ok().flatten()
    }

    /// A location with its chain of aliases followed, at most
    /// [`MAX_NESTING`](crate::limits::MAX_NESTING) of them; the alias that
    /// is not defined, or the chain that does not end (a cycle), is the error.
    pub fn follow<'m>(&'m self, loc: Option<&'m Location>) -> Result<Option<&'m Location>, String> {
        let mut loc = loc;
        for _ in 0..=crate::limits::MAX_NESTING {
            match loc {
                Some(Location::Alias(alias)) => match self.loc_aliases.get(alias) {
                    Some(next) => loc = Some(next),
                    None => return Err(format!("location alias #{} is not defined", crate::diag::echo_in_line(alias))),
                },
                other => return Ok(other),
            }
        }
        Err(format!("location aliases refer to each other more than {} deep (a cycle?)", crate::limits::MAX_NESTING))
    }

    /// The name a location gives a value.
    pub fn loc_name<'m>(&'m self, loc: Option<&'m Location>) -> Option<&'m str> {
        match self.resolve(loc)? {
            Location::Name(name) => Some(name),
            _ => None,
        }
    }
}
