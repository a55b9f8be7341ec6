// A chain of operations run back to back in one element (its `chain`
// property): the text a user writes, gst-launch style, parsed into steps,
// and the operation that runs the steps one after another on the compute
// stream, each frame between two steps kept in its workspace, so a frame
// crosses PCIe once whatever the number of steps.
//
//   balance contrast=1.2 saturation=0.8 ! blur sigma=2 ! flip video-direction=90r ! convert
//
// Each step is a built-in operation with its own parameters, as its
// registry entry declares them. A step whose output format or size is
// downstream's choice (convert, scale) can only be the last: its output is
// the element's, negotiated with downstream. The steps run whole frames
// (no bands), each as its own launch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/operation.h"

namespace cudaoverlap {

struct ChainStep {
  std::string name;  // a registry entry's
  ParamValues values;
};

struct ChainSpec {
  std::string text;  // as the user wrote it
  std::vector<ChainStep> steps;
};

// The steps of `text`, each step's values checked against what its
// operation declares. Throws Error with a sentence naming the step (its
// number from 1 and its kernel) and what is wrong with it.
std::shared_ptr<const ChainSpec> parse_chain(const std::string& text);

class ChainOperation final : public Operation {
 public:
  // Each step made with `params` but for its own values. Throws Error
  // naming the step whose parameters its operation refuses.
  ChainOperation(std::shared_ptr<const ChainSpec> spec, const KernelParams& params);

  const char* name() const override { return "chain"; }
  std::vector<PixelFormat> output_formats(PixelFormat in) const override;
  bool swaps_axes() const override;
  bool format_from_downstream() const override { return steps_.back()->format_from_downstream(); }
  bool size_from_downstream() const override { return steps_.back()->size_from_downstream(); }
  Crop crop() const override;
  FrameSizes sizes() const override { return steps_.back()->sizes(); }
  FlipDirection orientation() const override;
  bool passes_through_same_caps() const override;
  bool mixes_rows(PixelFormat in, PixelFormat out) const override;
  bool uses_matrix(PixelFormat in, PixelFormat out) const override;
  std::string check(const ImageRef& in, const ImageRef& out) const override;
  bool same_as(const Operation& other) const override;
  bool capturable() const override;

  size_t workspace_bytes() const override;
  void prepare_cuda(const Workspace& workspace, CUstream_st* stream) const override;
  void prepare_reference(const Workspace& workspace) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;

  const std::vector<std::shared_ptr<const Operation>>& steps() const { return steps_; }

 private:
  // The image each step makes from `in` but the last (whose is `out`),
  // planes in the workspace's frames, or null planes where `workspace`
  // has none (for check()). Empty, with why in *problem, where a step
  // cannot take what the one before makes, or (`problem_only_last`) a step
  // but the last takes its output from downstream; otherwise such a step
  // makes its input's format (the caps then link, and check() says why
  // the chain cannot run).
  std::vector<ImageRef> between(const ImageRef& in, const Workspace* workspace,
                                std::string* problem, bool problem_only_last = true) const;
  // Step k's own part of the workspace.
  Workspace step_workspace(const Workspace& workspace, size_t k) const;
  // "step 2 (blur)": for messages.
  std::string step_name(size_t k) const;

  std::shared_ptr<const ChainSpec> spec_;
  std::vector<std::shared_ptr<const Operation>> steps_;
  // The input's size where the caps fixed it (KernelParams::sizes): the
  // frames between steps are sized for it. 0: unknown (caps queries).
  int in_width_ = 0;
  int in_height_ = 0;
  size_t frame_bytes_ = 0;  // one frame between steps, at most
  std::vector<size_t> step_offsets_;  // into the workspace, after the frames
};

}  // namespace cudaoverlap
