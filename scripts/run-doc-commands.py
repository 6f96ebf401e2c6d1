#!/usr/bin/env python3
"""Runs the command blocks of README.md and docs/*.md, so that they cannot go stale.

    python3 scripts/run-doc-commands.py                   # build (debug), then run
    python3 scripts/run-doc-commands.py --bin-dir DIR     # use binaries already built in DIR

The convention, written in the Markdown itself:
- A ```sh block is run, one command at a time (a line ending in `\\` continues the command;
  blank lines and lines starting with `#` are skipped), from a scratch copy of the repository
  root: every top-level entry is linked into a temporary folder, so the commands read
  `examples/`, `tests/`, ... as written, and what they write (`-o out.graph`) lands in the
  scratch folder, never in the checkout. The blocks of one file share one scratch folder, in
  order, so a later block may read what an earlier one wrote.
- A ```sh no-run: REASON block is not run (it needs a GPU, LLVM, nightly, or minutes); the reason
  is required and printed, and the block is still checked by `bash -n`.
- A ```rust file=PATH block is a program kept in the repository at PATH (an example that CI
  builds, and runs where a ```sh block says so): the block must equal that file, less the file's
  leading `//!` comment and the blank line after it.
- Other blocks (```text for a synopsis, ```rust, ```json, ```toml) are not run.
- The built binaries (rlx-opt, rlx-run, rlx-trace, and the examples) come first on PATH.
  `cargo` is replaced by a shim that runs `cargo run [...] [--bin B | --example E] -- ARGS` as
  the built binary (B defaults to rlx-opt, the workspace's default-run), so a command written
  for a newcomer (`cargo run --release -- …`) runs without a second build; any other cargo
  command belongs in a no-run block (CI runs `cargo test` as its own stage).

It also checks that every relative link (`[text](docs/x.md#anchor)`, images too) names an existing
file and, for Markdown targets, an existing heading, and that README.md has at most 250 lines.

A failure names the file and line of the command (or link), prints the tail of its output, and
the script exits 1 after running everything else.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 250
COMMAND_TIMEOUT_S = 120

FENCE = re.compile(r"^(\s*)(```+)(.*)$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")

CARGO_SHIM = r"""#!/usr/bin/env bash
# The docs runner's cargo: `cargo run ... -- ARGS` runs the binary built already.
set -euo pipefail
[[ "${1:-}" == run ]] || { echo "docs runner: only \`cargo run\` runs here; put \`cargo $*\` in a \`sh no-run: REASON\` block" >&2; exit 97; }
shift
bin=rlx-opt; dir="$RLX_DOCS_BIN_DIR"
while (($#)); do
  case "$1" in
    --) shift; break ;;
    --bin) bin="$2"; shift 2 ;;
    --bin=*) bin="${1#--bin=}"; shift ;;
    --example) bin="$2"; dir="$RLX_DOCS_BIN_DIR/examples"; shift 2 ;;
    --example=*) bin="${1#--example=}"; dir="$RLX_DOCS_BIN_DIR/examples"; shift ;;
    -p|--package|--features|--target-dir|--manifest-path) shift 2 ;;
    *) shift ;;  # --release, -q, --locked, --features=...: the build is done
  esac
done
exec "$dir/$bin" "$@"
"""


def markdown_files():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def blocks(path):
    """(info string, first line number of the body, body lines) for each fenced block."""
    out, lines, i = [], path.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start, body = m.group(2), m.group(3).strip(), i + 2, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        out.append((info, start, body))
        i += 1
    return out


def commands(start, body):
    """(line number, command) for each command of a block body."""
    out, pending, at = [], [], None
    for n, line in enumerate(body, start):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        at = at if pending else n
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        out.append((at, " ".join(pending + [line]).strip()))
        pending = []
    if pending:
        out.append((at, " ".join(pending).strip()))
    return out


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*]|\[|\]\([^)]*\)", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    found, inside = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
        elif not inside and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found


def check_links(path, failures):
    inside = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
        if inside:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                failures.append(f"{path.relative_to(ROOT)}:{n}: broken link `{target}`: {dest} does not exist")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                failures.append(f"{path.relative_to(ROOT)}:{n}: broken link `{target}`: no heading `#{anchor}` in {dest.relative_to(ROOT)}")


def scratch_root():
    """A temporary folder with every top-level entry of the checkout linked into it."""
    scratch = Path(tempfile.mkdtemp(prefix="rlx-docs-"))
    for entry in ROOT.iterdir():
        if entry.name not in (".git", "target"):
            (scratch / entry.name).symlink_to(entry)
    return scratch


def check_program(name, start, body, program, failures):
    """A ```rust file=PATH block equals PATH, less the file's leading `//!` lines."""
    path = ROOT / program
    if not path.is_file():
        failures.append(f"{name}:{start - 1}: `file={program}` names no file")
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and lines[0].startswith("//!"):
        lines.pop(0)
    if lines and not lines[0].strip():
        lines.pop(0)
    if lines != body:
        differs = next((i for i, (a, b) in enumerate(zip(lines, body)) if a != b), min(len(lines), len(body)))
        failures.append(f"{name}:{start + differs}: the block differs from {program} (its line {differs + 1 + len(path.read_text(encoding='utf-8').splitlines()) - len(lines)}): copy one into the other")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", help="where rlx-opt, rlx-run, rlx-trace and examples/ are built (default: build them, debug)")
    parser.add_argument("files", nargs="*", help="Markdown files (default: README.md and docs/*.md)")
    args = parser.parse_args()
    files = [Path(f).resolve() for f in args.files] or markdown_files()

    if args.bin_dir:
        bin_dir = Path(args.bin_dir).resolve()
    else:
        target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
        subprocess.run(["cargo", "build", "--locked", "--workspace", "--bins", "--examples"], cwd=ROOT, check=True)
        bin_dir = target.resolve() / "debug"
    for tool in ("rlx-opt", "rlx-run", "rlx-trace"):
        if not (bin_dir / tool).exists():
            sys.exit(f"run-doc-commands: {bin_dir / tool} is not built")

    failures, skipped, ran, started = [], [], 0, time.monotonic()
    readme = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    if readme > README_MAX_LINES:
        failures.append(f"README.md:{README_MAX_LINES + 1}: the README has {readme} lines; a landing page has at most {README_MAX_LINES} (move the rest to docs/)")

    shim = Path(tempfile.mkdtemp(prefix="rlx-docs-shim-"))
    (shim / "cargo").write_text(CARGO_SHIM)
    (shim / "cargo").chmod(0o755)
    env = dict(os.environ, RLX_DOCS_BIN_DIR=str(bin_dir), PATH=os.pathsep.join([str(shim), str(bin_dir), os.environ.get("PATH", "")]))

    for path in files:
        name = path.relative_to(ROOT)
        check_links(path, failures)
        scratch = None
        for info, start, body in blocks(path):
            words = info.split(None, 1)
            if words and words[0] == "rust" and len(words) > 1 and words[1].startswith("file="):
                check_program(name, start, body, words[1][len("file="):], failures)
                continue
            if not words or words[0] != "sh":
                continue
            option = words[1] if len(words) > 1 else ""
            script = "\n".join(body) + "\n"
            if option.startswith("no-run"):
                reason = option[len("no-run"):].strip()
                reason = reason[1:-1] if reason.startswith("(") and reason.endswith(")") else reason.lstrip(": ")
                if not reason:
                    failures.append(f"{name}:{start - 1}: a `sh no-run` block must say why (`sh no-run: needs a GPU`)")
                syntax = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
                if syntax.returncode:
                    failures.append(f"{name}:{start}: the no-run block is not valid shell:\n{syntax.stderr}")
                skipped.append(f"{name}:{start - 1}: {reason}")
                continue
            if option:
                failures.append(f"{name}:{start - 1}: unknown block option `{option}` (a `sh` block runs; `sh no-run: REASON` does not)")
                continue
            scratch = scratch or scratch_root()
            for line, command in commands(start, body):
                ran += 1
                try:
                    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=scratch, env=env, text=True,
                                            stdin=subprocess.DEVNULL, capture_output=True, timeout=COMMAND_TIMEOUT_S)
                    code, output = result.returncode, result.stdout + result.stderr
                except subprocess.TimeoutExpired as e:
                    code, output = f"timed out after {COMMAND_TIMEOUT_S} s", str(e.stderr or "")
                if code != 0:
                    tail = "\n".join("    " + l for l in output.splitlines()[-20:])
                    failures.append(f"{name}:{line}: command failed (exit {code}): {command}\n{tail}")
        if scratch:
            shutil.rmtree(scratch)
    shutil.rmtree(shim)

    print(f"run-doc-commands: {ran} commands in {len(files)} files, {time.monotonic() - started:.1f} s; {len(skipped)} blocks not run:")
    for s in skipped:
        print(f"  {s}")
    for f in failures:
        print(f"run-doc-commands: FAILED: {f}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
