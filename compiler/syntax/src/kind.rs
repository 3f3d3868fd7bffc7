//! `SyntaxKind`: the tag of every token and node in the lossless syntax tree.
//!
//! Tokens come first, then nodes. The parser produces nodes for Python constructs that Weft rejects
//! (classes, imports, `with`, ...) so that `validate` can name them; see `docs/language.md`.

macro_rules! syntax_kinds {
    ($($(#[$doc:meta])* $kind:ident),* $(,)?) => {
        /// The kind of a token or node. `u16` because rowan stores kinds as `u16`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u16)]
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        pub enum SyntaxKind {
            $($(#[$doc])* $kind),*
        }

        impl SyntaxKind {
            const ALL: &'static [SyntaxKind] = &[$(SyntaxKind::$kind),*];

            pub fn from_raw(raw: u16) -> SyntaxKind {
                Self::ALL[raw as usize]
            }
        }
    };
}

syntax_kinds! {
    // Trivia.
    WHITESPACE,
    COMMENT,
    /// A line break that ends no logical line: a blank line, or a break inside brackets.
    BLANK_NEWLINE,
    /// A backslash that joins two physical lines.
    LINE_CONTINUATION,

    // Layout.
    NEWLINE,
    /// Zero-width: the start of a more indented block.
    INDENT,
    /// Zero-width: the end of an indented block.
    DEDENT,

    // Literals and names.
    IDENT,
    INT_NUMBER,
    FLOAT_NUMBER,
    /// Also imaginary literals such as `1j`, which Weft rejects.
    IMAG_NUMBER,
    STRING,

    // Keywords.
    AND_KW, AS_KW, ASSERT_KW, ASYNC_KW, AWAIT_KW, BREAK_KW, CLASS_KW, CONTINUE_KW, DEF_KW, DEL_KW,
    ELIF_KW, ELSE_KW, EXCEPT_KW, FALSE_KW, FINALLY_KW, FOR_KW, FROM_KW, GLOBAL_KW, IF_KW,
    IMPORT_KW, IN_KW, IS_KW, LAMBDA_KW, NONE_KW, NONLOCAL_KW, NOT_KW, OR_KW, PASS_KW, RAISE_KW,
    RETURN_KW, TRUE_KW, TRY_KW, WHILE_KW, WITH_KW, YIELD_KW,

    // Punctuation and operators.
    L_PAREN, R_PAREN, L_BRACK, R_BRACK, L_BRACE, R_BRACE,
    COMMA, COLON, SEMICOLON, DOT, ELLIPSIS, ARROW, AT, WALRUS,
    PLUS, MINUS, STAR, SLASH, SLASH2, PERCENT, STAR2, AMP, PIPE, CARET, TILDE, SHL, SHR,
    EQ, EQ2, NEQ, LT, LTEQ, GT, GTEQ,
    /// Augmented assignments: `+=`, `-=`, `*=`, `/=`, `//=`, `%=`, `**=`, `&=`, `|=`, `^=`, `<<=`,
    /// `>>=`, `@=`.
    AUG_ASSIGN,
    /// A character no Python token starts with (`$`, `?`, a stray quote, ...).
    ERROR_TOKEN,
    EOF,

    // Nodes: the file and items.
    SOURCE_FILE,
    FUNCTION_DEF,
    PARAM_LIST,
    PARAM,
    /// `*args` or `**kwargs` (rejected).
    STAR_PARAM,
    /// A bare `*` or `/` in a parameter list (rejected).
    PARAM_MARKER,
    DEFAULT_VALUE,
    TYPE_ANNOTATION,
    RET_TYPE,
    BLOCK,
    CLASS_DEF,
    DECORATOR,

    // Nodes: statements.
    EXPR_STMT,
    ASSIGN_STMT,
    AUG_ASSIGN_STMT,
    /// `x: T = e` (rejected).
    ANN_ASSIGN_STMT,
    RETURN_STMT,
    IF_STMT,
    ELIF_CLAUSE,
    ELSE_CLAUSE,
    FOR_STMT,
    WHILE_STMT,
    ASSERT_STMT,
    PASS_STMT,
    BREAK_STMT,
    CONTINUE_STMT,
    IMPORT_STMT,
    GLOBAL_STMT,
    NONLOCAL_STMT,
    DEL_STMT,
    RAISE_STMT,
    TRY_STMT,
    EXCEPT_CLAUSE,
    FINALLY_CLAUSE,
    WITH_STMT,
    /// `async def`, `async for`, `async with` (rejected).
    ASYNC_STMT,
    /// `match subject:` with its `case` clauses (rejected).
    MATCH_STMT,
    CASE_CLAUSE,

    // Nodes: expressions.
    NAME,
    NAME_REF,
    LITERAL,
    PAREN_EXPR,
    TUPLE_EXPR,
    LIST_EXPR,
    LIST_COMP,
    COMP_FOR,
    COMP_IF,
    GENERATOR_EXP,
    DICT_EXPR,
    SET_EXPR,
    DICT_COMP,
    SET_COMP,
    /// A `key: value` entry in a dict display.
    DICT_ENTRY,
    BIN_EXPR,
    /// `and` / `or`.
    BOOL_EXPR,
    PREFIX_EXPR,
    /// A comparison chain: `a < b <= c`.
    COMPARE_EXPR,
    /// The operator of a comparison, which may be two tokens (`not in`, `is not`).
    COMPARE_OP,
    COND_EXPR,
    LAMBDA_EXPR,
    CALL_EXPR,
    ARG_LIST,
    /// `name=value` in a call (rejected).
    KEYWORD_ARG,
    /// `*xs` in a call, a display or a target (rejected).
    STAR_EXPR,
    INDEX_EXPR,
    SLICE,
    ATTR_EXPR,
    /// `x := e` (rejected).
    NAMED_EXPR,
    YIELD_EXPR,
    AWAIT_EXPR,

    // Nodes: recovery.
    /// A hole the parser filled: a missing expression or name. Always empty.
    MISSING,
    /// Tokens the parser skipped.
    ERROR,
}

impl SyntaxKind {
    pub fn is_trivia(self) -> bool {
        matches!(self, WHITESPACE | COMMENT | BLANK_NEWLINE | LINE_CONTINUATION)
    }

    pub fn keyword(text: &str) -> Option<SyntaxKind> {
        let kind = match text {
            "and" => AND_KW,
            "as" => AS_KW,
            "assert" => ASSERT_KW,
            "async" => ASYNC_KW,
            "await" => AWAIT_KW,
            "break" => BREAK_KW,
            "class" => CLASS_KW,
            "continue" => CONTINUE_KW,
            "def" => DEF_KW,
            "del" => DEL_KW,
            "elif" => ELIF_KW,
            "else" => ELSE_KW,
            "except" => EXCEPT_KW,
            "False" => FALSE_KW,
            "finally" => FINALLY_KW,
            "for" => FOR_KW,
            "from" => FROM_KW,
            "global" => GLOBAL_KW,
            "if" => IF_KW,
            "import" => IMPORT_KW,
            "in" => IN_KW,
            "is" => IS_KW,
            "lambda" => LAMBDA_KW,
            "None" => NONE_KW,
            "nonlocal" => NONLOCAL_KW,
            "not" => NOT_KW,
            "or" => OR_KW,
            "pass" => PASS_KW,
            "raise" => RAISE_KW,
            "return" => RETURN_KW,
            "True" => TRUE_KW,
            "try" => TRY_KW,
            "while" => WHILE_KW,
            "with" => WITH_KW,
            "yield" => YIELD_KW,
            _ => return None,
        };
        Some(kind)
    }

    /// Keywords that can only start a statement, never continue an expression. The lexer uses them
    /// to recover from an unclosed bracket (see `lex`).
    pub fn starts_statement_only(self) -> bool {
        matches!(
            self,
            DEF_KW
                | CLASS_KW
                | RETURN_KW
                | IMPORT_KW
                | WHILE_KW
                | WITH_KW
                | TRY_KW
                | EXCEPT_KW
                | FINALLY_KW
                | RAISE_KW
                | DEL_KW
                | PASS_KW
                | BREAK_KW
                | CONTINUE_KW
                | GLOBAL_KW
                | NONLOCAL_KW
                | ASSERT_KW
                | ELIF_KW
        )
    }

    /// How the kind reads in a diagnostic: "`(`", "a name", "end of line".
    pub fn describe(self) -> &'static str {
        match self {
            IDENT => "a name",
            INT_NUMBER | FLOAT_NUMBER | IMAG_NUMBER => "a number",
            STRING => "a string",
            NEWLINE => "end of line",
            INDENT => "an indented block",
            DEDENT => "the end of the block",
            EOF => "end of file",
            L_PAREN => "`(`",
            R_PAREN => "`)`",
            L_BRACK => "`[`",
            R_BRACK => "`]`",
            L_BRACE => "`{`",
            R_BRACE => "`}`",
            COMMA => "`,`",
            COLON => "`:`",
            EQ => "`=`",
            ARROW => "`->`",
            IN_KW => "`in`",
            ELSE_KW => "`else`",
            ERROR_TOKEN => "an invalid character",
            _ => "a token",
        }
    }
}

pub use SyntaxKind::*;

impl From<SyntaxKind> for rowan::SyntaxKind {
    fn from(kind: SyntaxKind) -> Self {
        Self(kind as u16)
    }
}
