//! `Green`: an owned green tree (rowan's `GreenNode`) that frees itself without recursion.
//!
//! A left-nested chain such as `x + x + ... + x` is as deep as it is long, and rowan frees a tree
//! recursively, so dropping a long chain would overflow a thread's stack. Every green node Weft
//! stores is a `Green`, whose `Drop` walks the tree with an explicit stack instead.

use std::ops::Deref;

use rowan::{GreenNode, GreenNodeData, NodeOrToken};

/// Equality is structural and, like `Drop`, iterative: salsa compares a function's new tree with
/// its old one on every edit, and rowan's own comparison recurses as deep as the tree.
#[derive(Debug, Clone)]
pub struct Green(Option<GreenNode>);

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
    pub fn new(node: GreenNode) -> Green {
        Green(Some(node))
    }
}

impl From<GreenNode> for Green {
    fn from(node: GreenNode) -> Green {
        Green::new(node)
    }
}

impl Deref for Green {
    type Target = GreenNode;

    fn deref(&self) -> &GreenNode {
        self.0.as_ref().expect("a Green is emptied only by its own drop")
    }
}

impl Drop for Green {
    fn drop(&mut self) {
        let Some(root) = self.0.take() else { return };
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
