# shellcheck shell=bash
# Shared code of the end-to-end scripts that run saki against a real local LLM server
# (scripts/demo.sh, scripts/e2e-tools.sh). Sourced, never run, right after the caller's
# `set -euo pipefail`:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e-common.sh"
#
# Sourcing sets:
#   REPO             the repository root
#   CACHE            $SAKI_E2E_CACHE, default ~/.cache/saki-e2e
#   SAKI_TIMEOUT     $SAKI_E2E_TIMEOUT, default 300: seconds allowed for a checked saki run
#   SERVER_PID PORT SAKI SAKI_CMD VERDICT_PRINTED   run state, empty (0) until set below
#
# The caller sets, before using the functions that read them:
#   LOG_TAG          the tag of progress messages: "[LOG_TAG] ..." (say, die)
#   SERVER_LOG       the file launch_server sends the server's output to
#   MODEL_ALIAS      the model name saki asks the server for (set_saki_cmd)
#   FAIL_EARLY       the FAIL line on_exit prints when the script fails before a verdict
#                    (a PASS/FAIL line) was printed; empty (the default): none
# and may define on_exit_hook, a function on_exit runs after stopping the server.
#
# Provides:
#   say MSG...               progress message to stderr (stdout is for saki or the verdict)
#   die MSG...               say "ERROR: MSG" and exit 1
#   usage                    the caller's header comment: line 2 up to its first non-comment line
#   make_venv DIR            python3 -m venv DIR, or die with a hint
#   has_marker FILE ID       whether FILE (an install marker) holds exactly ID
#   write_marker FILE ID     record ID in FILE
#   resolve_saki             SAKI := $SAKI_BIN, or the saki-cli binary cargo builds
#   set_saki_cmd [ARG...]    SAKI_CMD := saki exec against the server on PORT, then ARGs
#   free_port                print a free TCP port on 127.0.0.1
#   launch_server LABEL CMD...   start CMD (a server on PORT) in the background; SERVER_PID
#   wait_for_server PATH SECONDS LOG_LINES EXITED_MSG TIMEOUT_MSG
#                            wait until GET PATH answers; else show the log and exit 1
#   stop_server              end the server, if one runs (TERM, then KILL after 5 s)
#   run_saki_check EVENTS CHECK_PY [PY_ARG...] -- CMD...
#                            run saki with --json output into EVENTS and assert on the
#                            events with Python (see SAKI_EVENTS_PY)
#   verdict LINE             print the PASS/FAIL line to stdout and remember that it was
#   install_traps            EXIT/INT/TERM traps: the server dies on every exit (on_exit)

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC2034  # used by the callers
CACHE="${SAKI_E2E_CACHE:-$HOME/.cache/saki-e2e}"
SAKI_TIMEOUT="${SAKI_E2E_TIMEOUT:-300}"
# The script that sourced this file, for usage.
E2E_SCRIPT="${BASH_SOURCE[1]}"

SERVER_PID=""
PORT=""
SAKI=""
SAKI_CMD=() # saki exec with the provider flags, filled in once the server's port is known
VERDICT_PRINTED=0
FAIL_EARLY=""

say() { printf '[%s] %s\n' "$LOG_TAG" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

usage() { sed -n '2,${/^#/!q;s/^# \{0,1\}//;p;}' "$E2E_SCRIPT"; }

# --- setup ------------------------------------------------------------------

make_venv() {
  python3 -m venv "$1" || die "python3 -m venv failed (apt-get install python3-venv?)"
}

# An install step writes its marker last, so a half-finished install has none, and the
# marker records what was installed and how: any change of ID forces a clean reinstall.
has_marker() { [[ -f "$1" && "$(cat "$1")" == "$2" ]]; }
write_marker() { printf '%s' "$2" >"$1"; }

# --- saki -------------------------------------------------------------------

resolve_saki() {
  if [[ -n "${SAKI_BIN:-}" ]]; then
    [[ -x "$SAKI_BIN" ]] || die "SAKI_BIN=$SAKI_BIN is not an executable file"
    SAKI="$SAKI_BIN"
    return 0
  fi
  command -v cargo >/dev/null || die "cargo not found; install Rust or set SAKI_BIN=/path/to/saki"
  # cargo is incremental: when nothing changed this returns in about a second.
  say "building saki (cargo build --release -p saki-cli)"
  (cd "$REPO" && cargo build --release -p saki-cli) >&2 || die "cargo build failed"
  SAKI="${CARGO_TARGET_DIR:-$REPO/target}/release/saki"
  [[ -x "$SAKI" ]] || die "build succeeded but $SAKI is missing"
}

set_saki_cmd() {
  # shellcheck disable=SC2034  # used by the callers
  SAKI_CMD=("$SAKI" exec --provider llamacpp --base-url "http://127.0.0.1:$PORT/v1"
    --model "$MODEL_ALIAS" "$@")
}

# --- server -----------------------------------------------------------------

free_port() {
  # Let the kernel choose, so parallel runs and busy machines don't collide on a fixed port.
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# launch_server LABEL CMD [ARG...]: CMD must listen on 127.0.0.1:$PORT (take PORT from
# free_port first). Its output goes to SERVER_LOG; on_exit stops it.
launch_server() {
  local label=$1
  shift
  say "starting $label on 127.0.0.1:$PORT (log: $SERVER_LOG)"
  "$@" >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
}

# wait_for_server PATH SECONDS LOG_LINES EXITED_MSG TIMEOUT_MSG: polls GET PATH once a
# second until the server answers with a 2xx status ("server ready"). If the server exits
# first, or SECONDS pass, says EXITED_MSG or TIMEOUT_MSG, shows the server log on stderr
# (its last LOG_LINES lines; 0: all of it) and exits 1.
wait_for_server() {
  local path=$1 seconds=$2 log_lines=$3 exited_msg=$4 timeout_msg=$5 i
  for ((i = 0; i < seconds; i++)); do
    if curl -sf --max-time 2 "http://127.0.0.1:$PORT$path" >/dev/null; then
      say "server ready"
      return 0
    fi
    # Fail fast instead of waiting out the timeout if the server already crashed.
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      say "$exited_msg"
      show_server_log "$log_lines"
      exit 1
    fi
    sleep 1
  done
  say "$timeout_msg"
  show_server_log "$log_lines"
  exit 1
}

show_server_log() {
  if [[ $1 -eq 0 ]]; then
    cat "$SERVER_LOG" >&2
  else
    tail -n "$1" "$SERVER_LOG" >&2
  fi
}

# shellcheck disable=SC2317  # also reached through on_exit, the EXIT trap
stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    # Servers shut down gracefully on SIGTERM; don't let a stuck one outlive us.
    local i
    for ((i = 0; i < 50; i++)); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""
}

# --- checks -----------------------------------------------------------------

# Python that run_saki_check puts in front of each CHECK_PY: it imports json and sys and
# defines read_events(path), which returns saki's JSONL events as (line, event) pairs and
# a list of problems, one for each non-empty line that is not a JSON object with a "type".
SAKI_EVENTS_PY='
import json, sys

def read_events(path):
    events, bad = [], []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            bad.append(f"line {n} is not JSON: {line[:120]}")
            continue
        if not isinstance(ev, dict) or "type" not in ev:
            bad.append(f"line {n} has no \"type\": {line[:120]}")
            continue
        events.append((line, ev))
    return events, bad
'

# run_saki_check EVENTS CHECK_PY [PY_ARG...] -- CMD [ARG...]: runs CMD (a saki exec --json)
# under `timeout $SAKI_TIMEOUT` with its stdout in EVENTS, then the Python CHECK_PY (after
# SAKI_EVENTS_PY) with the arguments EVENTS PY_ARG...; CHECK_PY exits non-zero on a failed
# assertion. Returns 0 if saki exited 0 and the check passed; otherwise shows EVENTS on
# stderr and returns 1.
run_saki_check() {
  local events=$1 check_py=$2 rc=0 ok=1 py_args=()
  shift 2
  while [[ $# -gt 0 && $1 != -- ]]; do
    py_args+=("$1")
    shift
  done
  shift
  # stdin from /dev/null: CI has none, and saki must not wait for it.
  timeout "$SAKI_TIMEOUT" "$@" </dev/null >"$events" || rc=$?

  if [[ $rc -eq 124 ]]; then
    say "saki did not finish within $SAKI_TIMEOUT s"
    ok=0
  elif [[ $rc -ne 0 ]]; then
    say "saki exited with code $rc"
    ok=0
  fi
  python3 -c "$SAKI_EVENTS_PY$check_py" "$events" "${py_args[@]}" || ok=0
  [[ $ok -eq 1 ]] && return 0
  say "events saki printed ($events):"
  cat "$events" >&2
  return 1
}

verdict() {
  VERDICT_PRINTED=1
  echo "$1"
}

# --- exit -------------------------------------------------------------------

# shellcheck disable=SC2317  # called from the EXIT trap
on_exit() {
  local rc=$?
  stop_server
  if declare -F on_exit_hook >/dev/null; then
    on_exit_hook
  fi
  if [[ -n $FAIL_EARLY && $rc -ne 0 && $VERDICT_PRINTED -eq 0 ]]; then
    echo "$FAIL_EARLY"
  fi
}

install_traps() {
  # The trap, not the happy path, owns shutdown: the server must die on every exit.
  trap on_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
