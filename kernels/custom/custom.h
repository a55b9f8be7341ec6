// kernel=custom: the user's own CUDA C, compiled at run time (NVRTC) for
// the device and the stream's format, and run like any built-in kernel, its
// upload, compute and download overlapped with the frames around it.
//
// The source is written against the header kernels/public/cudaoverlap/
// pixel.cuh (installed as <cudaoverlap/pixel.cuh>), in one of its two forms:
// a per-pixel function the operation wraps in a kernel of its own, or a
// whole __global__ kernel with a launch shape the user gives. The operation
// writes the prelude the header describes (Params from the parameters'
// names and types, Format and the frame types from the stream's format) and
// compiles the program once per format in check() (in a chain's fused
// launch, once per format and pixel sizes either side: check_fused), so a
// compile error is the answer to check() — NVRTC's log, with the user's
// file name and lines — and is reported at caps time. Compiled programs
// are cached on disk (runtime_compiler.h); parameter values are not part
// of the program, only their names and types.
//
// The output format is the input's. CUDA only: the cpu backend has no way to
// run the source, and its reference says so.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "kernels/operation.h"
#include "kernels/operation_entry.h"

namespace cudaoverlap {

// The program for one format: loaded, ready to launch (custom.cu).
class CustomKernel;

class CustomOperation final : public Operation {
 public:
  // `colorimetry`: the stream's (for co::Rgba and co::Yuva conversions).
  CustomOperation(CustomKernelParams params, Colorimetry colorimetry);
  ~CustomOperation() override;

  const char* name() const override { return "custom"; }
  // Every video/x-raw format, kept.
  std::vector<PixelFormat> output_formats(PixelFormat in) const override { return keep_format(in); }
  // A whole kernel may read any row; a per-pixel function reads its own,
  // but writes chroma subsampled across rows (4:2:0) as the mean of two.
  bool mixes_rows(PixelFormat in, PixelFormat out) const override;
  // YUV formats: the user's code is given the stream's matrix.
  bool uses_matrix(PixelFormat in, PixelFormat) const override;
  // Also compiles the program for in.format (or finds it compiled): empty,
  // or why not, NVRTC's log included.
  std::string check(const ImageRef& in, const ImageRef& out) const override;
  bool same_as(const Operation& other) const override;
  void enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                    CUstream_st* stream) const override;
  // Throws: there is no CPU implementation of a user's CUDA source.
  void run_reference(const ImageRef& in, const ImageRef& out,
                     const Workspace& workspace) const override;
  // The per-pixel form on packed 8-bit RGB is a kUser stage: a chain fuses
  // it with the built-in stages around it into one launch, compiled with
  // the user's function (fused_custom_program), which these two run.
  bool pixel_stage(PixelFormat in, PixelFormat out, const Workspace& workspace,
                   PixelStage* stage) const override;
  // check() for such a launch: its program for a stream of `format` between
  // pixels of in_bytes and out_bytes (compiled, or found compiled).
  std::string check_fused(PixelFormat format, int in_bytes, int out_bytes) const;
  // stages[0..n) (this operation's kUser one among them) on every pixel of
  // `in` into `out` (fused_pixels.h), `format` being this step's.
  void enqueue_fused_cuda(const ImageRef& in, const ImageRef& out, PixelFormat format,
                          const PixelStage* stages, int n, CUstream_st* stream) const;

  const CustomKernelParams& params() const { return params_; }
  const Colorimetry& colorimetry() const { return colorimetry_; }

 private:
  // The program for `format`; with in_bytes > 0, the fused launch's.
  std::shared_ptr<const CustomKernel> kernel_for(PixelFormat format, std::string* problem,
                                                 int in_bytes = 0, int out_bytes = 0) const;

  const CustomKernelParams params_;
  const Colorimetry colorimetry_;
  mutable std::mutex mutex_;  // guards kernels_ (a leaf lock)
  // By format, and the fused launch's pixel sizes (0, 0 for the plain one).
  mutable std::map<std::tuple<PixelFormat, int, int>, std::shared_ptr<const CustomKernel>> kernels_;
};

// Why `params` cannot make a custom kernel (no source, a parameter name that
// is not a C identifier, a launch shape out of range), or empty.
std::string check_custom_params(const CustomKernelParams& params);

// The program compile_program gets for `params` on `format`, for `arch`:
// prelude, the user's source after a #line, and the per-pixel form's kernel.
// No CUDA needed.
struct ProgramSource;
ProgramSource custom_program(const CustomKernelParams& params, PixelFormat format, int arch);

// The program of a chain's fused launch (kernels/chain/fused_pixels.cuh)
// with the per-pixel form as its kUser stage, on a stream of `format` (a
// pixel-stage one) between pixels of in_bytes and out_bytes (3 or 4).
ProgramSource fused_custom_program(const CustomKernelParams& params, PixelFormat format,
                                   int in_bytes, int out_bytes, int arch);

// Pixels across the tile one thread of the per-pixel form takes: the
// host's copy of co::detail::tile_width in <cudaoverlap/pixel.cuh>, for the
// launch (the tests compile the one against the other for every format).
int custom_tile_width(PixelFormat format);

// The text of <cudaoverlap/pixel.cuh>, built into the library so the
// runtime compiler always finds the header this build was made with.
extern const char kPixelHeaderText[];

// custom.cu's half (CUDA builds; custom.cpp has the stand-ins without):
// compiles and loads the program for `format` on params.device (throws
// Error with NVRTC's log), with everything its launches need that does not
// change from frame to frame (the parameters' bytes, the launch shape); and
// launches it on a frame.
// With in_bytes > 0, the fused launch's program (fused_custom_program),
// launched by launch_fused_custom_kernel.
std::shared_ptr<const CustomKernel> build_custom_kernel(const CustomKernelParams& params,
                                                        PixelFormat format, int in_bytes = 0,
                                                        int out_bytes = 0);
void launch_custom_kernel(const CustomKernel& kernel, const Colorimetry& colorimetry,
                          const ImageRef& in, const ImageRef& out, CUstream_st* stream);
struct FusedLaunch;  // kernels/chain/fused_pixels.h
void launch_fused_custom_kernel(const CustomKernel& kernel, const Colorimetry& colorimetry,
                                const FusedLaunch& launch, CUstream_st* stream);

// The C twin of co::Colorimetry for `c` on one side of a stream.
struct CustomColorimetry {
  int matrix;
  int full_range;
  int rgb_limited;
  float kr, kb;
};
CustomColorimetry custom_colorimetry(const Colorimetry& c);

// Its registry entry (operation_entry.h).
const OperationEntry& custom_entry();

}  // namespace cudaoverlap
