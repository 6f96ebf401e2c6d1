"""Run fuse-welch-peaks on MODULE through the mlir-opt plugin and through
rlx-opt, for each TARGET, and fail unless both give the same graph."""
import subprocess
import sys

plugin, module, *targets = sys.argv[1:]
for target in targets:
    via_plugin = subprocess.run(
        ["mlir-opt", "--allow-unregistered-dialect", "--load-pass-plugin=" + plugin, "--mlir-print-debuginfo",
         f"--pass-pipeline=builtin.module(rlx-fuse-welch-peaks{{target={target}}})", module],
        check=True, capture_output=True, text=True).stdout
    plugin_graph = subprocess.run(["rlx-opt", "-", "--input-format=mlir"], input=via_plugin,
                                  check=True, capture_output=True, text=True).stdout
    rlx_graph = subprocess.run(["rlx-opt", f"--fuse-welch-peaks=target={target}", module],
                               check=True, capture_output=True, text=True).stdout
    if plugin_graph != rlx_graph:
        sys.exit(f"target {target}: the plugin and rlx-opt differ\n--- plugin\n{plugin_graph}\n--- rlx-opt\n{rlx_graph}")
    print(f"target {target}: same graph ({'fused' if 'rlx_opt.welch_peaks' in rlx_graph else 'not fused'})")
