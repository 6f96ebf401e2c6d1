"""For each GRAPH and each option set, run a fusing pass (fuse-welch-peaks,
or the one --pass names) on the graph's MLIR through the mlir-opt plugin and
through rlx-opt, and fail unless both give the same graph (names and ids
included), or unless the pass fused nothing in any of them (a comparison of
unchanged graphs says nothing about the pass).

usage: compare.py PLUGIN [--pass=NAME] GRAPH... -- OPTIONS...   (OPTIONS like 'target=cuda force=true')"""
import subprocess
import sys

# The op each fusing pass makes.
FUSED_OP = {"fuse-welch-peaks": "rlx_opt.welch_peaks", "fuse-log-mel": "rlx_opt.log_mel"}

plugin = sys.argv[1]
args = sys.argv[2:]
pass_name = "fuse-welch-peaks"
if args and args[0].startswith("--pass="):
    pass_name = args.pop(0)[len("--pass="):]
if pass_name not in FUSED_OP:
    sys.exit(f"unknown pass {pass_name} (expected one of {', '.join(FUSED_OP)})")
split = args.index("--")
graphs, option_sets = args[:split], args[split + 1:]
total = 0


def run(args, stdin=None):
    result = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


for graph in graphs:
    module = run(["rlx-opt", "--emit=mlir", graph])
    for options in option_sets:
        via_plugin = run(["mlir-opt", "--allow-unregistered-dialect", "--load-pass-plugin=" + plugin, "--mlir-print-debuginfo",
                          f"--pass-pipeline=builtin.module(rlx-{pass_name}{{{options}}})", "-"], module)
        plugin_graph = run(["rlx-opt", "-", "--input-format=mlir"], via_plugin)
        rlx_graph = run(["rlx-opt", f"--{pass_name}={options}", "-", "--input-format=mlir"], module)
        if plugin_graph != rlx_graph:
            sys.exit(f"{graph} {{{options}}}: the plugin and rlx-opt differ\n--- plugin\n{plugin_graph}\n--- rlx-opt\n{rlx_graph}")
        fused = rlx_graph.count(FUSED_OP[pass_name])
        total += fused
        print(f"{graph.rsplit('/', 1)[-1]} {{{options}}}: same graph, {fused} fused op(s)")

if total == 0:
    sys.exit(f"{pass_name} fused nothing in any graph: the comparison says nothing")
