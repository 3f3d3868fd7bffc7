//! `Green`: an owned green tree (rowan's `GreenNode`) that is safe to free and compare however
//! deep it is.
//!
//! A left-nested chain such as `x + x + ... + x` is as deep as it is long, and rowan frees a tree
//! recursively, so dropping a long chain would overflow a thread's stack. Every green node Weft
//! stores is a `Green`. A deep one frees itself with an explicit stack; a shallow one (almost
//! every real program) lets rowan free it, which is cheaper than visiting every node.

use std::ops::Deref;

use rowan::{GreenNode, GreenNodeData, NodeOrToken};

/// Equality is structural and, like `Drop`, iterative: salsa compares a function's new tree with
/// its old one on every edit, and rowan's own comparison recurses as deep as the tree.
#[derive(Debug, Clone)]
pub struct Green {
    node: Option<GreenNode>,
    /// Whether the tree may be too deep for rowan's recursive drop.
    deep: bool,
}

/// Trees at most this tall are freed by rowan's recursion: far below any thread's stack.
const SHALLOW_HEIGHT: u32 = 1_000;

impl PartialEq for Green {
    fn eq(&self, other: &Green) -> bool {
        let mut pending: Vec<(&GreenNodeData, &GreenNodeData)> = vec![(self, other)];
        while let Some((left, right)) = pending.pop() {
            if std::ptr::eq(left, right) {
                continue;
            }
            if left.kind() != right.kind()
                || left.text_len() != right.text_len()
                || left.children().len() != right.children().len()
            {
                return false;
            }
            for pair in left.children().zip(right.children()) {
                match pair {
                    (NodeOrToken::Node(left), NodeOrToken::Node(right)) => pending.push((left, right)),
                    (NodeOrToken::Token(left), NodeOrToken::Token(right)) if left == right => {}
                    _ => return false,
                }
            }
        }
        true
    }
}

impl Eq for Green {}

impl std::hash::Hash for Green {
    /// Kind and length only: consistent with `eq`, and never deep.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.kind().hash(state);
        self.text_len().hash(state);
    }
}

impl Green {
    /// A tree of the given height, as the builder measured it.
    pub fn new(node: GreenNode, height: u32) -> Green {
        Green { node: Some(node), deep: height > SHALLOW_HEIGHT }
    }

    /// A subtree of this tree, which is at most as deep.
    pub fn subtree(&self, node: GreenNode) -> Green {
        Green { node: Some(node), deep: self.deep }
    }
}

impl Deref for Green {
    type Target = GreenNode;

    fn deref(&self) -> &GreenNode {
        self.node.as_ref().expect("a Green is emptied only by its own drop")
    }
}

impl Drop for Green {
    fn drop(&mut self) {
        if !self.deep {
            return;
        }
        let Some(root) = self.node.take() else { return };
        // Holding a clone of every child keeps a node's own drop from reaching its children:
        // each node is freed alone, at the top of this loop.
        let mut pending = vec![root];
        while let Some(node) = pending.pop() {
            pending.extend(node.children().filter_map(|child| match child {
                NodeOrToken::Node(child) => Some(child.to_owned()),
                NodeOrToken::Token(_) => None,
            }));
        }
    }
}
