//! Configuration: `Kit:A:B` keys, case-insensitive, layered like ASP.NET Core's.
//!
//! Sources, later ones winning:
//!
//! 1. `kit.toml` beside the test crate's `Cargo.toml`;
//! 2. `kit.json` beside it;
//! 3. environment variables whose first `__`-separated segment is `Kit`:
//!    `Kit__Applications__orders__BaseUrl=http://staging/` sets `Kit:Applications:orders:BaseUrl`.
//!
//! Nested tables (TOML) and objects (JSON) become `:`-joined keys; array items get their
//! index as a segment (`Kit:Rest:Attachments:SensitiveHeaders:0`). Every value is kept as
//! text, as ASP.NET Core does; typed reads parse it and name the key when it does not parse.
//!
//! ```
//! use kit_core::Configuration;
//!
//! let mut config = Configuration::from_toml_str(
//!     r#"
//!     [Kit.Applications.orders]
//!     BaseUrl = "http://127.0.0.1:8080"
//!     [Kit.Applications.orders.Endpoints]
//!     api = "/api/v1"
//!     "#,
//!     "kit.toml",
//! ).unwrap();
//! config.apply_environment([("Kit__Applications__ORDERS__BaseUrl", "http://staging.example/")]);
//!
//! assert_eq!(config.get("kit:applications:orders:baseurl"), Some("http://staging.example/"));
//! assert_eq!(config.get("Kit:Applications:orders:Endpoints:api"), Some("/api/v1"));
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::file::ReadBoundedError;

/// A configuration file could not be read, or a value does not parse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read configuration file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The name is taken by something that is not a file: a folder, a named pipe (which would
    /// wait for a writer), a socket or a device.
    #[error("configuration file {path} is {kind}, not a file")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: crate::file::NotAFile,
    },
    /// The file is larger than a configuration file may be ([`MAX_CONFIG_FILE_BYTES`]).
    #[error("configuration file {path} is {size} bytes; configuration files over {limit} bytes are refused")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file is not valid TOML or JSON.
    #[error("configuration file {origin} is not valid {format}: {message}")]
    Parse {
        /// The file (or other origin) that failed.
        origin: String,
        /// `TOML` or `JSON`.
        format: &'static str,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A value is present but is not of the type its key needs.
    #[error("configuration key {key} (from {origin}) has value {value:?}, which is not {expected}")]
    Invalid {
        /// The key, as written at its source.
        key: String,
        /// The value.
        value: String,
        /// What was expected (`a boolean`, `an absolute URL`, …).
        expected: String,
        /// Where the value came from.
        origin: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// The key as its source spelt it, for messages and for listing children.
    key: String,
    value: String,
    origin: String,
}

/// A flat, case-insensitive map of `:`-separated keys to text values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Configuration {
    /// Keyed by the lower-cased key, so lookups are case-insensitive.
    entries: BTreeMap<String, Entry>,
}

/// The file names looked for beside the test crate's manifest, in load order.
pub const CONFIG_FILES: [&str; 2] = ["kit.toml", "kit.json"];

/// The folder archives go to when neither `KIT_RESULTS_DIR` nor `Kit:Trace:Directory` names
/// one, relative to the test crate's folder.
pub const DEFAULT_TRACE_DIRECTORY: &str = "TestResults";

/// The most a configuration file may hold: far past any real one, and a bound on what a
/// mistake (a generated file, a log written under the name) costs every test binary's start.
pub const MAX_CONFIG_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The longest line of a TOML error's quoted source kept in a message. The runner prints a
/// configuration error in every test's failure: a generated file's 20 000-character line
/// quoted whole would bury the rest.
const LONGEST_QUOTED_LINE: usize = 200;

/// The TOML parser's message: with the line it quotes and a caret under the place, or, when
/// that line is too long to show, the place and the reason alone.
fn toml_message(e: &toml::de::Error) -> String {
    let text = e.to_string();
    let text = text.trim();
    if text.lines().all(|line| line.len() <= LONGEST_QUOTED_LINE) {
        return text.to_owned();
    }
    // The first line names the place (`TOML parse error at line 1, column 85`).
    let place = text.lines().next().unwrap_or_default();
    format!("{place}: {}", e.message().trim())
}

/// The bytes of the configuration file at `path`, or `None` when there is none.
fn read_file(path: &Path) -> Result<Option<Vec<u8>>, ConfigError> {
    let read_error = |source| ConfigError::Read {
        path: path.to_owned(),
        source,
    };
    // Checked before opening: a named pipe of that name would wait for a writer, and every
    // test binary's start with it.
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(read_error(source)),
        Ok(metadata) => {
            if let Some(kind) = crate::file::not_a_file(&metadata.file_type()) {
                return Err(ConfigError::NotAFile {
                    path: path.to_owned(),
                    kind,
                });
            }
        }
    }
    match crate::file::read_bounded(path, MAX_CONFIG_FILE_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        // Removed since it was looked at: as if it had not been there.
        Err(ReadBoundedError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(ReadBoundedError::Io(source)) => Err(read_error(source)),
        Err(ReadBoundedError::TooLarge { size, limit }) => Err(ConfigError::TooLarge {
            path: path.to_owned(),
            // A file swapped for a stream since it was looked at: the bytes read.
            size: size.unwrap_or(limit + 1),
            limit,
        }),
    }
}

impl Configuration {
    /// An empty configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads `kit.toml` and `kit.json` from `dir` (each optional), then the process's
    /// environment variables.
    pub fn load(dir: &Path) -> Result<Self, ConfigError> {
        let mut config = Self::load_files(dir)?;
        config.apply_process_environment();
        Ok(config)
    }

    /// Loads `kit.toml` and `kit.json` from `dir` (each optional), without the environment.
    pub fn load_files(dir: &Path) -> Result<Self, ConfigError> {
        let mut config = Configuration::new();
        for name in CONFIG_FILES {
            let path = dir.join(name);
            if let Some(bytes) = read_file(&path)? {
                config.merge(Self::parse_file(&path, bytes)?);
            }
        }
        Ok(config)
    }

    /// Loads one configuration file, without the environment: JSON when its name ends in
    /// `.json`, TOML otherwise. Unlike [`load_files`](Self::load_files), a missing file is an
    /// error.
    ///
    /// ```
    /// use kit_core::Configuration;
    ///
    /// let path = std::env::temp_dir().join(format!("kit-load-file-{}.json", std::process::id()));
    /// std::fs::write(&path, r#"{"Kit": {"Rest": {"Timeout": "5"}}}"#).unwrap();
    /// let config = Configuration::load_file(&path).unwrap();
    /// assert_eq!(config.get("Kit:Rest:Timeout"), Some("5"));
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn load_file(path: &Path) -> Result<Self, ConfigError> {
        match read_file(path)? {
            Some(bytes) => Self::parse_file(path, bytes),
            None => Err(ConfigError::Read {
                path: path.to_owned(),
                source: std::io::ErrorKind::NotFound.into(),
            }),
        }
    }

    fn parse_file(path: &Path, bytes: Vec<u8>) -> Result<Self, ConfigError> {
        let json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let origin = path.display().to_string();
        let text = String::from_utf8(bytes).map_err(|e| ConfigError::Parse {
            origin: origin.clone(),
            format: if json { "JSON" } else { "TOML" },
            message: format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()),
        })?;
        if json {
            Self::from_json_str(&text, &origin)
        } else {
            Self::from_toml_str(&text, &origin)
        }
    }

    /// The folder a run's archive goes to: the `KIT_RESULTS_DIR` environment variable, else
    /// `Kit:Trace:Directory`, else [`DEFAULT_TRACE_DIRECTORY`]; a relative path is taken from
    /// `base`, the test crate's folder (where its configuration files are). The test runner
    /// writes there, and `kit-cli report` reads there when named no archive.
    ///
    /// ```
    /// use std::path::Path;
    /// use kit_core::Configuration;
    ///
    /// let config = Configuration::from_toml_str("[Kit.Trace]\nDirectory = \"out/traces\"", "kit.toml").unwrap();
    /// if std::env::var_os("KIT_RESULTS_DIR").is_none() {
    ///     assert_eq!(config.trace_directory(Path::new("/crate")), Path::new("/crate/out/traces"));
    ///     assert_eq!(Configuration::new().trace_directory(Path::new("/crate")), Path::new("/crate/TestResults"));
    /// }
    /// ```
    pub fn trace_directory(&self, base: &Path) -> PathBuf {
        let configured = std::env::var_os("KIT_RESULTS_DIR")
            .map(PathBuf::from)
            .or_else(|| self.get("Kit:Trace:Directory").map(PathBuf::from));
        // `join` keeps an absolute path as it is.
        base.join(
            configured
                .as_deref()
                .unwrap_or(Path::new(DEFAULT_TRACE_DIRECTORY)),
        )
    }

    /// Parses TOML text; `origin` names it in messages.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError::Parse {
            origin: origin.to_owned(),
            format: "TOML",
            message: toml_message(&e),
        })?;
        let mut config = Configuration::new();
        flatten_toml(&mut config, String::new(), &toml::Value::Table(table), origin);
        Ok(config)
    }

    /// Parses JSON text (an object at the top); `origin` names it in messages.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.to_owned(),
            format: "JSON",
            message: e.to_string(),
        })?;
        if !value.is_object() {
            return Err(ConfigError::Parse {
                origin: origin.to_owned(),
                format: "JSON",
                message: "the top level must be an object".to_owned(),
            });
        }
        let mut config = Configuration::new();
        flatten_json(&mut config, String::new(), &value, origin);
        Ok(config)
    }

    /// Applies environment variables over the configuration: each variable whose name's first
    /// `__`-separated segment is `Kit` (any case) sets the key with `__` read as `:`.
    pub fn apply_environment<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) {
        for (name, value) in vars {
            let name = name.as_ref();
            let Some(first) = name.split("__").next() else {
                continue;
            };
            if !first.eq_ignore_ascii_case("kit") || !name.contains("__") {
                continue;
            }
            let key = name.split("__").collect::<Vec<_>>().join(":");
            self.set_from(key, value.as_ref(), &format!("environment variable {name}"));
        }
    }

    /// [`apply_environment`](Self::apply_environment) with this process's environment. A
    /// variable whose name or value is not Unicode is passed over: it cannot be read as a key
    /// or a value, and `std::env::vars`, which would panic at it, is not used.
    ///
    /// ```
    /// use kit_core::Configuration;
    ///
    /// let mut config = Configuration::new();
    /// config.apply_process_environment();
    /// ```
    pub fn apply_process_environment(&mut self) {
        self.apply_environment(
            std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        );
    }

    /// Sets `key` to `value` (set by code).
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.set_from(key.into(), &value.into(), "code");
    }

    fn set_from(&mut self, key: String, value: &str, origin: &str) {
        self.entries.insert(
            key.to_ascii_lowercase(),
            Entry {
                key,
                value: value.to_owned(),
                origin: origin.to_owned(),
            },
        );
    }

    /// Layers `other` over this configuration: its keys win.
    pub fn merge(&mut self, other: Configuration) {
        self.entries.extend(other.entries);
    }

    /// The value of `key`, case-insensitively.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entry(key).map(|e| e.value.as_str())
    }

    fn entry(&self, key: &str) -> Option<&Entry> {
        if key.bytes().any(|b| b.is_ascii_uppercase()) {
            self.entries.get(&key.to_ascii_lowercase())
        } else {
            self.entries.get(key)
        }
    }

    /// Where the value of `key` came from (`kit.toml`, `environment variable …`, `code`).
    pub fn origin(&self, key: &str) -> Option<&str> {
        self.entry(key).map(|e| e.origin.as_str())
    }

    /// The value of `key` parsed as `T`; `Ok(None)` when absent, an error naming the key,
    /// the value and its origin when it does not parse.
    pub fn get_parsed<T: FromStr>(&self, key: &str, expected: &str) -> Result<Option<T>, ConfigError> {
        let Some(entry) = self.entry(key) else {
            return Ok(None);
        };
        entry
            .value
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| ConfigError::Invalid {
                key: entry.key.clone(),
                value: entry.value.clone(),
                expected: expected.to_owned(),
                origin: entry.origin.clone(),
            })
    }

    /// The value of `key` as a boolean (`true`/`false`, any case).
    pub fn get_bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        let Some(entry) = self.entry(key) else {
            return Ok(None);
        };
        match entry.value.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            _ => Err(ConfigError::Invalid {
                key: entry.key.clone(),
                value: entry.value.clone(),
                expected: "a boolean (true or false)".to_owned(),
                origin: entry.origin.clone(),
            }),
        }
    }

    /// The section under `prefix` (`Kit:Applications:orders`).
    pub fn section(&self, prefix: &str) -> Section<'_> {
        Section {
            config: self,
            prefix: prefix.trim_end_matches(':').to_owned(),
        }
    }

    /// The names of the immediate children of `prefix`, spelt as their first source spelt
    /// them, each once, in case-insensitive order: `children("Kit:Applications")` lists the
    /// applications.
    pub fn children(&self, prefix: &str) -> Vec<String> {
        let lower = format!("{}:", prefix.trim_end_matches(':').to_ascii_lowercase());
        let mut out: Vec<String> = Vec::new();
        for (k, e) in self.entries.range(lower.clone()..) {
            if !k.starts_with(&lower) {
                break;
            }
            let rest = &e.key[lower.len()..];
            let child = rest.split(':').next().unwrap_or(rest);
            if !out.last().is_some_and(|last| last.eq_ignore_ascii_case(child)) {
                out.push(child.to_owned());
            }
        }
        out
    }

    /// Every key and value, keys as their sources spelt them, in case-insensitive order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.values().map(|e| (e.key.as_str(), e.value.as_str()))
    }

    /// True when no key is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A view of the keys under a prefix.
#[derive(Clone)]
pub struct Section<'a> {
    config: &'a Configuration,
    prefix: String,
}

impl fmt::Debug for Section<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Section").field("prefix", &self.prefix).finish()
    }
}

impl<'a> Section<'a> {
    /// The section's path.
    pub fn path(&self) -> &str {
        &self.prefix
    }

    /// The full key of `name` in this section.
    pub fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.prefix)
    }

    /// The value of `name` in this section.
    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.config.get(&self.key(name))
    }

    /// `name` parsed as a boolean.
    pub fn get_bool(&self, name: &str) -> Result<Option<bool>, ConfigError> {
        self.config.get_bool(&self.key(name))
    }

    /// `name` parsed as `T`.
    pub fn get_parsed<T: FromStr>(&self, name: &str, expected: &str) -> Result<Option<T>, ConfigError> {
        self.config.get_parsed(&self.key(name), expected)
    }

    /// The list under `name`: items `name:0`, `name:1`, … in index order; `None` when there
    /// are none.
    pub fn get_list(&self, name: &str) -> Option<Vec<String>> {
        let base = self.key(name);
        let mut items: Vec<(usize, String)> = self
            .config
            .children(&base)
            .into_iter()
            .filter_map(|child| {
                let index = child.parse().ok()?;
                Some((index, self.config.get(&format!("{base}:{child}"))?.to_owned()))
            })
            .collect();
        if items.is_empty() {
            return None;
        }
        items.sort_by_key(|(i, _)| *i);
        Some(items.into_iter().map(|(_, v)| v).collect())
    }

    /// A section below this one.
    pub fn section(&self, name: &str) -> Section<'a> {
        self.config.section(&self.key(name))
    }

    /// The names of this section's immediate children.
    pub fn children(&self) -> Vec<String> {
        self.config.children(&self.prefix)
    }

    /// True when no key lies under this section.
    pub fn exists(&self) -> bool {
        let lower = format!("{}:", self.prefix.to_ascii_lowercase());
        self.config
            .entries
            .range(lower.clone()..)
            .next()
            .is_some_and(|(k, _)| k.starts_with(&lower))
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}:{key}")
    }
}

fn flatten_toml(config: &mut Configuration, prefix: String, value: &toml::Value, origin: &str) {
    match value {
        toml::Value::Table(table) => {
            for (k, v) in table {
                flatten_toml(config, join(&prefix, k), v, origin);
            }
        }
        toml::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten_toml(config, join(&prefix, &i.to_string()), v, origin);
            }
        }
        toml::Value::String(s) => config.set_from(prefix, s, origin),
        other => config.set_from(prefix, &other.to_string(), origin),
    }
}

fn flatten_json(config: &mut Configuration, prefix: String, value: &serde_json::Value, origin: &str) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                flatten_json(config, join(&prefix, k), v, origin);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten_json(config, join(&prefix, &i.to_string()), v, origin);
            }
        }
        serde_json::Value::String(s) => config.set_from(prefix, s, origin),
        serde_json::Value::Null => config.set_from(prefix, "", origin),
        other => config.set_from(prefix, &other.to_string(), origin),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_then_json_then_environment_each_win_over_the_last() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("kit.toml"),
            "[Kit.Applications.orders]\nBaseUrl = \"http://toml\"\nRetries = 3\n[Kit.Applications.orders.Endpoints]\napi = \"/v1\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("kit.json"),
            r#"{"Kit":{"Applications":{"Orders":{"BaseUrl":"http://json"}}}}"#,
        )
        .unwrap();
        let mut config = Configuration::load_files(dir.path()).unwrap();
        assert_eq!(config.get("Kit:Applications:orders:BaseUrl"), Some("http://json"));
        assert_eq!(config.get("Kit:Applications:orders:Retries"), Some("3"));
        config.apply_environment([
            ("KIT__APPLICATIONS__orders__BASEURL", "http://env"),
            ("PATH", "/bin"),
        ]);
        assert_eq!(config.get("kit:applications:ORDERS:baseurl"), Some("http://env"));
        assert_eq!(
            config.origin("Kit:Applications:orders:BaseUrl"),
            Some("environment variable KIT__APPLICATIONS__orders__BASEURL")
        );
        assert_eq!(config.get("Kit:Applications:orders:Endpoints:api"), Some("/v1"));
        assert_eq!(config.get("PATH"), None);
    }

    #[test]
    fn children_are_listed_once_with_their_first_spelling() {
        let config = Configuration::from_json_str(
            r#"{"Kit":{"Applications":{"orders":{"BaseUrl":"a","Endpoints":{"x":"1"}},"Payments":{"BaseUrl":"b"}}}}"#,
            "test",
        )
        .unwrap();
        assert_eq!(config.children("Kit:Applications"), vec!["orders", "Payments"]);
        assert_eq!(
            config.section("kit:applications:orders").children(),
            vec!["BaseUrl", "Endpoints"]
        );
        assert!(config.section("Kit:Applications:payments").exists());
        assert!(!config.section("Kit:Applications:pay").exists());
    }

    #[test]
    fn arrays_become_indexed_keys_and_read_back_as_lists() {
        let config = Configuration::from_toml_str(
            "[Kit.Rest.Attachments]\nSensitiveHeaders = [\"A\", \"B\", \"C\", \"D\", \"E\", \"F\", \"G\", \"H\", \"I\", \"J\", \"K\"]\n",
            "t",
        )
        .unwrap();
        let list = config
            .section("Kit:Rest:Attachments")
            .get_list("SensitiveHeaders")
            .unwrap();
        assert_eq!(list.len(), 11);
        assert_eq!(list[10], "K", "index 10 must sort after 9");
    }

    #[test]
    fn bad_files_and_values_are_named_in_the_error() {
        let err = Configuration::from_toml_str("[Kit\nBaseUrl = ", "tests/kit.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("tests/kit.toml") && err.contains("TOML"), "{err}");
        let err = Configuration::from_json_str("[1,2]", "kit.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("kit.json") && err.contains("object"), "{err}");
        let err = Configuration::from_json_str("{\"a\": ", "kit.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1"), "{err}");

        let config = Configuration::from_toml_str(
            "[Kit.Rest.Attachments]\nCaptureResponses = \"maybe\"\n",
            "kit.toml",
        )
        .unwrap();
        let err = config
            .section("Kit:Rest:Attachments")
            .get_bool("captureresponses")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "configuration key Kit:Rest:Attachments:CaptureResponses (from kit.toml) has value \"maybe\", which is not a boolean (true or false)"
        );
    }

    #[test]
    fn invalid_utf8_in_a_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("kit.toml"), b"a = \"\xff\"").unwrap();
        let err = Configuration::load_files(dir.path()).unwrap_err().to_string();
        assert!(err.contains("kit.toml") && err.contains("UTF-8"), "{err}");
    }

    #[test]
    fn load_reads_the_files_beside_the_manifest_and_missing_ones_are_no_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Configuration::load_files(dir.path()).unwrap().is_empty());
        std::fs::write(dir.path().join("kit.json"), r#"{"Kit":{"Rest":{"Timeout":"5"}}}"#).unwrap();
        let config = Configuration::load(dir.path()).unwrap();
        assert_eq!(config.get("Kit:Rest:Timeout"), Some("5"));
        assert!(config.origin("Kit:Rest:Timeout").unwrap().ends_with("kit.json"));
        // Only variables under `Kit__` are read from the process's environment.
        assert!(
            config
                .iter()
                .all(|(key, _)| key.to_ascii_lowercase().starts_with("kit:"))
        );
    }

    #[test]
    fn a_name_taken_by_no_file_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the file should be: it exists, and is no configuration.
        std::fs::create_dir(dir.path().join("kit.toml")).unwrap();
        let err = Configuration::load_files(dir.path()).unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::NotAFile {
                    kind: crate::file::NotAFile::Folder,
                    ..
                }
            ),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.starts_with("configuration file ") && text.ends_with("kit.toml is a folder, not a file"),
            "{text}"
        );
    }

    /// A named pipe with no writer: opened, it would wait for one, and hang every test
    /// binary's start. The load runs on a thread so that a regression fails instead of hanging.
    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_refused_at_once_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("kit.json"))
            .status()
            .unwrap();
        assert!(made.success());
        let path = dir.path().to_owned();
        let (sent, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || sent.send(Configuration::load_files(&path).map_err(|e| e.to_string())));
        let err = received
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("loading the configuration waited on the pipe")
            .unwrap_err();
        assert!(err.ends_with("kit.json is a named pipe, not a file"), "{err}");
    }

    /// Nesting 10 000 deep is refused by both parsers' depth limits with a parse error that
    /// names the file, not a stack overflow.
    #[test]
    fn ten_thousand_deep_nesting_is_a_parse_error() {
        let deep = 10_000;
        let toml_arrays = format!("a = {}{}\n", "[".repeat(deep), "]".repeat(deep));
        let toml_tables = format!("a = {}1{}\n", "{ b = ".repeat(deep), "}".repeat(deep));
        for text in [toml_arrays, toml_tables] {
            let err = Configuration::from_toml_str(&text, "deep/kit.toml").unwrap_err();
            assert!(
                matches!(err, ConfigError::Parse { format: "TOML", .. }),
                "{err:?}"
            );
            // The 20 000-character line is not quoted: the place and the reason are.
            let said = err.to_string();
            assert!(said.len() < 300, "{said}");
            assert!(
                said.starts_with(
                    "configuration file deep/kit.toml is not valid TOML: TOML parse error at line 1, column "
                ),
                "{said}"
            );
        }
        // A short line is quoted with its caret, as the parser writes it.
        let said = Configuration::from_toml_str("a = [1,\n", "kit.toml")
            .unwrap_err()
            .to_string();
        assert!(said.contains("|\n") && said.contains('^'), "{said}");
        let json = format!("{{\"a\": {}{}}}", "[".repeat(deep), "]".repeat(deep));
        let err = Configuration::from_json_str(&json, "deep/kit.json").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("configuration file deep/kit.json is not valid JSON: recursion limit"),
            "{err}"
        );
    }

    #[test]
    fn a_file_over_the_limit_is_refused_by_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("kit.toml")).unwrap();
        // Sparse: its size is all that is looked at.
        file.set_len(MAX_CONFIG_FILE_BYTES + 1).unwrap();
        let err = Configuration::load_files(dir.path()).unwrap_err();
        assert!(
            matches!(err, ConfigError::TooLarge { size, limit: MAX_CONFIG_FILE_BYTES, .. } if size == MAX_CONFIG_FILE_BYTES + 1),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains("kit.toml is 16777217 bytes; configuration files over 16777216 bytes are refused"),
            "{err}"
        );
    }

    #[test]
    fn only_variables_whose_first_segment_is_kit_are_applied() {
        let mut config = Configuration::new();
        config.apply_environment([
            ("Kit", "no segment after it"),
            ("KITTY__A", "another prefix"),
            ("OTHER__Kit__A", "kit further in"),
            ("Kit_A", "one underscore"),
            ("kit__Rest__Timeout", "7"),
        ]);
        assert_eq!(config.iter().collect::<Vec<_>>(), [("kit:Rest:Timeout", "7")]);
    }

    #[test]
    fn every_entry_is_listed_in_case_insensitive_order_with_its_spelling() {
        let mut config = Configuration::new();
        assert!(config.is_empty());
        config.set("Kit:b", "2");
        config.set("kit:A", "1");
        config.set("KIT:B", "3");
        assert!(!config.is_empty());
        assert_eq!(
            config.iter().collect::<Vec<_>>(),
            [("kit:A", "1"), ("KIT:B", "3")]
        );
        assert_eq!(config.origin("kit:a"), Some("code"));
    }

    #[test]
    fn a_section_reads_its_own_keys() {
        let config = Configuration::from_toml_str(
            "[Kit.Rest]\nTimeout = \" 30 \"\nName = \"orders\"\nBad = \"x\"\n[Kit.Rest.Inner]\nLeaf = true\n[Kit.Rest.Weird]\nitem = \"not a list\"\n",
            "kit.toml",
        )
        .unwrap();
        let rest = config.section("kit:rest:");
        assert_eq!(rest.path(), "kit:rest");
        assert_eq!(format!("{rest:?}"), r#"Section { prefix: "kit:rest" }"#);
        assert_eq!(rest.key("Timeout"), "kit:rest:Timeout");
        assert_eq!(rest.get("NAME"), Some("orders"));
        assert_eq!(rest.get("Missing"), None);
        assert_eq!(rest.get_parsed::<u32>("timeout", "a number").unwrap(), Some(30));
        assert_eq!(rest.get_parsed::<u32>("missing", "a number").unwrap(), None);
        let err = rest
            .get_parsed::<u32>("bad", "a whole number")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "configuration key Kit:Rest:Bad (from kit.toml) has value \"x\", which is not a whole number"
        );
        let inner = rest.section("Inner");
        assert_eq!(inner.path(), "kit:rest:Inner");
        assert_eq!(inner.get_bool("leaf").unwrap(), Some(true));
        assert_eq!(inner.get_bool("missing").unwrap(), None);
        // Children that are not indexes are not items of a list.
        assert_eq!(rest.get_list("Weird"), None);
        assert_eq!(rest.get_list("Missing"), None);
    }
}
