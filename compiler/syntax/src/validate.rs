//! Rejects Python syntax that lies outside the Weft subset, naming the construct.
//!
//! The parser accepts Python 3's grammar so that this pass can say "classes are not part of
//! Weft" rather than "unexpected token". Each rejection is an `unsupported-construct` diagnostic
//! with help that points at the Weft way, except `print` inside a function, `return` at the top
//! level and bad assignment targets, which have codes of their own.
//!
//! The walk is iterative (rowan's preorder), so deeply nested input cannot overflow the stack.
//! Tests: `compiler/tests/data/diagnostics/`.

use rowan::{TextRange, WalkEvent};

use super::ast::{is_expression, is_rejected_block, targets};
use super::{SyntaxKind::*, SyntaxNode};
use crate::diagnostics::{Code, Diagnostic};

pub fn validate(root: &SyntaxNode) -> Vec<Diagnostic> {
    let mut res = Vec::new();
    let mut function_depth = 0u32;
    let mut preorder = root.preorder();
    while let Some(event) = preorder.next() {
        let node = match event {
            WalkEvent::Enter(node) => node,
            WalkEvent::Leave(node) => {
                if matches!(node.kind(), FUNCTION_DEF | LAMBDA_EXPR) {
                    function_depth -= 1;
                }
                continue;
            }
        };
        if matches!(node.kind(), FUNCTION_DEF | LAMBDA_EXPR) {
            function_depth += 1;
        }
        let in_function = function_depth > 0;
        if let Some(diagnostic) = check_node(&node, in_function) {
            let skip =
                matches!(diagnostic.code, Code::UnsupportedConstruct) && is_rejected_block(node.kind());
            res.push(diagnostic);
            if skip {
                // Everything inside a rejected class or `try` would only repeat the point.
                preorder.skip_subtree();
            }
        }
    }
    res
}

fn unsupported(range: TextRange, construct: &str, help: &str) -> Option<Diagnostic> {
    let diagnostic =
        Diagnostic::new(Code::UnsupportedConstruct, range, format!("{construct} are not part of Weft"));
    Some(if help.is_empty() { diagnostic } else { diagnostic.with_help(help) })
}

/// The range of a compound statement's header: from its keyword to the end of its first token
/// after the keyword, so that a whole class body is not underlined.
fn header_range(node: &SyntaxNode) -> TextRange {
    let mut tokens =
        node.descendants_with_tokens().filter_map(|e| e.into_token()).filter(|t| !t.kind().is_trivia());
    let first = tokens.next().map_or(node.text_range(), |t| t.text_range());
    let second = tokens.next().filter(|t| t.kind() == IDENT).map_or(first, |t| t.text_range());
    first.cover(second)
}

fn first_token_range(node: &SyntaxNode) -> TextRange {
    node.first_token().map_or(node.text_range(), |t| t.text_range())
}

fn check_node(node: &SyntaxNode, in_function: bool) -> Option<Diagnostic> {
    let range = node.text_range();
    match node.kind() {
        CLASS_DEF => unsupported(
            header_range(node),
            "classes",
            "Weft values are numbers, tuples and sequences; use a tuple for a record",
        ),
        DECORATOR => unsupported(range, "decorators", ""),
        IMPORT_STMT => unsupported(range, "imports", "the prelude is always in scope, and there is nothing to import"),
        GLOBAL_STMT | NONLOCAL_STMT => unsupported(
            first_token_range(node),
            "`global` and `nonlocal` declarations",
            "values are immutable: return the new value instead of assigning to an outer name",
        ),
        TRY_STMT => unsupported(header_range(node), "exceptions (`try`)", "check conditions with `if` or `assert`"),
        RAISE_STMT => unsupported(range, "exceptions (`raise`)", "use `assert cond, \"message\"` to stop with an error"),
        WITH_STMT => unsupported(header_range(node), "`with` statements", ""),
        MATCH_STMT => unsupported(
            header_range(node),
            "`match` statements",
            "test the cases with `if`/`elif`/`else`",
        ),
        ASYNC_STMT | AWAIT_EXPR => unsupported(first_token_range(node), "`async` and `await`", ""),
        YIELD_EXPR => unsupported(range, "generators (`yield`)", "return a sequence built with a comprehension"),
        GENERATOR_EXP => unsupported(range, "generator expressions", "use a list comprehension: `[e for x in xs]`"),
        DEL_STMT => unsupported(range, "`del` statements", "values are immutable; build a new sequence instead"),
        BREAK_STMT | CONTINUE_STMT => unsupported(
            range,
            "`break` and `continue`",
            "a Weft loop only rebinds names; end a `while` loop through its condition",
        ),
        ANN_ASSIGN_STMT => unsupported(
            range,
            "annotated assignments",
            "drop the annotation (types are inferred), or annotate a function's parameters",
        ),
        DICT_EXPR | DICT_COMP => unsupported(range, "dicts", "use a sequence of tuples, or two sequences"),
        SET_EXPR | SET_COMP => unsupported(range, "sets", "use a sorted sequence"),
        STAR_EXPR => unsupported(range, "star expressions (`*xs`)", "pass each value separately, or use `concat`"),
        STAR_PARAM => unsupported(range, "`*args` and `**kwargs` parameters", "take a sequence or a tuple instead"),
        PARAM_MARKER => unsupported(range, "`*` and `/` parameter markers", ""),
        DEFAULT_VALUE => unsupported(range, "default values", "pass every argument at each call"),
        KEYWORD_ARG => unsupported(range, "keyword arguments", "pass the argument by position"),
        NAMED_EXPR => unsupported(range, "assignment expressions (`:=`)", "bind the value with `=` on its own line"),
        // One report per chain: `x.a.b` is one attribute access, not two.
        ATTR_EXPR if !is_assignment_target(node) && !is_inside_attribute_chain(node) => unsupported(
            range,
            "attribute accesses (`x.y`)",
            "Weft values have no attributes; call a prelude function instead, such as `len(xs)`",
        ),
        ELSE_CLAUSE if matches!(node.parent().map(|p| p.kind()), Some(FOR_STMT | WHILE_STMT)) => {
            unsupported(first_token_range(node), "`else` clauses on loops", "")
        }
        LITERAL => check_literal(node),
        COMPARE_OP => check_compare_op(node),
        BIN_EXPR | AUG_ASSIGN_STMT if has_token(node, "@") || has_token(node, "@=") => {
            unsupported(range, "matrix multiplication operators (`@`)", "write the product with `sum` and comprehensions")
        }
        INDEX_EXPR if node.children().nth(1).is_some_and(|n| n.kind() == TUPLE_EXPR) => unsupported(
            range,
            "multi-dimensional indexes (`a[i, j]`)",
            "index one level at a time: `a[i][j]`",
        ),
        FUNCTION_DEF if is_conditional(node) => unsupported(
            header_range(node),
            "functions defined inside `if`, `for` or `while`",
            "define the function at the top level or directly in a function body",
        ),
        // `print` cannot be rebound, so its name is enough here; a chart function's name can be,
        // so HIR lowering, which resolves names, reports charts in functions.
        CALL_EXPR if in_function && callee_is(node, "print") => Some(
            Diagnostic::new(Code::PrintInFunction, range, "`print` is not allowed inside a function")
                .with_note("functions are pure so that they can run in parallel on the GPU; printing is a top-level statement")
                .with_help("return the value and print it at the top level"),
        ),
        RETURN_STMT if !in_function => Some(
            Diagnostic::new(Code::ReturnOutsideFunction, first_token_range(node), "`return` outside a function")
                .with_help("top-level statements run in order; `print` a value to see it"),
        ),
        ASSIGN_STMT | AUG_ASSIGN_STMT | FOR_STMT | COMP_FOR => check_targets(node),
        _ => None,
    }
}

fn has_token(node: &SyntaxNode, text: &str) -> bool {
    node.children_with_tokens().filter_map(|e| e.into_token()).any(|t| t.text() == text)
}

fn callee_is(call: &SyntaxNode, name: &str) -> bool {
    call.first_child().is_some_and(|callee| callee.kind() == NAME_REF && callee.text() == name)
}

fn is_conditional(def: &SyntaxNode) -> bool {
    // A def's parent is a BLOCK; that block belongs to a def (fine) or to a compound statement.
    def.parent()
        .filter(|p| p.kind() == BLOCK)
        .and_then(|block| block.parent())
        .is_some_and(|owner| owner.kind() != FUNCTION_DEF)
}

fn is_assignment_target(node: &SyntaxNode) -> bool {
    let Some(parent) = node.parent() else { return false };
    match parent.kind() {
        TUPLE_EXPR | PAREN_EXPR | LIST_EXPR => is_assignment_target(&parent),
        _ => targets(&parent).contains(node),
    }
}

fn is_inside_attribute_chain(node: &SyntaxNode) -> bool {
    node.parent().is_some_and(|parent| parent.kind() == ATTR_EXPR)
}

fn check_literal(node: &SyntaxNode) -> Option<Diagnostic> {
    let token = node.first_token()?;
    let range = node.text_range();
    match token.kind() {
        NONE_KW => unsupported(
            range,
            "`None` values",
            "Weft has no null value; return a tuple with a flag, or an empty sequence",
        ),
        ELLIPSIS => unsupported(range, "`...` literals", ""),
        IMAG_NUMBER => unsupported(range, "complex numbers", "use a tuple `(re, im)`"),
        STRING => check_string(node),
        _ => None,
    }
}

fn check_string(node: &SyntaxNode) -> Option<Diagnostic> {
    // Adjacent literals concatenate, so every part's prefix counts: `"a" f"{x}"` is an f-string.
    let prefixes: String = node
        .children_with_tokens()
        .filter_map(|element| element.into_token())
        .filter(|token| token.kind() == STRING)
        .flat_map(|token| {
            let text = token.text();
            let prefix_len = text.find(['"', '\'']).unwrap_or(0);
            text[..prefix_len].to_ascii_lowercase().chars().collect::<Vec<_>>()
        })
        .collect();
    let range = node.text_range();
    if prefixes.contains('f') {
        return unsupported(range, "f-strings", "pass the values to `print` as separate arguments");
    }
    if prefixes.contains('b') {
        return unsupported(range, "bytes literals", "");
    }
    let parent = node.parent()?;
    let allowed = match parent.kind() {
        ARG_LIST => parent.parent().is_some_and(|call| callee_is(&call, "print") || is_load_call(&call)),
        ASSERT_STMT => parent.children().nth(1).as_ref() == Some(node),
        _ => false,
    };
    if allowed {
        return None;
    }
    unsupported(
        range,
        "strings outside `print`, `assert` and `load_*`",
        "a string may only be a literal argument of `print`, `load_npy` or `load_csv`, or the message of `assert`",
    )
}

fn is_load_call(call: &SyntaxNode) -> bool {
    callee_is(call, "load_npy") || callee_is(call, "load_csv") || callee_is(call, "__session_input__")
}

fn check_compare_op(node: &SyntaxNode) -> Option<Diagnostic> {
    let first = node.first_token()?;
    let range = node.text_range();
    match first.kind() {
        IS_KW => unsupported(range, "identity comparisons (`is`)", "compare values with `==`"),
        IN_KW | NOT_KW => unsupported(range, "membership tests (`in`)", "write `any([y == x for y in xs])`"),
        _ => None,
    }
}

/// Assignment and loop targets must be names, or tuples of targets. Anything else is mutation
/// (`a[i] = x`, `p.x = 1`) or not assignable at all (`f() = 1`).
fn check_targets(node: &SyntaxNode) -> Option<Diagnostic> {
    let mut pending = targets(node);
    while let Some(target) = pending.pop() {
        let range = target.text_range();
        match target.kind() {
            NAME_REF | MISSING => {}
            // `(a) += 1` is valid Python; `(a, b) += 1` is not.
            PAREN_EXPR => pending.extend(target.children().filter(|n| is_expression(n.kind()))),
            TUPLE_EXPR | LIST_EXPR if node.kind() != AUG_ASSIGN_STMT => {
                pending.extend(target.children().filter(|n| is_expression(n.kind())));
            }
            STAR_EXPR => {}
            INDEX_EXPR | SLICE => {
                return Some(
                    Diagnostic::new(
                        Code::UnsupportedConstruct,
                        range,
                        "mutation (`a[i] = x`) is not part of Weft",
                    )
                    .with_note("Weft values are immutable")
                    .with_help("build a new sequence: `scatter(src, idx, dst)` or a comprehension"),
                );
            }
            ATTR_EXPR => {
                return Some(
                    Diagnostic::new(
                        Code::UnsupportedConstruct,
                        range,
                        "attribute assignment is not part of Weft",
                    )
                    .with_note("Weft values are immutable and have no attributes"),
                );
            }
            _ => {
                let what = if node.kind() == AUG_ASSIGN_STMT { "augmented assignment" } else { "assignment" };
                return Some(
                    Diagnostic::new(
                        Code::InvalidTarget,
                        range,
                        format!("cannot use this expression as the target of an {what}"),
                    )
                    .with_help("the target must be a name, or a tuple of names such as `a, b`"),
                );
            }
        }
    }
    None
}
