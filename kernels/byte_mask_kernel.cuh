// A plane-by-plane kernel that writes out = in XOR mask, where the mask
// repeats every 4 bytes of a row. `copy` uses mask 0; `invert` uses 0xFF on
// the bytes it inverts (x XOR 0xFF == 255 - x). Shared by copy.cu and
// invert.cu; CUDA-only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda_check.h"
#include "video_format.h"

namespace cudaoverlap {
namespace {

constexpr int kChunk = 16;  // bytes per thread: one uint4
constexpr int kThreads = 256;
constexpr unsigned kMaxGridY = 65535;

// Each thread handles one 16-byte chunk of a row; rows are walked with a
// grid-stride loop so planes taller than gridDim.y's limit still work.
// Rows start at a pixel boundary, so byte x of a row is channel x % 4.
__global__ void byte_mask_plane_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                                       uint8_t* __restrict__ dst, size_t dst_stride,
                                       size_t row_bytes, size_t rows, uint32_t mask,
                                       bool vector_ok) {
  const size_t begin = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kChunk;
  if (begin >= row_bytes) return;
  const size_t end = begin + kChunk <= row_bytes ? begin + kChunk : row_bytes;
  for (size_t y = blockIdx.y; y < rows; y += gridDim.y) {
    const uint8_t* s = src + y * src_stride;
    uint8_t* d = dst + y * dst_stride;
    if (vector_ok && end - begin == kChunk) {
      uint4 v = *reinterpret_cast<const uint4*>(s + begin);
      v.x ^= mask;
      v.y ^= mask;
      v.z ^= mask;
      v.w ^= mask;
      *reinterpret_cast<uint4*>(d + begin) = v;
    } else {
      for (size_t x = begin; x < end; ++x)
        d[x] = static_cast<uint8_t>(s[x] ^ ((mask >> (8 * (x % 4))) & 0xFFu));
    }
  }
}

bool aligned16(const void* p, size_t stride) {
  return (reinterpret_cast<uintptr_t>(p) % kChunk) == 0 && stride % kChunk == 0;
}

// Enqueues one launch per plane. plane_mask[p] is the 4-byte XOR pattern of
// plane p.
void launch_byte_mask(const ImageRef& in, const ImageRef& out, const uint32_t* plane_mask,
                      bool inject_launch_failure, cudaStream_t stream) {
  const FormatInfo& info = format_info(in.format);
  for (int p = 0; p < info.n_planes; ++p) {
    const size_t row_bytes = plane_row_bytes(in.format, p, in.width);
    const size_t rows = plane_rows(in.format, p, in.height);
    if (row_bytes == 0 || rows == 0) continue;
    const size_t chunks = (row_bytes + kChunk - 1) / kChunk;
    dim3 grid(static_cast<unsigned>((chunks + kThreads - 1) / kThreads),
              static_cast<unsigned>(std::min<size_t>(rows, kMaxGridY)));
    // An empty grid is an invalid configuration: CUDA reports it at launch.
    if (inject_launch_failure) grid.x = 0;
    const bool vector_ok = aligned16(in.planes[p].data, in.planes[p].stride) &&
                           aligned16(out.planes[p].data, out.planes[p].stride);
    byte_mask_plane_kernel<<<grid, kThreads, 0, stream>>>(
        in.planes[p].data, in.planes[p].stride, out.planes[p].data, out.planes[p].stride, row_bytes,
        rows, plane_mask[p], vector_ok);
    CO_CUDA_CHECK_LAUNCH("the byte mask kernel");
  }
}

}  // namespace
}  // namespace cudaoverlap
