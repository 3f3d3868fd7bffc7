//! Go to definition, references, document highlights and rename.

use rowan::{TextRange, TextSize};

use super::{NameAt, Referent, all_names, bodies, name_at};
use weft_analysis::db::{Db, SourceFile};
use weft_analysis::items::{file_functions, function_signature};
use weft_syntax::identifier_key;

/// One text replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: TextRange,
    pub new_text: String,
}

/// Where the name at `offset` is defined: a local's first binding, a top-level function's name
/// or a top-level variable's first assignment. Prelude names have no source.
pub fn definition(db: &dyn Db, file: SourceFile, offset: TextSize) -> Option<TextRange> {
    match name_at(db, file, offset)?.referent {
        Referent::Local { first, .. } => Some(first),
        Referent::TopLevel(name) => top_level_definition(db, file, &name),
        Referent::Prelude(_) => None,
    }
}

pub(super) fn top_level_definition(db: &dyn Db, file: SourceFile, name: &str) -> Option<TextRange> {
    let function = file_functions(db, file).iter().find(|f| f.name(db) == name);
    if let Some(f) = function {
        return Some(function_signature(db, *f).name_range + f.offset(db));
    }
    all_names(db, file)
        .into_iter()
        .find(|n| n.referent == Referent::TopLevel(name.to_string()) && is_binding(db, file, n))
        .map(|n| n.range)
}

/// Whether the name is bound (not read) there.
fn is_binding(db: &dyn Db, file: SourceFile, name: &NameAt<'_>) -> bool {
    let names = name.owner.names(db, file);
    let relative = name.range - name.owner.base(db);
    names.definitions.iter().any(|(r, _)| *r == relative)
}

/// Every occurrence of what the name at `offset` denotes, bindings included, in source order.
pub fn references(db: &dyn Db, file: SourceFile, offset: TextSize) -> Vec<TextRange> {
    let Some(target) = name_at(db, file, offset) else { return Vec::new() };
    all_names(db, file).into_iter().filter(|n| n.referent == target.referent).map(|n| n.range).collect()
}

/// `references`, each marked as a binding (write) or a read.
pub fn highlights(db: &dyn Db, file: SourceFile, offset: TextSize) -> Vec<(TextRange, bool)> {
    let Some(target) = name_at(db, file, offset) else { return Vec::new() };
    let definition = match &target.referent {
        Referent::TopLevel(name) => top_level_definition(db, file, name),
        _ => None,
    };
    all_names(db, file)
        .into_iter()
        .filter(|n| n.referent == target.referent)
        .map(|n| (n.range, is_binding(db, file, &n) || definition == Some(n.range)))
        .collect()
}

/// The range of the name at `offset`, if it can be renamed: prelude names cannot.
pub fn prepare_rename(db: &dyn Db, file: SourceFile, offset: TextSize) -> Option<TextRange> {
    let name = name_at(db, file, offset)?;
    match name.referent {
        Referent::Prelude(_) => None,
        _ => Some(name.range),
    }
}

/// The edits renaming what the name at `offset` denotes to `new_name`, or why not.
pub fn rename(db: &dyn Db, file: SourceFile, offset: TextSize, new_name: &str) -> Result<Vec<Edit>, String> {
    let Some(target) = name_at(db, file, offset) else {
        return Err("there is no name here to rename".into());
    };
    if let Referent::Prelude(name) = &target.referent {
        return Err(format!("`{name}` is a prelude function and cannot be renamed"));
    }
    if !is_identifier(new_name) {
        return Err(format!("`{new_name}` is not a valid name"));
    }
    if weft_analysis::prelude::is_prelude_name(new_name) {
        return Err(format!("`{new_name}` would shadow the prelude function of that name"));
    }
    let clash = all_names(db, file).into_iter().find(|n| {
        n.name() == identifier_key(new_name).as_str()
            && n.referent != target.referent
            && match (&n.referent, &target.referent) {
                (Referent::TopLevel(_), _) | (_, Referent::TopLevel(_)) => true,
                _ => n.owner == target.owner,
            }
    });
    if let Some(clash) = clash {
        return Err(format!(
            "`{new_name}` is already bound here, at offset {}",
            u32::from(clash.range.start())
        ));
    }
    // A name that resolves to nothing would be captured by the renamed binding.
    if unresolved_names(db, file).iter().any(|n| n == &identifier_key(new_name)) {
        return Err(format!(
            "`{new_name}` is read in this file without a binding; the rename would capture it"
        ));
    }
    Ok(references(db, file, offset)
        .into_iter()
        .map(|range| Edit { range, new_text: new_name.to_string() })
        .collect())
}

/// A Python identifier that is not a keyword.
fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    let starts = chars.next().is_some_and(|c| c == '_' || unicode_ident::is_xid_start(c));
    starts && chars.all(unicode_ident::is_xid_continue) && weft_syntax::SyntaxKind::keyword(text).is_none()
}

/// The names read in the file that nothing binds (each reported as unknown).
fn unresolved_names(db: &dyn Db, file: SourceFile) -> Vec<String> {
    let text = file.text(db);
    bodies(db, file)
        .flat_map(|(owner, names)| {
            let base = owner.base(db);
            names
                .references
                .iter()
                .filter(|(_, r)| *r == weft_analysis::names::Resolution::Unresolved)
                .map(move |(r, _)| *r + base)
        })
        .filter_map(|range| text.get(std::ops::Range::<usize>::from(range)).map(identifier_key))
        .collect()
}
