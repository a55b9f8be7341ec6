// The launchers of convert's CUDA paths, each in a file of its own, as the
// dispatch (convert_cuda, convert.cu) chooses among them; private to the
// convert*.cu and debayer.cu files.
#pragma once

#include "kernels/convert/convert.h"
#include "kernels/convert/convert_coefficients.h"
#include "kernels/operation.h"

namespace cudaoverlap {
namespace convert_detail {

// What yuv_to_packed_kernel writes: packed RGB, or YUV of 4:2:2 (packed,
// semi-planar, planar) or 4:4:4 from 4:2:0 input, chroma brought to each
// pixel as for RGB and averaged across in pairs where the output
// subsamples (convert_math::block_chroma), luma copied.
enum YuvOut : int { kToRgb, kToPacked422, kToSemi422, kToPlanar422, kToPlanar444 };
// 4:2:0 output, from rows_kernel only: chroma pairs
// averaged across, then down; 8-bit, or 10-bit from the 16-bit arithmetic
// (P010_10LE, I420_10LE).
enum : int { kToSemi420 = kToPlanar444 + 1, kToPlanar420, kToP010, kToI420_10 };
// Grey output, from rows_kernel's RGB sources only: luma alone, 8-bit or
// on the 16-bit scale (GRAY16_LE stores all 16 bits).
enum : int { kToGrey8 = kToI420_10 + 1, kToGrey16 };

// Bayer mosaic to 4- or 3-byte RGB (debayer.cu).
void debayer_cuda(const ImageRef& in, const ImageRef& out, CUstream_st* stream);

// Whether move_chroma_cuda makes this pair, and the launch
// (convert_move_chroma.cu).
bool moves_chroma(PixelFormat in, PixelFormat out, const ConvertCoefficients& k);
void move_chroma_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                      CUstream_st* stream);

// Whether repack_samples_cuda makes this pair, and the launch
// (convert_repack.cu).
bool repacks_samples(const ImageRef& out, const ConvertCoefficients& k);
void repack_samples_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                         CUstream_st* stream);

// YUV to YUV through the plane scaler (convert_planes.cu).
void scale_planes_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                       CUstream_st* stream);

// Every pair no other path takes: the plane scaler, the repacked samples,
// else the tile or the block kernel (convert_any.cu).
void convert_any_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                      CUstream_st* stream);

// Row-wise conversions (convert_rows.cu).
// What rows_kernel makes of a pair: its source (RowSource) and output
// (YuvOut and the 4:2:0 kinds above), or false where it makes none of
// them. 8-bit 4:2:2 input to 8-bit packed RGB, 8- and 10-bit 4:2:0, 4:4:4
// and the other 4:2:2 layouts; Y444 to the same but its plane scaler's
// pairs (I420, Y42B); 8-bit packed RGB to 4:2:2, 4:4:4 and 10-bit 4:2:0,
// and 3-byte RGB to 8-bit 4:2:0 too (4-byte RGB has convert_kernel there);
// packed RGB to GRAY16_LE, and 3-byte RGB to GRAY8. Limited-range RGB
// (convert_math::matrix8) and grey input stay elsewhere.
bool rows_takes(PixelFormat in, PixelFormat out, const ConvertCoefficients& k, int* source,
                int* yuv_out);
// Whether it launched a kernel (false for a pair no instance makes: the
// caller converts it on the generic path).
bool rows_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k, int source,
               int yuv_out, CUstream_st* stream);

// Grey (GRAY8, GRAY16_LE) to packed RGB (convert_grey.cu).
void grey_packed_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                      CUstream_st* stream);

// 10-bit 4:2:0 input (convert_deep.cu).
// Whether deep420_kernel makes the pair: 10-bit 4:2:0 to 8-bit packed RGB
// (kToRgb) or 8-bit 4:2:2 and 4:4:4 YUV (*yuv_out), chroma interpolated.
bool deep420_takes(PixelFormat in, PixelFormat out, const ConvertCoefficients& k, int* yuv_out);
void deep420_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                  int yuv_out, CUstream_st* stream);

// The first nine formats, NV21, and 8-bit 4:2:0 YUV to 3-byte RGB, 4:2:2
// and 4:4:4, by 4x2 blocks (convert_rgb_yuv.cu).
// What yuv_to_packed_kernel makes of a pair of 8-bit YUV formats: 4:2:0
// (NV12, NV21, I420) to 4:2:2 or 4:4:4 outside the plane scaler's pairs,
// or kToRgb where it makes none of them.
int yuv_out_of(PixelFormat in, PixelFormat out, const ConvertCoefficients& k);
void rgb_yuv_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k, bool rgb24,
                  int yuv_out, CUstream_st* stream);

}  // namespace convert_detail
}  // namespace cudaoverlap
