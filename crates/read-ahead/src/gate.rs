//! The speculation tool gate: which calls a speculation may run, with their paths
//! rewritten through the overlay, and where it must stop (a boundary).
//!
//! | tool | action |
//! | --- | --- |
//! | `read_file`, `ls`, `glob`, `grep` | allow; `path` made canonical (the tools see the overlay through their `Fs`, `view.rs`) |
//! | `edit`, `write_file` | `auto-edit` / `yolo`: allow, `path` made canonical, the overlay's copy made (the tools write it through their `Fs`); `default` / `plan`, or a sensitive file (`.git/`, `.saki/`, ...): boundary |
//! | `shell` | proven read-only and in scope: allow (the read-only sandbox), in any mode; in `auto-edit` / `yolo`, any other command in scope that needs no network: allow in an overlay of the workspace (`overlay: true`); else a named boundary (`network`, `out_of_scope`, `overlay_unavailable`, `approval_mode`) |
//! | `update_plan` | allow: it only shows a checklist, and its call is history like any other |
//! | `lsp` | allow in every mode (it only asks the language servers); `path`, when given, made canonical; the servers are shown the overlay's text of the files it holds and the disk's again after each operation (`speculation_tool_server`) |
//! | MCP tools (`mcp__…`), whatever their annotations and the mode | boundary |
//! | `web_fetch`, `agent`, `skill`, `remember`, `ask_user`, `exit_plan_mode` and unknown tools | boundary |
//!
//! A path that cannot be rewritten (outside the workspace, a directory, ...) is a
//! boundary, not a tool error: the speculation stops where the real run would need
//! the person.

use crate::overlay::OverlayFs;
use crate::view::OverlayView;
use saki_llm_worker::{Tool, ToolError, ToolExecutionContext, ToolOutput, ToolServer};
use saki_shell_safety::{check_scope, classify, Safety};
use saki_tools::{ApprovalMode, Workspace};
use serde_json::Value;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    /// Run the call with this input JSON (paths rewritten); `overlay`: a shell command
    /// not proven read-only, which runs in an overlay of the workspace.
    Allow { input: String, overlay: bool },
    /// Stop the speculation before this call.
    Boundary { reason: String, kind: BoundaryKind },
}

/// Why a speculation stopped where it did, for scripts (`speculation.boundary`'s
/// `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundaryKind {
    /// The call needs the network (a package install, `git fetch`, `curl`, web tools).
    Network,
    /// It writes (or wrote) a file that makes tools run code: `.git/`, `.saki/`, ...
    SensitivePath,
    /// It names paths outside the workspace, or reads the environment.
    OutOfScope,
    /// A command failed because the sandbox stopped it; it runs for real after accept.
    SandboxDenied,
    /// Commands cannot run in an overlay here (the kernel refused the namespace or the
    /// mount, or there is no sandbox helper).
    OverlayUnavailable,
    /// The approval mode keeps it for the person (a write in `default` or `plan`, a tool
    /// that needs the person whatever the mode).
    ApprovalMode,
    /// A limit: a loop, too many turns or items, an answer that is no answer, a result
    /// only the main loop may judge, a change accept cannot apply yet.
    Limit,
}

impl BoundaryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BoundaryKind::Network => "network",
            BoundaryKind::SensitivePath => "sensitive_path",
            BoundaryKind::OutOfScope => "out_of_scope",
            BoundaryKind::SandboxDenied => "sandbox_denied",
            BoundaryKind::OverlayUnavailable => "overlay_unavailable",
            BoundaryKind::ApprovalMode => "approval_mode",
            BoundaryKind::Limit => "limit",
        }
    }
}

/// A decision before it is turned into JSON. What runs is always the parsed value the
/// gate checked, re-serialized, never the model's bytes: with a duplicated key the
/// tool's parser could otherwise see a different value than the gate did.
enum Verdict {
    Allow(Value),
    InOverlay(Value),
    Boundary(BoundaryKind, String),
}

fn boundary(reason: impl Into<String>) -> Verdict {
    Verdict::Boundary(BoundaryKind::ApprovalMode, reason.into())
}

fn boundary_of(kind: BoundaryKind, reason: impl Into<String>) -> Verdict {
    Verdict::Boundary(kind, reason.into())
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
    /// The overlay the gate writes into.
    pub fn overlay(&self) -> &Arc<OverlayFs> {
        &self.overlay
    }

    /// Says that the allowed call `call_id` runs with nobody asked: a shell command then
    /// gets the read-only sandbox, whatever the classifier thought of it, or, when
    /// `overlay`, the overlay's (its writes land in the speculation's directory). Every
    /// speculated call is unasked. False when the overlay cannot be had.
    pub fn mark_unasked(&self, name: &str, call_id: &str, overlay: bool) -> bool {
        if name != "shell" {
            return true;
        }
        let Some(runtime) = self.overlay.workspace().shell_runtime() else {
            return !overlay;
        };
        if !overlay {
            runtime.mark_unasked(call_id);
            return true;
        }
        match self.overlay.command_mount() {
            Ok(mount) => runtime.mark_speculated(call_id, mount),
            Err(e) => {
                tracing::debug!(error = %e, "no overlay mount for a speculated command");
                false
            }
        }
    }

    /// The decision for a call, its arguments as the model wrote them or as the schema
    /// check repaired them. Arguments the gate cannot read are a boundary: it cannot
    /// tell where they lead.
    pub fn check(&self, name: &str, input_json: &str) -> GateDecision {
        let verdict = match serde_json::from_str::<Value>(input_json) {
            Ok(input) => self.decide(name, &input),
            Err(_) => boundary(format!("{name} arguments are not valid JSON")),
        };
        match verdict {
            Verdict::Allow(input) => GateDecision::Allow {
                input: input.to_string(),
                overlay: false,
            },
            Verdict::InOverlay(input) => GateDecision::Allow {
                input: input.to_string(),
                overlay: true,
            },
            Verdict::Boundary(kind, reason) => {
                tracing::debug!(tool = name, reason, "speculation boundary");
                GateDecision::Boundary { reason, kind }
            }
        }
    }

    fn decide(&self, name: &str, input: &Value) -> Verdict {
        match name {
            "read_file" => self.rewrite(name, input, PathUse::Read, true),
            "ls" | "glob" | "grep" => self.rewrite(name, input, PathUse::View, false),
            // Read-only: it asks the servers, which are shown the overlay's text
            // (`speculation_tool_server`). Without a path it asks about every file.
            saki_tools::code_intel::TOOL_NAME => self.rewrite(name, input, PathUse::Read, false),
            "edit" | "write_file" => match self.sensitive(input) {
                Some(reason) => boundary_of(BoundaryKind::SensitivePath, reason),
                None => match self.mode {
                    ApprovalMode::AutoEdit | ApprovalMode::Yolo => {
                        self.rewrite(name, input, PathUse::Write, true)
                    }
                    ApprovalMode::Default | ApprovalMode::Plan => {
                        boundary(format!("{name} needs approval in {} mode", self.mode))
                    }
                },
            },
            "shell" => self.shell(input),
            saki_tools::plan::TOOL_NAME => Verdict::Allow(input.clone()),
            // The overlay records writes only; a deletion waits for the person.
            "delete_file" => boundary("delete_file is not run ahead".to_owned()),
            "web_fetch" | "web_search" => boundary_of(
                BoundaryKind::Network,
                format!("{name} needs network access, which the person must allow"),
            ),
            // A server's "read-only" is its own word, and its effects are outside the
            // overlay: nothing written before accept cannot be promised for it.
            _ if name.starts_with(saki_tools::mcp_approval::MCP_PREFIX) => boundary(format!(
                "{name} is an MCP tool: it acts outside the overlay"
            )),
            "agent" | "skill" | "memory" | "remember" | "ask_user" | "todo_write"
            | "exit_plan_mode" => boundary(format!("{name} needs the person")),
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
        // A path the model copied from a result that named the overlay itself means the
        // workspace file it stands for.
        let path = &self.overlay.workspace_path(path);
        // The path the tool gets is the canonical real one the gate checked; the
        // tools' `Fs` (the overlay view) decides where it is read or written. A write
        // makes the overlay's copy here, so the tool reads and changes that copy.
        let resolved = match use_ {
            PathUse::Read | PathUse::View => self.overlay.resolve_view(path),
            PathUse::Write => self
                .overlay
                .resolve_write(path)
                .and_then(|_| self.overlay.resolve_view(path)),
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

impl ToolGate {
    /// A command proven read-only and in scope runs as it is (in the read-only
    /// sandbox). In `auto-edit` and `yolo`, where writes go to the overlay anyway, any
    /// other command in scope that needs no network runs in an overlay of the workspace;
    /// everything else is a boundary, named.
    fn shell(&self, input: &Value) -> Verdict {
        let Some(command) = input.get("command").and_then(Value::as_str) else {
            return boundary("shell call without a command");
        };
        // It would outlive the speculation, and its effects are outside the overlay.
        if input.get("background").and_then(Value::as_bool) == Some(true) {
            return boundary(format!(
                "background command {} is not run ahead",
                short(command)
            ));
        }
        let workspace = self.overlay.workspace();
        let scope = check_scope(command, workspace);
        let safety = classify(command);
        if safety == Safety::ReadOnly && scope.in_scope() {
            return Verdict::Allow(input.clone());
        }
        if !matches!(self.mode, ApprovalMode::AutoEdit | ApprovalMode::Yolo) {
            return boundary(format!(
                "shell command {} needs approval in {} mode",
                short(command),
                self.mode
            ));
        }
        if let Some(what) = crate::network::needs_network(command) {
            return boundary_of(
                BoundaryKind::Network,
                format!(
                    "shell command {} needs the network ({what})",
                    short(command)
                ),
            );
        }
        if !scope.in_scope() {
            return boundary_of(
                BoundaryKind::OutOfScope,
                format!(
                    "shell command {} needs the person: {}",
                    short(command),
                    scope.problems().join("; ")
                ),
            );
        }
        let overlay_ok = workspace
            .shell_runtime()
            .is_some_and(|r| r.speculation_overlay());
        if !overlay_ok {
            return boundary_of(
                BoundaryKind::OverlayUnavailable,
                format!(
                    "shell command {} writes, and commands cannot run in an overlay here",
                    short(command)
                ),
            );
        }
        Verdict::InOverlay(input.clone())
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

/// `workspace` as a speculation's file tools see it: its files are the overlay's merged
/// tree (language servers are reached through the view, not the workspace).
pub fn seen_workspace(workspace: &Workspace, view: Arc<OverlayView>) -> Arc<Workspace> {
    Arc::new(workspace.with_fs(view).without_code_intel())
}

/// The tools a speculation runs, behind [`ToolGate`] (which checks their paths): the
/// real file tools (`read_file`, `write_file`, `edit`, `delete_file`, `ls`, `glob`,
/// `grep`) on a copy of the workspace whose `Fs` is the overlay view, so they read the
/// merged tree and can write nothing but the overlay, even for a call that skipped the
/// gate (`delete_file` is offered so the tool list stays the main loop's; the gate makes
/// it a boundary and the view refuses it); `shell` in `workspace`, the real one (the
/// gate marks what it lets through for the read-only sandbox or the overlay's);
/// `web_fetch` (offered, always a boundary); `update_plan`, which touches nothing.
/// Language servers, when the session has them, are shown the overlay's text.
pub fn speculation_tool_server(workspace: Arc<Workspace>, overlay: Arc<OverlayFs>) -> ToolServer {
    const FILE_TOOLS: &[&str] = &[
        "read_file",
        "write_file",
        "edit",
        "delete_file",
        "ls",
        "glob",
        "grep",
    ];
    let view = Arc::new(OverlayView::new(overlay));
    let seen = seen_workspace(&workspace, view.clone());
    let mut files: Vec<Arc<dyn Tool>> = saki_tools::builtin_tools(seen)
        .into_iter()
        .filter(|t| FILE_TOOLS.contains(&t.name()))
        .collect();
    if let Some(code_intel) = workspace.code_intel() {
        files = saki_tools::with_code_intel(
            files,
            code_intel.as_ref(),
            Some(view),
            workspace.output_cap(),
        );
    }
    let tools =
        files.into_iter().chain(
            saki_tools::builtin_tools(workspace)
                .into_iter()
                .filter(|t| {
                    [
                        "shell",
                        "shell_output",
                        "shell_kill",
                        "web_fetch",
                        saki_tools::plan::TOOL_NAME,
                    ]
                    .contains(&t.name())
                }),
        );
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
            GateDecision::Allow { input, overlay } => {
                if !self.gate.mark_unasked(name, &ctx.call_id, overlay) {
                    return GatedCall::Boundary("no overlay for the command".into());
                }
                GatedCall::Ran(self.server.call_tool(name, &input, ctx).await)
            }
            GateDecision::Boundary { reason, .. } => GatedCall::Boundary(reason),
        }
    }
}

#[cfg(test)]
mod tests;
