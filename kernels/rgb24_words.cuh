// Four 3-byte pixels (RGB, BGR) are three 32-bit words: turning those into
// a word per pixel (bytes 0..2 the pixel's, byte 3 unspecified) and back,
// with one byte permute each. Shared by convert's CUDA kernels
// (convert_*.cu), balance.cu and the fused launch; CUDA-only.
#pragma once

#ifndef __CUDACC_RTC__  // NVRTC (fused_pixels.cuh) has neither
#include <cuda_runtime.h>

#include <cstdint>
#endif

namespace cudaoverlap {
namespace rgb24 {

// px[i]'s bytes 0..2 from q's 12 bytes; byte 3 of each is the next bytes'
// (or 0 for the last), which a pixel's arithmetic must ignore.
__device__ __forceinline__ void unpack(const uint32_t q[3], uint32_t px[4]) {
  px[0] = q[0];
  px[1] = __byte_perm(q[0], q[1], 0x6543);
  px[2] = __byte_perm(q[1], q[2], 0x5432);
  px[3] = q[2] >> 8;
}

// The 12 bytes of px[0..3]'s bytes 0..2, as three words.
__device__ __forceinline__ void pack(const uint32_t px[4], uint32_t q[3]) {
  q[0] = __byte_perm(px[0], px[1], 0x4210);
  q[1] = __byte_perm(px[1], px[2], 0x5421);
  q[2] = __byte_perm(px[2], px[3], 0x6542);
}

}  // namespace rgb24
}  // namespace cudaoverlap
