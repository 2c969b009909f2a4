//! Files a task reads and writes. An application declares them (`inputs`, `outputs`) as
//! names or URIs templated like its command (placeholders are substituted inside the one
//! word, never through a shell), optionally with a size and a SHA-256. Rendered for one
//! task, each becomes a [`TaskFile`]: where it lives ([`Source`]) and the name the task
//! sees in its working directory.
//!
//! Where a file lives:
//! - `db/nr.fa` (a relative name): the manager's file service, under the application
//!   owner's files;
//! - `/shared/db/nr` (an absolute path): a shared filesystem, read in place (no copy);
//! - `http://host/path` or `https://...`: fetched over HTTP;
//! - `sftp://user@host:port/path`: fetched over SFTP with the agent's key;
//! - `store://NAME/path`: on the file store `NAME` of the manager's `[[storage]]`
//!   (`hetpilot-agent serve-files`), relative to the owner's directory there. The store's
//!   name must be literal (no placeholders), so the manager knows which stores an
//!   application needs grants for.
//!
//! Outputs are relative names (written in the task's directory, then stored in the file
//! service under that name), `store://` or `sftp://` URIs. Names with a `..` component, a NUL byte,
//! or an absolute escape from their root are refused when the application is submitted.

use crate::template::{Inputs, TaskInput, Template, TemplateError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use thiserror::Error;

/// One declared file: a name or URI template, and what is known of its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(from = "DeclRepr")]
pub struct FileDecl {
    /// A name or URI (see the module's list), possibly with placeholders like the command.
    pub uri: String,
    /// The content's size in bytes, when declared (staging plans with it; otherwise the
    /// manager looks the size up or counts 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Lowercase hex SHA-256 of the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The file's name in the task's directory, one path component taken literally, when
    /// it is not the one the URI gives (an input's last component, an output's path): a
    /// workflow's program reads `in.txt` and writes `out.txt` while the files are stored
    /// under the workflow's own names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A declaration is either a bare string or a table with `uri`, `size`, `sha256` and
/// `name`.
#[derive(Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
enum DeclRepr {
    Uri(String),
    Full {
        uri: String,
        #[serde(default)]
        size: Option<u64>,
        #[serde(default)]
        sha256: Option<String>,
        #[serde(default)]
        name: Option<String>,
    },
}

impl From<DeclRepr> for FileDecl {
    fn from(r: DeclRepr) -> Self {
        match r {
            DeclRepr::Uri(uri) => FileDecl {
                uri,
                size: None,
                sha256: None,
                name: None,
            },
            DeclRepr::Full {
                uri,
                size,
                sha256,
                name,
            } => FileDecl {
                uri,
                size,
                sha256,
                name,
            },
        }
    }
}

impl From<&str> for FileDecl {
    fn from(uri: &str) -> Self {
        DeclRepr::Uri(uri.to_string()).into()
    }
}

/// An SFTP location.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SftpUrl {
    /// The login user (`sftp://USER@...`).
    pub user: String,
    /// Host name or address.
    pub host: String,
    /// TCP port, 22 unless the URI gives one.
    pub port: u16,
    /// Absolute path on the host, starting with `/`.
    pub path: String,
}

/// Where a rendered file lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// A name in the manager's file service, relative to the application owner's files.
    Service(String),
    /// An `http://` or `https://` URL, fetched as is.
    Http(String),
    /// An `sftp://` location, fetched with the agent's key.
    Sftp(SftpUrl),
    /// A path on a filesystem the node shares: the task reads it in place.
    Shared(String),
    /// A file on a configured store, relative to the application owner's directory there.
    Store {
        /// The store's name, one of the manager's `[[storage]]` entries.
        store: String,
        /// Path under the owner's directory on the store (relative, no `..`).
        path: String,
    },
}

impl Source {
    /// The endpoint transfers of this source are measured against, and the staging model's
    /// storage node: `manager` (the file service), `scheme://host[:port]`,
    /// `sftp://host:port`, `store:NAME`, or `shared` (read in place, never transferred).
    pub fn endpoint(&self) -> String {
        match self {
            Source::Service(_) => "manager".into(),
            Source::Http(url) => {
                let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
                format!("{scheme}://{}", rest.split('/').next().unwrap_or(""))
            }
            Source::Sftp(u) => format!("sftp://{}:{}", u.host, u.port),
            Source::Store { store, .. } => format!("store:{store}"),
            Source::Shared(_) => "shared".into(),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Service(name) => write!(f, "{name}"),
            Source::Http(url) => write!(f, "{url}"),
            Source::Sftp(u) => write!(f, "sftp://{}@{}:{}{}", u.user, u.host, u.port, u.path),
            Source::Shared(path) => write!(f, "{path}"),
            Source::Store { store, path } => write!(f, "store://{store}/{path}"),
        }
    }
}

/// One file of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFile {
    /// Where the content comes from (input) or goes (output).
    pub source: Source,
    /// The file's name in the task's working directory (relative, no `..`).
    pub name: String,
    /// Size in bytes, as declared.
    pub size: Option<u64>,
    /// Lowercase hex SHA-256 of the content, as declared; inputs are checked against it.
    pub sha256: Option<String>,
}

/// The files of one task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFiles {
    /// Files fetched (or read in place) before the task starts.
    pub inputs: Vec<TaskFile>,
    /// Files stored after the task succeeds.
    pub outputs: Vec<TaskFile>,
}

/// A file declaration, or a task's rendering of it, that cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FileError {
    /// The name or URI is malformed, unsupported or could escape its root.
    #[error("`{uri}`: {problem}")]
    Invalid {
        /// The name or URI, as declared or rendered.
        uri: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Its template does not parse against the application's placeholders.
    #[error("{0}")]
    Template(#[from] TemplateError),
}

fn invalid(uri: &str, problem: impl Into<String>) -> FileError {
    FileError::Invalid {
        uri: uri.to_string(),
        problem: problem.into(),
    }
}

/// The longest name of one path component a filesystem takes (Linux `NAME_MAX`), bytes.
pub(crate) const MAX_COMPONENT_BYTES: usize = 255;
/// The longest relative name, bytes (Linux `PATH_MAX` less room for the root it is under).
pub const MAX_NAME_BYTES: usize = 1024;

/// Checks a relative name: not empty, not absolute, no `..` component, no NUL, and short
/// enough to be stored (components of at most 255 bytes, 1024 bytes in all).
fn check_relative(uri: &str, name: &str) -> Result<(), FileError> {
    if name.is_empty() {
        return Err(invalid(uri, "the name is empty"));
    }
    if name.starts_with('/') {
        return Err(invalid(uri, "an absolute path escapes the file root"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(invalid(
            uri,
            format!("the name is longer than {MAX_NAME_BYTES} bytes"),
        ));
    }
    if name.split('/').any(|c| c.len() > MAX_COMPONENT_BYTES) {
        return Err(invalid(
            uri,
            format!("a component of the name is longer than {MAX_COMPONENT_BYTES} bytes"),
        ));
    }
    check_components(uri, name)
}

fn check_components(uri: &str, path: &str) -> Result<(), FileError> {
    if path.contains('\0') {
        return Err(invalid(uri, "contains a NUL byte"));
    }
    if path.split('/').any(|c| c == "..") {
        return Err(invalid(
            uri,
            "contains a `..` component, which could escape its root",
        ));
    }
    Ok(())
}

/// Checks a declared name in the task's directory: one real path component.
fn check_declared_name(uri: &str, name: &str) -> Result<(), FileError> {
    check_relative(uri, name)?;
    if name.contains('/') || name == "." {
        return Err(invalid(
            uri,
            format!("its name `{name}` in the task's directory must be one path component"),
        ));
    }
    Ok(())
}

/// The last path component, which must be a real name.
fn base_name(uri: &str, path: &str) -> Result<String, FileError> {
    match path.rsplit('/').next() {
        Some(b) if !b.is_empty() && b != "." => Ok(b.to_string()),
        _ => Err(invalid(uri, "names no file (it ends with `/`)")),
    }
}

fn parse_sftp(uri: &str, rest: &str) -> Result<SftpUrl, FileError> {
    let (authority, path) = rest
        .split_once('/')
        .ok_or_else(|| invalid(uri, "an sftp URI needs a path: sftp://user@host:port/path"))?;
    let path = format!("/{path}");
    let (user, hostport) = authority
        .split_once('@')
        .ok_or_else(|| invalid(uri, "an sftp URI needs a user: sftp://user@host:port/path"))?;
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse()
                .map_err(|_| invalid(uri, format!("`{p}` is not a port number")))?,
        ),
        None => (hostport, 22),
    };
    if user.is_empty() || host.is_empty() {
        return Err(invalid(uri, "an sftp URI needs a user and a host"));
    }
    check_components(uri, &path)?;
    Ok(SftpUrl {
        user: user.into(),
        host: host.into(),
        port,
        path,
    })
}

/// Checks a store's name: letters, digits, `-`, `_` and `.`, not empty.
pub fn check_store_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.starts_with('.') {
        return Err(format!("`{name}` is not a store name"));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.".contains(*c)))
    {
        Some(c) => Err(format!(
            "a store name has letters, digits, `-`, `_` and `.` only, not `{c}`"
        )),
        None => Ok(()),
    }
}

/// The store a `store://NAME/...` URI (or template) names, if it is one.
pub(crate) fn store_of(uri: &str) -> Option<&str> {
    let rest = uri.strip_prefix("store://")?;
    Some(rest.split_once('/').map_or(rest, |(name, _)| name))
}

/// `store://NAME/path` (`rest` is what follows `store://`): the source and the path's
/// last component.
fn parse_store(uri: &str, rest: &str) -> Result<(Source, String), FileError> {
    let (store, path) = rest
        .split_once('/')
        .ok_or_else(|| invalid(uri, "a store URI needs a path: store://NAME/path"))?;
    check_store_name(store).map_err(|p| invalid(uri, p))?;
    check_relative(uri, path)?;
    let name = base_name(uri, path)?;
    let source = Source::Store {
        store: store.into(),
        path: path.into(),
    };
    Ok((source, name))
}

/// Where an input lives, and the name the task sees.
pub(crate) fn parse_input(uri: &str) -> Result<(Source, String), FileError> {
    if uri.contains('\0') {
        return Err(invalid(uri, "contains a NUL byte"));
    }
    if let Some(rest) = uri.strip_prefix("sftp://") {
        let url = parse_sftp(uri, rest)?;
        let name = base_name(uri, &url.path)?;
        return Ok((Source::Sftp(url), name));
    }
    if let Some(rest) = uri.strip_prefix("store://") {
        return parse_store(uri, rest);
    }
    if uri.starts_with("http://") || uri.starts_with("https://") {
        let rest = uri.split_once("://").map_or("", |(_, r)| r);
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        if host.is_empty() {
            return Err(invalid(uri, "the URL has no host"));
        }
        let path = path.split(['?', '#']).next().unwrap_or("");
        check_components(uri, path)?;
        let name = base_name(uri, path)?;
        return Ok((Source::Http(uri.to_string()), name));
    }
    if uri.contains("://") {
        return Err(invalid(
            uri,
            "unsupported scheme (use a name, an absolute path, http://, https://, store:// or sftp://)",
        ));
    }
    if uri.starts_with('/') {
        check_components(uri, uri)?;
        let name = base_name(uri, uri)?;
        return Ok((Source::Shared(uri.to_string()), name));
    }
    check_relative(uri, uri)?;
    let name = base_name(uri, uri)?;
    Ok((Source::Service(uri.to_string()), name))
}

/// Where an output goes, and the name the task writes it under.
pub fn parse_output(uri: &str) -> Result<(Source, String), FileError> {
    if let Some(rest) = uri.strip_prefix("sftp://") {
        let url = parse_sftp(uri, rest)?;
        let name = base_name(uri, &url.path)?;
        return Ok((Source::Sftp(url), name));
    }
    if let Some(rest) = uri.strip_prefix("store://") {
        // An output keeps its path as its name in the task's directory.
        let (source, _) = parse_store(uri, rest)?;
        let path = rest.split_once('/').map_or("", |(_, p)| p).to_string();
        return Ok((source, path));
    }
    if uri.contains("://") {
        return Err(invalid(
            uri,
            "outputs go to the file service (a relative name), a store:// or an sftp:// URI",
        ));
    }
    check_relative(uri, uri)?;
    base_name(uri, uri)?;
    Ok((Source::Service(uri.to_string()), uri.to_string()))
}

fn check_sha256(uri: &str, sha: &Option<String>) -> Result<(), FileError> {
    match sha {
        Some(s) if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) => Err(invalid(
            uri,
            format!("sha256 `{s}` is not 64 hexadecimal digits"),
        )),
        _ => Ok(()),
    }
}

/// A store URI template must name its store literally: grants are issued per store.
fn check_literal_store(uri: &str) -> Result<(), FileError> {
    match store_of(uri) {
        Some(name) if name.contains(['{', '}']) => Err(invalid(
            uri,
            "the store's name cannot contain placeholders (only its path can)",
        )),
        Some(name) => check_store_name(name).map_err(|p| invalid(uri, p)),
        None => Ok(()),
    }
}

/// How a task's input string is read back into placeholders values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub(crate) enum InputKind {
    Lines,
    Array,
    /// The input string is the JSON object of the task's parameters.
    Params,
}

/// An application's file declarations, as sent to agents (who render them per task).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FileTemplates {
    pub(crate) kind: InputKind,
    /// The application's owner, whose files in the manager's file service relative names
    /// refer to (set by the manager).
    #[serde(default)]
    pub owner: String,
    /// What each task reads, in declaration order.
    #[serde(default)]
    pub inputs: Vec<FileDecl>,
    /// What each task writes, in declaration order.
    #[serde(default)]
    pub outputs: Vec<FileDecl>,
}

/// Which declaration list a problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The application's `inputs`.
    Inputs,
    /// The application's `outputs`.
    Outputs,
}

impl Field {
    /// The list's name in application files: `inputs` or `outputs`.
    pub fn name(self) -> &'static str {
        match self {
            Field::Inputs => "inputs",
            Field::Outputs => "outputs",
        }
    }
}

/// Declarations with their templates parsed, ready to render task after task.
pub(crate) struct Compiled {
    inputs: Vec<(Template, FileDecl)>,
    outputs: Vec<(Template, FileDecl)>,
}

impl FileTemplates {
    /// One task's own files, taken literally (braces in names are not placeholders),
    /// owned by `owner`.
    pub fn literal(owner: &str, inputs: &[FileDecl], outputs: &[FileDecl]) -> FileTemplates {
        let escape = |d: &FileDecl| FileDecl {
            uri: d.uri.replace('{', "{{").replace('}', "}}"),
            ..d.clone()
        };
        FileTemplates {
            kind: InputKind::Lines,
            owner: owner.to_string(),
            inputs: inputs.iter().map(escape).collect(),
            outputs: outputs.iter().map(escape).collect(),
        }
    }

    /// True when the application declares no file at all.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty() && self.outputs.is_empty()
    }

    /// The stores the declarations name (their names are literal).
    pub fn stores(&self) -> BTreeSet<String> {
        self.inputs
            .iter()
            .chain(&self.outputs)
            .filter_map(|d| store_of(&d.uri))
            .map(str::to_string)
            .collect()
    }

    /// The same declarations, with the owner whose files relative names refer to.
    pub fn owned_by(self, owner: &str) -> FileTemplates {
        FileTemplates {
            owner: owner.to_string(),
            ..self
        }
    }

    /// Parses every template against what the tasks provide.
    pub(crate) fn compile(&self, inputs: &Inputs) -> Result<Compiled, (Field, FileError)> {
        let parse = |decls: &[FileDecl], field: Field| {
            decls
                .iter()
                .map(|d| {
                    check_sha256(&d.uri, &d.sha256).map_err(|e| (field, e))?;
                    check_literal_store(&d.uri).map_err(|e| (field, e))?;
                    Template::parse_word(&d.uri, inputs)
                        .map(|t| (t, d.clone()))
                        .map_err(|e| (field, e.into()))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Compiled {
            inputs: parse(&self.inputs, Field::Inputs)?,
            outputs: parse(&self.outputs, Field::Outputs)?,
        })
    }

    /// The files of one task, from its index and its input string (as in `Assignment`).
    pub fn for_task(&self, index: u64, input: &str) -> Result<TaskFiles, (Field, FileError)> {
        let bad_input = |problem: String| {
            (
                Field::Inputs,
                FileError::Invalid {
                    uri: input.to_string(),
                    problem,
                },
            )
        };
        match self.kind {
            InputKind::Lines => self
                .compile(&Inputs::Lines)?
                .render(index, TaskInput::Line(input)),
            InputKind::Array => {
                let v = input
                    .parse()
                    .map_err(|_| bad_input("an array task's input is not an integer".into()))?;
                self.compile(&Inputs::Array)?
                    .render(index, TaskInput::Array(v))
            }
            InputKind::Params => {
                let params: BTreeMap<String, String> = serde_json::from_str(input)
                    .map_err(|e| bad_input(format!("task parameters unreadable: {e}")))?;
                let names: BTreeSet<String> = params.keys().cloned().collect();
                self.compile(&Inputs::Params(names))?
                    .render(index, TaskInput::Params(&params))
            }
        }
    }
}

impl Compiled {
    /// Renders and checks the files of one task; local names must be distinct.
    pub(crate) fn render(
        &self,
        index: u64,
        input: TaskInput<'_>,
    ) -> Result<TaskFiles, (Field, FileError)> {
        let mut files = TaskFiles::default();
        let mut seen = BTreeSet::new();
        for (field, decls, parse) in [
            (
                Field::Inputs,
                &self.inputs,
                parse_input as fn(&str) -> Result<(Source, String), FileError>,
            ),
            (Field::Outputs, &self.outputs, parse_output),
        ] {
            for (template, decl) in decls {
                let uri = template.render(index, input).concat();
                let (source, name) = parse(&uri).map_err(|e| (field, e))?;
                let name = match &decl.name {
                    Some(declared) => {
                        check_declared_name(&uri, declared).map_err(|e| (field, e))?;
                        declared.clone()
                    }
                    None => name,
                };
                if !seen.insert(name.clone()) {
                    return Err((
                        field,
                        invalid(
                            &uri,
                            format!("another file of the task is also named `{name}`"),
                        ),
                    ));
                }
                let file = TaskFile {
                    source,
                    name,
                    size: decl.size,
                    sha256: decl.sha256.as_ref().map(|s| s.to_ascii_lowercase()),
                };
                match field {
                    Field::Inputs => files.inputs.push(file),
                    Field::Outputs => files.outputs.push(file),
                }
            }
        }
        Ok(files)
    }
}

/// What staging cost one run: reported by the agent with the task's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StagingStats {
    /// Bytes transferred from sources for this run (cache misses).
    pub bytes_fetched: u64,
    /// Bytes of inputs found in the node's cache (fetched earlier, by any task).
    pub bytes_cached: u64,
    /// Bytes of outputs stored back.
    pub bytes_uploaded: u64,
    /// Measured transfers, one entry per source endpoint.
    #[serde(default)]
    pub transfers: Vec<Transfer>,
}

/// Transfers between the node and one endpoint (`manager`, `http://host:port`,
/// `sftp://host:port`) during one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Transfer {
    /// The other end, as [`Source::endpoint`] names it.
    pub endpoint: String,
    /// Bytes moved.
    pub bytes: u64,
    /// Time spent moving them, milliseconds.
    pub ms: f64,
    /// Measured bandwidth, MiB/s (0 when too fast to measure).
    pub mib_per_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn templates(inputs: &[&str], outputs: &[&str], kind: InputKind) -> FileTemplates {
        FileTemplates {
            kind,
            owner: "alice".into(),
            inputs: inputs.iter().map(|s| FileDecl::from(*s)).collect(),
            outputs: outputs.iter().map(|s| FileDecl::from(*s)).collect(),
        }
    }

    #[test]
    fn names_too_long_to_store_are_refused() {
        // A 256-byte component was a 500 from the file service (ENAMETOOLONG).
        let long = "a".repeat(256);
        for uri in [
            long.clone(),
            format!("d/{long}"),
            format!("store://s/{long}"),
        ] {
            let e = parse_output(&uri).unwrap_err().to_string();
            assert!(e.contains("longer than 255 bytes"), "{e}");
        }
        assert!(parse_output(&"a".repeat(255)).is_ok());
        let deep = vec!["abcdefgh"; 120].join("/");
        let e = parse_input(&deep).unwrap_err().to_string();
        assert!(e.contains("longer than 1024 bytes"), "{e}");
        // 2-byte characters count as 2.
        assert!(parse_output(&"é".repeat(128)).is_err());
    }

    #[test]
    fn sources_are_told_apart() {
        assert_eq!(
            parse_input("db/nr.fa").unwrap(),
            (Source::Service("db/nr.fa".into()), "nr.fa".into())
        );
        assert_eq!(
            parse_input("/shared/db/nr").unwrap(),
            (Source::Shared("/shared/db/nr".into()), "nr".into())
        );
        assert_eq!(
            parse_input("http://h:8/a/q1.fa?x=1").unwrap().1,
            "q1.fa".to_string()
        );
        let (s, name) = parse_input("sftp://root@127.0.0.1:2222/data/x.bin").unwrap();
        assert_eq!(name, "x.bin");
        assert_eq!(
            s,
            Source::Sftp(SftpUrl {
                user: "root".into(),
                host: "127.0.0.1".into(),
                port: 2222,
                path: "/data/x.bin".into()
            })
        );
    }

    #[test]
    fn escapes_and_nuls_are_refused() {
        for bad in [
            "../etc/passwd",
            "a/../../b",
            "/shared/../etc/passwd",
            "a\0b",
            "http://h/a/../b",
            "sftp://u@h/x/../y",
            "ftp://h/x",
            "dir/",
        ] {
            assert!(parse_input(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_output("/abs/out").is_err());
        assert!(parse_output("../out").is_err());
        assert!(parse_output("http://h/out").is_err());
        assert_eq!(parse_output("out/r.txt").unwrap().1, "out/r.txt");
    }

    #[test]
    fn templates_render_per_task_inside_one_word() {
        let t = templates(
            &["in/{} x.fa", "/db/nr"],
            &["{index}.out"],
            InputKind::Lines,
        );
        let f = t.for_task(3, "q; rm").unwrap();
        assert_eq!(f.inputs[0].source, Source::Service("in/q; rm x.fa".into()));
        assert_eq!(f.inputs[0].name, "q; rm x.fa");
        assert_eq!(f.outputs[0].name, "3.out");
        let p = templates(&["{query}.fa"], &[], InputKind::Params);
        let f = p.for_task(0, r#"{"query":"q1"}"#).unwrap();
        assert_eq!(f.inputs[0].name, "q1.fa");
        let a = templates(&["part-{}.bin"], &[], InputKind::Array);
        assert_eq!(a.for_task(0, "17").unwrap().inputs[0].name, "part-17.bin");
    }

    #[test]
    fn a_rendered_escape_names_its_field() {
        let t = templates(&["ok.fa"], &["{}"], InputKind::Lines);
        let (field, err) = t.for_task(0, "../x").unwrap_err();
        assert_eq!(field, Field::Outputs);
        assert!(err.to_string().contains("`..`"), "{err}");
        let dup = templates(&["a/x", "b/x"], &[], InputKind::Lines);
        assert!(dup
            .for_task(0, "l")
            .unwrap_err()
            .1
            .to_string()
            .contains("also named"));
    }

    #[test]
    fn store_uris_name_a_store_and_a_path_under_the_owner() {
        let store = |store: &str, path: &str| Source::Store {
            store: store.into(),
            path: path.into(),
        };
        assert_eq!(
            parse_input("store://lustre/db/nr.fa").unwrap(),
            (store("lustre", "db/nr.fa"), "nr.fa".into())
        );
        assert_eq!(
            parse_output("store://lustre/out/r.txt").unwrap(),
            (store("lustre", "out/r.txt"), "out/r.txt".into())
        );
        assert_eq!(
            store("s", "a/b").to_string(),
            "store://s/a/b",
            "shown as declared"
        );
        for (bad, why) in [
            ("store://lustre/../bob/x", "`..`"),
            ("store://lustre/a/../../x", "`..`"),
            ("store://lustre//etc/passwd", "absolute"),
            ("store://lustre/a\0b", "NUL"),
            ("store://lustre/", "empty"),
            ("store://lustre/dir/", "ends with `/`"),
            ("store://lustre", "needs a path"),
            ("store:///x", "not a store name"),
            ("store://a b/x", "not ` `"),
        ] {
            let e = parse_input(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
            assert!(parse_output(bad).is_err(), "output {bad:?} accepted");
        }
    }

    #[test]
    fn store_names_are_literal_and_listed() {
        let t = templates(
            &["store://lustre/q/{}.fa", "store://gpfs/db"],
            &["store://lustre/out/{}.out", "plain.out"],
            InputKind::Lines,
        );
        assert_eq!(
            t.stores().into_iter().collect::<Vec<_>>(),
            ["gpfs", "lustre"]
        );
        let f = t.for_task(0, "q1").unwrap();
        assert_eq!(f.outputs[0].name, "out/q1.out");
        let templated = templates(&["store://{}/x"], &[], InputKind::Lines);
        let (field, e) = templated.compile(&Inputs::Lines).err().unwrap();
        assert_eq!(field, Field::Inputs);
        assert!(e.to_string().contains("placeholders"), "{e}");
    }

    #[test]
    fn declarations_are_strings_or_tables() {
        let d: Vec<FileDecl> =
            serde_json::from_str(r#"["a.fa", {"uri": "b.fa", "size": 3, "sha256": "00"}]"#)
                .unwrap();
        assert_eq!(d[0].uri, "a.fa");
        assert_eq!(d[1].size, Some(3));
        let t = FileTemplates {
            kind: InputKind::Lines,
            owner: String::new(),
            inputs: d,
            outputs: vec![],
        };
        let (_, err) = t.compile(&Inputs::Lines).err().unwrap();
        assert!(err.to_string().contains("64 hexadecimal"), "{err}");
    }

    #[test]
    fn a_declared_name_places_the_file_in_the_task_directory_under_it() {
        let decl = |uri: &str, name: &str| FileDecl {
            name: Some(name.into()),
            ..FileDecl::from(uri)
        };
        let t = FileTemplates::literal(
            "alice",
            &[decl("wf-1/J1__in.txt", "in.txt")],
            &[decl("wf-1/J2__out.txt", "out.txt")],
        );
        let files = t.for_task(0, "").unwrap();
        assert_eq!(files.inputs[0].name, "in.txt");
        assert_eq!(
            files.inputs[0].source,
            Source::Service("wf-1/J1__in.txt".into())
        );
        assert_eq!(files.outputs[0].name, "out.txt");
        assert_eq!(
            files.outputs[0].source,
            Source::Service("wf-1/J2__out.txt".into())
        );
        for bad in ["a/b", "..", ".", "", "/etc"] {
            let t = FileTemplates::literal("alice", &[decl("wf-1/x", bad)], &[]);
            assert!(t.for_task(0, "").is_err(), "`{bad}` is refused");
        }
        let same = FileTemplates::literal("alice", &[decl("wf-1/a", "f")], &[decl("wf-1/b", "f")]);
        let (_, err) = same.for_task(0, "").unwrap_err();
        assert!(err.to_string().contains("also named `f`"), "{err}");
    }
}
