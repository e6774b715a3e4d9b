#!/usr/bin/env bash
# End-to-end test of the MCP client: the real `saki` binary against the reference server
# `@modelcontextprotocol/server-everything` (from npm), over stdio and over streamable
# HTTP, with the mock provider as the model.
#
#   1. `saki mcp add` both servers, `saki mcp list --json`: both connected, with `echo`
#      and `get-sum`; `saki debug prompt-size` counts each.
#   2. `saki exec --approval yolo`: the model calls `echo` and `get-sum` on each server in
#      one batch; every result is the server's answer.
#   3. `saki exec` (default approval, which cannot ask): the read-only annotated `echo`
#      runs, `toggle-simulated-logging` (not read-only) is denied.
#
# Usage: scripts/e2e-mcp.sh   (needs node and npm; skipped cleanly without them)
# Environment:
#   SAKI_E2E_CACHE   where the server is installed (default: ~/.cache/saki-e2e)
#   SAKI_BIN         use this saki binary instead of the cargo-built one
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'e2e-mcp: %s\n' "$*" >&2; }
skip() { say "skipped: $*"; exit 0; }
fail() { say "FAILED: $*"; exit 1; }

command -v node >/dev/null || skip "node is not installed"
command -v npm >/dev/null || skip "npm is not installed"

# Pinned: the tool names and answers checked below are this version's.
PACKAGE="@modelcontextprotocol/server-everything@2026.8.31"
cache="${SAKI_E2E_CACHE:-$HOME/.cache/saki-e2e}/mcp-everything"
server_js="$cache/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [ ! -f "$cache/installed" ] || [ "$(cat "$cache/installed")" != "$PACKAGE" ]; then
    say "installing $PACKAGE into $cache"
    rm -rf "$cache" && mkdir -p "$cache"
    if ! npm install --no-audit --no-fund --silent --prefix "$cache" "$PACKAGE" >&2; then
        skip "npm could not install $PACKAGE"
    fi
    printf '%s' "$PACKAGE" > "$cache/installed"
fi
[ -f "$server_js" ] || fail "$server_js is missing after the install"

target="${CARGO_TARGET_DIR:-target}/debug"
if [ -n "${SAKI_BIN:-}" ]; then
    saki="$SAKI_BIN"
    cargo build -q -p saki-testkit --bins
else
    cargo build -q -p saki-cli -p saki-testkit --bins
    saki="$(realpath "$target/saki")"
fi
mock="$(realpath "$target/saki-mock-provider")"

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/home" "$work/project"
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/config"
cd "$work/project"

# --- the HTTP server ---------------------------------------------------------------
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
PORT="$port" node "$server_js" streamableHttp > "$work/http.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    grep -q "listening on port" "$work/http.log" && break
    sleep 0.1
done
grep -q "listening on port" "$work/http.log" || { cat "$work/http.log" >&2; fail "the HTTP server did not start"; }

# --- 1. configure and list ---------------------------------------------------------
"$saki" mcp add ev -- node "$server_js" stdio >/dev/null
"$saki" mcp add evhttp --url "http://127.0.0.1:$port/mcp" >/dev/null
"$saki" mcp list --json > "$work/list.json"
node - "$work/list.json" <<'JS' || fail "saki mcp list --json: $(cat "$work/list.json")"
const list = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
for (const name of ["ev", "evhttp"]) {
  const server = list.servers.find((s) => s.name === name);
  if (!server || server.state !== "connected") throw new Error(`${name} is not connected`);
  const tools = server.tools.map((t) => t.name);
  for (const tool of ["echo", "get-sum"]) {
    if (!tools.includes(`mcp__${name}__${tool}`)) throw new Error(`${name} has no ${tool}: ${tools}`);
  }
}
JS
say "saki mcp list: both servers connected, echo and get-sum listed"
"$saki" debug prompt-size > "$work/size.txt"
grep -q "^mcp ev: .* tools)$" "$work/size.txt" || fail "prompt-size: $(cat "$work/size.txt")"
grep -q "^mcp evhttp: .* tools)$" "$work/size.txt" || fail "prompt-size: $(cat "$work/size.txt")"
say "saki debug prompt-size: $(grep '^mcp ev:' "$work/size.txt")"

# --- 2. the model calls echo and get-sum on both servers ----------------------------
# run_exec SCRIPT APPROVAL: saki exec against the mock provider playing SCRIPT.
run_exec() {
    "$mock" "$1" --log "$work/requests.jsonl" > "$work/mock.out" 2> "$work/mock.err" &
    local mock_pid=$!
    pids+=("$mock_pid")
    for _ in $(seq 50); do [ -s "$work/mock.out" ] && break; sleep 0.1; done
    local url
    url="$(head -1 "$work/mock.out")"
    [ -n "$url" ] || fail "the mock provider did not start: $(cat "$work/mock.err")"
    "$saki" exec --json --approval "$2" --provider openai-compatible --base-url "$url/v1" \
        -m main "use the MCP tools" > "$work/events.jsonl" 2> "$work/exec.err" || true
    kill "$mock_pid" 2>/dev/null || true
}

# check_results EVENTS NAME=EXPECTED...: every named call's result (status: output).
check_results() {
    node - "$@" <<'JS'
const [file, ...wanted] = process.argv.slice(2);
const lines = require("fs").readFileSync(file, "utf8").split("\n").filter(Boolean);
const results = lines.map((l) => JSON.parse(l))
  .filter((e) => e.type === "item.completed" && e.item.kind === "tool_result")
  .map((e) => e.item);
for (const pair of wanted) {
  const [name, expected] = pair.split(/=(.*)/s);
  const found = results.find((r) => r.name === name);
  if (!found) throw new Error(`no result for ${name}; results: ${JSON.stringify(results)}`);
  const got = `${found.status}: ${found.output}`;
  if (!got.startsWith(expected)) throw new Error(`${name}: expected "${expected}", got "${got}"`);
}
JS
}

cat > "$work/calls.json" <<'JSON'
{"turns": [
  {"tool_calls": [
    {"id": "c1", "name": "mcp__ev__echo", "arguments": {"message": "hello over stdio"}},
    {"id": "c2", "name": "mcp__ev__get-sum", "arguments": {"a": 2, "b": 40}},
    {"id": "c3", "name": "mcp__evhttp__echo", "arguments": {"message": "hello over http"}},
    {"id": "c4", "name": "mcp__evhttp__get-sum", "arguments": {"a": 1.5, "b": 2}}
  ]},
  {"text": "Both servers answered."}
]}
JSON
run_exec "$work/calls.json" yolo
offered="$(node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
const tools = (JSON.parse(lines[0]).tools || []).map((t) => (t.function || t).name);
console.log(tools.filter((n) => n.startsWith("mcp__")).length);' "$work/requests.jsonl")"
[ "$offered" = 26 ] ||
    fail "saki exec offered $offered MCP tools, not 26 (is crates/cli/src/mcp_setup.rs wired into exec?): $(cat "$work/exec.err")"
check_results "$work/events.jsonl" \
    "mcp__ev__echo=success: Echo: hello over stdio" \
    "mcp__ev__get-sum=success: The sum of 2 and 40 is 42." \
    "mcp__evhttp__echo=success: Echo: hello over http" \
    "mcp__evhttp__get-sum=success: The sum of 1.5 and 2 is 3.5." \
    || fail "tool results (stderr: $(cat "$work/exec.err"))"
say "saki exec: echo and get-sum answered over stdio and streamable HTTP"

# --- 3. approval in default mode ------------------------------------------------------
cat > "$work/approval.json" <<'JSON'
{"turns": [
  {"tool_calls": [
    {"id": "a1", "name": "mcp__ev__echo", "arguments": {"message": "read-only runs"}},
    {"id": "a2", "name": "mcp__ev__toggle-simulated-logging", "arguments": {}}
  ]},
  {"text": "One ran, one was denied."}
]}
JSON
run_exec "$work/approval.json" default
check_results "$work/events.jsonl" \
    "mcp__ev__echo=success: Echo: read-only runs" \
    "mcp__ev__toggle-simulated-logging=denied: " \
    || fail "approval in default mode (stderr: $(cat "$work/exec.err"))"
say "saki exec --approval default: read-only echo ran, toggle-simulated-logging denied"
say "PASS"
