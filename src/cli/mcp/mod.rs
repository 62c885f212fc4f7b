//! `mcp`: the journal's answers for AI assistants, as a Model Context Protocol
//! server on stdin/stdout (docs/mcp.md). It opens no port, contacts no
//! cluster and writes nothing: each tool call is parsed by the CLI's own clap
//! definitions and run by the command it mirrors, with its output caught
//! ([`super::sink`]) instead of printed, so a tool answers exactly what
//! `kubectl krply CMD -o json` answers, errors and hints included.

pub mod tools;

use super::args::GlobalArgs;
use super::{Cli, Command, sink};
use crate::error::{CliError, CliResult};
use clap::{Args, CommandFactory, FromArgMatches};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;

/// Serve the journal's answers to AI assistants over the Model Context Protocol (stdio)
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  # What an MCP client runs (Claude Desktop, VS Code, Cursor, Zed...): see docs/mcp.md
  kubectl krply mcp

  # Answers from one journal, about namespace shop unless a call names another
  kubectl krply mcp --store /tmp/incident.db -n shop

Tools: diff, log, timeline, get_at, snapshot, coverage, status, replay_plan_preview. Each
returns the JSON of the command it mirrors (`-o json`), with `complete` and `warnings`, and a
summary to quote. Read-only: no port, no cluster, nothing written. Secrets are digests.")]
pub struct McpArgs {}

/// How the server was started: what every tool call inherits.
#[derive(Debug, Clone)]
struct Defaults {
    store: PathBuf,
    namespace: Option<String>,
    all_namespaces: bool,
    cluster_id: Option<String>,
}

impl Defaults {
    /// The flags a call's argv starts with, after the program name: the
    /// server's journal always; its namespace and cluster unless the call
    /// names its own.
    fn argv(&self, call: &Map<String, Value>) -> Vec<String> {
        let mut out = vec![
            format!("--store={}", self.store.display()),
            "--output=json".into(),
            "--color=never".into(),
        ];
        let scoped = call.contains_key("namespace")
            || call.get("all_namespaces") == Some(&Value::Bool(true));
        if !scoped {
            if let Some(ns) = &self.namespace {
                out.push(format!("--namespace={ns}"));
            }
            if self.all_namespaces {
                out.push("--all-namespaces".into());
            }
        }
        if !call.contains_key("cluster_id")
            && let Some(id) = &self.cluster_id
        {
            out.push(format!("--cluster-id={id}"));
        }
        out
    }
}

pub async fn run(global: &GlobalArgs, _args: McpArgs) -> CliResult {
    let server = Server {
        defaults: Arc::new(Defaults {
            store: global.store_path()?,
            namespace: global.namespace.clone(),
            all_namespaces: global.all_namespaces,
            cluster_id: global.cluster_id.clone(),
        }),
    };
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| CliError::runtime(format!("mcp: the client did not start a session: {e}")))?;
    // Until the client closes stdin (or ends the session).
    running
        .waiting()
        .await
        .map_err(|e| CliError::runtime(format!("mcp: the server stopped: {e}")).caused_by(e))?;
    Ok(())
}

#[derive(Clone)]
struct Server {
    defaults: Arc<Defaults>,
}

impl rmcp::ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("kubectl-krply", env!("CARGO_PKG_VERSION"))
                    .with_title("kubectl krply: the local history of Kubernetes objects"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        Ok(ListToolsResult::with_all_items(tool_list().to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tool_list().iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let Some(tool) = tools::find(&request.name) else {
            return Err(rmcp::ErrorData::invalid_params(
                format!("no tool \"{}\"", request.name),
                None,
            ));
        };
        let defaults = self.defaults.clone();
        let args = request.arguments.unwrap_or_default();
        // The commands read SQLite synchronously: off the protocol's threads.
        let result = tokio::task::spawn_blocking(move || call(&defaults, tool, &args))
            .await
            .map_err(|e| rmcp::ErrorData::internal_error(format!("{}: {e}", tool.name), None))?;
        Ok(result.into())
    }
}

/// What the server tells the client when the session starts.
const INSTRUCTIONS: &str = "\
kubectl krply answers from a local journal of a Kubernetes cluster's objects, recorded by \
`kubectl krply record`: what changed, when, who did it (from imported audit logs), and \
whether the recording is complete. It never asks the live cluster. Check `complete` and \
`warnings` in every answer; a change found by a relist happened at an unknown time within its \
range. Ask `coverage` when unsure what the journal saw.";

/// The tools as listed: built once (clap's tree and every schema), as
/// clients list them and the SDK looks each call's tool up.
fn tool_list() -> &'static [Tool] {
    static LISTED: std::sync::OnceLock<Vec<Tool>> = std::sync::OnceLock::new();
    LISTED.get_or_init(listed)
}

fn listed() -> Vec<Tool> {
    let mut root = Cli::command();
    root.build();
    tools::TOOLS
        .iter()
        .map(|t| {
            let mut tool = Tool::new(t.name, tools::description(t), tools::input_schema(&root, t));
            tool.annotations = Some(
                ToolAnnotations::new()
                    .read_only(true)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(false),
            );
            tool
        })
        .collect()
}

/// Runs one tool call to its result: an answer, or a tool error carrying the
/// CLI's error text and hints.
fn call(
    defaults: &Defaults,
    tool: &'static tools::Tool,
    args: &Map<String, Value>,
) -> CallToolResult {
    let mut root = Cli::command();
    root.build();
    let (argv, ask) = match tools::argv(&root, tool, args) {
        Ok(a) => a,
        Err(e) => {
            return error(
                tool,
                &CliError::usage(e.to_string()).hint("the tool's input schema lists its arguments"),
            );
        }
    };
    let mut full = vec!["kubectl-krply".to_string()];
    full.extend(defaults.argv(args));
    full.extend(argv);
    let cli = match root
        .try_get_matches_from(&full)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => return error(tool, &super::usage_error(&e)),
    };
    let (outcome, caught) = sink::capture(|| answer_offline(cli));
    if let Err(e) = outcome {
        return error(tool, &e);
    }
    answer(tool, caught, ask)
}

/// The offline commands a tool can run; each is synchronous.
fn answer_offline(cli: Cli) -> CliResult {
    let global = cli.global;
    match cli.command {
        Command::Status(a) => super::status::run(&global, a),
        Command::Coverage(a) => super::coverage::run(&global, a),
        Command::Diff(a) => super::diff::run(&global, a),
        Command::Timeline(a) => super::timeline::run(&global, a),
        Command::Log(a) => super::log::run(&global, a),
        Command::Get(a) => super::get::run(&global, a),
        Command::Snapshot(a) => super::snapshot::run(&global, a),
        Command::Replay(a) => super::replay::preview(&global, a),
        _ => Err(CliError::runtime("mcp runs only the offline answers")),
    }
}

/// A command's caught answer as a tool result: a summary to quote, the
/// answer's JSON (as the CLI printed it when nothing was cut), and the
/// structured envelope `{complete, warnings, notes, truncated, page, answer}`.
fn answer(tool: &tools::Tool, caught: sink::Captured, ask: tools::PageAsk) -> CallToolResult {
    let mut value: Value = match serde_json::from_slice(&caught.output) {
        Ok(v) => v,
        Err(e) => {
            return error(
                tool,
                &CliError::runtime(format!("{}: its answer is not JSON: {e}", tool.name)),
            );
        }
    };
    let (complete, warnings) = match caught.completeness {
        Some(r) => (r.complete, r.warnings),
        None => (
            false,
            vec!["the command did not say whether its answer is complete".into()],
        ),
    };
    let page = tools::cut(tool, &mut value, ask);
    let truncated = page.as_ref().is_some_and(tools::Page::truncated);
    let mut summary = tools::summary(tool, &value, complete, &warnings, page.as_ref());
    for note in &caught.notes {
        summary.push_str(&format!("\nnote: {note}"));
    }
    // The CLI's own bytes when the page is the whole answer.
    let json_text = if page.as_ref().is_none_or(|p| p.offset == 0 && !truncated) {
        String::from_utf8_lossy(&caught.output).into_owned()
    } else {
        crate::render::json(&value)
    };
    let envelope = json!({
        "tool": tool.name,
        "complete": complete,
        "warnings": warnings,
        "notes": caught.notes,
        "truncated": truncated,
        "page": page,
        "answer": value,
    });
    let mut result = CallToolResult::success(vec![
        ContentBlock::text(summary),
        ContentBlock::text(json_text),
    ]);
    result.structured_content = Some(envelope);
    result
}

/// A tool error: the CLI's `error:` and `hint:` lines, and the same as
/// `{error: {message, hints, exit_code}}`.
fn error(tool: &tools::Tool, e: &CliError) -> CallToolResult {
    let mut text = format!("error: {}", e.message);
    for h in &e.hints {
        text.push_str(&format!("\nhint: {h}"));
    }
    let code = match e.kind {
        crate::error::ErrorKind::Usage => 2,
        crate::error::ErrorKind::Incomplete => 3,
        _ => 1,
    };
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "tool": tool.name,
        "error": {"message": e.message, "hints": e.hints, "exit_code": code},
    }));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_inherits_the_servers_scope_unless_it_names_its_own() {
        let d = Defaults {
            store: "/j.db".into(),
            namespace: Some("shop".into()),
            all_namespaces: false,
            cluster_id: Some("c1".into()),
        };
        let none = Map::new();
        assert_eq!(
            d.argv(&none),
            [
                "--store=/j.db",
                "--output=json",
                "--color=never",
                "--namespace=shop",
                "--cluster-id=c1"
            ]
        );
        // `all_namespaces: false` names no scope of its own.
        let unscoped: Map<String, Value> = json!({"all_namespaces": false})
            .as_object()
            .unwrap()
            .clone();
        assert!(d.argv(&unscoped).contains(&"--namespace=shop".to_string()));
        let own: Map<String, Value> = json!({"all_namespaces": true, "cluster_id": "c2"})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(
            d.argv(&own),
            ["--store=/j.db", "--output=json", "--color=never"]
        );
    }

    #[test]
    fn every_tool_is_listed_read_only_with_its_contract() {
        let list = tool_list();
        assert_eq!(list.len(), tools::TOOLS.len());
        for t in list {
            let a = t.annotations.as_ref().unwrap();
            assert_eq!(a.read_only_hint, Some(true), "{}", t.name);
            let d = t.description.as_deref().unwrap();
            assert!(
                d.contains("`complete: false`") && d.contains("unknown"),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn an_answer_that_says_nothing_of_completeness_is_not_called_complete() {
        let tool = tools::find("status").unwrap();
        let caught = sink::Captured {
            output: b"{\"store\":\"j\"}".to_vec(),
            ..Default::default()
        };
        let r = answer(
            tool,
            caught,
            tools::PageAsk {
                offset: 0,
                limit: 1,
            },
        );
        let s = r.structured_content.unwrap();
        assert_eq!(s["complete"], false);
        assert_eq!(s["answer"]["store"], "j");
    }
}
