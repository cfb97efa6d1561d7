//! OpenAPI documents: Swagger 2.0, OpenAPI 3.0, 3.1 and 3.2, JSON or YAML.
//!
//! The document is read into a tree borrowing from its text (`kit_core::json::doc`; YAML
//! through serde-saphyr, with input limits, into a `serde_json::Value` first) and everything
//! coverage needs is taken from it once: path keys, operations, declared responses with their
//! field sets, base paths. The tree is dropped after. A `Value` of GitHub's 4 MB document
//! took 45 ms to build and drop, a String and a hashed insert per member; the tree 15 ms.
//! The `openapiv3` crate is not used: it reads 3.0 only, and coverage must read all three.

mod collector;
mod refs;
mod schema;
mod yaml;

use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use kit_core::file::ReadBoundedError;
use kit_core::json::doc::{self, Members, Node};

use crate::router::RouteTable;

pub use collector::{
    OpenApiCoverage, OpenApiCoverageCollector, OperationCoverage, ResponseCoverage, Undescribed,
};
pub use schema::{MAX_MEMBER_DEPTH, MAX_REF_HOPS};
#[doc(hidden)]
pub use yaml::{ThreeWays as YamlThreeWays, three_ways as yaml_three_ways};

/// Operation keys of a path item, in the order the specification lists them.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Documents larger than this are refused before parsing.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024 * 1024;

/// Nesting deeper than this is refused by the YAML reader (serde_json's own limit is 128).
/// serde-saphyr recurses per level: 128 levels overflow a 2 MiB test thread's stack in a
/// debug build, 64 do not; real documents stay under 30.
const MAX_YAML_DEPTH: usize = 64;

/// Which specification a document follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpenApiVersion {
    /// Swagger 2.0.
    Swagger2,
    /// OpenAPI 3.0.x.
    OpenApi30,
    /// OpenAPI 3.1.x.
    OpenApi31,
    /// OpenAPI 3.2.x (read as 3.1, with the `query` operation and `additionalOperations`).
    OpenApi32,
}

impl fmt::Display for OpenApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpenApiVersion::Swagger2 => "Swagger 2.0",
            OpenApiVersion::OpenApi30 => "OpenAPI 3.0",
            OpenApiVersion::OpenApi31 => "OpenAPI 3.1",
            OpenApiVersion::OpenApi32 => "OpenAPI 3.2",
        })
    }
}

/// A response status key as a document declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StatusKey {
    /// An exact code: `404`.
    Code(u16),
    /// A range: `4XX` (the digit).
    Range(u8),
    /// `default`.
    Default,
}

impl StatusKey {
    /// Reads a key of a `responses` object; `None` for extensions (`x-…`) and nonsense.
    pub fn parse(key: &str) -> Option<StatusKey> {
        let bytes = key.as_bytes();
        match bytes {
            [d @ b'1'..=b'5', a, b] if a.eq_ignore_ascii_case(&b'x') && b.eq_ignore_ascii_case(&b'x') => {
                Some(StatusKey::Range(d - b'0'))
            }
            [b'1'..=b'5', b'0'..=b'9', b'0'..=b'9'] => key.parse().ok().map(StatusKey::Code),
            _ if key == "default" => Some(StatusKey::Default),
            _ => None,
        }
    }

    /// How well it describes `status`: 3 exact, 2 range, 1 default, 0 not at all.
    fn rank(self, status: u16) -> u8 {
        match self {
            StatusKey::Code(code) if code == status => 3,
            StatusKey::Range(digit) if status / 100 == u16::from(digit) => 2,
            StatusKey::Default => 1,
            _ => 0,
        }
    }
}

impl fmt::Display for StatusKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusKey::Code(code) => write!(f, "{code}"),
            StatusKey::Range(digit) => write!(f, "{digit}XX"),
            StatusKey::Default => f.write_str("default"),
        }
    }
}

/// One declared response of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeclaredResponse {
    /// Its status key.
    pub status: StatusKey,
    /// The fields its JSON schema declares (see [`MAX_MEMBER_DEPTH`] for how they are counted).
    pub fields: Arc<[String]>,
}

/// One operation: a method on a path key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Operation {
    /// The method, upper case (`GET`).
    pub method: String,
    /// The path key as written (`/pets/{id}`, `/responses?beta=true`).
    pub path: String,
    /// Its `operationId`, when it has one.
    pub operation_id: Option<String>,
    /// Whether it is marked `deprecated`.
    pub deprecated: bool,
    /// Its declared responses, in the document's order.
    pub responses: Vec<DeclaredResponse>,
}

impl Operation {
    /// The declared response describing `status`: an exact code, else its range (`4XX`),
    /// else `default`.
    ///
    /// ```
    /// # use kit_coverage::OpenApiDocument;
    /// let doc = OpenApiDocument::from_str(r#"{"openapi":"3.1.0","paths":{"/a":{"get":{"responses":
    ///     {"default":{},"4XX":{},"429":{}}}}}}"#, "inline").unwrap();
    /// let get = &doc.operations()[0];
    /// let key = |status| get.response_for(status).map(|r| r.status.to_string());
    /// assert_eq!(key(429).as_deref(), Some("429"));
    /// assert_eq!(key(404).as_deref(), Some("4XX"));
    /// assert_eq!(key(200).as_deref(), Some("default"));
    /// ```
    pub fn response_for(&self, status: u16) -> Option<&DeclaredResponse> {
        self.response_index(status).map(|i| &self.responses[i])
    }

    pub(crate) fn response_index(&self, status: u16) -> Option<usize> {
        self.responses
            .iter()
            .enumerate()
            .map(|(i, r)| (r.status.rank(status), i))
            .filter(|(rank, _)| *rank > 0)
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|(_, i)| i)
    }

    /// `GET /pets/{id}`.
    pub fn label(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// A loaded OpenAPI document: its operations, their declared responses and fields, and
/// the route table requests are matched with.
///
/// ```
/// use kit_coverage::OpenApiDocument;
///
/// let doc = OpenApiDocument::from_str(r#"
/// swagger: "2.0"
/// basePath: /api
/// paths:
///   /pets/{id}:
///     get:
///       responses:
///         "200": { schema: { properties: { id: {}, name: {} } } }
///         default: {}
/// "#, "pets.yaml").unwrap();
/// assert_eq!((doc.paths().len(), doc.operations().len(), doc.declared_responses()), (1, 1, 2));
/// let found = doc.find("GET", Some("/api/pets/{petId}"), None).unwrap();
/// assert_eq!(doc.operations()[found].path, "/pets/{id}");
/// ```
#[derive(Debug, Clone)]
pub struct OpenApiDocument {
    source: String,
    version: OpenApiVersion,
    paths: Vec<String>,
    operations: Vec<Operation>,
    /// Operations of each path key: a path's operations are contiguous in `operations`.
    by_path: Vec<Range<usize>>,
    /// Each operation's method, packed, beside `operations` (a lookup compares these and
    /// never reads the operations themselves).
    method_keys: Vec<MethodKey>,
    webhooks: usize,
    base_paths: Vec<String>,
    routes: Arc<RouteTable>,
    notes: Vec<String>,
}

/// A method's name in upper case, its first [`PACKED`](Self::PACKED) bytes packed into a
/// word, and its length: every standard method fits, so a route's methods compare without
/// reading a string from the heap (those reads were a sixth of a lookup). Longer names
/// (OpenAPI 3.2's `additionalOperations`) compare equal here on their first bytes only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MethodKey {
    head: u64,
    len: usize,
}

impl MethodKey {
    const PACKED: usize = 8;

    fn of(method: &str) -> MethodKey {
        let mut head = [0u8; Self::PACKED];
        for (slot, byte) in head.iter_mut().zip(method.bytes()) {
            *slot = byte.to_ascii_uppercase();
        }
        MethodKey {
            head: u64::from_le_bytes(head),
            len: method.len(),
        }
    }
}

/// Where a request's path came from, for [`OpenApiDocument::find`]'s callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// An operation.
    Operation(usize),
    /// A path key, which does not declare the method.
    PathOnly(usize),
    /// Nothing.
    Nothing,
}

impl OpenApiDocument {
    /// Reads a document from a file, JSON or YAML (told apart by content).
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, OpenApiError> {
        let path = path.as_ref();
        let source = path.display().to_string();
        let error = |problem| OpenApiError::new(&source, None, problem);
        // A pipe or a device is read too, up to the limit like a file.
        let bytes = kit_core::file::read_bounded(path, MAX_DOCUMENT_BYTES as u64).map_err(|e| {
            error(match e {
                ReadBoundedError::TooLarge {
                    size: Some(bytes), ..
                } => Problem::TooLarge {
                    bytes,
                    limit: MAX_DOCUMENT_BYTES,
                },
                ReadBoundedError::TooLarge { size: None, .. } => Problem::StreamTooLarge {
                    limit: MAX_DOCUMENT_BYTES,
                },
                ReadBoundedError::Io(e) => Problem::Read(e),
                // Non-exhaustive: a reason added later still names the document.
                other => Problem::Read(std::io::Error::other(other)),
            })
        })?;
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
                let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
                let column = valid.len() - valid.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1) + 1;
                return Err(error(Problem::NotUtf8 { line, column }));
            }
        };
        Self::from_str(&text, &source)
    }

    /// Reads a document from text, JSON or YAML; `source` names it in errors.
    #[allow(clippy::should_implement_trait)] // it needs a name for errors; FromStr has none
    pub fn from_str(text: &str, source: &str) -> Result<Self, OpenApiError> {
        if text.len() > MAX_DOCUMENT_BYTES {
            return Err(OpenApiError::new(
                source,
                None,
                Problem::TooLarge {
                    bytes: text.len() as u64,
                    limit: MAX_DOCUMENT_BYTES,
                },
            ));
        }
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let node = if text.trim_start().starts_with('{') {
            doc::parse_str(text).map_err(|e| {
                let message = if e.to_string().starts_with("recursion limit exceeded") {
                    format!(
                        "nested more than 128 levels deep (line {}, column {})",
                        e.line(),
                        e.column()
                    )
                } else {
                    e.to_string()
                };
                OpenApiError::new(
                    source,
                    None,
                    Problem::Syntax {
                        format: "JSON",
                        message,
                    },
                )
            })?
        } else {
            let options = yaml_options(text.len());
            match yaml::read_plain(text, &options) {
                Some(node) => node,
                None => {
                    serde_saphyr::from_str_with_options::<yaml::YamlTree<'_>>(text, options)
                        .map_err(|e| yaml_error(&e, source))?
                        .0
                }
            }
        };
        Self::read(&node, source)
    }

    fn read(node: &Node<'_>, source: &str) -> Result<Self, OpenApiError> {
        let error = |at: Option<String>, problem| OpenApiError::new(source, at, problem);
        let doc = &refs::Doc::new(node);
        let Some(root) = node.as_object() else {
            return Err(error(
                None,
                Problem::NotADocument("the top level is not a mapping".into()),
            ));
        };
        let version = version(root).map_err(|p| error(None, p))?;
        let external = refs::check(doc).map_err(|(at, problem)| error(Some(at), problem))?;
        let mut notes = Vec::new();
        if external > 0 {
            notes.push(format!(
                "{external} $ref(s) point outside the document and were not followed"
            ));
        }
        let base_paths = base_paths(root, version);
        let mut fields = schema::Fields::new(doc);
        let mut routes = RouteTable::new();
        let mut paths = Vec::new();
        let mut operations = Vec::new();
        let mut by_path = Vec::new();
        let mut method_keys = Vec::new();
        let path_items: &Members<'_> = match node.get("paths") {
            None | Some(Node::Null) => &[],
            Some(Node::Object(members)) => members,
            Some(_) => {
                return Err(error(
                    Some("#/paths".into()),
                    Problem::NotADocument("`paths` is not a mapping".into()),
                ));
            }
        };
        for (key, item) in doc::distinct(path_items) {
            if key.starts_with("x-") {
                continue;
            }
            let at = || format!("#/paths/{}", escape(key));
            if !key.starts_with('/') {
                return Err(error(
                    Some(at()),
                    Problem::NotADocument(format!("path key `{key}` does not start with `/`")),
                ));
            }
            let Some(item) = doc.follow(item).and_then(Node::as_object) else {
                return Err(error(
                    Some(at()),
                    Problem::NotADocument("the path item is not a mapping".into()),
                ));
            };
            let route = routes.insert(key);
            debug_assert_eq!(route, paths.len());
            paths.push(key.to_owned());
            let first = operations.len();
            for (method, operation) in operations_of(item, version) {
                let Some(operation) = operation.as_object() else {
                    return Err(error(
                        Some(format!("{}/{method}", at())),
                        Problem::NotADocument("the operation is not a mapping".into()),
                    ));
                };
                let responses = responses(doc, operation, version, &mut fields);
                method_keys.push(MethodKey::of(method));
                operations.push(Operation {
                    method: method.to_ascii_uppercase(),
                    path: key.to_owned(),
                    operation_id: doc::member(operation, "operationId")
                        .and_then(|(_, id)| id.as_str())
                        .map(str::to_owned),
                    deprecated: doc::member(operation, "deprecated")
                        .and_then(|(_, deprecated)| deprecated.as_bool())
                        .unwrap_or(false),
                    responses,
                });
            }
            by_path.push(first..operations.len());
        }
        let webhooks = node.get("webhooks").and_then(Node::as_object).map_or(0, |hooks| {
            doc::distinct(hooks)
                .filter_map(|(_, item)| doc.follow(item)?.as_object())
                .map(|item| operations_of(item, version).count())
                .sum()
        });
        routes.set_prefixes(&base_paths);
        Ok(OpenApiDocument {
            source: source.to_owned(),
            version,
            paths,
            operations,
            by_path,
            method_keys,
            webhooks,
            base_paths,
            routes: Arc::new(routes),
            notes,
        })
    }

    /// The document's name, as given when it was loaded.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Which specification it follows.
    pub fn version(&self) -> OpenApiVersion {
        self.version
    }

    /// Path keys, in the document's order.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// Operations under `paths`, in the document's order.
    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// Operations under `webhooks` (3.1): counted, never matched (the API calls them).
    pub fn webhook_operations(&self) -> usize {
        self.webhooks
    }

    /// Operation × status entries.
    pub fn declared_responses(&self) -> usize {
        self.operations.iter().map(|o| o.responses.len()).sum()
    }

    /// Base paths stripped from requests before matching: from `servers` (3.x) or
    /// `basePath` (2.0), or as set by [`with_base_paths`](Self::with_base_paths).
    pub fn base_paths(&self) -> &[String] {
        &self.base_paths
    }

    /// Replaces the base paths (when the API is served under another prefix than the one
    /// the document declares).
    pub fn with_base_paths<S: Into<String>>(mut self, base_paths: impl IntoIterator<Item = S>) -> Self {
        self.base_paths = base_paths.into_iter().map(Into::into).collect();
        Arc::make_mut(&mut self.routes).set_prefixes(&self.base_paths);
        self
    }

    /// Things worth knowing about how the document was read.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The operation a request belongs to. `template` is the route the kit recorded
    /// (`/pets/{id}`), matched first; `url_path` the concrete path, matched when there is no
    /// template or it matches nothing (a base address with a path of its own). `query` is
    /// the request's query string, for path keys that hold one.
    pub fn find(
        &self,
        method: &str,
        template: Option<&str>,
        url: Option<(&str, Option<&str>)>,
    ) -> Option<usize> {
        match self.locate(method, template, url) {
            Found::Operation(index) => Some(index),
            _ => None,
        }
    }

    pub(crate) fn locate(
        &self,
        method: &str,
        template: Option<&str>,
        url: Option<(&str, Option<&str>)>,
    ) -> Found {
        let query = url.and_then(|(_, q)| q);
        let route = template
            .and_then(|t| self.routes.find_template(t, query))
            .or_else(|| url.and_then(|(path, query)| self.routes.find_path(path, query)));
        let Some(route) = route else {
            return Found::Nothing;
        };
        let wanted = MethodKey::of(method);
        let range = self.by_path[route].clone();
        self.method_keys[range.clone()]
            .iter()
            .zip(range)
            .find(|&(key, op)| {
                *key == wanted
                    && (wanted.len <= MethodKey::PACKED
                        || self.operations[op].method.eq_ignore_ascii_case(method))
            })
            .map_or(Found::PathOnly(route), |(_, op)| Found::Operation(op))
    }

    /// The methods path key `index` declares.
    pub(crate) fn methods_of(&self, path: usize) -> impl Iterator<Item = &str> {
        self.operations[self.by_path[path].clone()]
            .iter()
            .map(|operation| operation.method.as_str())
    }

    /// The operation named by `GET /pets/{id}` or by its `operationId`.
    pub fn operation_named(&self, name: &str) -> Option<usize> {
        let by_label = name.split_once(' ').and_then(|(method, path)| {
            self.operations
                .iter()
                .position(|o| o.method.eq_ignore_ascii_case(method) && o.path == path.trim())
        });
        by_label.or_else(|| {
            self.operations
                .iter()
                .position(|o| o.operation_id.as_deref() == Some(name))
        })
    }
}

/// serde-saphyr's error as the document's: its first line says where and what (the rest is a
/// snippet of the input), a breached depth in the kit's own words.
fn yaml_error(e: &serde_saphyr::Error, source: &str) -> OpenApiError {
    let full = e.to_string();
    let first = full.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let message = match first.split_once(": budget breached: Depth") {
        Some((place, _)) => format!("nested more than {MAX_YAML_DEPTH} levels deep ({place})"),
        None => first.to_owned(),
    };
    OpenApiError::new(
        source,
        None,
        Problem::Syntax {
            format: "YAML",
            message,
        },
    )
}

fn yaml_options(len: usize) -> serde_saphyr::options::Options {
    let mut budget = serde_saphyr::budget::Budget::default();
    // Every parser event and node takes at least one byte of input, so limits the size of
    // the input hold nothing back that the input does not have; aliases keep their own limits.
    budget.max_events = budget.max_events.max(len);
    budget.max_nodes = budget.max_nodes.max(len);
    budget.max_depth = MAX_YAML_DEPTH;
    let mut options = serde_saphyr::options::Options::default();
    options.budget = Some(budget);
    options
}

fn version(root: &Members<'_>) -> Result<OpenApiVersion, Problem> {
    let get = |name| doc::member(root, name).map(|(_, value)| value);
    let text = |v: &Node<'_>| match v {
        Node::Str(s) => s.to_string(),
        other => other.to_value().to_string(),
    };
    if let Some(swagger) = get("swagger") {
        return match text(swagger).as_str() {
            "2.0" => Ok(OpenApiVersion::Swagger2),
            other => Err(Problem::UnsupportedVersion(format!("swagger: {other}"))),
        };
    }
    let Some(openapi) = get("openapi") else {
        return Err(Problem::NotADocument(
            "neither `openapi` nor `swagger` at the top level".into(),
        ));
    };
    let found = text(openapi);
    let mut parts = found.split('.');
    match (parts.next(), parts.next()) {
        (Some("3"), Some("0")) => Ok(OpenApiVersion::OpenApi30),
        (Some("3"), Some("1")) => Ok(OpenApiVersion::OpenApi31),
        (Some("3"), Some("2")) => Ok(OpenApiVersion::OpenApi32),
        _ => Err(Problem::UnsupportedVersion(format!("openapi: {found}"))),
    }
}

/// The paths of the document's servers (3.x) or its `basePath` (2.0).
fn base_paths(root: &Members<'_>, version: OpenApiVersion) -> Vec<String> {
    let get = |name| doc::member(root, name).map(|(_, value)| value);
    if version == OpenApiVersion::Swagger2 {
        return get("basePath")
            .and_then(Node::as_str)
            .map(|p| vec![p.to_owned()])
            .unwrap_or_default();
    }
    get("servers")
        .and_then(Node::as_array)
        .into_iter()
        .flatten()
        .filter_map(|server| {
            let url = server.get("url")?.as_str()?;
            let url = substitute_variables(url, server.get("variables"));
            Some(server_path(&url).to_owned())
        })
        .collect()
}

/// `{var}` in a server URL replaced by the variable's default.
fn substitute_variables(url: &str, variables: Option<&Node<'_>>) -> String {
    let Some(variables) = variables.and_then(Node::as_object) else {
        return url.to_owned();
    };
    let mut url = url.to_owned();
    for (name, variable) in doc::distinct(variables) {
        if let Some(default) = variable.get("default").and_then(Node::as_str) {
            url = url.replace(&format!("{{{name}}}"), default);
        }
    }
    url
}

/// The path of a server URL: `https://host/api/v3` → `/api/v3`; `/v1` → `/v1`.
fn server_path(url: &str) -> &str {
    let without_scheme = match url.find("://") {
        Some(i) => &url[i + 3..],
        None if url.starts_with("//") => &url[2..],
        None => return url.split(['?', '#']).next().unwrap_or(""),
    };
    match without_scheme.find('/') {
        Some(i) => without_scheme[i..].split(['?', '#']).next().unwrap_or(""),
        None => "",
    }
}

fn operations_of<'n, 'a>(
    item: &'n Members<'a>,
    version: OpenApiVersion,
) -> impl Iterator<Item = (&'n str, &'n Node<'a>)> {
    let standard = METHODS
        .iter()
        .chain((version == OpenApiVersion::OpenApi32).then_some(&"query"))
        .filter_map(|m| doc::member(item, m).map(|(_, op)| (*m, op)));
    let additional = (version == OpenApiVersion::OpenApi32)
        .then(|| doc::member(item, "additionalOperations").and_then(|(_, ops)| ops.as_object()))
        .flatten()
        .into_iter()
        .flat_map(doc::distinct);
    standard.chain(additional)
}

fn responses<'d>(
    doc: &refs::Doc<'d>,
    operation: &'d Members<'d>,
    version: OpenApiVersion,
    fields: &mut schema::Fields<'_, 'd>,
) -> Vec<DeclaredResponse> {
    let Some(responses) = doc::member(operation, "responses").and_then(|(_, r)| doc.follow(r)?.as_object())
    else {
        return Vec::new();
    };
    doc::distinct(responses)
        .filter_map(|(key, response)| {
            let status = StatusKey::parse(key)?;
            let response = doc.follow(response).unwrap_or(response);
            let schemas = response_schemas(response, version);
            Some(DeclaredResponse {
                status,
                fields: fields.of(&schemas),
            })
        })
        .collect()
}

/// The JSON schemas of a response: 2.0's `schema`; 3.x's `content` of JSON media types.
fn response_schemas<'d>(response: &'d Node<'d>, version: OpenApiVersion) -> Vec<&'d Node<'d>> {
    if version == OpenApiVersion::Swagger2 {
        return response.get("schema").into_iter().collect();
    }
    response
        .get("content")
        .and_then(Node::as_object)
        .into_iter()
        .flat_map(doc::distinct)
        .filter(|(media_type, _)| is_json(media_type))
        .filter_map(|(_, media)| media.get("schema"))
        .collect()
}

/// `application/json`, `application/problem+json`, `application/json; charset=utf-8`,
/// `*/*` (which includes JSON).
fn is_json(media_type: &str) -> bool {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence.ends_with("+json")
        || essence == "*/*"
        || essence == "application/*"
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A document could not be used: which document, where in it, and what is wrong.
#[derive(Debug)]
pub struct OpenApiError {
    document: String,
    location: Option<String>,
    problem: Problem,
}

/// What is wrong with a document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Read(#[source] std::io::Error),
    /// It is larger than the kit reads.
    #[error("it is {bytes} bytes; documents over {limit} bytes are refused")]
    TooLarge {
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: usize,
    },
    /// Read as a stream (a pipe, a device: no size to check first), it went on past the limit.
    #[error("it holds more than {limit} bytes (read as a stream); documents over {limit} bytes are refused")]
    StreamTooLarge {
        /// The limit.
        limit: usize,
    },
    /// It is not UTF-8.
    #[error("not UTF-8: invalid byte at line {line}, column {column}")]
    NotUtf8 {
        /// Line of the first invalid byte.
        line: usize,
        /// Its column (in bytes).
        column: usize,
    },
    /// It does not parse.
    #[error("not valid {format}: {message}")]
    Syntax {
        /// `JSON` or `YAML`.
        format: &'static str,
        /// The parser's message, with the line and column.
        message: String,
    },
    /// Its version is not one the kit reads.
    #[error("unsupported version `{0}`: the kit reads swagger 2.0 and openapi 3.0, 3.1 and 3.2")]
    UnsupportedVersion(String),
    /// It is not shaped like an OpenAPI document.
    #[error("not an OpenAPI document: {0}")]
    NotADocument(String),
    /// A local `$ref` points at nothing.
    #[error("$ref `{target}` points at nothing in the document")]
    DanglingRef {
        /// The reference.
        target: String,
    },
    /// A chain of `$ref`s comes back to where it started without reaching a schema.
    #[error("$ref cycle: {}", chain.join(" -> "))]
    RefCycle {
        /// The references followed.
        chain: Vec<String>,
    },
    /// It nests deeper than the kit walks.
    #[error("nested more than {limit} levels deep")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// An exclusion names no operation.
    #[error("`{0}` names no operation (use `METHOD /path` as the document writes it, or an operationId)")]
    UnknownOperation(String),
}

impl OpenApiError {
    pub(crate) fn new(document: &str, location: Option<String>, problem: Problem) -> Self {
        OpenApiError {
            document: document.to_owned(),
            location,
            problem,
        }
    }

    /// The document, as named when loading it.
    pub fn document(&self) -> &str {
        &self.document
    }

    /// Where in it, as a JSON pointer (`#/paths/~1pets/get/responses/200/$ref`), when known.
    pub fn location(&self) -> Option<&str> {
        self.location.as_deref()
    }

    /// What is wrong.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }
}

impl fmt::Display for OpenApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(at) => write!(f, "{}: at {at}: {}", self.document, self.problem),
            None => write!(f, "{}: {}", self.document, self.problem),
        }
    }
}

impl std::error::Error for OpenApiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.problem)
    }
}
