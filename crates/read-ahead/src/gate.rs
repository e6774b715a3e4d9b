//! The speculation tool gate: which calls a speculation may run, with their paths
//! rewritten through the overlay, and where it must stop (a boundary).
//!
//! | tool | action |
//! | --- | --- |
//! | `read_file` | allow; `path` resolved through the overlay (overlay copy once written) |
//! | `ls`, `glob`, `grep` | allow; `path` made canonical, the tools merge the overlay in |
//! | `edit`, `write_file` | `auto-edit` / `yolo`: allow, `path` redirected into the overlay; `default` / `plan`, or a sensitive file (`.git/`, `.saki/`, ...): boundary |
//! | `shell` | allow when the classifier proves the command read-only and in scope (no outside path, no environment), in any mode; else boundary |
//! | `update_plan` | allow: it only shows a checklist, and its call is history like any other |
//! | MCP tools (`mcp__…`), whatever their annotations and the mode | boundary |
//! | web, agent, ask-user, memory and unknown tools | boundary |
//!
//! A path that cannot be rewritten (outside the workspace, a directory, ...) is a
//! boundary, not a tool error: the speculation stops where the real run would need
//! the person.

use crate::overlay::OverlayFs;
use crate::view::{OverlayGlob, OverlayGrep, OverlayLs};
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput, ToolServer};
use saki_shell_safety::{check_scope, classify, Safety};
use saki_tools::{ApprovalMode, Workspace};
use serde_json::Value;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    /// Run the call with this input JSON (paths rewritten).
    Allow { input: String },
    /// Stop the speculation before this call.
    Boundary { reason: String },
}

/// A decision before it is turned into JSON. What runs is always the parsed value the
/// gate checked, re-serialized, never the model's bytes: with a duplicated key the
/// tool's parser could otherwise see a different value than the gate did.
enum Verdict {
    Allow(Value),
    Boundary(String),
}

fn boundary(reason: impl Into<String>) -> Verdict {
    Verdict::Boundary(reason.into())
}

#[derive(Clone, Copy)]
enum PathUse {
    Read,
    View,
    Write,
}

pub struct ToolGate {
    overlay: Arc<OverlayFs>,
    mode: ApprovalMode,
}

impl ToolGate {
    pub fn new(mode: ApprovalMode, overlay: Arc<OverlayFs>) -> Self {
        Self { overlay, mode }
    }

    pub fn mode(&self) -> ApprovalMode {
        self.mode
    }

    /// Decides one call; `input_json` is the call's arguments as the model wrote them,
    /// or as the schema check repaired them.
    /// Arguments the gate cannot read are a boundary: it cannot tell where they lead.
    /// Says that the allowed call `call_id` runs with nobody asked: a shell command then
    /// gets the read-only sandbox, whatever the classifier thought of it. Every speculated
    /// call is unasked.
    pub fn mark_unasked(&self, name: &str, call_id: &str) {
        if name == "shell" {
            if let Some(runtime) = self.overlay.workspace().shell_runtime() {
                runtime.mark_unasked(call_id);
            }
        }
    }

    pub fn check(&self, name: &str, input_json: &str) -> GateDecision {
        let verdict = match serde_json::from_str::<Value>(input_json) {
            Ok(input) => self.decide(name, &input),
            Err(_) => boundary(format!("{name} arguments are not valid JSON")),
        };
        match verdict {
            Verdict::Allow(input) => GateDecision::Allow {
                input: input.to_string(),
            },
            Verdict::Boundary(reason) => {
                tracing::debug!(tool = name, reason, "speculation boundary");
                GateDecision::Boundary { reason }
            }
        }
    }

    fn decide(&self, name: &str, input: &Value) -> Verdict {
        match name {
            "read_file" => self.rewrite(name, input, PathUse::Read, true),
            "ls" | "glob" | "grep" => self.rewrite(name, input, PathUse::View, false),
            "edit" | "write_file" => match self.sensitive(input) {
                Some(reason) => boundary(reason),
                None => match self.mode {
                    ApprovalMode::AutoEdit | ApprovalMode::Yolo => {
                        self.rewrite(name, input, PathUse::Write, true)
                    }
                    ApprovalMode::Default | ApprovalMode::Plan => {
                        boundary(format!("{name} needs approval in {} mode", self.mode))
                    }
                },
            },
            "shell" => shell(input, self.overlay.workspace()),
            saki_tools::plan::TOOL_NAME => Verdict::Allow(input.clone()),
            // The overlay records writes only; a deletion waits for the person.
            "delete_file" => boundary("delete_file is not run ahead".to_owned()),
            "web_fetch" | "web_search" => boundary(format!(
                "{name} needs network access, which the person must allow"
            )),
            // A server's "read-only" is its own word, and its effects are outside the
            // overlay: nothing written before accept cannot be promised for it.
            _ if name.starts_with(saki_tools::mcp_approval::MCP_PREFIX) => boundary(format!(
                "{name} is an MCP tool: it acts outside the overlay"
            )),
            "agent" | "skill" | "memory" | "ask_user" | "todo_write" | "exit_plan_mode" => {
                boundary(format!("{name} needs the person"))
            }
            _ => boundary(format!("{name} is not known to be safe to run ahead")),
        }
    }

    /// Why writing the call's path needs the person whatever the mode.
    fn sensitive(&self, input: &Value) -> Option<String> {
        let path = input.get("path").and_then(Value::as_str)?;
        saki_tools::sensitive_path(self.overlay.workspace(), path)
    }

    fn rewrite(&self, name: &str, input: &Value, use_: PathUse, required: bool) -> Verdict {
        let Some(args) = input.as_object() else {
            return boundary(format!("{name} arguments are not an object"));
        };
        let path = match args.get("path") {
            Some(Value::String(p)) => p,
            None | Some(Value::Null) if !required => return Verdict::Allow(input.clone()),
            _ => return boundary(format!("{name} call without a path")),
        };
        let resolved = match use_ {
            PathUse::Read => self.overlay.resolve_read(path),
            PathUse::View => self.overlay.resolve_view(path),
            PathUse::Write => self.overlay.resolve_write(path),
        };
        let rewritten = match resolved {
            Ok(p) => p,
            Err(e) => return boundary(format!("{name} {path}: {e}")),
        };
        let Some(rewritten) = rewritten.to_str() else {
            return boundary(format!("{name} {path}: the path is not valid UTF-8"));
        };
        let mut args = args.clone();
        args.insert("path".into(), Value::String(rewritten.to_owned()));
        Verdict::Allow(Value::Object(args))
    }
}

fn shell(input: &Value, workspace: &Workspace) -> Verdict {
    let Some(command) = input.get("command").and_then(Value::as_str) else {
        return boundary("shell call without a command");
    };
    match classify(command) {
        Safety::ReadOnly => {
            let scope = check_scope(command, workspace);
            if scope.in_scope() {
                Verdict::Allow(input.clone())
            } else {
                boundary(format!(
                    "shell command {} needs the person: {}",
                    short(command),
                    scope.problems().join("; ")
                ))
            }
        }
        Safety::Write => boundary(format!("shell command writes: {}", short(command))),
        Safety::Unknown => boundary(format!(
            "shell command not provably read-only: {}",
            short(command)
        )),
    }
}

/// The first line of a command, cut to a readable length.
fn short(command: &str) -> String {
    const MAX: usize = 60;
    let line = command.trim().lines().next().unwrap_or("");
    let mut out: String = line.chars().take(MAX).collect();
    if out.len() < command.trim().len() {
        out.push('…');
    }
    format!("`{out}`")
}

/// The tools a speculation runs, behind [`ToolGate`] (which rewrites their paths):
/// `read_file` scoped to the overlay and the workspace roots; `write_file`, `edit` and
/// `delete_file` (offered so the tool list stays the main loop's, always a boundary)
/// scoped to the overlay directory alone, so even an ungated call cannot touch the real
/// tree; `ls`, `glob` and `grep` that merge the overlay over the real tree; `shell` in
/// `workspace`, the real one (only read-only commands get through the gate);
/// `web_fetch` (offered so the tool list stays the main loop's, always a boundary);
/// `update_plan`, which touches nothing.
pub fn speculation_tool_server(workspace: Arc<Workspace>, overlay: Arc<OverlayFs>) -> ToolServer {
    let pick = |scope: &Arc<Workspace>, names: &[&str]| {
        saki_tools::builtin_tools(scope.clone())
            .into_iter()
            .filter(|t| names.contains(&t.name()))
            .collect::<Vec<Arc<dyn Tool>>>()
    };
    let tools = pick(overlay.read_scope(), &["read_file"])
        .into_iter()
        .chain(pick(
            overlay.write_scope(),
            &["write_file", "edit", "delete_file"],
        ))
        .chain(pick(
            &workspace,
            &["shell", "web_fetch", saki_tools::plan::TOOL_NAME],
        ))
        .chain({
            // Run and capped as the real ones are (`ls` off the runtime threads).
            let cap = workspace.output_cap();
            let views: [Arc<dyn Tool>; 3] = [
                Arc::new(OverlayLs::new(overlay.clone())),
                Arc::new(OverlayGlob::new(overlay.clone())),
                Arc::new(OverlayGrep::new(overlay)),
            ];
            views.map(|tool| saki_tools::capped::wrap(tool, cap))
        });
    let mut server = ToolServer::new();
    for tool in tools {
        // Names are distinct by construction.
        if let Err(e) = server.register(tool) {
            tracing::error!(error = %e, "speculation tool server");
        }
    }
    server
}

/// What a gated call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatedCall {
    Ran(Result<ToolOutput, ToolError>),
    Boundary(String),
}

/// [`ToolGate`] and [`speculation_tool_server`] together: check, rewrite, run.
pub struct SpeculationTools {
    gate: ToolGate,
    server: ToolServer,
}

impl SpeculationTools {
    pub fn new(mode: ApprovalMode, overlay: Arc<OverlayFs>) -> Self {
        Self {
            server: speculation_tool_server(overlay.workspace().clone(), overlay.clone()),
            gate: ToolGate::new(mode, overlay),
        }
    }

    pub fn gate(&self) -> &ToolGate {
        &self.gate
    }

    pub fn server(&self) -> &ToolServer {
        &self.server
    }

    /// Checks the call and runs it if allowed; `input_json` as the model wrote it.
    pub async fn call(&self, name: &str, input_json: &str, ctx: ToolExecutionContext) -> GatedCall {
        match self.gate.check(name, input_json) {
            GateDecision::Allow { input } => {
                self.gate.mark_unasked(name, &ctx.call_id);
                GatedCall::Ran(self.server.call_tool(name, &input, ctx).await)
            }
            GateDecision::Boundary { reason } => GatedCall::Boundary(reason),
        }
    }
}

#[cfg(test)]
mod tests;
