// What convert's per-pixel arithmetic (convert_math.h) works from: where
// each side's samples are and the matrices, computed once on the host from
// the formats and the caps' colorimetry (convert.h describes the paths).
#pragma once

#include <cstdint>

#include "kernels/kernel_params.h"
#include "kernels/video_format.h"

namespace cudaoverlap {

// How videoconvert brings subsampled chroma to a pixel along one axis: the
// nearest sample (its fast paths, or a copy between equal subsamplings), or
// 3:1 interpolation with the neighbouring sample (its generic path).
enum ChromaUp : int { kUpNearest = 0, kUpLinear = 1 };

// Where one side's samples are, from the format table, in a form the
// device can read (convert_math.h reads and writes every format through it).
struct ConvertSide {
  int pixel_stride = 4;      // packed RGB: bytes per pixel, 3 or 4
  int plane[3] = {0, 1, 2};  // YUV: plane, first byte and step of Y, U and V
  int offset[3] = {0, 0, 0};
  int step[3] = {1, 1, 1};
  int x_sub = 1, y_sub = 1;  // YUV: log2 of the chroma subsampling
  // Samples of 1 byte (8 bits) or 2 (little-endian; P010's 10 bits from
  // bit 6, I420_10LE's from bit 0, GRAY16's 16).
  int sample_bytes = 1, depth = 8, shift = 0;
};

// Everything the per-pixel arithmetic needs, computed once on the host.
struct ConvertCoefficients {
  int in_family = 0, out_family = 0;  // packed RGB, grey, YUV
  // Packed RGB: byte of R, G, B and alpha/padding (-1: 3-byte pixels).
  int in_offsets[4] = {0, 1, 2, 3};
  int out_offsets[4] = {0, 1, 2, 3};
  ConvertSide in_side, out_side;
  int32_t to_rgb[5] = {};     // Y->RGB, V->R, U->B, U->G, V->G, x256
  int32_t to_yuv[3][4] = {};  // rows Y, U, V: R, G, B, offset; x65536
  // How subsampled input chroma is brought to each pixel, across (x) and
  // down (y), before the matrix or the output's averaging (ChromaUp).
  int chroma_x = 0, chroma_y = 0;
  // YUV to YUV through videoconvert's plane scaler (convert_math.h,
  // scaled_chroma) rather than per-pixel chroma averaged down; planar:
  // both sides have a plane per chroma component (its halving shortcuts).
  bool scale_planes = false, scale_planar = false;
  // A side deeper than 8 bits: the whole conversion runs on 16-bit
  // samples, as videoconvert's does (convert_math.h, convert_block<true>), with
  // the offsets of the matrices below on that scale.
  bool deep = false;
  int32_t to_rgb_y_offset16 = 0;    // Y's offset, 16-bit scale (4096 limited range)
  int64_t to_yuv_offset16[3] = {};  // to_yuv's offsets, 16.16 on the 16-bit scale
  // Limited-range RGB input to YUV or grey: videoconvert's video_orc_matrix8
  // (convert_math::matrix8) with these coefficients (x256; rows Y, U, V,
  // columns R, G, B) instead of to_yuv.
  bool rgb_matrix8 = false;
  int32_t matrix8[3][3] = {};
  // GRAY8 to limited-range RGB: through yuv_to_rgb (to_rgb made for
  // full-range BT.601 input) rather than by replicating the sample.
  bool grey_matrix = false;
  // Chroma brought down to a subsampled output from one sample per pixel,
  // co-sited (ConvertParams): across, videoconvert's 1-2-1 filter centred
  // on the pair's first pixel; down, the pair's first row
  // (convert_math::block_chroma_cosited).
  bool cosited_x = false, cosited_y = false;
};
ConvertCoefficients convert_coefficients(PixelFormat in, PixelFormat out,
                                         const ConvertParams& params);

}  // namespace cudaoverlap
