#!/usr/bin/env bash
# What a speculation in flight costs the person's first token on a local server with one
# slot (issue 33's "never slower for the person": under 100 ms over no speculation).
#
#   scripts/bench-first-token.sh          start the server, run the benchmark, print figures
#
# Starts llama.cpp's server with the local Qwen model of scripts/demo.sh (downloaded on
# first use) and ONE slot, as `saki --local` does (llama-server on PATH with -np 1, else
# the prebuilt xllamacpp server saki installs into ~/.cache/saki/llamacpp), then runs
# `cargo bench -p saki-cli --bench first_token` against it: the person's time to first
# token with no speculation, and with a speculation cancelled by the person's prompt while
# the server reads its prompt and while it generates.
#
# Environment:
#   SAKI_E2E_CACHE     cache dir for the model (default: ~/.cache/saki-e2e)
#   SAKI_LLAMACPP_PY   the python with xllamacpp (default: ~/.cache/saki/llamacpp/venv/bin/python)
#   SAKI_BENCH_BATCH   the server's logical and physical batch (default: 256, as saki
#                      --local sets it; 0: llama.cpp's own, 2048 / 512); a cancel lands
#                      between batches
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/e2e-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e-common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/qwen-model.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/qwen-model.sh"

LOG_TAG="bench-first-token"
SERVER_LOG="${TMPDIR:-/tmp}/saki-bench-first-token-server.log"
FAIL_EARLY=""
CONTEXT=8192
BATCH="${SAKI_BENCH_BATCH:-256}"
[[ $BATCH == 0 ]] && BATCH=""
PY="${SAKI_LLAMACPP_PY:-$HOME/.cache/saki/llamacpp/venv/bin/python}"

# The server saki --local starts, from the same file, with one slot.
XLLAMACPP_SERVER="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/crates/engine/src/start/xllamacpp_server.py"

main() {
  case "${1:-}" in
    -h | --help) usage; return 0 ;;
    "") ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
  install_traps
  install_model
  PORT=$(free_port)
  if command -v llama-server >/dev/null; then
    launch_server "llama-server (1 slot)" llama-server -m "$MODEL_FILE" --host 127.0.0.1 \
      --port "$PORT" --jinja --alias "$MODEL_ALIAS" -np 1 -c "$CONTEXT" \
      ${BATCH:+-b "$BATCH" -ub "$BATCH"}
  elif [[ -x $PY ]]; then
    launch_server "xllamacpp (1 slot)" "$PY" "$XLLAMACPP_SERVER" "$MODEL_FILE" "$PORT" \
      "$CONTEXT" "$MODEL_ALIAS" --temp 0 ${BATCH:+--batch "$BATCH"}
  else
    die "no llama-server on PATH and no xllamacpp at $PY (run: saki exec --local MODEL once, or scripts/demo.sh)"
  fi
  wait_for_server /health 180 40 "the server exited" "the server did not become ready"
  (cd "$REPO" && SAKI_BENCH_BASE_URL="http://127.0.0.1:$PORT/v1" SAKI_BENCH_MODEL="$MODEL_ALIAS" \
    cargo bench -q -p saki-cli --bench first_token)
}

main "$@"
