//! `TreeBuilder`: builds a rowan green tree from start/token/finish events.
//!
//! rowan's own `GreenNodeBuilder` deduplicates small nodes through a hash table whose growth
//! re-hashes every cached node recursively. A chain of calls or attributes (`f()()()...`) is a
//! deep tree of small nodes, so that builder takes time quadratic in the chain's length (and
//! recursion as deep as the chain). This builder makes each node once, from its children, with no
//! cache and no recursion; it costs one allocation per token instead of a table lookup.

use rowan::{GreenNode, GreenToken, NodeOrToken};

use super::SyntaxKind;

/// Where a node started by `start_node_at` will begin: an index into the pending children.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checkpoint(usize);

#[derive(Default)]
pub(crate) struct TreeBuilder {
    /// Open nodes: their kind and the index of their first child in `children`.
    parents: Vec<(SyntaxKind, usize)>,
    /// Finished children of the open nodes, innermost last.
    children: Vec<NodeOrToken<GreenNode, GreenToken>>,
    /// The height of each entry of `children` (a token is 0), so that the finished tree knows
    /// how deep it is.
    heights: Vec<u32>,
}

impl TreeBuilder {
    pub(crate) fn token(&mut self, kind: SyntaxKind, text: &str) {
        self.children.push(NodeOrToken::Token(GreenToken::new(kind.into(), text)));
        self.heights.push(0);
    }

    pub(crate) fn start_node(&mut self, kind: SyntaxKind) {
        self.parents.push((kind, self.children.len()));
    }

    pub(crate) fn checkpoint(&self) -> Checkpoint {
        Checkpoint(self.children.len())
    }

    /// Starts a node that adopts everything built since `checkpoint` as its first children.
    pub(crate) fn start_node_at(&mut self, checkpoint: Checkpoint, kind: SyntaxKind) {
        let open_since = self.parents.last().map_or(0, |&(_, first)| first);
        assert!(checkpoint.0 >= open_since, "a checkpoint cannot reach outside the node it was taken in");
        self.parents.push((kind, checkpoint.0));
    }

    pub(crate) fn finish_node(&mut self) {
        let (kind, first) = self.parents.pop().expect("finish_node matches a start_node");
        let node = GreenNode::new(kind.into(), self.children.drain(first..));
        let height = 1 + self.heights.drain(first..).max().unwrap_or(0);
        self.children.push(NodeOrToken::Node(node));
        self.heights.push(height);
    }

    /// The root and the tree's height.
    pub(crate) fn finish(mut self) -> (GreenNode, u32) {
        assert!(self.parents.is_empty(), "every node was finished");
        match (self.children.pop(), self.heights.pop()) {
            (Some(NodeOrToken::Node(root)), Some(height)) if self.children.is_empty() => (root, height),
            _ => panic!("the builder holds exactly one root node"),
        }
    }
}
