#!/usr/bin/env bash
# Everyday tasks against a real small model: saki's task suite (outside the fast CI path).
#
#   scripts/e2e-tasks.sh [--kinds own,tagless] [--halves tune,held] [--via base-url|llamacpp|local]
#                        [--only task1,task2] [--codex PATH] [--server local|stock] [--git]
#                        [--events DIR] [-- SAKI_ARGS...]
#
# Runs the 60 tasks of scripts/e2e/task_list.py (questions about files, edits, fixes
# checked by running the code, several files and formats, trees a level or two deep), split into a tuning half and
# a held-out half whose results are printed only as totals, with Qwen2.5-Coder-0.5B
# on llama.cpp's server (xllamacpp, stock sampling), reached by a bare --base-url (or
# --provider llamacpp, or a server `saki --local` starts per task: --via local, own template
# only), once with the model's own chat template ("own") and
# once with a template whose tool calls have no <tool_call> tags ("tagless",
# scripts/e2e/qwen-tools.jinja). Each task is checked on the answer and on the files.
# Prints PASS/FAIL per tuning task, totals per half and times; exits 1 when a half passes
# under 80%.
#
# What saki does for small models, and the figures of each measure: docs/small-models.md.
#
# saki's default `tool_calling = "auto"` offers this 0.5B model its tools in the prompt, so
# neither template's tool format is used and both kinds see the same prompt. To measure
# the templates' own tool formats, run with a config that sets it to native:
#   XDG_CONFIG_HOME=DIR scripts/e2e-tasks.sh   (DIR/saki/config.toml:
#   [providers.llamacpp] tool_calling = "native")
#
# --server stock starts the server as `llama-server -m MODEL` would with no options (four
# slots sharing a unified KV cache of 4096 tokens) instead of with saki --local's settings
# (one slot, 16384 tokens).
#
# --git makes each task's workspace a git repository with its files committed on branch
# main, as a person's workspace most often is (saki's system prompt then names the branch).
#
# --events DIR keeps each tuning task's `saki exec --json` events in DIR/KIND/TASK.jsonl
# (the held-out half's are never kept).
#
# --codex PATH runs Codex CLI (`codex exec --json`, approval never, its workspace-write
# sandbox) instead of saki, on the same server over its Responses API, for comparison
# (`npm install @openai/codex` puts it in node_modules/.bin/codex).
#
# Environment: SAKI_E2E_CACHE, SAKI_BIN, CARGO_TARGET_DIR as for scripts/demo.sh.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/e2e-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e-common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/qwen-model.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/qwen-model.sh"

LOG_TAG=e2e-tasks
MODE=check

main() {
  local kinds="own,tagless" only="" halves="tune,held" via="base-url" codex="" server=local
  local extra=() git=() events=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      -h | --help) usage; return 0 ;;
      --kinds) kinds="$2"; shift 2 ;;
      --only) only="$2"; shift 2 ;;
      --halves) halves="$2"; shift 2 ;;
      --via) via="$2"; shift 2 ;;
      --codex) codex="$2"; via=codex; shift 2 ;;
      --server) server="$2"; shift 2 ;;
      --git) git=(--git); shift ;;
      --events) events=(--events "$2"); shift 2 ;;
      --) shift; extra=("$@"); break ;;
      *) usage >&2; die "unknown option: $1" ;;
    esac
  done
  install_traps
  install_model
  resolve_saki
  # saki installs llama.cpp's prebuilt server on first use of --local; a run on a
  # non-model file makes it do only that, then fails on the file, as expected.
  local python="${XDG_CACHE_HOME:-$HOME/.cache}/saki/llamacpp/venv/bin/python"
  if ! "$python" -c "import xllamacpp" 2>/dev/null; then
    say "installing llama.cpp's prebuilt server (xllamacpp) with saki --local"
    "$SAKI" exec --local "$MODEL_FILE" --max-turns 1 "Say ok." >/dev/null 2>&1 </dev/null || true
    "$python" -c "import xllamacpp" || die "xllamacpp is not installed in $python"
  fi
  local saki_args=()
  for a in "${extra[@]}"; do saki_args+=(--saki-arg "$a"); done
  python3 "$REPO/scripts/e2e/tasks.py" --saki "$SAKI" --model "$MODEL_FILE" \
    --python "$python" --tagless-template "$REPO/scripts/e2e/qwen-tools.jinja" \
    --workspace "$CACHE/tasks-workspace" --results "$CACHE/tasks-results.json" \
    --kinds "$kinds" --only "$only" --halves "$halves" --via "$via" \
    --codex "$codex" --server "$server" "${git[@]}" "${events[@]}" "${saki_args[@]}"
}

main "$@"; exit
