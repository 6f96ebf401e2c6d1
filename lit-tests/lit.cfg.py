# lit configuration for rlx-opt's command-line tests.
# Run with LLVM 22's lit:  /usr/lib/llvm-22/bin/lit -v lit-tests
# The rlx-opt under test is taken from $RLX_OPT_BIN_DIR, else target/debug.
import os
import lit.formats

config.name = "rlx-opt"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".graph", ".json", ".test", ".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
root = os.path.dirname(config.test_source_root)
config.test_exec_root = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target")), "lit")

bin_dir = os.environ.get("RLX_OPT_BIN_DIR") or os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target")), "debug"
)
llvm_bin = os.environ.get("LLVM_BIN_DIR", "/usr/lib/llvm-22/bin")
config.environment["PATH"] = os.pathsep.join([bin_dir, llvm_bin, os.environ.get("PATH", "")])
config.substitutions.append(("%examples", os.path.join(root, "examples", "graphs")))
# Device profiles `rlx-run --calibrate` wrote on the machine that develops rlx-opt.
config.substitutions.append(("%profiles", os.path.join(root, "examples", "profiles")))
# The one folder of graph fixtures the cargo tests read (tests/fixtures).
config.substitutions.append(("%fixtures", os.path.join(root, "tests", "fixtures")))

import shutil
if shutil.which("spirv-val"):
    config.available_features.add("spirv-val")

import subprocess
# NVRTC, found by name as cudarc finds it (LD_LIBRARY_PATH): rlx-opt
# compiles CUDA kernels (--emit-kernels writes the compiled source).
import ctypes
for name in ("libnvrtc.so", "libnvrtc.so.12"):
    try:
        ctypes.CDLL(name)
    except OSError:
        continue
    config.available_features.add("nvrtc")
    break
# rlx-opt built with the `mlir` feature: MLIR itself verifies MLIR input.
try:
    version = subprocess.run([os.path.join(bin_dir, "rlx-opt"), "--version"], capture_output=True, text=True).stdout
except OSError:
    version = ""
if "(mlir)" in version:
    config.available_features.add("rlx-mlir")
if os.path.exists(os.path.join(llvm_bin, "mlir-opt")):
    config.available_features.add("mlir-opt")

# The mlir-opt pass plugin (mlir-plugin/), usable when stock mlir-opt loads it.
plugin = os.path.join(bin_dir, "librlx_opt_mlir.so")
config.substitutions.append(("%plugin", plugin))
if os.path.exists(plugin) and os.path.exists(os.path.join(llvm_bin, "mlir-opt")):
    help_text = subprocess.run([os.path.join(llvm_bin, "mlir-opt"), "--load-pass-plugin=" + plugin, "--help"],
                               capture_output=True, text=True).stdout
    if "rlx-fuse-welch-peaks" in help_text:
        config.available_features.add("mlir-plugin")
