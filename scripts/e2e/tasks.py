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

SERVER = r"""
import signal, sys, xllamacpp
p = xllamacpp.CommonParams()
p.model.path = sys.argv[1]
p.port = int(sys.argv[2])
p.n_ctx = 16384
p.use_jinja = True
p.endpoint_props = True
p.model_alias = "local"
p.n_parallel = 1
p.sampling.temp = 0.0  # as saki --local starts it
if len(sys.argv) > 3:
    p.chat_template = open(sys.argv[3]).read()
server = xllamacpp.Server(p)
print("listening", server.listening_address, flush=True)
signal.sigwait({signal.SIGTERM, signal.SIGINT})
"""


def read(ws, name):
    try:
        with open(os.path.join(ws, name), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


# (name, files, prompt, check(ws, answer) -> error or None)
TASKS = [
    (
        "read-word",
        {"NOTE.txt": "The secret word is MANGO.\n"},
        "Read NOTE.txt and tell me the secret word.",
        lambda ws, a: None if "mango" in a.lower() else "answer lacks MANGO",
    ),
    (
        "find-definition",
        {
            "src/util.py": "def helper():\n    return 1\n",
            "src/config.py": "import os\n\ndef parse_config(path):\n    return {}\n",
            "src/main.py": "from config import parse_config\n",
        },
        "Which file defines the function parse_config?",
        lambda ws, a: None if "config.py" in a else "answer lacks config.py",
    ),
    (
        "create-file",
        {},
        "Create a file hello.txt containing the text: hello world",
        lambda ws, a: None
        if (read(ws, "hello.txt") or "").strip() == "hello world"
        else "hello.txt is %r" % read(ws, "hello.txt"),
    ),
    (
        "change-value",
        {"config.json": '{\n  "name": "app",\n  "port": 8080\n}\n'},
        "In config.json, change the port to 9090.",
        lambda ws, a: None
        if json.loads(read(ws, "config.json") or "{}").get("port") == 9090
        else "config.json is %r" % read(ws, "config.json"),
    ),
    (
        "count-lines",
        {"data.csv": "".join("row%d,%d\n" % (i, i * i) for i in range(17))},
        "How many lines does data.csv have?",
        lambda ws, a: None if "17" in a else "answer lacks 17",
    ),
    (
        "list-directory",
        {"docs/intro.md": "# Intro\n", "docs/usage.md": "# Usage\n", "docs/faq.md": "# FAQ\n"},
        "List the files in the docs directory.",
        lambda ws, a: None
        if all(n in a for n in ("intro.md", "usage.md", "faq.md"))
        else "answer lacks a docs file",
    ),
    (
        "append-line",
        {"TODO.md": "# TODO\n- write tests\n"},
        "Append the line '- buy milk' to TODO.md.",
        lambda ws, a: None
        if (read(ws, "TODO.md") or "").rstrip().endswith("- buy milk")
        and "- write tests" in (read(ws, "TODO.md") or "")
        else "TODO.md is %r" % read(ws, "TODO.md"),
    ),
    (
        "replace-word",
        {"README.md": "The colour of the sky.\nA colour chart.\n"},
        "In README.md, replace every 'colour' with 'color'.",
        lambda ws, a: None
        if (read(ws, "README.md") or "") == "The color of the sky.\nA color chart.\n"
        else "README.md is %r" % read(ws, "README.md"),
    ),
    (
        "read-version",
        {"package.json": '{"name": "web", "version": "3.14.2", "private": true}\n'},
        "What version is in package.json?",
        lambda ws, a: None if "3.14.2" in a else "answer lacks 3.14.2",
    ),
    (
        "delete-file",
        {"tmp.log": "noise\n", "keep.txt": "keep\n"},
        "Delete the file tmp.log.",
        lambda ws, a: None
        if read(ws, "tmp.log") is None and read(ws, "keep.txt") == "keep\n"
        else "tmp.log still there or keep.txt touched",
    ),
    (
        "run-program",
        {"calc.py": "print(6 * 7)\n"},
        "Run calc.py with python3 and tell me what it prints.",
        lambda ws, a: None if "42" in a else "answer lacks 42",
    ),
    (
        "grep-count",
        {
            "src/a.py": "# TODO: one\nx = 1\n# TODO: two\n",
            "src/b.py": "y = 2\n# TODO: three\n",
        },
        "How many TODO comments are there in the src directory?",
        lambda ws, a: None if "3" in a or "three" in a.lower() else "answer lacks 3",
    ),
]


# Tasks that ask only a question: passing also means every file is left as it was (a model
# that "answers" by rewriting calc.py to print 42 has not passed).
QUESTIONS = {"read-word", "find-definition", "count-lines", "list-directory", "read-version",
             "run-program", "grep-count"}


def changed_files(ws, files):
    return [n for n, body in files.items() if read(ws, n) != body]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(python, model, template, log):
    port = free_port()
    args = [python, "-c", SERVER, model, str(port)] + ([template] if template else [])
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


def prepare(ws, files):
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(ws)
    for name, body in files.items():
        path = os.path.join(ws, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(body)


def run_task(saki, port, ws, task, timeout, extra, events_dir=None):
    name, files, prompt, check = task
    prepare(ws, files)
    cmd = [saki, "exec", "--json", "--provider", "llamacpp", "--base-url",
           "http://127.0.0.1:%d/v1" % port, "-m", "local", "--approval", "yolo",
           "--max-turns", "10", "-C", ws] + extra + [prompt]
    start = time.time()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
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
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--saki-arg", action="append", default=[])
    ap.add_argument("--events", default="", help="a directory for each task's --json events")
    args = ap.parse_args()
    tasks = [t for t in TASKS if not args.only or t[0] in args.only.split(",")]
    results = {}
    failed_kind = False
    for kind in args.kinds.split(","):
        template = args.tagless_template if kind == "tagless" else None
        with open(args.results + "." + kind + ".server.log", "w") as log:
            proc, port = start_server(args.python, args.model, template, log)
            try:
                rows = []
                for task in tasks:
                    events_dir = None
                    if args.events:
                        events_dir = os.path.join(args.events, kind)
                        os.makedirs(events_dir, exist_ok=True)
                    row = run_task(args.saki, port, args.workspace, task, args.timeout,
                                   args.saki_arg, events_dir)
                    rows.append(row)
                    print("%-8s %-16s %-4s %6.1fs calls=%-28s %s" % (
                        kind, row["task"], "PASS" if row["ok"] else "FAIL", row["seconds"],
                        ",".join(c or "?" for c in row["calls"])[:28],
                        row["error"] or ""), flush=True)
                results[kind] = rows
            finally:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
        passed = sum(r["ok"] for r in rows)
        total_time = sum(r["seconds"] for r in rows)
        print("%-8s total: %d/%d passed (%.0f%%), %.0f s" % (
            kind, passed, len(rows), 100.0 * passed / max(1, len(rows)), total_time), flush=True)
        failed_kind |= passed < 0.8 * len(rows)
    with open(args.results, "w") as f:
        json.dump(results, f, indent=1)
    sys.exit(1 if failed_kind else 0)


if __name__ == "__main__":
    main()
