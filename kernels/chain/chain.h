// A chain of operations run back to back in one element (its `chain`
// property): the text a user writes, gst-launch style, parsed into steps,
// and the operation that runs the steps one after another on the compute
// stream, each frame between two steps kept in its workspace, so a frame
// crosses PCIe once whatever the number of steps.
//
//   balance contrast=1.2 saturation=0.8 ! blur sigma=2 ! flip video-direction=90r ! convert
//
// Each step is a built-in operation with its own parameters, as its
// registry entry declares them, a user's kernel (custom, with the
// element's kernel-* properties as its words), or the application's work
// (application: the element's `process` signal, on the frame between the
// steps around it). A step whose output format or size is
// downstream's choice (convert, scale) can only be the last: its output is
// the element's, negotiated with downstream. Consecutive steps that map
// each pixel of packed 8-bit RGB alone (Operation::pixel_stage: invert,
// balance, convert between RGB orders, a user's per-pixel function) run
// fused, in one launch (fused_pixels.h; with a user's function, a program
// compiled with it at caps time); every other step is its own launch.
// A frame is cut into bands (EngineConfig::bands) where every step allows
// bands by rows and keeps the picture's size: each band runs every step on
// the rows the steps after it read, so its halo is the sum of theirs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/operation.h"
#include "kernels/pixel_stage.h"

namespace cudaoverlap {

class CustomOperation;  // kernels/custom/custom.h

struct ChainStep {
  std::string name;  // a registry entry's
  ParamValues values;
  // A custom step's text values as written (kernel-file, kernel-source,
  // kernel-params, kernel-entry, kernel-launch), and its kernel made from
  // them by the element (which reads files and GStreamer structures)
  // before the chain is made.
  std::vector<std::pair<std::string, std::string>> texts;
  std::shared_ptr<const CustomKernelParams> custom;
};

struct ChainSpec {
  std::string text;  // as the user wrote it
  std::vector<ChainStep> steps;
};

// The steps of `text`, each step's values checked against what its
// operation declares. Throws Error with a sentence naming the step (its
// number from 1 and its kernel) and what is wrong with it.
std::shared_ptr<const ChainSpec> parse_chain(const std::string& text);

// The words a custom step takes: the element's properties of the same names.
const std::vector<std::string>& custom_step_words();

// Whether a step of `spec` is a user's kernel (custom).
bool chain_has_custom(const ChainSpec& spec);

class ChainOperation final : public Operation {
 public:
  // Each step made with `params` but for its own values. Throws Error
  // naming the step whose parameters its operation refuses. `fuse` false:
  // every step its own launch (for measuring what fusion saves).
  ChainOperation(std::shared_ptr<const ChainSpec> spec, const KernelParams& params,
                 bool fuse = true);

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
  int band_halo(PixelFormat in, PixelFormat out) const override;
  bool cpu_rows_at_once(PixelFormat in, PixelFormat out) const override;
  void enqueue_cuda_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                         int y0, int y1, CUstream_st* stream) const override;
  void run_reference_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                          int y0, int y1) const override;

  // Its launches (launches()), named by their steps: "step 2 (blur)",
  // "steps 3-5 (balance, invert, convert)". Empty for one step.
  std::vector<std::string> parts(PixelFormat in, PixelFormat out) const override;
  void enqueue_cuda_part(size_t part, const ImageRef& in, const ImageRef& out,
                         const Workspace& workspace, CUstream_st* stream) const override;
  // The steps of launch `part`, one by one.
  void run_reference_part(size_t part, const ImageRef& in, const ImageRef& out,
                          const Workspace& workspace) const override;

  size_t workspace_bytes() const override;
  void prepare_cuda(const Workspace& workspace, CUstream_st* stream) const override;
  void prepare_reference(const Workspace& workspace) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
  // The same through each step's run_cpu, run_cpu_rows.
  void run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const override;
  void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                    int y1) const override;
  void run_cpu_part(size_t part, const ImageRef& in, const ImageRef& out,
                    const Workspace& workspace) const override;

  const std::vector<std::shared_ptr<const Operation>>& steps() const { return steps_; }
  // Whether the steps before the last swap width and height: the last
  // step's input is then the element's turned.
  bool turns_before_last() const;

  // The launches a frame of `in` to `out` takes on CUDA, in order: each
  // the steps [first, last] it runs, fused where first < last. A fused
  // launch runs at most one user's per-pixel step (custom): `user`, whose
  // program it is, on frames of `user_format`.
  struct Launch {
    size_t first = 0;
    size_t last = 0;
    int user = -1;
    PixelFormat user_format = PixelFormat::kRGBA;
  };
  std::vector<Launch> launches(PixelFormat in, PixelFormat out) const;

 private:
  // run_reference, run_reference_rows (y1 >= 0) and run_reference_part
  // (part >= 0), or with `fast` the cpu backend's.
  void run_host(const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0, int y1,
                long part, bool fast) const;
  // The image each step makes from `in` but the last (whose is `out`),
  // planes in the workspace's frames, or null planes where `workspace`
  // has none (for check()). Empty, with why in *problem, where a step
  // cannot take what the one before makes, or (`problem_only_last`) a step
  // but the last takes its output from downstream; otherwise such a step
  // makes its input's format (the caps then link, and check() says why
  // the chain cannot run).
  std::vector<ImageRef> between(const ImageRef& in, const Workspace* workspace,
                                std::string* problem, bool problem_only_last = true) const;
  // The formats from `in` through every step to `out`: in, what each step
  // but the last makes, out. Empty where a step cannot take its input.
  std::vector<PixelFormat> formats(PixelFormat in, PixelFormat out) const;
  // The output rows each step makes for the chain's rows [y0, y1) of a
  // picture `height` rows high: the last step's are those, each earlier
  // step's what the next one reads (its halo either way, on the row step
  // of its formats).
  std::vector<RowRange> band_rows(const ImageRef& in, const std::vector<ImageRef>& frames,
                                  const ImageRef& out, int y0, int y1) const;
  // launches() for the images `in`, `frames` (between()'s), `out`, with
  // each fused launch's stages (their tables in `workspace`, when given).
  std::vector<Launch> plan(const ImageRef& in, const std::vector<ImageRef>& frames,
                           const ImageRef& out, const Workspace* workspace,
                           std::vector<std::vector<PixelStage>>* stages) const;
  // A frame's frames between steps (between()) and its plan (plan()), for
  // the images and workspace it runs on. Throws OperationError where a step
  // cannot take its input.
  struct Planned {
    std::vector<ImageRef> frames;
    std::vector<Launch> launches;
    std::vector<std::vector<PixelStage>> stages;
    // Launch i's input and output.
    ImageRef in_of(const Launch& l, const ImageRef& in) const {
      return l.first == 0 ? in : frames[l.first - 1];
    }
    ImageRef out_of(const Launch& l, const ImageRef& out, size_t steps) const {
      return l.last + 1 == steps ? out : frames[l.last];
    }
  };
  Planned planned(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const;
  // Runs launch `launch` of the plan from `in` into `out`, rows [y0, y1) of
  // its last step's output (whole images: 0 and out.height).
  void enqueue_launch(const Launch& launch, const std::vector<PixelStage>& stages,
                      const ImageRef& in, const ImageRef& out, const Workspace& workspace, int y0,
                      int y1, bool rows, CUstream_st* stream) const;
  // The user's step (custom) whose program fused launch `launch` is.
  const CustomOperation& user_step(const Launch& launch) const;
  // Step k's own part of the workspace.
  Workspace step_workspace(const Workspace& workspace, size_t k) const;
  // "step 2 (blur)": for messages.
  std::string step_name(size_t k) const;

  std::shared_ptr<const ChainSpec> spec_;
  std::vector<std::shared_ptr<const Operation>> steps_;
  bool fuse_ = true;
  // The input's size where the caps fixed it (KernelParams::sizes): the
  // frames between steps are sized for it. 0: unknown (caps queries).
  int in_width_ = 0;
  int in_height_ = 0;
  size_t frame_bytes_ = 0;  // one frame between steps, at most
  std::vector<size_t> step_offsets_;  // into the workspace, after the frames
};

}  // namespace cudaoverlap
