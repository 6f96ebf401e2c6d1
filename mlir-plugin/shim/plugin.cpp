// The C++ side of librlx_opt_mlir.so. It only hosts: it registers the pass
// `rlx-fuse-welch-peaks` and its options with MLIR, prints the module in
// generic form, hands the text to rlx-opt's Rust code (src/lib.rs) and puts
// the module it gets back in place. Matching, gating, rewriting and
// reporting all happen in Rust.

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <limits>
#include <string>

extern "C" {
struct RlxResult {
  uint32_t failed;
  char *text;
  char *file;
  uint32_t line;
  uint32_t col;
};
RlxResult *rlx_fuse_module(const char *module, size_t module_len, const char *options, size_t options_len);
char *rlx_check_options(const char *options, size_t options_len);
const char *rlx_option_help(const char *name);
void rlx_free_result(RlxResult *result);
void rlx_free_string(char *s);
}

namespace {

struct RlxFuseWelchPeaks : public mlir::PassWrapper<RlxFuseWelchPeaks, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RlxFuseWelchPeaks)

  RlxFuseWelchPeaks() = default;
  RlxFuseWelchPeaks(const RlxFuseWelchPeaks &other) : PassWrapper(other) {}

  llvm::StringRef getName() const override { return "RlxFuseWelchPeaks"; }
  llvm::StringRef getArgument() const final { return "rlx-fuse-welch-peaks"; }
  llvm::StringRef getDescription() const final { return rlx_option_help("description"); }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::func::FuncDialect>();
  }

  // Every option is a string handed to Rust as `key=value`, where it is
  // checked; the help texts come from the Rust pass registry too.
#define RLX_OPTION(member, name) Option<std::string> member{*this, name, llvm::cl::desc(rlx_option_help(name))};
  RLX_OPTION(target, "target")
  RLX_OPTION(dispatchNs, "dispatch-ns")
  RLX_OPTION(roundtripNs, "roundtrip-ns")
  RLX_OPTION(memoryBw, "memory-bw")
  RLX_OPTION(readbackBw, "readback-bw")
  RLX_OPTION(unified, "unified")
  RLX_OPTION(thunkPenaltyNs, "thunk-penalty-ns")
  RLX_OPTION(minGainNs, "min-gain-ns")
  RLX_OPTION(model, "model")
  RLX_OPTION(force, "force")
  RLX_OPTION(dropSpectrumOutput, "drop-spectrum-output")
  RLX_OPTION(fusionReport, "fusion-report")
#undef RLX_OPTION

  std::string optionString() const {
    std::string out;
    for (const Option<std::string> *o : {&target, &dispatchNs, &roundtripNs, &memoryBw, &readbackBw, &unified, &thunkPenaltyNs,
                                         &minGainNs, &model, &force, &dropSpectrumOutput, &fusionReport}) {
      if (o->hasValue()) {
        out += o->ArgStr.str() + "=" + o->getValue() + " ";
      }
    }
    return out;
  }

  mlir::LogicalResult initialize(mlir::MLIRContext *context) override {
    std::string options = optionString();
    if (char *error = rlx_check_options(options.data(), options.size())) {
      mlir::emitError(mlir::UnknownLoc::get(context)) << "rlx-fuse-welch-peaks: " << error;
      rlx_free_string(error);
      return mlir::failure();
    }
    return mlir::success();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    mlir::MLIRContext *context = &getContext();
    std::string text;
    {
      // Pinned, so mlir-opt's global --mlir-print-* / --mlir-elide-* flags
      // cannot change what Rust reads (elided constants, names as prefixes).
      mlir::OpPrintingFlags flags;
      flags.printGenericOpForm(true)
          .enableDebugInfo(true, /*prettyForm=*/false)
          .elideLargeElementsAttrs(std::numeric_limits<int64_t>::max())
          .elideLargeResourceString(std::numeric_limits<int64_t>::max())
          .printLargeElementsAttrWithHex(100)
          .assumeVerified(false)
          .skipRegions(false)
          .printValueUsers(false)
          .printUniqueSSAIDs(false)
          .printNameLocAsPrefix(false)
          // A nested module must not look at siblings other threads are changing.
          .useLocalScope(module->getParentOp() != nullptr);
      llvm::raw_string_ostream os(text);
      module->print(os, flags);
    }
    std::string options = optionString();
    RlxResult *result = rlx_fuse_module(text.data(), text.size(), options.data(), options.size());
    if (result->failed) {
      mlir::Location loc = result->file
                               ? mlir::Location(mlir::FileLineColLoc::get(context, result->file, result->line, result->col))
                               : module.getLoc();
      mlir::emitError(loc) << "rlx-fuse-welch-peaks: " << result->text;
      rlx_free_result(result);
      return signalPassFailure();
    }
    if (!result->text) {  // nothing changed
      rlx_free_result(result);
      return;
    }
    mlir::ParserConfig config(context);
    mlir::OwningOpRef<mlir::ModuleOp> parsed =
        mlir::parseSourceString<mlir::ModuleOp>(llvm::StringRef(result->text), config, "rlx-fuse-welch-peaks");
    rlx_free_result(result);
    if (!parsed) {
      module.emitError() << "rlx-fuse-welch-peaks: the module rlx-opt produced does not parse (see the error above)";
      return signalPassFailure();
    }
    module.getBodyRegion().takeBody(parsed->getBodyRegion());
  }
};

}  // namespace

extern "C" void rlx_register_passes() { mlir::PassRegistration<RlxFuseWelchPeaks>(); }
