"""Fail unless the plugin declares, for each of its passes, exactly the
options rlx-opt lists for the pass (`rlx-opt --list-passes`) plus
`fusion-report`: the shim spells its option list out in C++, and an option
added to rlx-opt's fusing passes must be added there too.

usage: same_options.py PLUGIN PASS...   (rlx-opt's names: fuse-log-mel)"""
import re
import subprocess
import sys

plugin, passes = sys.argv[1], sys.argv[2:]


def sections(text, header, option):
    """{pass: {option names}} from a listing whose pass lines match `header`."""
    out, current = {}, None
    for line in text.splitlines():
        if m := re.match(header, line):
            current = out.setdefault(m.group(1), set())
        elif current is not None and (m := re.match(option, line)):
            current.add(m.group(1))
        else:
            current = None
    return out


listed = sections(subprocess.run(["rlx-opt", "--list-passes"], capture_output=True, text=True, check=True).stdout,
                  r"^  --([a-z-]+) ", r"^      ([a-z-]+)=…")
helped = sections(subprocess.run(["mlir-opt", "--load-pass-plugin=" + plugin, "--help"], capture_output=True, text=True, check=True).stdout,
                  r"^      --rlx-([a-z-]+) ", r"^        --([a-z-]+)=<string>")
failed = False
for name in passes:
    want, got = listed.get(name, set()) | {"fusion-report"}, helped.get(name)
    if got is None or want != got:
        failed = True
        print(f"{name}: rlx-opt lists {sorted(want)}, the plugin declares {sorted(got or [])}")
    else:
        print(f"{name}: the same {len(got)} options")
sys.exit(1 if failed else 0)
