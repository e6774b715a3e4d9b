#!/usr/bin/env bash
# `saki acp` driven by a real third-party ACP client, acpx (from npm), against the mock
# provider: one prompt whose write is approved, one whose write is denied.
#
#   scripts/e2e-acp.sh            # builds saki, installs acpx into ~/.cache once
#   SAKI_BIN=path/to/saki scripts/e2e-acp.sh
#
# Exits non-zero when either run does not do what the person chose.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
if [[ -z "${SAKI_BIN:-}" ]]; then
    (cd "$root" && cargo build -q -p saki-cli -p saki-testkit --bins)
    SAKI_BIN=$target/debug/saki
fi
mock=$(dirname "$SAKI_BIN")/saki-mock-provider
[[ -x "$mock" ]] || (cd "$root" && cargo build -q -p saki-testkit --bins)

if ! command -v npm >/dev/null; then
    echo "warning: npm is missing; skipping scripts/e2e-acp.sh" >&2
    exit 0
fi
acpx_dir=${ACPX_DIR:-$HOME/.cache/saki-acpx}
acpx=$acpx_dir/node_modules/.bin/acpx
if [[ ! -x "$acpx" ]]; then
    mkdir -p "$acpx_dir"
    (cd "$acpx_dir" && npm install --silent --no-audit --no-fund acpx@0.19 >/dev/null)
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cat >"$work/script.json" <<'JSON'
{"turns":[{"tool_calls":[{"id":"c1","name":"write_file","arguments":"{\"path\":\"notes.txt\",\"content\":\"hello from acp\\n\"}"}]},{"text":"Done."}]}
JSON

# One run: a fresh mock server and workspace; prints acpx's transcript.
run() {
    local policy=$1 ws=$work/ws-$1 fifo=$work/hold-$1
    mkdir -p "$ws" "$work/home"
    mkfifo "$fifo"
    "$mock" "$work/script.json" --until-stdin-eof <"$fifo" >"$work/url-$policy" &
    exec 9>"$fifo"
    for _ in $(seq 100); do [[ -s "$work/url-$policy" ]] && break; sleep 0.05; done
    local url
    url=$(cat "$work/url-$policy")
    (cd "$ws" && HOME=$work/home timeout 60 "$acpx" \
        --agent "$SAKI_BIN acp --provider llamacpp --base-url $url/v1 --no-suggestions" \
        "--$policy" --format text exec "write notes.txt" 2>&1)
    exec 9>&-
}

fail=0
out=$(run approve-all)
if [[ "$(cat "$work/ws-approve-all/notes.txt" 2>/dev/null)" == "hello from acp" ]] \
    && grep -q "session/request_permission" <<<"$out" && grep -q "\[done\] end_turn" <<<"$out"; then
    echo "approve: ok (asked, file written, end_turn)"
else
    echo "approve: FAILED"; echo "$out"; fail=1
fi
out=$(run deny-all)
if [[ ! -e "$work/ws-deny-all/notes.txt" ]] && grep -q "(failed)" <<<"$out" \
    && grep -q "\[done\] end_turn" <<<"$out"; then
    echo "deny: ok (asked, nothing written, the call failed, end_turn)"
else
    echo "deny: FAILED"; echo "$out"; fail=1
fi
exit $fail
