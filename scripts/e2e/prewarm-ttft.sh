#!/usr/bin/env bash
# Time to the first answer of a session's first prompt in the interactive UI, against a
# cold llama.cpp server, with and without prewarm (outside CI; needs tmux).
#
#   scripts/e2e/prewarm-ttft.sh [TYPING_SECONDS]     (default 15)
#
# For each of prewarm=true and prewarm=false: start a fresh server (empty prompt cache),
# open `saki` in tmux, "type" for TYPING_SECONDS, press Enter on a one-word prompt, and
# time until the answer word is on screen. The server's own log says how many prompt
# tokens it had to read for that request.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../lib/e2e-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/e2e-common.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/qwen-model.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/qwen-model.sh"
LOG_TAG=prewarm-ttft
TYPING="${1:-15}"
PYTHON="${XDG_CACHE_HOME:-$HOME/.cache}/saki/llamacpp/venv/bin/python"

# The server saki --local starts, from the same file; stock sampling.
SERVE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/crates/engine/src/start/xllamacpp_server.py"

measure() {
  local prewarm=$1 home port server_pid start now elapsed
  home="$(mktemp -d)"
  mkdir -p "$home/config/saki" "$home/ws"
  printf 'prewarm = %s\nsuggestions = false\n' "$prewarm" >"$home/config/saki/config.toml"
  port="$(free_port)"
  "$PYTHON" "$SERVE" "$MODEL_FILE" "$port" 16384 local >"$home/server.log" 2>&1 &
  server_pid=$!
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.2; done
  tmux new-session -d -s ttft -x 140 -y 40 \
    "cd $home/ws && env HOME=$home XDG_CONFIG_HOME=$home/config TERM=xterm-256color \
     $SAKI --provider llamacpp --base-url http://127.0.0.1:$port/v1 -m local --sandbox off"
  sleep "$TYPING"
  tmux send-keys -t ttft "Reply with exactly one word: BANANA" Enter
  start=$(date +%s.%N)
  while :; do
    # The prompt itself shows the word once; the answer makes it twice.
    if [[ $(tmux capture-pane -p -t ttft | grep -ci banana) -ge 2 ]]; then break; fi
    now=$(date +%s.%N)
    if (($(echo "$now - $start > 300" | bc))); then say "no answer within 300 s"; break; fi
    sleep 0.05
  done
  elapsed=$(echo "$(date +%s.%N) - $start" | bc)
  tmux kill-session -t ttft || true
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  local evals
  evals="$(grep -o 'prompt eval time = *[0-9.]* ms / *[0-9]* tokens' "$home/server.log" | tr '\n' ';')"
  printf 'prewarm=%-5s first answer after %.2f s; server prompt evals: %s\n' "$prewarm" "$elapsed" "$evals"
  rm -rf "$home"
}

install_model
resolve_saki
"$PYTHON" -c "import xllamacpp" 2>/dev/null || die "run scripts/demo.sh once first (installs xllamacpp)"
command -v tmux >/dev/null || die "tmux is required"
measure true
measure false
