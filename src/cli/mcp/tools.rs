//! The tools `mcp` serves, and every decision about them that needs no IO:
//! their input schemas, read from the clap definitions of the commands they
//! run (so a tool and its command cannot drift); a call's arguments turned
//! into that command's own argv; a long answer cut into pages; and the short
//! summary an assistant can quote. docs/mcp.md describes them for users.

use serde_json::{Map, Value, json};

/// What every tool's description ends with: how to read `complete`, and that
/// a change a relist found has no known time.
const CONTRACT: &str = "\
Every answer carries `complete` and `warnings`. `complete: false` means the journal has holes \
for this question (the recorder was stopped, lost its watch, fell behind, or never recorded \
that namespace or type): say so, and never present the answer as the whole history. A change \
with `observed: relist` (or a RELIST entry) was found by a list after a hole: it happened at an \
unknown time within its `between` range; give that range, never a single time. Times are UTC. \
Answers come from the local journal only: the live cluster is never asked.";

/// The paging arguments every tool with a list takes, beside its command's.
pub const LIMIT: &str = "limit";
pub const OFFSET: &str = "offset";
/// Items of a list returned by one call unless `limit` says otherwise.
pub const DEFAULT_LIMIT: u64 = 100;
/// The most items one call returns.
pub const MAX_LIMIT: u64 = 1000;

/// One tool: the command it runs and which of that command's arguments it takes.
#[derive(Debug)]
pub struct Tool {
    pub name: &'static str,
    /// The subcommand path: `["diff"]`, `["replay", "plan"]`.
    pub path: &'static [&'static str],
    /// Flags always given to the command (`--preview`).
    pub fixed: &'static [&'static str],
    /// The clap ids of the arguments it takes, named the same in the tool.
    pub args: &'static [&'static str],
    /// Where the answer's list is, for paging: a key of the top-level object.
    pub list: Option<&'static str>,
    /// What it answers (the contract is added to it).
    pub about: &'static str,
}

/// What `diff` and `log` take: some objects over a window.
const WINDOW_ARGS: &[&str] = &[
    "targets",
    "since",
    "until",
    "include_status",
    "by",
    "namespace",
    "all_namespaces",
    "cluster_id",
];

/// Every tool, in the order they are listed.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "diff",
        path: &["diff"],
        fixed: &[],
        args: WINDOW_ARGS,
        list: Some("objects"),
        about: "What changed between two times (`since`, `until`): objects added, deleted and \
modified, field by field, with the field manager and, after audit logs were imported, the \
user (`actor`). The JSON of `kubectl krply diff -o json`.",
    },
    Tool {
        name: "log",
        path: &["log"],
        fixed: &[],
        args: WINDOW_ARGS,
        list: Some("entries"),
        about: "Every change in a window, oldest first, one entry each, with GAP entries where \
the recording has holes. The JSON of `kubectl krply log -o json`.",
    },
    Tool {
        name: "timeline",
        path: &["timeline"],
        fixed: &[],
        args: &["object", "include_status", "by", "namespace", "cluster_id"],
        list: Some("entries"),
        about: "Every recorded version of one object (`object`: TYPE/NAME, as deploy/frontend), \
with its gaps. The JSON of `kubectl krply timeline -o json`.",
    },
    Tool {
        name: "get_at",
        path: &["get"],
        fixed: &[],
        args: &[
            "object",
            "at",
            "selector",
            "show_managed_fields",
            "namespace",
            "all_namespaces",
            "cluster_id",
        ],
        list: Some("items"),
        about: "One object as it was at a time (`object`: TYPE/NAME), or every object of a type \
then (`object`: TYPE, as a List). The JSON of `kubectl krply get -o json --at`.",
    },
    Tool {
        name: "snapshot",
        path: &["snapshot"],
        fixed: &[],
        args: &["types", "at", "namespace", "all_namespaces", "cluster_id"],
        list: Some("items"),
        about: "Every recorded object in scope at a time, with each stream's watermark and \
completeness. The JSON of `kubectl krply snapshot -o json`.",
    },
    Tool {
        name: "coverage",
        path: &["coverage"],
        fixed: &[],
        args: &["namespace", "all_namespaces", "cluster_id"],
        list: Some("streams"),
        about: "Per recorded stream: the time it covers, its gaps with their reasons, and \
whether it is complete. Ask it before trusting any other answer about a stretch of time. \
The JSON of `kubectl krply coverage -o json`.",
    },
    Tool {
        name: "status",
        path: &["status"],
        fixed: &[],
        args: &["cluster_id"],
        list: None,
        about: "The journal at a glance: recorded clusters, streams, events, gaps, the time \
span, whether a recorder is running, and the audit logs imported. The JSON of \
`kubectl krply status -o json`.",
    },
    Tool {
        name: "replay_plan_preview",
        path: &["replay", "plan"],
        fixed: &["--preview"],
        args: &[
            "types",
            "to_namespace",
            "at",
            "include",
            "namespace",
            "cluster_id",
        ],
        list: Some("objects"),
        about: "What a replay of a namespace (`namespace`) at a time into a test namespace \
(`to_namespace`) would hold: the objects with their manifests, what is left out and why, and \
warnings. Computed from the journal alone: no cluster is contacted, nothing is dry-run or \
saved (`kubectl krply replay plan` does that, and `replay apply --confirm` writes). The JSON \
of `kubectl krply replay plan --preview -o json`.",
    },
];

/// The tool called `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// A tool's arguments that cannot become its command's argv.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArgError {
    #[error("{tool} takes no argument \"{name}\"; it takes: {takes}")]
    Unknown {
        tool: &'static str,
        name: String,
        takes: String,
    },
    #[error("argument \"{name}\" of {tool} must be {expected}, not {got}")]
    Type {
        tool: &'static str,
        name: String,
        expected: &'static str,
        got: String,
    },
    #[error("argument \"{name}\" of {tool} must be at most {max}")]
    TooLarge {
        tool: &'static str,
        name: &'static str,
        max: u64,
    },
}

/// How a clap argument is given.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    Flag,
    Value,
    Values,
    Positional,
    Positionals,
}

fn shape(arg: &clap::Arg) -> Shape {
    let many = matches!(arg.get_action(), clap::ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    match (arg.is_positional(), many) {
        _ if matches!(
            arg.get_action(),
            clap::ArgAction::SetTrue | clap::ArgAction::SetFalse
        ) =>
        {
            Shape::Flag
        }
        (true, true) => Shape::Positionals,
        (true, false) => Shape::Positional,
        (false, true) => Shape::Values,
        (false, false) => Shape::Value,
    }
}

/// The clap command of `tool`, and its argument `id` (a global one is
/// defined on the root).
fn arg<'a>(root: &'a clap::Command, tool: &Tool, id: &str) -> Option<&'a clap::Arg> {
    let mut command = root;
    for name in tool.path {
        command = command.find_subcommand(name)?;
    }
    command
        .get_arguments()
        .chain(root.get_arguments())
        .find(|a| a.get_id().as_str() == id)
}

/// The input schema of `tool`, from the clap definition `root` of the CLI.
/// Panics when the tool names an argument its command does not have: a
/// programming error, caught by the unit tests.
pub fn input_schema(root: &clap::Command, tool: &Tool) -> Map<String, Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for id in tool.args {
        let arg = arg(root, tool, id)
            .unwrap_or_else(|| panic!("{}: no argument {id} in the CLI", tool.name));
        let mut description = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default()
            .replace('\n', " ");
        if let Some(names) = arg.get_value_names()
            && shape(arg) != Shape::Flag
        {
            description = format!("{description} ({})", names.join(" "));
        }
        let mut schema = match shape(arg) {
            Shape::Flag => json!({"type": "boolean"}),
            Shape::Values | Shape::Positionals => {
                json!({"type": "array", "items": {"type": "string"}})
            }
            Shape::Value | Shape::Positional => json!({"type": "string"}),
        };
        let possible: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|p| !p.is_hide_set())
            .map(|p| p.get_name().to_string())
            .collect();
        if !possible.is_empty() && shape(arg) != Shape::Flag {
            schema["enum"] = json!(possible);
        }
        if let [default] = arg.get_default_values()
            && shape(arg) != Shape::Flag
        {
            schema["default"] = json!(default.to_string_lossy());
        }
        schema["description"] = json!(description);
        if arg.is_required_set() {
            required.push(json!(id));
        }
        properties.insert(id.to_string(), schema);
    }
    if let Some(list) = tool.list {
        properties.insert(
            LIMIT.into(),
            json!({"type": "integer", "minimum": 0, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                   "description": format!("The most entries of `{list}` to return; the answer says `truncated` and the total when there are more")}),
        );
        properties.insert(
            OFFSET.into(),
            json!({"type": "integer", "minimum": 0, "default": 0,
                   "description": format!("How many entries of `{list}` to skip (the next page starts at offset + limit)")}),
        );
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), json!(false));
    schema
}

/// What `tool` says it does, the contract included.
pub fn description(tool: &Tool) -> String {
    format!("{} {CONTRACT}", tool.about)
}

/// Which page of the answer's list a call asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageAsk {
    pub offset: u64,
    pub limit: u64,
}

/// A call's arguments as its command's argv after the program name and the
/// server's own flags, and the page it asks for.
pub fn argv(
    root: &clap::Command,
    tool: &'static Tool,
    args: &Map<String, Value>,
) -> Result<(Vec<String>, PageAsk), ArgError> {
    let mut out: Vec<String> = tool.path.iter().map(|s| s.to_string()).collect();
    out.extend(tool.fixed.iter().map(|s| s.to_string()));
    let mut positionals = Vec::new();
    let mut page = PageAsk {
        offset: 0,
        limit: DEFAULT_LIMIT,
    };
    for (name, value) in args {
        if tool.list.is_some() && (name == LIMIT || name == OFFSET) {
            let n = value
                .as_u64()
                .ok_or_else(|| type_error(tool, name, "a whole number", value))?;
            if name == LIMIT {
                if n > MAX_LIMIT {
                    return Err(ArgError::TooLarge {
                        tool: tool.name,
                        name: LIMIT,
                        max: MAX_LIMIT,
                    });
                }
                page.limit = n;
            } else {
                page.offset = n;
            }
            continue;
        }
        let Some(arg) = tool
            .args
            .contains(&name.as_str())
            .then(|| arg(root, tool, name))
            .flatten()
        else {
            return Err(ArgError::Unknown {
                tool: tool.name,
                name: name.clone(),
                takes: takes(tool),
            });
        };
        let long = arg.get_long().unwrap_or(name);
        match shape(arg) {
            Shape::Flag => {
                if value
                    .as_bool()
                    .ok_or_else(|| type_error(tool, name, "true or false", value))?
                {
                    out.push(format!("--{long}"));
                }
            }
            Shape::Value => out.push(format!("--{long}={}", string(tool, name, value)?)),
            Shape::Values => {
                for v in strings(tool, name, value)? {
                    out.push(format!("--{long}={v}"));
                }
            }
            Shape::Positional => positionals.push(string(tool, name, value)?),
            Shape::Positionals => positionals.extend(strings(tool, name, value)?),
        }
    }
    if !positionals.is_empty() {
        // After `--`, so a value that starts with '-' is never read as a flag.
        out.push("--".into());
        out.extend(positionals);
    }
    Ok((out, page))
}

fn takes(tool: &Tool) -> String {
    let mut names: Vec<&str> = tool.args.to_vec();
    if tool.list.is_some() {
        names.extend([LIMIT, OFFSET]);
    }
    names.join(", ")
}

fn type_error(tool: &'static Tool, name: &str, expected: &'static str, got: &Value) -> ArgError {
    ArgError::Type {
        tool: tool.name,
        name: name.to_string(),
        expected,
        got: got.to_string(),
    }
}

fn string(tool: &'static Tool, name: &str, value: &Value) -> Result<String, ArgError> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| type_error(tool, name, "a string", value))
}

/// A list of strings; one string is taken as a list of one.
fn strings(tool: &'static Tool, name: &str, value: &Value) -> Result<Vec<String>, ArgError> {
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|v| string(tool, name, v))
            .collect::<Result<_, _>>()
            .map_err(|_| type_error(tool, name, "a list of strings", value)),
        _ => Err(type_error(tool, name, "a list of strings", value)),
    }
}

/// Where a page of an answer's list stands.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Page {
    pub list: &'static str,
    pub total: u64,
    pub offset: u64,
    pub limit: u64,
    pub returned: u64,
}

impl Page {
    /// Whether entries were left out.
    pub fn truncated(&self) -> bool {
        self.returned < self.total
    }
}

/// Cuts the list of `answer` (when `tool` has one and the answer holds it)
/// to the page `ask` names. `None` when there is no list to page.
pub fn cut(tool: &Tool, answer: &mut Value, ask: PageAsk) -> Option<Page> {
    let list = tool.list?;
    let items = answer.get_mut(list)?.as_array_mut()?;
    let total = items.len() as u64;
    let start = ask.offset.min(total) as usize;
    let end = ask.offset.saturating_add(ask.limit).min(total) as usize;
    if start > 0 || end < items.len() {
        *items = items.drain(start..end).collect();
    }
    Some(Page {
        list,
        total,
        offset: ask.offset,
        limit: ask.limit,
        returned: (end - start) as u64,
    })
}

/// A few lines an assistant can quote: what the answer holds, whether it is
/// complete (and if not, the first things it lacks), and what is cut off.
pub fn summary(
    tool: &Tool,
    answer: &Value,
    complete: bool,
    warnings: &[String],
    page: Option<&Page>,
) -> String {
    let mut lines = vec![what(tool, answer, page)];
    if complete {
        lines.push("Complete: the journal covers this question without a hole.".into());
    } else {
        lines.push(format!(
            "INCOMPLETE: the journal has holes here ({} warning(s)); do not present this as the whole history.",
            warnings.len()
        ));
        for w in warnings.iter().take(3) {
            lines.push(format!("- {w}"));
        }
        if warnings.len() > 3 {
            lines.push(format!("- and {} more in `warnings`", warnings.len() - 3));
        }
    }
    if let Some(p) = page.filter(|p| p.truncated()) {
        lines.push(format!(
            "Truncated: {} of {} {} shown from offset {}; call again with offset {} for the next.",
            p.returned,
            p.total,
            p.list,
            p.offset,
            p.offset + p.returned
        ));
    }
    lines.join("\n")
}

fn count_by<'a>(items: &'a [Value], key: &str) -> Vec<(&'a str, usize)> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for v in items
        .iter()
        .filter_map(|i| i.get(key).and_then(Value::as_str))
    {
        match counts.iter_mut().find(|(k, _)| *k == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    counts
}

fn counted(counts: &[(&str, usize)]) -> String {
    counts
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first line of a summary: what the answer holds.
fn what(tool: &Tool, answer: &Value, page: Option<&Page>) -> String {
    let s = |key: &str| answer.get(key).and_then(Value::as_str).unwrap_or("");
    let scope = match answer.get("namespace").and_then(Value::as_str) {
        Some(ns) => format!("namespace {ns}"),
        None => "every namespace".into(),
    };
    let items = |key: &str| {
        answer
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let total = |key: &str| page.map_or(items(key).len() as u64, |p| p.total);
    let relist = |key: &str, field: &str, value: &str| {
        items(key)
            .iter()
            .filter(|i| i.get(field).and_then(Value::as_str) == Some(value))
            .count()
    };
    let on_page = if page.is_some_and(Page::truncated) {
        " on this page"
    } else {
        ""
    };
    let relisted = |n: usize| match n {
        0 => String::new(),
        n => format!(
            "; {n} found by a relist{}, each at an unknown time in its `between`",
            on_page
        ),
    };
    // " (2 modified, 1 added)": a list's entries counted by `key`.
    let breakdown = |list: &str, key: &str| match counted(&count_by(items(list), key)) {
        c if c.is_empty() => String::new(),
        c => format!(" ({c}{on_page})"),
    };
    match tool.name {
        "diff" => format!(
            "{} object(s) changed in {scope} between {} and {}{}{}.",
            total("objects"),
            s("since"),
            s("until"),
            breakdown("objects", "change"),
            relisted(relist("objects", "observed", "relist"))
        ),
        "log" => format!(
            "{} entries in {scope} between {} and {}{}{}.",
            total("entries"),
            s("since"),
            s("until"),
            breakdown("entries", "type"),
            relisted(relist("entries", "type", "RELIST"))
        ),
        "timeline" => format!(
            "{} entries for {} {}{}{}{}.",
            total("entries"),
            s("kind"),
            match s("namespace") {
                "" => String::new(),
                ns => format!("{ns}/"),
            },
            s("name"),
            breakdown("entries", "type"),
            relisted(relist("entries", "observed", "relist"))
        ),
        "get_at" if answer.get("kind").and_then(Value::as_str) == Some("List") => {
            format!("{} object(s).", total("items"))
        }
        "get_at" => {
            let meta = |k: &str| {
                answer
                    .pointer(&format!("/metadata/{k}"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            format!(
                "{} {}{} at resourceVersion {}.",
                s("kind"),
                match meta("namespace") {
                    "" => String::new(),
                    ns => format!("{ns}/"),
                },
                meta("name"),
                meta("resourceVersion")
            )
        }
        "snapshot" => format!("{} object(s) in {scope} at {}.", total("items"), s("at")),
        "coverage" => format!(
            "{} stream(s), {} complete.",
            total("streams"),
            items("streams")
                .iter()
                .filter(|c| c.get("complete") == Some(&Value::Bool(true)))
                .count()
        ),
        "status" => format!(
            "Journal {}: {} event(s) in {} stream(s), {} gap(s), observed from {} to {}; {}.",
            s("store"),
            answer.get("events").unwrap_or(&Value::Null),
            answer.get("streams").unwrap_or(&Value::Null),
            answer.get("gaps").unwrap_or(&Value::Null),
            answer
                .get("first_observed")
                .and_then(Value::as_str)
                .unwrap_or("-"),
            answer
                .get("last_observed")
                .and_then(Value::as_str)
                .unwrap_or("-"),
            if answer.pointer("/recorder/running") == Some(&Value::Bool(true)) {
                "a recorder is running"
            } else {
                "no recorder is running"
            }
        ),
        "replay_plan_preview" => format!(
            "A replay of namespace {} at {} into {} would hold {} object(s); {} left out, {} warning(s). Nothing was dry-run or saved.",
            answer
                .pointer("/source/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            answer
                .pointer("/source/at")
                .and_then(Value::as_str)
                .unwrap_or(""),
            answer
                .pointer("/target/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            total("objects"),
            items("excluded").len(),
            items("warnings").len()
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn root() -> clap::Command {
        let mut c = crate::cli::Cli::command();
        c.build();
        c
    }

    #[test]
    fn every_tool_argument_is_one_its_command_parses() {
        let root = root();
        for tool in TOOLS {
            let schema = input_schema(&root, tool);
            let properties = schema["properties"].as_object().unwrap();
            for id in tool.args {
                assert!(properties.contains_key(*id), "{}: {id}", tool.name);
                assert!(
                    !properties[*id]["description"].as_str().unwrap().is_empty(),
                    "{}: {id} has no description",
                    tool.name
                );
            }
            assert_eq!(properties.contains_key(LIMIT), tool.list.is_some());
        }
    }

    #[test]
    fn schemas_carry_types_defaults_and_what_is_required() {
        let root = root();
        let diff = input_schema(&root, find("diff").unwrap());
        let p = &diff["properties"];
        assert_eq!(p["since"]["type"], "string");
        assert_eq!(p["since"]["default"], "1h");
        assert_eq!(p["include_status"]["type"], "boolean");
        assert_eq!(p["targets"]["type"], "array");
        assert_eq!(diff["additionalProperties"], false);
        assert!(diff.get("required").is_none());
        let timeline = input_schema(&root, find("timeline").unwrap());
        assert_eq!(timeline["required"], json!(["object"]));
        let preview = input_schema(&root, find("replay_plan_preview").unwrap());
        assert_eq!(preview["required"], json!(["to_namespace"]));
        assert_eq!(preview["properties"]["include"]["type"], "array");
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_call_becomes_its_commands_argv() {
        let root = root();
        let (argv, page) = argv(
            &root,
            find("diff").unwrap(),
            &args(
                json!({"since": "30m", "namespace": "shop", "include_status": true,
                         "targets": ["deploy", "-odd"], "limit": 5, "all_namespaces": false}),
            ),
        )
        .unwrap();
        // In the call's order (a false flag is left out), values after `--`.
        assert_eq!(
            argv,
            [
                "diff",
                "--since=30m",
                "--namespace=shop",
                "--include-status",
                "--",
                "deploy",
                "-odd"
            ]
        );
        assert_eq!(
            page,
            PageAsk {
                offset: 0,
                limit: 5
            }
        );
        // The argv parses as the CLI parses it.
        let mut full = vec!["kubectl-krply".to_string()];
        full.extend(argv);
        root.clone().try_get_matches_from(full).unwrap();

        let (argv, _) = argv_of(
            "replay_plan_preview",
            json!({"to_namespace": "t", "include": ["Job", "Pod"]}),
        );
        assert_eq!(
            argv,
            [
                "replay",
                "plan",
                "--preview",
                "--to-namespace=t",
                "--include=Job",
                "--include=Pod"
            ]
        );
    }

    fn argv_of(tool: &str, v: Value) -> (Vec<String>, PageAsk) {
        argv(&root(), find(tool).unwrap(), &args(v)).unwrap()
    }

    #[test]
    fn a_bad_argument_is_named_with_what_the_tool_takes() {
        let root = root();
        let status = find("status").unwrap();
        let e = argv(&root, status, &args(json!({"since": "1h"}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "status takes no argument \"since\"; it takes: cluster_id"
        );
        // A flag of the command that the tool does not mirror is refused too.
        let e = argv(&root, find("diff").unwrap(), &args(json!({"strict": true}))).unwrap_err();
        assert!(matches!(e, ArgError::Unknown { .. }), "{e}");
        let e = argv(&root, find("diff").unwrap(), &args(json!({"since": 30}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "argument \"since\" of diff must be a string, not 30"
        );
        let e = argv(&root, find("diff").unwrap(), &args(json!({"limit": 5000}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "argument \"limit\" of diff must be at most 1000"
        );
        let e = argv(&root, find("diff").unwrap(), &args(json!({"limit": -1}))).unwrap_err();
        assert!(matches!(e, ArgError::Type { .. }), "{e}");
    }

    #[test]
    fn a_long_list_is_cut_to_the_page_asked() {
        let tool = find("log").unwrap();
        let mut answer = json!({"entries": [1, 2, 3, 4, 5], "complete": true});
        let page = cut(
            tool,
            &mut answer,
            PageAsk {
                offset: 1,
                limit: 2,
            },
        )
        .unwrap();
        assert_eq!(answer["entries"], json!([2, 3]));
        assert_eq!(page.total, 5);
        assert_eq!(page.returned, 2);
        assert!(page.truncated());
        let mut answer = json!({"entries": [1, 2]});
        let page = cut(
            tool,
            &mut answer,
            PageAsk {
                offset: 0,
                limit: 100,
            },
        )
        .unwrap();
        assert!(!page.truncated());
        assert_eq!(answer["entries"], json!([1, 2]));
        // Past the end: an empty page that still says how many there are.
        let mut answer = json!({"entries": [1, 2]});
        let page = cut(
            tool,
            &mut answer,
            PageAsk {
                offset: 9,
                limit: 100,
            },
        )
        .unwrap();
        assert_eq!((page.total, page.returned), (2, 0));
        // A single object (get_at of TYPE/NAME) has no list.
        let mut answer = json!({"kind": "Deployment"});
        assert!(
            cut(
                find("get_at").unwrap(),
                &mut answer,
                PageAsk {
                    offset: 0,
                    limit: 1
                }
            )
            .is_none()
        );
    }

    #[test]
    fn a_summary_says_what_is_there_whether_it_is_complete_and_what_is_cut() {
        let diff = find("diff").unwrap();
        let answer = json!({"namespace": "shop", "since": "A", "until": "B",
            "objects": [{"change": "modified", "observed": "watch"},
                        {"change": "added", "observed": "relist"}]});
        let text = summary(diff, &answer, true, &[], None);
        assert_eq!(
            text,
            "2 object(s) changed in namespace shop between A and B (1 modified, 1 added); 1 found by a relist, each at an unknown time in its `between`.\n\
             Complete: the journal covers this question without a hole."
        );
        let warnings: Vec<String> = (1..=5).map(|i| format!("w{i}")).collect();
        let page = Page {
            list: "objects",
            total: 40,
            offset: 0,
            limit: 2,
            returned: 2,
        };
        let text = summary(diff, &answer, false, &warnings, Some(&page));
        assert!(text.contains("INCOMPLETE"), "{text}");
        assert!(text.contains("- w3\n- and 2 more"), "{text}");
        assert!(text.starts_with("40 object(s)"), "{text}");
        assert!(
            text.ends_with("call again with offset 2 for the next."),
            "{text}"
        );
    }
}
