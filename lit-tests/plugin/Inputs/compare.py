"""For each GRAPH and each option set, run fuse-welch-peaks on the graph's
MLIR through the mlir-opt plugin and through rlx-opt, and fail unless both
give the same graph (names and ids included).

usage: compare.py PLUGIN GRAPH... -- OPTIONS...   (OPTIONS like 'target=cuda force=true')"""
import subprocess
import sys

plugin = sys.argv[1]
split = sys.argv.index("--")
graphs, option_sets = sys.argv[2:split], sys.argv[split + 1:]


def run(args, stdin=None):
    result = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


for graph in graphs:
    module = run(["rlx-opt", "--emit=mlir", graph])
    for options in option_sets:
        via_plugin = run(["mlir-opt", "--allow-unregistered-dialect", "--load-pass-plugin=" + plugin, "--mlir-print-debuginfo",
                          f"--pass-pipeline=builtin.module(rlx-fuse-welch-peaks{{{options}}})", "-"], module)
        plugin_graph = run(["rlx-opt", "-", "--input-format=mlir"], via_plugin)
        rlx_graph = run(["rlx-opt", f"--fuse-welch-peaks={options}", "-", "--input-format=mlir"], module)
        if plugin_graph != rlx_graph:
            sys.exit(f"{graph} {{{options}}}: the plugin and rlx-opt differ\n--- plugin\n{plugin_graph}\n--- rlx-opt\n{rlx_graph}")
        fused = rlx_graph.count("rlx_opt.welch_peaks")
        print(f"{graph.rsplit('/', 1)[-1]} {{{options}}}: same graph, {fused} fused op(s)")
