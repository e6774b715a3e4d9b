#!/usr/bin/env bash
# End-to-end test of the interactive UI: the real `saki` binary in tmux against the mock
# provider. Types a prompt, watches the answer stream, waits for the suggestion, checks
# that Enter alone does not send it, then walks Tab, Enter, Tab, Enter over two accepted
# speculations with tool calls and reads them off the screen: each tool group under its
# own prompt.
# Usage: scripts/e2e-tui.sh   (needs tmux; builds the binaries first)
#        SAKI_E2E_SHOW=1 scripts/e2e-tui.sh   also prints the final screen
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tmux >/dev/null || { echo "e2e-tui: tmux is not installed" >&2; exit 1; }

cargo build -q -p saki-cli -p saki-testkit --bins
target="${CARGO_TARGET_DIR:-target}/debug"
saki="$(realpath "$target/saki")"
mock="$(realpath "$target/saki-mock-provider")"

work="$(mktemp -d)"
session="saki-e2e-$$"
# A server of its own, kept alive by an idle session: killing the session under test
# would otherwise end the server, and the next `new-session` could reach it while it
# exits ("server exited unexpectedly").
tm() { tmux -L "$session" "$@"; }
mock_pid=""
cleanup() {
    tm kill-server 2>/dev/null || true
    [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
tm new-session -d -s keeper "sleep 3600"

mkdir -p "$work/home" "$work/project"
echo "alpha" > "$work/project/a.txt"
cat > "$work/script.json" <<'JSON'
{"turns": [
  {"tool_calls": [{"id": "c1", "name": "ls", "arguments": {"path": "."}}]},
  {"text": "The folder holds **a.txt**, which says alpha. I can write a summary into notes.txt next.", "chunk_delay_ms": 60},
  {"text": "add notes.txt"},
  {"tool_calls": [{"id": "s1", "name": "write_file", "arguments": {"path": "notes.txt", "content": "alpha\n"}}]},
  {"text": "Added notes.txt with the summary."},
  {"text": "add todo.txt"},
  {"tool_calls": [{"id": "s2", "name": "write_file", "arguments": {"path": "todo.txt", "content": "- test\n"}}]},
  {"text": "Added todo.txt with one item."},
  {"text": "show both files"}
]}
JSON

"$mock" "$work/script.json" > "$work/mock.out" 2> "$work/mock.err" &
mock_pid=$!
for _ in $(seq 50); do [ -s "$work/mock.out" ] && break; sleep 0.1; done
url="$(head -1 "$work/mock.out")"
[ -n "$url" ] || { echo "e2e-tui: the mock provider did not start" >&2; cat "$work/mock.err" >&2; exit 1; }

tm new-session -d -s "$session" -x 110 -y 48 -c "$work/project" \
    "env HOME=$work/home XDG_CONFIG_HOME=$work/home/config TERM=xterm-256color \
     $saki --provider openai-compatible --base-url $url/v1 -m main --fast-model fast \
     --approval auto-edit; echo SAKI-EXITED-\$?; sleep 5"

screen() { tm capture-pane -p -t "$session"; }
fail() {
    echo "e2e-tui: FAILED: $1" >&2
    echo "----- screen -----" >&2
    screen >&2
    exit 1
}
# wait_for PATTERN SECONDS: polls the screen until PATTERN (grep -E) shows up.
wait_for() {
    local deadline=$((SECONDS + $2))
    while [ $SECONDS -lt $deadline ]; do
        screen | grep -Eq "$1" && return 0
        sleep 0.05
    done
    fail "did not see /$1/ within $2 s"
}

wait_for "/help for commands" 10
tm send-keys -t "$session" "what is in this folder?" Enter

# Streaming: the start of the answer shows before its end has arrived.
wait_for "The folder holds" 10
if screen | grep -q "notes.txt next"; then
    fail "the answer appeared all at once instead of streaming"
fi
echo "e2e-tui: saw the answer stream"
wait_for "notes.txt next" 10

# The suggestion appears as ghost text, and its speculation completes.
wait_for "› add notes.txt" 10
echo "e2e-tui: saw the suggestion"
wait_for "· ready" 10
[ ! -e "$work/project/notes.txt" ] || fail "the speculation wrote outside its overlay"

# Enter on an empty prompt sends nothing, also with the suggestion showing.
tm send-keys -t "$session" Enter
sleep 0.3
screen | grep -q "speculated ahead" && fail "Enter alone sent the suggestion"
screen | grep -q "⇥ tab" || fail "Enter dismissed the suggestion"
echo "e2e-tui: Enter alone does not send the suggestion"

# tab_enter WHAT: Tab puts the suggestion in the input, Enter sends it.
tab_enter() {
    tm send-keys -t "$session" Tab
    sleep 0.2
    screen | grep -q "⇥ tab" && fail "Tab did not fill $1 in"
    tm send-keys -t "$session" Enter
}
tab_enter "the first suggestion"
wait_for "speculated ahead: applied notes.txt" 5
wait_for "Added notes.txt with the summary." 5
[ "$(cat "$work/project/notes.txt")" = "alpha" ] || fail "notes.txt was not applied"
echo "e2e-tui: Tab, Enter accepted the first speculation"

# The pipelined suggestion shows, is speculated once shown, and is accepted the same way.
wait_for "› add todo.txt" 10
wait_for "· ready" 10
[ ! -e "$work/project/todo.txt" ] || fail "the second speculation wrote outside its overlay"
tab_enter "the pipelined suggestion"
wait_for "speculated ahead: applied todo.txt" 5
wait_for "Added todo.txt with one item." 5
wait_for "› show both files" 10
[ "$(cat "$work/project/todo.txt")" = "- test" ] || fail "todo.txt was not applied"
echo "e2e-tui: Tab, Enter accepted the second speculation; the next suggestion shows"

# Grouping: each speculation's tool row sits under its own prompt, in order.
line_of() { screen | grep -n -F -- "$1" | head -1 | cut -d: -f1; }
p1="$(line_of "› add notes.txt")"; w1="$(line_of "write_file notes.txt")"
p2="$(line_of "› add todo.txt")"; w2="$(line_of "write_file todo.txt")"
for v in "$p1" "$w1" "$p2" "$w2"; do [ -n "$v" ] || fail "a prompt or tool row is off the screen"; done
[ "$p1" -lt "$w1" ] && [ "$w1" -lt "$p2" ] && [ "$p2" -lt "$w2" ] \
    || fail "tool rows are not grouped under their prompts (lines $p1 $w1 $p2 $w2)"
[ "$(screen | grep -c -F "write_file todo.txt")" = "1" ] || fail "todo.txt's row is drawn twice"
echo "e2e-tui: each accepted speculation's tool group is under its own prompt"

[ -n "${SAKI_E2E_SHOW:-}" ] && screen
tm send-keys -t "$session" C-d
wait_for "SAKI-EXITED-0" 5
# One line at exit says what reading ahead did and cost.
wait_for "read-ahead: 2 accepted, [0-9]+ discarded, ~[0-9]+ s saved, [0-9.k]+ tokens" 5
echo "e2e-tui: the exit line sums up reading ahead"

# The conversation was saved: --resume --last brings it back.
tm kill-session -t "$session" 2>/dev/null || true
tm new-session -d -s "$session" -x 110 -y 32 -c "$work/project" \
    "env HOME=$work/home XDG_CONFIG_HOME=$work/home/config \
     $saki --base-url $url/v1 -m main --no-suggestions --resume --last; echo SAKI-EXITED-\$?; sleep 5"
wait_for "resumed session" 5
wait_for "› add notes.txt" 5
screen | grep -q "Added notes.txt with the summary." || fail "the resumed history is incomplete"
tm send-keys -t "$session" "/quit" Enter
wait_for "SAKI-EXITED-0" 5
echo "e2e-tui: --resume --last shows the saved conversation; /quit exits"

# A session that does not exist is an error before the UI opens.
tm kill-session -t "$session" 2>/dev/null || true
tm new-session -d -s "$session" -x 110 -y 10 -c "$work/project" \
    "env HOME=$work/home XDG_CONFIG_HOME=$work/home/config \
     $saki --base-url $url/v1 -m main --resume no-such-session; echo SAKI-EXITED-\$?; sleep 5"
wait_for "SAKI-EXITED-2" 5
screen | grep -q "no-such-session" || fail "the missing session was not named"
echo "e2e-tui: passed"
