//! The graph IR: nodes in a `Vec`, referred to by [`NodeId`] (an index), each
//! one generic operation with operands, one result type and an optional debug
//! name. Textual ids (`%7`) are kept as labels so a graph prints back with the
//! ids it was read with.

pub mod op;
pub mod types;
pub mod value_syntax;
pub mod view;

pub use op::{FftNorm, Op, OpCode, OpError, OpKind, ReduceOp};
pub use types::{DType, Dim, TensorType};

/// Whether `name` can name a graph: what `graph @name {` spells (ASCII
/// letters, digits, `_` and `.`, as RLX prints), and not only dots (names
/// become folder names). Every reader checks it, so every printer may
/// print a name as it is.
pub fn is_graph_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') && !name.chars().all(|c| c == '.')
}

use smallvec::SmallVec;

/// Index of a node in [`Graph::nodes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where a node was defined in its source file (1-based), for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Loc {
    pub line: u32,
    pub col: u32,
}

/// Where RLX says a node came from (rlx-ir's `NodeOrigin`): the block of
/// its high-level model, a label, the RLX pass that made it. Only RLX's
/// serde JSON carries it; its text, and so rlx-opt's text and MLIR, has no
/// place for it (RLX's own text drops it too: "pass provenance rather than
/// IR"). Fields other than RLX's are refused rather than dropped.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeOrigin {
    pub hir: Option<u32>,
    pub label: Option<String>,
    pub pass: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The textual id (`%label`); unique within the graph, not necessarily dense.
    pub label: u32,
    pub op: Op,
    pub operands: SmallVec<[NodeId; 2]>,
    pub ty: TensorType,
    pub name: Option<String>,
    /// Source location; `None` for nodes a pass created.
    pub loc: Option<Loc>,
    /// RLX's provenance of the node, where its JSON gave one (boxed: most
    /// nodes have none).
    pub origin: Option<Box<NodeOrigin>>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    pub name: String,
    nodes: Vec<Node>,
    pub outputs: Vec<NodeId>,
    /// Location of the `return` line, for diagnostics about outputs.
    pub return_loc: Option<Loc>,
    /// One past the largest label in use, so new nodes get fresh ids in O(1).
    next_label: u32,
}

impl Graph {
    pub fn new(name: impl Into<String>) -> Self {
        Graph { name: name.into(), ..Graph::default() }
    }

    /// A graph of these nodes (operands index into `nodes`), no outputs yet.
    pub fn with_nodes(name: impl Into<String>, nodes: Vec<Node>) -> Self {
        let next_label = nodes.iter().map(|n| n.label.saturating_add(1)).max().unwrap_or(0);
        Graph { name: name.into(), nodes, next_label, ..Graph::default() }
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.index()]
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn ids(&self) -> impl Iterator<Item = NodeId> + use<> {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// Append a node as it is (a parser keeps the label it read); returns its id.
    pub fn push(&mut self, node: Node) -> NodeId {
        self.next_label = self.next_label.max(node.label.saturating_add(1));
        self.nodes.push(node);
        NodeId(self.nodes.len() as u32 - 1)
    }

    /// A label no node has yet.
    pub fn fresh_label(&mut self) -> u32 {
        self.next_label += 1;
        self.next_label - 1
    }

    /// Append a node with a fresh label; returns its id.
    pub fn add_node(&mut self, op: Op, operands: &[NodeId], ty: TensorType) -> NodeId {
        let label = self.fresh_label();
        self.push(Node { label, op, operands: operands.into(), ty, name: None, loc: None, origin: None })
    }

    /// How many operand slots use each node (graph outputs not counted).
    pub fn use_counts(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.nodes.len()];
        for node in &self.nodes {
            for op in &node.operands {
                counts[op.index()] += 1;
            }
        }
        counts
    }

    /// True when every operand is defined before its user, as RLX's text requires.
    pub fn is_topologically_ordered(&self) -> bool {
        self.nodes
            .iter()
            .enumerate()
            .all(|(i, n)| n.operands.iter().all(|o| o.index() < i))
    }

    /// Reorder nodes as given by `order` (a permutation of all ids), rewiring
    /// operands and outputs.
    pub fn permute(&mut self, order: &[NodeId]) {
        self.select(order);
    }

    /// Keep only the nodes with `keep[i]`, preserving order. Kept nodes and
    /// outputs must not refer to removed ones.
    pub fn retain(&mut self, keep: &[bool]) {
        let order: Vec<NodeId> = self.ids().filter(|id| keep[id.index()]).collect();
        self.select(&order);
    }

    /// Keep exactly the nodes in `order`, in that order. Kept nodes and
    /// outputs must not refer to nodes left out. Works in place: a graph of
    /// 10^6 nodes is never held twice.
    pub fn select(&mut self, order: &[NodeId]) {
        let mut new_index = vec![u32::MAX; self.nodes.len()];
        for (new, old) in order.iter().enumerate() {
            new_index[old.index()] = new as u32;
        }
        // Drop what is left out, then move each kept node to its place by
        // following the permutation's cycles.
        let mut i = 0;
        self.nodes.retain(|_| {
            i += 1;
            new_index[i - 1] != u32::MAX
        });
        let mut target: Vec<u32> = new_index.iter().copied().filter(|t| *t != u32::MAX).collect();
        for i in 0..target.len() {
            while target[i] as usize != i {
                let j = target[i] as usize;
                self.nodes.swap(i, j);
                target.swap(i, j);
            }
        }
        self.remap(&new_index);
    }

    fn remap(&mut self, new_index: &[u32]) {
        let map = |id: &mut NodeId| {
            let to = new_index[id.index()];
            debug_assert_ne!(to, u32::MAX, "a kept node refers to a removed one");
            *id = NodeId(to);
        };
        for node in &mut self.nodes {
            node.operands.iter_mut().for_each(map);
        }
        self.outputs.iter_mut().for_each(map);
    }
}
