//! Command templates: a command line split into words like a POSIX shell would (but never
//! run through one), with placeholders substituted inside each word, so a task's input can
//! never inject shell syntax. Placeholders: `{}` and `{line}` (the task's input line, or its
//! index for arrays), `{index}` (the task's index), `{NAME}` (a named parameter); `{{` and
//! `}}` are literal braces.

use std::collections::{BTreeMap, BTreeSet};
use thiserror::Error;

/// What a template may refer to, decided by the application's task source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inputs {
    /// One input line per task (`--each-line`, `lines = [...]`).
    Lines,
    /// A range of integers (`--array 1-N`): `{}` is the integer.
    Array,
    /// Named parameters per task: the set of names every task defines.
    Params(BTreeSet<String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Input,
    Index,
    Param(String),
}

/// A parsed command template; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    words: Vec<Vec<Piece>>,
}

/// Why a command (or file name) template does not parse.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum TemplateError {
    /// The command has no word at all.
    #[error("the command is empty")]
    Empty,
    /// The command's quoting is broken; the splitter's message.
    #[error("the command cannot be split into words: {0} (check the quotes)")]
    Quoting(String),
    /// A `{` without its `}`, in the word given.
    #[error("unclosed `{{` in `{0}` (write `{{{{` for a literal brace)")]
    Unclosed(String),
    /// A `}` without its `{`, in the word given.
    #[error("unmatched `}}` in `{0}` (write `}}}}` for a literal brace)")]
    Unmatched(String),
    /// A placeholder the application's tasks do not provide.
    #[error("unknown placeholder `{{{name}}}`; this application's tasks provide {known}")]
    UnknownPlaceholder {
        /// The placeholder's name, without braces.
        name: String,
        /// The placeholders that are available, as a sentence fragment.
        known: String,
    },
}

/// The input of one task, used to render its command.
#[derive(Debug, Clone, Copy)]
pub enum TaskInput<'a> {
    /// The task's input line.
    Line(&'a str),
    /// The task's integer of an array application.
    Array(u64),
    /// The task's named parameters.
    Params(&'a BTreeMap<String, String>),
}

impl Template {
    /// Parses `command` and checks every placeholder against what `inputs` provides.
    pub fn parse(command: &str, inputs: &Inputs) -> Result<Template, TemplateError> {
        let words =
            shell_words::split(command).map_err(|e| TemplateError::Quoting(e.to_string()))?;
        if words.is_empty() {
            return Err(TemplateError::Empty);
        }
        let words = words
            .iter()
            .map(|w| parse_word(w, inputs))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Template { words })
    }

    /// Parses `text` as one word (a file name or URI: never split at spaces) and checks
    /// its placeholders against what `inputs` provides.
    pub(crate) fn parse_word(text: &str, inputs: &Inputs) -> Result<Template, TemplateError> {
        Ok(Template {
            words: vec![parse_word(text, inputs)?],
        })
    }

    /// The argument vector of one task.
    pub fn render(&self, index: u64, input: TaskInput<'_>) -> Vec<String> {
        self.words
            .iter()
            .map(|pieces| {
                let mut out = String::new();
                for piece in pieces {
                    match (piece, input) {
                        (Piece::Literal(s), _) => out.push_str(s),
                        (Piece::Index, _) => out.push_str(&index.to_string()),
                        (Piece::Input, TaskInput::Line(line)) => out.push_str(line),
                        (Piece::Input, TaskInput::Array(i)) => out.push_str(&i.to_string()),
                        (Piece::Param(name), TaskInput::Params(p)) => {
                            out.push_str(p.get(name).map(String::as_str).unwrap_or(""))
                        }
                        // `parse` rejected placeholders the inputs cannot fill.
                        (Piece::Input | Piece::Param(_), _) => {}
                    }
                }
                out
            })
            .collect()
    }
}

fn describe(inputs: &Inputs) -> String {
    match inputs {
        Inputs::Lines => "`{}`, `{line}` and `{index}`".into(),
        Inputs::Array => "`{}` and `{index}`".into(),
        Inputs::Params(names) => {
            let mut all: Vec<String> = names.iter().map(|n| format!("`{{{n}}}`")).collect();
            all.push("`{index}`".into());
            all.join(", ")
        }
    }
}

fn parse_word(word: &str, inputs: &Inputs) -> Result<Vec<Piece>, TemplateError> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                literal.push('}');
            }
            '}' => return Err(TemplateError::Unmatched(word.into())),
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => name.push(ch),
                        None => return Err(TemplateError::Unclosed(word.into())),
                    }
                }
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                }
                pieces.push(placeholder(&name, inputs)?);
            }
            c => literal.push(c),
        }
    }
    if !literal.is_empty() || pieces.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

fn placeholder(name: &str, inputs: &Inputs) -> Result<Piece, TemplateError> {
    match (name, inputs) {
        ("index", _) => Ok(Piece::Index),
        ("" | "line", Inputs::Lines) | ("", Inputs::Array) => Ok(Piece::Input),
        (n, Inputs::Params(names)) if names.contains(n) => Ok(Piece::Param(n.into())),
        _ => Err(TemplateError::UnknownPlaceholder {
            name: name.into(),
            known: describe(inputs),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_substituted_inside_words_without_a_shell() {
        let t = Template::parse("grep -c 'x y' in/{}.txt --id={index}", &Inputs::Lines).unwrap();
        let argv = t.render(3, TaskInput::Line("a; rm -rf /"));
        assert_eq!(argv, ["grep", "-c", "x y", "in/a; rm -rf /.txt", "--id=3"]);
    }

    #[test]
    fn array_input_is_the_integer() {
        let t = Template::parse("sim {} {index}", &Inputs::Array).unwrap();
        assert_eq!(t.render(0, TaskInput::Array(17)), ["sim", "17", "0"]);
    }

    #[test]
    fn named_parameters_and_escaped_braces() {
        let names: BTreeSet<String> = ["query".to_string()].into();
        let t = Template::parse("blast {query} '{{raw}}'", &Inputs::Params(names)).unwrap();
        let p: BTreeMap<String, String> = [("query".to_string(), "q1.fa".to_string())].into();
        assert_eq!(
            t.render(0, TaskInput::Params(&p)),
            ["blast", "q1.fa", "{raw}"]
        );
    }

    #[test]
    fn unknown_placeholders_name_what_is_available() {
        let err = Template::parse("run {query}", &Inputs::Lines).unwrap_err();
        assert!(
            matches!(err, TemplateError::UnknownPlaceholder { ref name, .. } if name == "query")
        );
        assert!(err.to_string().contains("`{line}`"), "{err}");
        assert!(Template::parse("run {line}", &Inputs::Array).is_err());
    }

    #[test]
    fn malformed_templates_are_rejected() {
        assert_eq!(
            Template::parse("  ", &Inputs::Lines),
            Err(TemplateError::Empty)
        );
        assert!(matches!(
            Template::parse("a {b", &Inputs::Lines),
            Err(TemplateError::Unclosed(_))
        ));
        assert!(matches!(
            Template::parse("a b}", &Inputs::Lines),
            Err(TemplateError::Unmatched(_))
        ));
        assert!(matches!(
            Template::parse("a 'b", &Inputs::Lines),
            Err(TemplateError::Quoting(_))
        ));
    }
}
