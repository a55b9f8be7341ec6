// A plane-by-plane kernel that writes out = in XOR mask, where the mask
// repeats every 4 bytes of a row. `copy` uses mask 0; `invert` uses 0xFF on
// the bytes it inverts (x XOR 0xFF == 255 - x). Shared by copy.cu and
// invert.cu; CUDA-only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda_check.h"
#include "kernels/video_format.h"

namespace cudaoverlap {
namespace {

constexpr int kChunk = 16;  // bytes per thread: one uint4
constexpr int kThreads = 256;
constexpr unsigned kMaxGridY = 65535;

// The planes of one image, for a single launch over all of them: I420's
// three planes in three launches cost more in launch gaps than their data.
struct MaskPlanes {
  const uint8_t* src[kMaxPlanes];
  size_t src_stride[kMaxPlanes];
  uint8_t* dst[kMaxPlanes];
  size_t dst_stride[kMaxPlanes];
  size_t row_bytes[kMaxPlanes];
  size_t rows[kMaxPlanes];
  uint32_t mask[kMaxPlanes];
  bool vector_ok[kMaxPlanes];
};

// Plane blockIdx.z; each thread handles one 16-byte chunk of a row; rows are
// walked with a grid-stride loop so planes taller than gridDim.y's limit
// still work. Rows start at a pixel boundary, so byte x of a row is channel
// x % 4.
__global__ void byte_mask_plane_kernel(MaskPlanes planes) {
  const int p = blockIdx.z;
  const size_t row_bytes = planes.row_bytes[p];
  const size_t begin = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kChunk;
  if (begin >= row_bytes) return;
  const size_t end = begin + kChunk <= row_bytes ? begin + kChunk : row_bytes;
  const uint8_t* __restrict__ src = planes.src[p];
  uint8_t* __restrict__ dst = planes.dst[p];
  const size_t src_stride = planes.src_stride[p], dst_stride = planes.dst_stride[p];
  const size_t rows = planes.rows[p];
  const uint32_t mask = planes.mask[p];
  const bool vector_ok = planes.vector_ok[p];
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

// Enqueues one launch for all planes (grid.z = plane; blocks beyond a
// smaller plane's extent return at once). plane_mask[p] is the 4-byte XOR
// pattern of plane p.
void launch_byte_mask(const ImageRef& in, const ImageRef& out, const uint32_t* plane_mask,
                      cudaStream_t stream) {
  const FormatInfo& info = format_info(in.format);
  MaskPlanes planes{};
  size_t max_chunks = 0, max_rows = 0;
  for (int p = 0; p < info.n_planes; ++p) {
    planes.src[p] = in.planes[p].data;
    planes.src_stride[p] = in.planes[p].stride;
    planes.dst[p] = out.planes[p].data;
    planes.dst_stride[p] = out.planes[p].stride;
    planes.row_bytes[p] = plane_row_bytes(in.format, p, in.width);
    planes.rows[p] = plane_rows(in.format, p, in.height);
    planes.mask[p] = plane_mask[p];
    planes.vector_ok[p] = aligned16(in.planes[p].data, in.planes[p].stride) &&
                          aligned16(out.planes[p].data, out.planes[p].stride);
    max_chunks = std::max(max_chunks, (planes.row_bytes[p] + kChunk - 1) / kChunk);
    max_rows = std::max(max_rows, planes.rows[p]);
  }
  if (max_chunks == 0 || max_rows == 0) return;
  dim3 grid(static_cast<unsigned>((max_chunks + kThreads - 1) / kThreads),
            static_cast<unsigned>(std::min<size_t>(max_rows, kMaxGridY)),
            static_cast<unsigned>(info.n_planes));
  byte_mask_plane_kernel<<<grid, kThreads, 0, stream>>>(planes);
  CO_CUDA_CHECK_LAUNCH("the byte mask kernel");
}

}  // namespace
}  // namespace cudaoverlap
