#!/usr/bin/env bash
# Reading ahead on a real local model: a short session on a small Python project with a
# test, once with reading ahead and once typing the same prompts by hand.
#
#   scripts/e2e-read-ahead.sh            run both sessions and print the report
#
# With reading ahead: `saki exec --local MODEL --follow-ups N --approval auto-edit` asks
# its first prompt, then up to N times predicts the next prompt, speculates it (shell
# commands such as the test run in an overlay of the workspace) and accepts it when it
# completed. Without: the first prompt, then each prompt the first session accepted, typed
# as a new turn of the same session (`--resume --last`). The report gives how many
# suggestions were speculated to the end, how many stopped at a boundary and why, the
# time saved per accepted follow-up, and the total time of each session.
#
# Needs the model of scripts/demo.sh (downloaded on first use) and saki (built with cargo
# unless SAKI_BIN is set). Outside the fast CI path: a session takes minutes on 2 cores.
#
# Environment:
#   SAKI_E2E_CACHE     cache dir for the model (default: ~/.cache/saki-e2e)
#   SAKI_BIN           use this saki binary instead of building one with cargo
#   SAKI_FOLLOW_UPS    follow-ups of the first session (default 2)
#   SAKI_E2E_TIMEOUT   seconds allowed for each saki run (default 600)
set -euo pipefail

export SAKI_E2E_TIMEOUT="${SAKI_E2E_TIMEOUT:-600}"
# shellcheck source-path=SCRIPTDIR source=lib/e2e-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/e2e-common.sh"
# shellcheck source-path=SCRIPTDIR source=lib/qwen-model.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/qwen-model.sh"

LOG_TAG=read-ahead
FOLLOW_UPS="${SAKI_FOLLOW_UPS:-2}"
FIRST_PROMPT="Read calc.py and explain what add does"
RUN_DIR="$CACHE/read-ahead"

make_project() {
  local dir=$1
  rm -rf "$dir"
  mkdir -p "$dir"
  cat >"$dir/calc.py" <<'EOF'
def add(a, b):
    """Return the sum of a and b."""
    return a + b


def sub(a, b):
    return a - b
EOF
  cat >"$dir/test_calc.py" <<'EOF'
import unittest

from calc import add, sub


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(sub(5, 3), 2)


if __name__ == "__main__":
    unittest.main()
EOF
  printf 'Run the tests with: python3 -m unittest -q\n' >"$dir/README.md"
}

# Summarises one session's JSON events: argv[1] the events file, argv[2] its seconds.
REPORT_PY='
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
seconds = float(sys.argv[2])
kinds = lambda t: [e for e in events if e["type"] == t]
print("  suggestions:", [e.get("text") for e in kinds("suggestion")])
print("  speculated to the end:", len(kinds("speculation.completed")))
for b in kinds("speculation.boundary"):
    print("  boundary:", b.get("reason"), "-", (b.get("detail") or "")[:120])
for a in kinds("speculation.aborted"):
    print("  aborted:", (a.get("reason") or "")[:120])
for a in kinds("speculation.accepted"):
    print("  accepted: %r: %s ms saved, %s commands, files %s" % (
        a["suggestion"], a["time_saved_ms"], a.get("commands_run", 0), a["files_applied"]))
print("  total: %.1f s" % seconds)
with open(sys.argv[1] + ".accepted", "w") as out:
    for a in kinds("speculation.accepted"):
        out.write(a["suggestion"] + "\n")
'

main() {
  case "${1:-}" in
    -h | --help) usage; return 0 ;;
    "") ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
  install_traps
  install_model
  resolve_saki
  mkdir -p "$RUN_DIR"
  local data="$RUN_DIR/data"
  export XDG_DATA_HOME="$data"
  local with="$RUN_DIR/with" without="$RUN_DIR/without"

  make_project "$with"
  say "with reading ahead: --follow-ups $FOLLOW_UPS --approval auto-edit"
  local start=$SECONDS
  timeout "$SAKI_TIMEOUT" "$SAKI" exec --local "$MODEL_FILE" -C "$with" --json \
    --approval auto-edit --follow-ups "$FOLLOW_UPS" --max-turns 8 "$FIRST_PROMPT" \
    </dev/null >"$RUN_DIR/with.jsonl" || say "the session ended with an error (see $RUN_DIR/with.jsonl)"
  local with_s=$((SECONDS - start))
  echo "with reading ahead:"
  python3 -c "$REPORT_PY" "$RUN_DIR/with.jsonl" "$with_s"

  make_project "$without"
  say "without: the same prompts typed one by one"
  start=$SECONDS
  timeout "$SAKI_TIMEOUT" "$SAKI" exec --local "$MODEL_FILE" -C "$without" --json \
    --approval auto-edit --max-turns 8 "$FIRST_PROMPT" </dev/null >"$RUN_DIR/without.jsonl" || true
  while IFS= read -r prompt; do
    [[ -n $prompt ]] || continue
    timeout "$SAKI_TIMEOUT" "$SAKI" exec --local "$MODEL_FILE" -C "$without" --json \
      --approval auto-edit --max-turns 8 --resume --last "$prompt" </dev/null \
      >>"$RUN_DIR/without.jsonl" || true
  done <"$RUN_DIR/with.jsonl.accepted"
  echo "without reading ahead (the accepted prompts typed):"
  echo "  total: $((SECONDS - start)) s"
}

main "$@"; exit
