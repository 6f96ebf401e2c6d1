// The C++ side of librlx_opt_mlir.so. It is only glue: it registers the passes
// `rlx-fuse-welch-peaks` and `rlx-fuse-log-mel` (one implementation,
// RlxFusePass, parameterised by the pass) and their options with MLIR,
// prints the module in
// generic form, hands the text to rlx-opt's Rust code (src/lib.rs) and
// applies the edits it gets back (format: src/format/mlir/edits.rs in
// rlx-opt). Matching, gating, rewriting and reporting all happen in Rust.

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringMap.h"
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
// `pass` is rlx-opt's name of the pass (`fuse-log-mel`), NUL-terminated.
RlxResult *rlx_fuse_module(const char *pass, const char *module, size_t module_len, const char *options, size_t options_len);
char *rlx_check_options(const char *pass, const char *options, size_t options_len);
const char *rlx_option_help(const char *pass, const char *name);
void rlx_free_result(RlxResult *result);
void rlx_free_string(char *s);
}

namespace {

// Applies rlx-opt's edits: per function, keep (and maybe rewire) old ops in a
// new order, create new ops, set attributes, set the return, erase the rest.
class EditApplier {
public:
  // `argument`: the pass's name in MLIR, for messages.
  EditApplier(mlir::ModuleOp module, llvm::StringRef argument) : module(module), argument(argument), context(module.getContext()) {
    module->walk<mlir::WalkOrder::PreOrder>([&](mlir::func::FuncOp f) { funcs.push_back(f); });
  }

  mlir::LogicalResult apply(llvm::StringRef script) {
    llvm::SmallVector<llvm::StringRef> lines;
    script.split(lines, '\n', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef line : lines) {
      if (mlir::failed(applyLine(line[0], line.drop_front(std::min<size_t>(2, line.size()))))) {
        return fail("cannot apply `" + line.str() + "`");
      }
    }
    finishFunction();
    return mlir::success();
  }

private:
  mlir::LogicalResult fail(const llvm::Twine &message) {
    module.emitError() << argument << ": " << message;
    return mlir::failure();
  }

  mlir::FailureOr<size_t> index(llvm::StringRef text, size_t bound) {
    size_t i;
    if (text.getAsInteger(10, i) || i >= bound) return mlir::failure();
    return i;
  }

  mlir::FailureOr<mlir::Value> value(llvm::StringRef ref) {
    if (ref.empty() || !body) return mlir::failure();
    llvm::StringRef number = ref.drop_front();
    switch (ref[0]) {
    case 'a': {
      auto i = index(number, body->getNumArguments());
      if (mlir::failed(i)) return mlir::failure();
      return mlir::Value(body->getArgument(*i));
    }
    case 'o': {
      auto i = index(number, old.size());
      if (mlir::failed(i) || old[*i]->getNumResults() != 1) return mlir::failure();
      return old[*i]->getResult(0);
    }
    case 'n': {
      auto i = index(number, created.size());
      if (mlir::failed(i)) return mlir::failure();
      return created[*i]->getResult(0);
    }
    default:
      return mlir::failure();
    }
  }

  mlir::FailureOr<llvm::SmallVector<mlir::Value>> values(llvm::StringRef refs) {
    llvm::SmallVector<llvm::StringRef> parts;
    refs.split(parts, ' ', -1, /*KeepEmpty=*/false);
    llvm::SmallVector<mlir::Value> out;
    for (llvm::StringRef ref : parts) {
      auto v = value(ref);
      if (mlir::failed(v)) return mlir::failure();
      out.push_back(*v);
    }
    return out;
  }

  mlir::LogicalResult applyLine(char kind, llvm::StringRef rest) {
    if (kind == 'F') {
      finishFunction();
      auto i = index(rest, funcs.size());
      if (mlir::failed(i) || funcs[*i].getBody().getBlocks().size() != 1) return mlir::failure();
      func = funcs[*i];
      body = &func.getBody().front();
      terminator = body->getTerminator();
      old.clear();
      for (mlir::Operation &op : body->without_terminator()) old.push_back(&op);
      kept.assign(old.size(), false);
      created.clear();
      return mlir::success();
    }
    if (!body) return mlir::failure();
    auto [head, tail] = rest.split('\t');
    switch (kind) {
    case 'K': {
      auto [first, refs] = head.split(' ');
      auto i = index(first, old.size());
      if (mlir::failed(i)) return mlir::failure();
      mlir::Operation *op = old[*i];
      kept[*i] = true;
      op->moveBefore(terminator);
      if (refs.empty()) return mlir::success();
      auto operands = values(refs);
      if (mlir::failed(operands) || operands->size() != op->getNumOperands()) return mlir::failure();
      op->setOperands(*operands);
      return mlir::success();
    }
    case 'N': {
      auto [where, refs] = head.split(' ');
      auto [name, rest2] = tail.split('\t');
      auto [typeText, dictText] = rest2.split('\t');
      mlir::Location loc = func.getLoc();
      if (where != "-") {
        auto i = index(where, old.size());
        if (mlir::failed(i)) return mlir::failure();
        loc = old[*i]->getLoc();
      }
      auto operands = values(refs);
      mlir::Type type = parseType(typeText);
      auto dict = llvm::dyn_cast_or_null<mlir::DictionaryAttr>(parseAttribute(dictText));
      if (mlir::failed(operands) || !type || !dict) return mlir::failure();
      mlir::OperationState state(loc, name);
      state.addOperands(*operands);
      state.addTypes(type);
      state.addAttributes(dict.getValue());
      mlir::OpBuilder builder(terminator);
      created.push_back(builder.create(state));
      return mlir::success();
    }
    case 'S':
    case 'A': {
      auto [key, attrText] = tail.split('\t');
      mlir::Attribute attr = parseAttribute(attrText);
      if (!attr) return mlir::failure();
      if (kind == 'S') {
        auto i = index(head, old.size());
        if (mlir::failed(i)) return mlir::failure();
        old[*i]->setAttr(key, attr);
      } else {
        auto i = index(head, func.getNumArguments());
        if (mlir::failed(i)) return mlir::failure();
        func.setArgAttr(*i, key, attr);
      }
      return mlir::success();
    }
    case 'R': {
      auto operands = values(rest);
      if (mlir::failed(operands)) return mlir::failure();
      terminator->setOperands(*operands);
      return mlir::success();
    }
    case 'T': {
      llvm::SmallVector<llvm::StringRef> texts;
      rest.split(texts, '\t', -1, /*KeepEmpty=*/false);
      llvm::SmallVector<mlir::Type> results;
      for (llvm::StringRef text : texts) {
        mlir::Type t = parseType(text);
        if (!t) return mlir::failure();
        results.push_back(t);
      }
      func.setFunctionType(mlir::FunctionType::get(context, func.getArgumentTypes(), results));
      return mlir::success();
    }
    default:
      return mlir::failure();
    }
  }

  // New ops mostly repeat a few spellings: parse each once.
  mlir::Attribute parseAttribute(llvm::StringRef text) {
    auto [it, inserted] = attributes.try_emplace(text);
    if (inserted) it->second = mlir::parseAttribute(text, context);
    return it->second;
  }

  mlir::Type parseType(llvm::StringRef text) {
    auto [it, inserted] = types.try_emplace(text);
    if (inserted) it->second = mlir::parseType(text, context);
    return it->second;
  }

  // Erase what no `K` kept: references first, so ops that use each other can go.
  void finishFunction() {
    if (!body) return;
    llvm::SmallVector<mlir::Operation *> dropped;
    for (size_t i = 0; i < old.size(); ++i)
      if (!kept[i]) dropped.push_back(old[i]);
    for (mlir::Operation *op : dropped) op->dropAllReferences();
    for (mlir::Operation *op : llvm::reverse(dropped)) {
      op->dropAllUses();
      op->erase();
    }
    body = nullptr;
  }

  mlir::ModuleOp module;
  llvm::StringRef argument;
  mlir::MLIRContext *context;
  llvm::SmallVector<mlir::func::FuncOp> funcs;
  mlir::func::FuncOp func;
  mlir::Block *body = nullptr;
  mlir::Operation *terminator = nullptr;
  std::vector<mlir::Operation *> old;
  std::vector<bool> kept;
  std::vector<mlir::Operation *> created;
  llvm::StringMap<mlir::Attribute> attributes;
  llvm::StringMap<mlir::Type> types;
};

// One of rlx-opt's fusing passes; `Derived` (the final class) names it:
// `kPass`, rlx-opt's name, `kArgument`, MLIR's, and `kName`. Every fusing
// pass takes the same options (rlx-opt's FUSE_OPTIONS), declared here once.
template <typename Derived>
struct RlxFusePass : public mlir::PassWrapper<Derived, mlir::OperationPass<mlir::ModuleOp>> {
  using Base = mlir::PassWrapper<Derived, mlir::OperationPass<mlir::ModuleOp>>;
  template <typename T>
  using Option = typename Base::template Option<T>;

  RlxFusePass() = default;
  RlxFusePass(const RlxFusePass &other) : Base(other) {}

  llvm::StringRef getName() const override { return Derived::kName; }
  llvm::StringRef getArgument() const final { return Derived::kArgument; }
  llvm::StringRef getDescription() const final { return rlx_option_help(Derived::kPass, "description"); }

  void getDependentDialects(mlir::DialectRegistry &registry) const override {
    registry.insert<mlir::func::FuncDialect>();
  }

  // Every option is a string handed to Rust as `key=value`, where it is
  // checked; the help texts come from the Rust pass registry too.
#define RLX_OPTION(member, name) Option<std::string> member{*this, name, llvm::cl::desc(rlx_option_help(Derived::kPass, name))};
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
  RLX_OPTION(nativeKernels, "native-kernels")
  RLX_OPTION(dropSpectrumOutput, "drop-spectrum-output")
  RLX_OPTION(profile, "profile")
  RLX_OPTION(forcePlan, "force-plan")
  RLX_OPTION(fusionReport, "fusion-report")
#undef RLX_OPTION

  std::string optionString() const {
    std::string out;
    for (const Option<std::string> *o : {&target, &dispatchNs, &roundtripNs, &memoryBw, &readbackBw, &unified, &thunkPenaltyNs,
                                         &minGainNs, &model, &force, &nativeKernels, &dropSpectrumOutput, &profile, &forcePlan, &fusionReport}) {
      if (o->hasValue()) {
        out += o->ArgStr.str() + "=" + o->getValue() + " ";
      }
    }
    return out;
  }

  mlir::LogicalResult initialize(mlir::MLIRContext *context) override {
    std::string options = optionString();
    if (char *error = rlx_check_options(Derived::kPass, options.data(), options.size())) {
      mlir::emitError(mlir::UnknownLoc::get(context)) << Derived::kArgument << ": " << error;
      rlx_free_string(error);
      return mlir::failure();
    }
    return mlir::success();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = this->getOperation();
    mlir::MLIRContext *context = &this->getContext();
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
          // Locations inline rather than as aliases: no alias table to build,
          // and a nested module must not look at siblings other threads are changing.
          .useLocalScope(true);
      llvm::raw_string_ostream os(text);
      module->print(os, flags);
    }
    std::string options = optionString();
    RlxResult *result = rlx_fuse_module(Derived::kPass, text.data(), text.size(), options.data(), options.size());
    if (result->failed) {
      mlir::Location loc = result->file
                               ? mlir::Location(mlir::FileLineColLoc::get(context, result->file, result->line, result->col))
                               : module.getLoc();
      mlir::emitError(loc) << Derived::kArgument << ": " << result->text;
      rlx_free_result(result);
      return this->signalPassFailure();
    }
    if (!result->text) {  // nothing changed
      rlx_free_result(result);
      return;
    }
    mlir::LogicalResult applied = EditApplier(module, Derived::kArgument).apply(result->text);
    rlx_free_result(result);
    if (mlir::failed(applied)) {
      return this->signalPassFailure();
    }
  }
};

// The passes, each with its own TypeID (MLIR tells passes apart by it).
struct RlxFuseWelchPeaks : public RlxFusePass<RlxFuseWelchPeaks> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RlxFuseWelchPeaks)
  static constexpr const char *kPass = "fuse-welch-peaks";
  static constexpr const char *kArgument = "rlx-fuse-welch-peaks";
  static constexpr const char *kName = "RlxFuseWelchPeaks";
};

struct RlxFuseLogMel : public RlxFusePass<RlxFuseLogMel> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RlxFuseLogMel)
  static constexpr const char *kPass = "fuse-log-mel";
  static constexpr const char *kArgument = "rlx-fuse-log-mel";
  static constexpr const char *kName = "RlxFuseLogMel";
};

}  // namespace

extern "C" void rlx_register_passes() {
  mlir::PassRegistration<RlxFuseWelchPeaks>();
  mlir::PassRegistration<RlxFuseLogMel>();
}
