// Scaling one image to another of the same format through fixed-point tap
// tables (scale_taps.h): the tables for a pair of sizes, laid out as a
// workspace holds them, and the CPU and CUDA passes that read them. Every
// component is scaled on its own grid, as GStreamer's video scaler does:
// chroma of subsampled formats from the input's chroma grid to the
// output's, 10- and 16-bit samples at their depth, alpha like a colour,
// and the padding byte of RGBx-like formats written as 255.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel_params.h"
#include "kernels/parameter.h"
#include "kernels/scale/scale_taps.h"
#include "kernels/video_format.h"

struct CUstream_st;

namespace cudaoverlap {

struct ScaleComponent;

// Output rows a CUDA block of the scale kernels makes: a short tile, and a
// tall one (four rows a thread) where its input rows fit in shared memory.
constexpr int kScaleBlockRows = 8;
constexpr int kScaleTallRows = 32;

// The tables of one operation: each component grid's two axes, laid out as
// the workspace holds them.
struct ScaleTables {
  struct Axis {
    int taps = 0;
    int in_size = 0;
    int out_size = 0;
    // The most input rows any kScaleBlockRows (tall_rows: kScaleTallRows)
    // consecutive outputs reach (a CUDA block's shared-memory rows); 0 with
    // one tap.
    int block_rows = 0;
    int tall_rows = 0;
    // The most any output's weights add up to, each counted positive.
    int abs_sum = 0;
    size_t first_at = 0;   // byte offset of its int32 starts
    size_t weight_at = 0;  // byte offset of its int16 weights
    // For the CUDA kernels, each weight also as a float, times
    // 2^-kScaleWeightBits. Along x: [tap][output] pairs of int32, the input
    // index (the edge clamped in) and the weight, int (tap_at) and float
    // (ftap_at). Along y: [output][tap] floats (fweight_at).
    size_t tap_at = 0;
    size_t ftap_at = 0;
    size_t fweight_at = 0;
    // Along x, where the input is at least as wide as the taps rounded up
    // to fours: each output's taps as a window of consecutive inputs, in
    // groups of four (window_groups of them; 0: no windows), so that 8-bit
    // samples are summed four at a time with byte dot products. The
    // window starts where the taps do but lies inside the input, taps
    // past an edge adding their weight to the edge's sample, as they read
    // it; its int32 starts (window_start_at), and its weights by group,
    // [group][output] pairs of words (window_weight_at): each weight's low
    // bytes (unsigned) and its high bytes (signed), four taps a word.
    int window_groups = 0;
    size_t window_start_at = 0;
    size_t window_weight_at = 0;
  };
  // [0] x and [1] y of the full grid (luma, RGB, 4:4:4 chroma); [2] x
  // and [3] y of a grid halved along that axis (subsampled chroma).
  Axis axes[4];
  std::vector<uint8_t> bytes;
  // 8-bit samples summed in float give the integer sums' bits (scale.cu):
  // every sum, rounded or not, stays an integer number of 2^-14 below 2^24
  // of them. True for every filter of scale_taps.h.
  bool float_exact = false;
};

// The components of an `in` -> `out` frame (the same format) with their
// axes in `tables` (the workspace's copy of ScaleTables::bytes at
// `workspace`), each made on the rows of output rows [y0, y1) (y1 < 0:
// every row; y0 a multiple of the format's vertical subsampling). Returns
// how many (at most kMaxComponents + 1: a padding byte).
int scale_components(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                     const uint8_t* workspace, ScaleComponent* components, int y0 = 0, int y1 = -1);

// The tables for `sizes`, for every format's grids.
ScaleTables scale_tables(ScaleMethod method, const FrameSizes& sizes);

// Scales `in` to output rows [y0, y1) of `out` (y1 < 0: all of them).
void scale_reference(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                     const uint8_t* workspace, int y0 = 0, int y1 = -1);
// The same bytes, faster: the cpu backend's (scale_cpu.cpp).
void scale_cpu(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
               const uint8_t* workspace, int y0 = 0, int y1 = -1);
// Copies `tables` into the device workspace, on `stream`.
void scale_prepare_cuda(const ScaleTables& tables, uint8_t* workspace, CUstream_st* stream);
void scale_cuda(const ImageRef& in, const ImageRef& out, const ScaleTables& tables,
                const uint8_t* workspace, CUstream_st* stream, int y0 = 0, int y1 = -1);

// The `method` parameter, declared by scale and by convert (which scales
// too).
const ParamSpec& scale_method_param();

}  // namespace cudaoverlap
