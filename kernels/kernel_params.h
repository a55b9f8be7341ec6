// What the built-in operations are made from besides their declared
// parameters (parameter.h): convert's colorimetry from the caps, custom's
// source, the application's callback; and the flip directions that
// positions are mapped through. The registry (operation_registry.h) makes
// an operation from a name and these.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/parameter.h"
#include "kernels/video_format.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace cudaoverlap {

// videoflip's video-direction values (GstVideoOrientationMethod, without
// auto and custom), in the same order so the numbers match.
enum class FlipDirection {
  kIdentity,
  k90R,  // clockwise
  k180,
  k90L,    // counter-clockwise
  kHoriz,  // mirror left-right
  kVert,   // mirror top-bottom
  kUlLr,   // across the upper-left/lower-right diagonal (transpose)
  kUrLl,   // across the upper-right/lower-left diagonal
};

// True when `direction` turns a WxH image into an HxW one.
bool flip_swaps_size(FlipDirection direction);

// convert's colorimetry of one side: the matrix and range where that side
// is YUV; where it is RGB, whether its caps say range 16-235 (as
// "colorimetry=bt709" on RGB does), which videoconvert honours.
enum class YuvMatrix { kBT601, kBT709, kFCC, kSMPTE240M, kBT2020 };

// The matrix travels with its luma weights of red and blue as GStreamer
// gives them (gst_video_color_matrix_get_Kr_Kb, which the element asks),
// set together so that neither goes without the other. The default is
// BT.601's.
class Colorimetry {
 public:
  Colorimetry() = default;
  explicit Colorimetry(bool full, bool rgb_on_16_235 = false)
      : full_range(full), rgb_limited(rgb_on_16_235) {}
  YuvMatrix matrix() const { return matrix_; }
  double kr() const { return kr_; }
  double kb() const { return kb_; }
  Colorimetry& set_matrix(YuvMatrix matrix, double kr, double kb) {
    matrix_ = matrix;
    kr_ = kr;
    kb_ = kb;
    return *this;
  }
  bool operator==(const Colorimetry& o) const {
    return matrix_ == o.matrix_ && full_range == o.full_range && rgb_limited == o.rgb_limited &&
           kr_ == o.kr_ && kb_ == o.kb_;
  }

  bool full_range = false;   // YUV sides
  bool rgb_limited = false;  // RGB sides: samples on 16..235

 private:
  YuvMatrix matrix_ = YuvMatrix::kBT601;
  double kr_ = 0.299;
  double kb_ = 0.114;
};

struct ConvertParams {
  Colorimetry in;   // of the input
  Colorimetry out;  // of the output
  // The output's chroma siting where its caps name one (chroma-site):
  // samples co-sited with the first pixel of their pair across, and with
  // the first row of their pair down (mpeg2: across; dv: both).
  bool cosited_x = false;
  bool cosited_y = false;
  bool operator==(const ConvertParams& o) const {
    return in == o.in && out == o.out && cosited_x == o.cosited_x && cosited_y == o.cosited_y;
  }
};

// One field of kernel=custom's parameters (the element's kernel-params
// structure): a member of the `Params` struct the user's kernel receives.
// The picture's size on either side, from the caps: for an operation whose
// output size is downstream's choice (Operation::size_from_downstream).
// Zero where unknown.
struct FrameSizes {
  int in_width = 0;
  int in_height = 0;
  int out_width = 0;
  int out_height = 0;
  // The picture's place in the output where borders surround it
  // (add-borders); a zero width: all of the output.
  int dest_x = 0;
  int dest_y = 0;
  int dest_width = 0;
  int dest_height = 0;
  bool known() const { return in_width > 0 && in_height > 0 && out_width > 0 && out_height > 0; }
  int picture_width() const { return dest_width > 0 ? dest_width : out_width; }
  int picture_height() const { return dest_width > 0 ? dest_height : out_height; }
  bool has_borders() const {
    return picture_width() != out_width || picture_height() != out_height;
  }
  bool operator==(const FrameSizes& o) const {
    return in_width == o.in_width && in_height == o.in_height && out_width == o.out_width &&
           out_height == o.out_height && dest_x == o.dest_x && dest_y == o.dest_y &&
           dest_width == o.dest_width && dest_height == o.dest_height;
  }
};

// Pixels taken off each edge of the input before anything else (the
// crop-* parameters of scale and convert).
struct Crop {
  int left = 0;
  int right = 0;
  int top = 0;
  int bottom = 0;
  bool any() const { return left != 0 || right != 0 || top != 0 || bottom != 0; }
  bool operator==(const Crop& o) const {
    return left == o.left && right == o.right && top == o.top && bottom == o.bottom;
  }
};

struct CustomParam {
  enum class Type { kInt, kUInt, kFloat, kDouble, kBool };
  std::string name;  // a C identifier
  Type type = Type::kInt;
  double value = 0;  // every type's values fit a double exactly

  bool operator==(const CustomParam& o) const {
    return name == o.name && type == o.type && value == o.value;
  }
};

// kernel=custom: a CUDA C source compiled at run time (custom.h).
struct CustomKernelParams {
  std::string source;                         // the CUDA C text
  std::string source_name = "kernel-source";  // for messages: the file's name
  std::string entry = "process";              // the user's function or kernel
  // 0: the per-pixel form (entry is a __device__ function the operation
  // wraps); else a __global__ kernel launched with blocks of block_x x
  // block_y threads, each thread covering pixels_x x pixels_y pixels.
  int block_x = 0;
  int block_y = 0;
  int pixels_x = 1;
  int pixels_y = 1;
  std::vector<CustomParam> params;
  // The CUDA device whose architecture the source is compiled for; -1: the
  // calling thread's current device. The element sets it to its own.
  int device = -1;

  bool operator==(const CustomKernelParams& o) const {
    return source == o.source && source_name == o.source_name && entry == o.entry &&
           block_x == o.block_x && block_y == o.block_y && pixels_x == o.pixels_x &&
           pixels_y == o.pixels_y && params == o.params && device == o.device;
  }
};

struct ImageRef;
// kernel=application: the application's own work on each frame (the
// element's `process` signal). `in` and `out` are device planes and `stream`
// the compute stream on the cuda backend, host planes and null on the cpu
// backend. False: the frame failed.
using ApplicationProcess =
    std::function<bool(const ImageRef& in, const ImageRef& out, ::CUstream_st* stream)>;

struct ChainSpec;
// Both null, or chains of the same text whose custom steps loaded the same
// kernels (kernels/chain/chain.cpp).
bool same_chain(const std::shared_ptr<const ChainSpec>& a,
                const std::shared_ptr<const ChainSpec>& b);

// What the built-in operations are made from; each takes the fields it
// needs and ignores the others.
struct KernelParams {
  // The parameters operations declare (operation_entry.h), by name: the
  // element's properties such as sigma or brightness.
  ParamValues values;
  ConvertParams convert;  // from the caps
  FrameSizes sizes;       // from the caps
  CustomKernelParams custom;
  // kernel=application; the same callback compares equal only to itself.
  std::shared_ptr<const ApplicationProcess> application;
  // kernel=chain: the steps (kernels/chain/chain.h), compared by same_chain.
  std::shared_ptr<const ChainSpec> chain;

  // Sets one declared parameter: params.set("sigma", 3.0), or an
  // enumeration's value: params.set("video-direction", FlipDirection::k90R).
  template <typename T>
  KernelParams& set(const std::string& name, T value) {
    values.set(name, static_cast<double>(value));
    return *this;
  }
  bool operator==(const KernelParams& o) const {
    return values == o.values && convert == o.convert && sizes == o.sizes && custom == o.custom &&
           application == o.application && same_chain(chain, o.chain);
  }
  bool operator!=(const KernelParams& o) const { return !(*this == o); }
};

}  // namespace cudaoverlap
