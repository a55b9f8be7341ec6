// What the engine runs on each frame: an operation, made once with its
// parameters, prepared once when an engine starts, and enqueued per frame.
//
// An operation answers every question about itself in one place: which
// formats it takes and makes, whether the output's axes swap, which caps
// fields it leaves to downstream, whether it can do a given pair of images
// with its parameters, what device memory it needs, how to fill that memory
// at start, and how to compute a frame, both on a CUDA stream and on the
// host (its CPU reference, which the cpu backend runs and the tests use as
// the oracle). gst/ turns the first answers into caps; pipeline-core's
// backends call the last ones; nothing else switches on which kernel it is.
//
// Operations are immutable once made, so one object may be enqueued on
// several streams and asked from several threads at once.
//
// Adding one: docs/adding-a-kernel.md.
//
// This header holds no CUDA syntax (cudaStream_t is CUstream_st*, forward
// declared), so gst/ and the tests build with the ordinary C++ compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_params.h"
#include "kernels/parameter.h"
#include "kernels/video_format.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace cudaoverlap {

struct PixelStage;  // kernels/pixel_stage.h

// Memory an operation asked for (workspace_bytes()), allocated by whoever
// runs it: device memory on CUDA, host memory on the cpu backend. Shared by
// every frame, which the engine runs one after another on one stream:
// prepare_*() fill its tables, and a frame may use the rest as scratch
// (convert's frame between its two passes).
struct Workspace {
  uint8_t* data = nullptr;
  size_t bytes = 0;
};

// Rows [first, last) of a picture.
struct RowRange {
  int first = 0;
  int last = 0;
};

class Operation {
 public:
  // `declared`: the values of the parameters its registry entry declares
  // (operation_entry.h), which same_as() compares.
  explicit Operation(ParamValues declared = {}) : declared_(std::move(declared)) {}
  virtual ~Operation() = default;

  // The registry's name ("copy", "convert", …): the element's kernel=.
  virtual const char* name() const = 0;

  // --- What it takes and makes (asked at caps time) ----------------------

  // The formats it can make from an image of format `in`, `in` itself first
  // where it is one of them; empty when it does not take `in`.
  virtual std::vector<PixelFormat> output_formats(PixelFormat in) const = 0;
  // True when a WxH input makes an HxW output (rotations, transposes).
  virtual bool swaps_axes() const { return false; }
  // True when the output format is downstream's choice among
  // output_formats(in): the element then leaves the format, and the
  // colorimetry and chroma siting that go with it, to the peer.
  virtual bool format_from_downstream() const { return false; }
  // True when the output's width and height are downstream's choice (the
  // element negotiates them as videoscale does and hands them over in
  // KernelParams::sizes); false: they follow from the input's.
  virtual bool size_from_downstream() const { return false; }
  // The pixels taken off the input's edges before the operation runs (its
  // crop-* parameters): the element negotiates the size of what is left.
  virtual Crop crop() const { return {}; }
  // The sizes it was made for, with the picture's place in the output
  // where borders surround it; unset (zero) for an operation whose output
  // size follows from the input's.
  virtual FrameSizes sizes() const { return {}; }
  // Where each output pixel comes from, for metas and navigation events
  // that carry positions: a flip or rotation, or kIdentity (in place).
  virtual FlipDirection orientation() const { return FlipDirection::kIdentity; }
  // True when, with the same caps on both sides, the output is the input
  // byte for byte whatever it holds (convert and scale asked for nothing
  // else): the element then passes each buffer on untouched, as
  // videoconvertscale does, and runs no engine.
  virtual bool passes_through_same_caps() const { return false; }
  // True when an output row depends on input rows other than its own, so
  // the two fields of interlaced video would be mixed.
  virtual bool mixes_rows(PixelFormat in, PixelFormat out) const = 0;
  // True when its result depends on the YUV matrix of the caps
  // (ConvertParams' Colorimetry): only such an operation refuses a stream
  // whose matrix the kernels do not know.
  virtual bool uses_matrix(PixelFormat, PixelFormat) const { return false; }

  // Empty when it can turn `in` into `out` (formats, sizes, its parameters),
  // else a sentence saying what it allows. Asked once, before anything runs
  // (the element at caps time, the engine at start); prepare and enqueue
  // assume the answer was empty. The images' plane pointers are not read.
  virtual std::string check(const ImageRef& in, const ImageRef& out) const;

  // True when `other` is the same operation with the same parameters: an
  // engine made for one computes exactly what the other would. By default:
  // of the same class, with equal declared parameters; an operation with
  // state of another kind (caps' colorimetry, a callback) adds its own.
  virtual bool same_as(const Operation& other) const;
  // Its declared parameters' values.
  const ParamValues& declared() const { return declared_; }

  // --- Start ----------------------------------------------------------------

  // Bytes of workspace it needs; 0: none.
  virtual size_t workspace_bytes() const { return 0; }
  // Fills the workspace (tables, constants): enqueued on the stream that
  // will run the frames, before the first of them, or run on the host.
  virtual void prepare_cuda(const Workspace& workspace, CUstream_st* stream) const;
  virtual void prepare_reference(const Workspace& workspace) const;

  // --- Per frame ------------------------------------------------------------

  // Enqueues the CUDA implementation on `stream` and checks the launch; `in`
  // and `out` point into device memory. No allocation, no synchronisation.
  // Throws cudaoverlap::Error (also when built without CUDA).
  virtual void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                            CUstream_st* stream) const = 0;
  // Computes the frame on the calling thread (the CPU reference): plain
  // code, the oracle of the CUDA kernels' tests.
  virtual void run_reference(const ImageRef& in, const ImageRef& out,
                             const Workspace& workspace) const = 0;
  // What the cpu backend runs: the same bytes as run_reference, computed as
  // fast as the host allows (tests/kernels/test_cpu_fast.cpp holds them
  // equal). The default is run_reference itself.
  virtual void run_cpu(const ImageRef& in, const ImageRef& out, const Workspace& workspace) const;

  // --- Bands (EngineConfig::bands) -------------------------------------------

  // Whether an output band can be made before the rest of the input has
  // arrived: >= 0 where it can. For an operation that keeps band_reads'
  // default, output rows [y0, y1) then read input rows [y0 - halo, y1 +
  // halo) at most (clamped to the image), and this returns that halo. -1,
  // the default: an output row may depend on any input row (a vertical flip,
  // a rotation, a kernel the user wrote), so frames are not split.
  virtual int band_halo(PixelFormat in, PixelFormat out) const;
  // The input rows output rows [y0, y1) read: by default those rows and
  // band_halo() either side, within the input's `in_height` (every row
  // where band_halo() < 0). An operation whose output rows are not its
  // input's (a crop, a change of height) and that allows bands overrides
  // it and the rows functions below; the engine uploads a band's kernel's
  // rows before it runs.
  virtual RowRange band_reads(PixelFormat in, PixelFormat out, int y0, int y1, int in_height) const;
  // Enqueues, or computes, output rows [y0, y1) only. `in` and `out` are the
  // whole images; y0 and y1 are multiples of both formats' vertical
  // subsampling, except y1 at the bottom. The defaults run enqueue_cuda /
  // run_reference on those rows of both images as images of their own,
  // which is right for operations of halo 0 whose output row y comes from
  // input row y alone; an operation with a halo overrides them.
  virtual void enqueue_cuda_rows(const ImageRef& in, const ImageRef& out,
                                 const Workspace& workspace, int y0, int y1,
                                 CUstream_st* stream) const;
  virtual void run_reference_rows(const ImageRef& in, const ImageRef& out,
                                  const Workspace& workspace, int y0, int y1) const;
  // run_cpu's rows: by default run_reference_rows; an operation with a fast
  // run_cpu overrides both.
  virtual void run_cpu_rows(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                            int y0, int y1) const;
  // How a band is computed when band_halo() >= 0: false (the default), by
  // the two functions above; true, by the whole-frame enqueue_cuda /
  // run_reference on input rows band_view() as an image of their own, into
  // a scratch image the engine keeps, whose band rows it then copies into
  // the output (a device-to-device copy of one band). Right for an
  // operation whose output rows depend on input rows within its halo,
  // clamped at the picture's edges, and otherwise on the rows' parity at
  // most (4:2:0 chroma, a Bayer mosaic), so that it needs no rows path of
  // its own.
  virtual bool bands_by_view(PixelFormat, PixelFormat) const { return false; }
  // Whether run_cpu_rows may make bands of one frame at once on several
  // threads (the cpu backend's n-threads): the rows computed on their own
  // (band_halo() >= 0, not by view) and nothing written but the output's
  // rows, the workspace read only. A chain of several steps says no: the
  // frames between its steps are the workspace's.
  virtual bool cpu_rows_at_once(PixelFormat in, PixelFormat out) const;

  // --- Graphs (EngineConfig::graphs) -----------------------------------------

  // Whether enqueue_cuda / enqueue_cuda_rows may be captured once into a
  // CUDA graph and the graph launched again for later frames in their
  // place: true when they only enqueue stream work whose arguments depend on
  // the images and this (immutable) object alone. False for work whose host
  // code must run every frame (an application's own).
  virtual bool capturable() const { return true; }

  // --- Parts (timing) -------------------------------------------------------

  // The launches one frame of `in` to `out` takes that are timed apart
  // (EngineConfig::timing), by name: a chain's steps, a fused run of them
  // as one. Empty, the default: the operation is one part.
  virtual std::vector<std::string> parts(PixelFormat in, PixelFormat out) const;
  // Part `part` of enqueue_cuda / run_reference alone: the parts in order
  // make the frame. The defaults run the whole frame (an operation of one
  // part).
  virtual void enqueue_cuda_part(size_t part, const ImageRef& in, const ImageRef& out,
                                 const Workspace& workspace, CUstream_st* stream) const;
  virtual void run_reference_part(size_t part, const ImageRef& in, const ImageRef& out,
                                  const Workspace& workspace) const;
  // What the cpu backend runs for a part (asked only of an operation of
  // several parts): by default run_reference_part.
  virtual void run_cpu_part(size_t part, const ImageRef& in, const ImageRef& out,
                            const Workspace& workspace) const;

  // --- Fusion (chains) -------------------------------------------------------

  // Where each pixel of `out` depends on the pixel at the same place of
  // `in` alone and both are pixel-stage formats (is_pixel_stage_format):
  // fills *stage with that map, its tables in `workspace` as prepare_cuda
  // left them, and returns true, so that a chain runs it with its
  // neighbours' in one launch. False, the default: it runs its own launch.
  virtual bool pixel_stage(PixelFormat in, PixelFormat out, const Workspace& workspace,
                           PixelStage* stage) const;

  // --- Derived from the above ---------------------------------------------

  // The formats it takes: those with a non-empty output_formats().
  std::vector<PixelFormat> input_formats() const;

 private:
  ParamValues declared_;
};

// Rows [y0, y1) of `image` as an image of their own: every plane's data
// moved down by its rows above y0 (y0 a multiple of the format's vertical
// subsampling), the height y1 - y0.
ImageRef image_rows(const ImageRef& image, int y0, int y1);

// The row step a band of an `in` -> `out` operation must start on: the
// largest vertical period of either format (1 or 2): its chroma's vertical
// subsampling, or a Bayer mosaic's two rows.
int band_row_step(PixelFormat in, PixelFormat out);

// The input rows an operation that computes bands by view
// (Operation::bands_by_view) runs on for output rows [y0, y1): those and
// `halo` rows either side, within the picture's `height`, starting and
// ending on multiples of `step` (but for the picture's bottom row), so that
// the rows keep their parity.
RowRange band_view(int y0, int y1, int halo, int step, int height);

// For operations that keep the format and take every format of video/x-raw:
// {in}, or {} for a Bayer mosaic (which only `convert` takes, to debayer it).
std::vector<PixelFormat> keep_format(PixelFormat in);
// For operations that keep the format and take only `taken`: {in} or {}.
std::vector<PixelFormat> keep_format_of(PixelFormat in, const std::vector<PixelFormat>& taken);

// The nine 8-bit formats the first kernels were written for: 4-byte RGB
// (RGBA, BGRA, RGBx, BGRx, ARGB, ABGR), NV12, I420 and GRAY8.
const std::vector<PixelFormat>& rgb32_yuv420_gray8_formats();

// Whether the CUDA implementations were built (else enqueue_cuda throws).
bool kernels_have_cuda();

// Throws the error an operation's enqueue_cuda gives in a build without
// CUDA.
[[noreturn]] void throw_built_without_cuda();

// In an operation's enqueue_cuda: `call` (its launcher, defined in its .cu)
// where CUDA was built, else the error above.
#ifdef CUDAOVERLAP_HAVE_CUDA
#define CO_CUDA_ONLY(call) call
#else
// The call is named, never evaluated: its arguments count as used.
#define CO_CUDA_ONLY(call) \
  ((void)sizeof(decltype(call)*), ::cudaoverlap::throw_built_without_cuda())
#endif

// "RGBA, BGRA and NV12": for messages.
std::string format_list(const std::vector<PixelFormat>& formats);

// Both null, or the same operation with the same parameters.
bool same_operation(const std::shared_ptr<const Operation>& a,
                    const std::shared_ptr<const Operation>& b);

}  // namespace cudaoverlap
