"""Everyday one-line tasks for saki against a real local model (see scripts/e2e-tasks.sh).

Each task sets up a small workspace, runs `saki exec --json` with one prompt, and checks
both the answer and the files. The server is llama.cpp's (through xllamacpp), started
once per chat template kind: the model's own template, and a template whose tool calls
carry no <tool_call> tags (scripts/e2e/qwen-tools.jinja). All tasks share one workspace
path, so the system prompt is the same for every task and the server's prompt cache
keeps it between tasks.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The server `saki --local` starts, from the same file; sampling stays the server's stock
# default (no --temp): what saki sends decides it.
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates",
                      "engine", "src", "start", "xllamacpp_server.py")


from task_list import FIRST_SHAPES, QUESTIONS, TASKS, read  # noqa: E402  (beside this file)


def changed_files(ws, files):
    return [n for n, body in files.items() if read(ws, n) != body]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The server's settings: saki's own for `--local` (one slot, 16384 tokens), or what
# `llama-server -m MODEL` starts with when given no options (four slots sharing a
# unified KV cache of 4096 tokens).
SERVER_SETTINGS = {"local": ["16384", "local"], "stock": ["4096", "local", "--slots", "4"]}


def start_server(python, model, template, log, settings="local"):
    port = free_port()
    args = [python, SERVER, model, str(port)] + SERVER_SETTINGS[settings]
    args += ["--template", template] if template else []
    proc = subprocess.Popen(args, stdout=log, stderr=log, start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit("the server exited while starting; see its log")
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as r:
                if r.status == 200:
                    return proc, port
        except OSError:
            time.sleep(0.3)
    sys.exit("the server did not start within 180 s")


def prepare(ws, files, git=False):
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(ws)
    for name, body in files.items():
        path = os.path.join(ws, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(body)
    if git:
        # A person's workspace is most often a repository with its files committed: the
        # system prompt then names the branch and whether the tree is clean.
        git_env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                       GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
        for step in (["init", "-q", "-b", "main"], ["add", "-A"],
                     ["commit", "-q", "--allow-empty", "-m", "init"]):
            subprocess.run(["git"] + step, cwd=ws, env=git_env, check=True)


# How saki reaches the server: a bare `--base-url` (saki finds out what serves it), the
# server named with `--provider llamacpp`, or a server saki starts itself for each task
# with `--local MODEL.gguf` (the suite's own server then sits idle).
VIA = {
    "base-url": [],
    "llamacpp": ["--provider", "llamacpp"],
    "local": None,
    # Not saki: Codex CLI (`--codex PATH`) on the same server, for comparison.
    "codex": None,
}

CODEX_CONFIG = """model = "local"
model_provider = "llamacpp"
approval_policy = "never"
sandbox_mode = "workspace-write"

[model_providers.llamacpp]
name = "llamacpp"
base_url = "http://127.0.0.1:%d/v1"
wire_api = "responses"
"""


def codex_command(codex, port, ws, prompt):
    """`codex exec` on the suite's server, with a config of its own beside the workspace."""
    home = ws.rstrip("/") + "-codex-home"
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
        f.write(CODEX_CONFIG % port)
    env = dict(os.environ, CODEX_HOME=home)
    return [codex, "exec", "--json", "--skip-git-repo-check", "-C", ws, prompt], env


def run_task(saki, port, ws, task, timeout, extra, events_dir=None, via="base-url",
             model=None, codex=None, git=False):
    name, _half, files, prompt, check = task
    prepare(ws, files, git)
    env = None
    if via == "codex":
        cmd, env = codex_command(codex, port, ws, prompt)
    else:
        if via == "local":
            reach = ["--local", model]
        else:
            # No model named, as a person types it: saki takes the server's own.
            reach = VIA[via] + ["--base-url", "http://127.0.0.1:%d/v1" % port]
        cmd = [saki, "exec", "--json"] + reach + ["--approval", "yolo",
               "--max-turns", "10", "-C", ws] + extra + [prompt]
    start = time.time()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL, env=env)
        stdout, code = out.stdout, out.returncode
    except subprocess.TimeoutExpired as e:
        stdout, code = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
    elapsed = time.time() - start
    if events_dir:
        with open(os.path.join(events_dir, name + ".jsonl"), "w", encoding="utf-8") as f:
            f.write(stdout)
    text, calls, status, loops, recovered = [], [], None, 0, 0
    trace = []  # each call with its arguments and the start of its result
    for line in stdout.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        t, item = ev.get("type"), ev.get("item", {})
        if via == "codex":  # Codex's events: item.type is what saki calls item.kind
            if t == "item.completed" and item.get("type") == "agent_message":
                text.append(item.get("text", ""))
            elif t == "item.completed" and item.get("type") not in ("reasoning", "error", None):
                calls.append(item.get("type"))
            elif t in ("turn.completed", "turn.failed"):
                status = t
            continue
        if t == "item.completed" and item.get("kind") == "assistant_message":
            text.append(item.get("text", ""))
        elif t == "item.completed" and item.get("kind") == "tool_call":
            calls.append(item.get("name"))
            recovered += bool(item.get("recovered"))
            trace.append("%s %s" % (item.get("name"), item.get("arguments", "")[:120]))
        elif t == "item.completed" and item.get("kind") == "tool_result":
            trace.append("  -> %s: %s" % (item.get("status"), item.get("output", "")[:120]))
        elif t == "loop_detected":
            loops += 1
        elif t == "turn.completed":
            status = ev.get("status")
        elif t == "turn.failed":
            status = "failed: " + ev.get("error", {}).get("message", "")[:80]
    answer = "\n".join(text)
    try:
        error = check(ws, answer)
    except ValueError as e:  # a file the model broke (config.json no longer JSON)
        error = "checker: %s" % e
    if error is None and name in QUESTIONS and changed_files(ws, files):
        error = "changed %s" % ", ".join(changed_files(ws, files))
    if code not in (0,) and error is None:
        error = "exit %s" % code
    return {
        "task": name, "ok": error is None, "error": error, "seconds": round(elapsed, 1),
        "calls": calls, "recovered": recovered, "loops": loops, "status": status,
        "exit": code, "answer": answer[:2000], "trace": trace,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--saki", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--python", required=True, help="a python with xllamacpp")
    ap.add_argument("--tagless-template", required=True)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--kinds", default="own,tagless")
    ap.add_argument("--only", default="", help="comma-separated task names")
    ap.add_argument("--halves", default="tune,held", help="tune, held or both")
    ap.add_argument("--via", default="base-url", choices=sorted(VIA))
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--server", default="local", choices=sorted(SERVER_SETTINGS),
                    help="the server's settings: saki --local's, or llama-server's stock ones")
    ap.add_argument("--codex", default="", help="Codex CLI's binary, for --via codex")
    ap.add_argument("--saki-arg", action="append", default=[])
    ap.add_argument("--events", default="", help="a directory for each task's --json events")
    ap.add_argument("--git", action="store_true",
                    help="make each task's workspace a git repository with its files committed")
    args = ap.parse_args()
    halves = args.halves.split(",")
    tasks = [t for t in TASKS if (not args.only or t[0] in args.only.split(","))
             and t[1] in halves]
    results = {}
    failed_kind = False
    for kind in args.kinds.split(","):
        template = args.tagless_template if kind == "tagless" else None
        with open(args.results + "." + kind + ".server.log", "w") as log:
            proc, port = start_server(args.python, args.model, template, log, args.server)
            try:
                rows = []
                for task in tasks:
                    events_dir = None
                    # The held-out half's events and failures are not for reading while
                    # tuning: only its totals are printed.
                    if args.events and task[1] == "tune":
                        events_dir = os.path.join(args.events, kind)
                        os.makedirs(events_dir, exist_ok=True)
                    row = run_task(args.saki, port, args.workspace, task, args.timeout,
                                   args.saki_arg, events_dir, args.via, args.model,
                                   args.codex, args.git)
                    row["half"] = task[1]
                    rows.append(row)
                    if task[1] == "tune":
                        print("%-8s %-18s %-4s %6.1fs calls=%-28s %s" % (
                            kind, row["task"], "PASS" if row["ok"] else "FAIL", row["seconds"],
                            ",".join(c or "?" for c in row["calls"])[:28],
                            row["error"] or ""), flush=True)
                results[kind] = rows
            finally:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
        for half in halves:
            part = [r for r in rows if r["half"] == half]
            if not part:
                continue
            passed = sum(r["ok"] for r in part)
            total_time = sum(r["seconds"] for r in part)
            print("%-8s %-4s total: %d/%d passed (%.0f%%), %.0f s" % (
                kind, half, passed, len(part), 100.0 * passed / len(part), total_time),
                flush=True)
            # The first twelve tasks are the suite's first shapes; the later ones are
            # shapes added since (several files, runs that check a fix, structured files).
            first = [r for r in part if r["task"] in FIRST_SHAPES]
            later = [r for r in part if r["task"] not in FIRST_SHAPES]
            print("%-8s %-4s first shapes: %d/%d, later shapes: %d/%d" % (
                kind, half, sum(r["ok"] for r in first), len(first),
                sum(r["ok"] for r in later), len(later)), flush=True)
            failed_kind |= passed < 0.8 * len(part)
    tuning = {k: [r for r in rows if r["half"] == "tune"] for k, rows in results.items()}
    held = {k: [r for r in rows if r["half"] == "held"] for k, rows in results.items()}
    with open(args.results, "w") as f:
        json.dump(tuning, f, indent=1)
    with open(args.results + ".held", "w") as f:
        json.dump(held, f, indent=1)
    sys.exit(1 if failed_kind else 0)


if __name__ == "__main__":
    main()
