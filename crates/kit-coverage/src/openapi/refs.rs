//! Local `$ref` resolution: JSON pointers into the document, checked once at load.

use std::borrow::Cow;
use std::cell::RefCell;

use kit_core::json::doc::{self, MemberIndex, Node};
use rustc_hash::FxHashMap;

use super::Problem;

/// What is wrong with one `$ref`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RefError {
    /// Not a local reference (`other.yaml#/X`, `https://…`): not followed.
    External,
    /// Local, but nothing is there.
    Dangling,
}

/// Objects with more members than this are indexed by name when a pointer goes through them.
const INDEXED: usize = 16;

/// The document, with what its references point at remembered. A document writes the same
/// reference many times (GitHub's 5 466 are 893 distinct ones), the check at load and every
/// field walk resolve them again, and a pointer goes through objects of hundreds of members
/// (`components/schemas`), which a scan would compare name by name.
pub(crate) struct Doc<'d> {
    root: &'d Node<'d>,
    resolved: RefCell<FxHashMap<&'d str, Result<&'d Node<'d>, RefError>>>,
    indexes: RefCell<FxHashMap<*const Node<'d>, MemberIndex<'d>>>,
}

impl<'d> Doc<'d> {
    pub(crate) fn new(root: &'d Node<'d>) -> Self {
        Doc {
            root,
            resolved: RefCell::default(),
            indexes: RefCell::default(),
        }
    }

    pub(crate) fn root(&self) -> &'d Node<'d> {
        self.root
    }

    /// The value a local reference (`#/components/schemas/Pet`) points at.
    pub(crate) fn resolve(&self, reference: &'d str) -> Result<&'d Node<'d>, RefError> {
        if let Some(found) = self.resolved.borrow().get(reference) {
            return *found;
        }
        let found = self.resolve_anew(reference);
        self.resolved.borrow_mut().insert(reference, found);
        found
    }

    fn resolve_anew(&self, reference: &str) -> Result<&'d Node<'d>, RefError> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(RefError::External);
        };
        let fragment: Cow<'_, str> = if fragment.contains('%') {
            percent_encoding::percent_decode_str(fragment).decode_utf8_lossy()
        } else {
            Cow::Borrowed(fragment)
        };
        if fragment.is_empty() {
            return Ok(self.root);
        }
        let Some(pointer) = fragment.strip_prefix('/') else {
            // `#Pet`: a named anchor (`$anchor`), which only JSON Schema resolution knows.
            return Err(RefError::External);
        };
        let mut at = self.root;
        for token in pointer.split('/') {
            let token: Cow<'_, str> = if token.contains('~') {
                Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
            } else {
                Cow::Borrowed(token)
            };
            at = self.step(at, &token).ok_or(RefError::Dangling)?;
        }
        Ok(at)
    }

    /// The member `token` of an object (the last of that name), or item `token` of an array.
    fn step(&self, at: &'d Node<'d>, token: &str) -> Option<&'d Node<'d>> {
        match at {
            Node::Object(members) if members.len() > INDEXED => {
                let mut indexes = self.indexes.borrow_mut();
                let index = indexes
                    .entry(at as *const Node<'d>)
                    .or_insert_with(|| MemberIndex::new(members));
                index.get(members, token).map(|(_, value)| value)
            }
            Node::Object(members) => doc::member(members, token).map(|(_, value)| value),
            Node::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        }
    }

    /// Follows `value`'s chain of `$ref`s to the first value that is not a reference, or to
    /// the last one that cannot be followed (external). `None` for a cycle or a dangling
    /// reference, which [`check`] has already refused at load.
    pub(crate) fn follow(&self, mut value: &'d Node<'d>) -> Option<&'d Node<'d>> {
        let mut seen = 0;
        while let Some(reference) = reference_of(value) {
            match self.resolve(reference) {
                Ok(target) => value = target,
                Err(RefError::External) => return Some(value),
                Err(RefError::Dangling) => return None,
            }
            seen += 1;
            if seen > MAX_CHAIN {
                return None;
            }
        }
        Some(value)
    }
}

/// The `$ref` of a value, when it is an object holding one as text.
pub(crate) fn reference_of<'d>(value: &'d Node<'d>) -> Option<&'d str> {
    match value.get("$ref")? {
        Node::Str(reference) => Some(reference),
        _ => None,
    }
}

/// References followed in a row before a chain is called a cycle.
pub(crate) const MAX_CHAIN: usize = 64;

/// Deeper than this, a document is refused (parsers stop at 128 already; this guards
/// documents built another way).
const MAX_DEPTH: usize = 256;

/// Checks every `$ref` in the document: each local one must point at something, and a chain
/// of references must end somewhere. Returns the number of external references (not followed)
/// or the first problem with its location as a JSON pointer.
pub(crate) fn check(doc: &Doc<'_>) -> Result<usize, (String, Problem)> {
    let mut walk = Check {
        doc,
        path: Vec::new(),
        external: 0,
    };
    walk.value(doc.root(), 0, Context::Keywords)?;
    Ok(walk.external)
}

/// Keys whose values are literal data, never searched for references.
const DATA_KEYWORDS: [&str; 4] = ["example", "default", "enum", "const"];

/// Keys whose values map names to objects of keywords.
const NAME_MAPS: [&str; 20] = [
    "properties",
    "patternProperties",
    "definitions",
    "$defs",
    "schemas",
    "responses",
    "parameters",
    "headers",
    "securitySchemes",
    "securityDefinitions",
    "links",
    "callbacks",
    "requestBodies",
    "pathItems",
    "paths",
    "webhooks",
    "content",
    "encoding",
    "variables",
    "dependentSchemas",
];

/// What the keys of the object being walked are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// Keywords (`type`, `$ref`, …).
    Keywords,
    /// Names (the keys of `properties`, `schemas`, …).
    Names,
    /// Names of examples (the keys of `examples`): each value is an Example object.
    Examples,
    /// An Example object: its `value` is literal data.
    Example,
}

struct Check<'r, 'd> {
    doc: &'r Doc<'d>,
    path: Vec<Token<'d>>,
    external: usize,
}

impl<'d> Check<'_, 'd> {
    fn value(
        &mut self,
        value: &'d Node<'d>,
        depth: usize,
        context: Context,
    ) -> Result<(), (String, Problem)> {
        if depth > MAX_DEPTH {
            return Err((pointer(&self.path), Problem::TooDeep { limit: MAX_DEPTH }));
        }
        match value {
            Node::Object(members) => {
                for (key, child) in doc::distinct(members) {
                    if !matches!(child, Node::Object(_) | Node::Array(_)) {
                        // Found while iterating: a lookup per object would scan it again.
                        if let Node::Str(reference) = child
                            && key == "$ref"
                            && context != Context::Names
                        {
                            self.reference(value, reference)?;
                        }
                        continue;
                    }
                    let child_context = match context {
                        // Keys of a name map (`properties`, `schemas`, …) name things: each
                        // value is an object of keywords.
                        Context::Names => Context::Keywords,
                        Context::Example if key == "value" => continue,
                        _ if key.starts_with("x-") => continue,
                        // Literal data: a `$ref` member in it is data, not a reference
                        // (GitHub's SCIM examples hold `"$ref": "https://…"`).
                        _ if DATA_KEYWORDS.contains(&key) => continue,
                        _ if key == "examples" => Context::Examples,
                        _ if NAME_MAPS.contains(&key) => Context::Names,
                        Context::Examples => Context::Example,
                        _ => Context::Keywords,
                    };
                    self.path.push(Token::Key(key));
                    self.value(child, depth + 1, child_context)?;
                    self.path.pop();
                }
            }
            // JSON Schema's `examples` is an array of literal values.
            Node::Array(_) if context == Context::Examples => {}
            Node::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    if matches!(child, Node::Object(_) | Node::Array(_)) {
                        self.path.push(Token::Index(i));
                        self.value(child, depth + 1, Context::Keywords)?;
                        self.path.pop();
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn reference(&mut self, at: &'d Node<'d>, reference: &'d str) -> Result<(), (String, Problem)> {
        let here = |path: &[Token<'_>]| {
            let mut p = pointer(path);
            p.push_str("/$ref");
            p
        };
        let mut chain = vec![reference.to_owned()];
        let mut current = at;
        let mut next = reference;
        loop {
            match self.doc.resolve(next) {
                Err(RefError::External) => {
                    self.external += 1;
                    return Ok(());
                }
                Err(RefError::Dangling) => {
                    return Err((
                        here(&self.path),
                        Problem::DanglingRef {
                            target: next.to_owned(),
                        },
                    ));
                }
                Ok(target) => {
                    if std::ptr::eq(target, current) || std::ptr::eq(target, at) || chain.len() > MAX_CHAIN {
                        return Err((here(&self.path), Problem::RefCycle { chain }));
                    }
                    match reference_of(target) {
                        Some(further) if chain.iter().any(|c| c == further) => {
                            chain.push(further.to_owned());
                            return Err((here(&self.path), Problem::RefCycle { chain }));
                        }
                        Some(further) => {
                            chain.push(further.to_owned());
                            current = target;
                            next = further;
                        }
                        None => return Ok(()),
                    }
                }
            }
        }
    }
}

/// One step of a path into the document.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Token<'d> {
    Key(&'d str),
    Index(usize),
}

/// A JSON pointer (`#/paths/~1pets/get`) to the place `path` names.
pub(crate) fn pointer(path: &[Token<'_>]) -> String {
    let mut out = String::from("#");
    for token in path {
        out.push('/');
        match token {
            Token::Key(key) => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Token::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}
