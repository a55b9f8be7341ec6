// See custom_swap.h.
#include "custom_swap.h"

#include <string>
#include <utility>

GST_DEBUG_CATEGORY_STATIC(custom_swap_debug);
#define GST_CAT_DEFAULT custom_swap_debug

namespace cudaoverlap {

CustomKernelSwap::CustomKernelSwap(GstElement* element) : element_(element) {
  static const bool debug_ready = [] {
    // The element's category (gst_debug_category_new hands back an existing
    // one), so `GST_DEBUG=cudaoverlap:5` shows all of it.
    GST_DEBUG_CATEGORY_INIT(custom_swap_debug, "cudaoverlap", 0, "cudaoverlap element");
    return true;
  }();
  (void)debug_ready;
}

void CustomKernelSwap::start() {
  std::lock_guard<std::mutex> lock(compiler_mutex_);
  accepting_ = true;
}

void CustomKernelSwap::stop() {
  std::thread compiler;
  {
    std::lock_guard<std::mutex> lock(compiler_mutex_);
    accepting_ = false;  // no compiler starts after this
    compiler = std::move(compiler_);
  }
  if (compiler.joinable()) compiler.join();
  std::lock_guard<std::mutex> lock(mutex_);
  accepted_.reset();
}

void CustomKernelSwap::engine_installed(const EngineConfig* config) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++generation_;
  ready_.reset();
  base_.reset();
  const auto* custom =
      config ? dynamic_cast<const CustomOperation*>(config->operation.get()) : nullptr;
  if (!custom) return;
  base_ = config->operation;
  if (!accepted_) accepted_ = std::make_shared<const CustomKernelParams>(custom->params());
  in_ = ImageRef{config->input.format, config->input.width, config->input.height, {}};
  out_ = ImageRef{config->output.format, config->output.width, config->output.height, {}};
}

void CustomKernelSwap::request(CustomKernelParams params) {
  // The latest request is the only one that may be swapped in: a replacement
  // compiled for an earlier one is dropped now, whatever this one becomes.
  uint64_t request;
  std::shared_ptr<const Operation> base;
  ImageRef in, out;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    request = ++request_;
    ready_.reset();
    base = base_;
    in = in_;
    out = out_;
    generation = generation_;
  }
  if (!base) return;
  const auto& running = static_cast<const CustomOperation&>(*base);
  params.device = running.params().device;
  auto op = std::make_shared<const CustomOperation>(std::move(params), running.colorimetry());
  if (op->same_as(running)) return;
  auto compile = [this, op, in, out, generation, request] {
    auto latest = [&] {
      std::lock_guard<std::mutex> lock(mutex_);
      return generation == generation_ && request == request_;
    };
    // Superseded before it started (several properties set in one call):
    // only the last request is compiled.
    if (!latest()) return;
    const std::string problem = op->check(in, out);
    if (!problem.empty()) {
      if (!latest()) return;  // a newer request answers for itself
      const std::string message =
          "kernel=custom: the new source is not taken, the running kernel stays: " + problem;
      GST_ELEMENT_WARNING(element_, RESOURCE, SETTINGS, ("%s", message.c_str()), (nullptr));
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation != generation_ || request != request_) return;  // superseded
    ready_ = op;
    GST_INFO_OBJECT(element_, "kernel=custom: new source compiled; it runs from the next frame");
  };
  // Compiles run one after another, each on a thread that first waits for
  // the one before. Started only between start() and stop(), which joins
  // the last (and so all of them).
  std::lock_guard<std::mutex> lock(compiler_mutex_);
  if (!accepting_) return;
  std::thread previous = std::move(compiler_);
  // A bus handler of a compile's warning setting a property again runs on
  // that compile's thread, which ends right after: it cannot wait for itself.
  if (previous.joinable() && previous.get_id() == std::this_thread::get_id()) previous.detach();
  compiler_ = std::thread([previous = std::move(previous), compile]() mutable {
    if (previous.joinable()) previous.join();
    compile();
  });
}

std::shared_ptr<const Operation> CustomKernelSwap::take_ready() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(ready_);
}

void CustomKernelSwap::swapped_in(const std::shared_ptr<const Operation>& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  base_ = op;
  accepted_ =
      std::make_shared<const CustomKernelParams>(static_cast<const CustomOperation&>(*op).params());
}

std::shared_ptr<const CustomKernelParams> CustomKernelSwap::accepted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return accepted_;
}

}  // namespace cudaoverlap
