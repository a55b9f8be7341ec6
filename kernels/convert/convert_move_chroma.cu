// 8-bit YUV to YUV of one subsampling between planar and semi-planar
// layouts for convert: luma copied and the chroma bytes moved, in one
// launch (move_chroma_kernel).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/convert/convert_layout.cuh"
#include "kernels/cuda_check.h"

namespace cudaoverlap {
namespace convert_detail {
namespace {

// 8-bit YUV to YUV of the same subsampling where each side's chroma is
// planar or semi-planar (I420, NV12, NV21; Y42B, NV16): every output sample
// is the input's at the same place, so the pair only moves bytes. One
// launch: its first luma_blocks blocks across copy luma 16 bytes a thread,
// the rest move 8 chroma samples of each of U and V a thread (one 16-byte
// pair load or store on a semi-planar side, an 8-byte one per plane on a
// planar side, the bytes sorted by byte permutes), for 4 rows. A kernel of
// their own, as the 4x2 block kernel is slower on these pairs.
struct ChromaMove {
  LumaCopy luma;  // luma_blocks(luma) blocks across, before the chroma's
  // Chroma, each side: U and V planes (semi-planar: both the plane of
  // pairs, `vu` where V comes first), their strides.
  const uint8_t* in[2];
  size_t in_stride[2];
  bool in_semi, in_vu;
  uint8_t* out[2];
  size_t out_stride[2];
  bool out_semi, out_vu;
  int samples, rows;
  bool vec;  // every chroma plane aligned for the thread's vector access
};

constexpr int kMoveRows = 4;                    // chroma rows per thread
constexpr int kMoveBand = kBlockY * kMoveRows;  // chroma rows per block and band

__global__ void __launch_bounds__(kThreads) move_chroma_kernel(const ChromaMove m) {
  const int luma_x = luma_blocks(m.luma);
  if (static_cast<int>(blockIdx.x) < luma_x) {
    copy_luma(m.luma, static_cast<int>(blockIdx.x));
    return;
  }
  const int s0 = ((static_cast<int>(blockIdx.x) - luma_x) * kBlockX + threadIdx.x) * 8;
  if (s0 >= m.samples) return;
  const bool vec = m.vec && s0 + 8 <= m.samples;
  for (int band = blockIdx.y * kMoveBand; band < m.rows; band += gridDim.y * kMoveBand) {
    CO_UNROLL
    for (int j = 0; j < kMoveRows; ++j) {
      const int y = band + threadIdx.y * kMoveRows + j;
      if (y >= m.rows) break;
      const uint8_t* iu = m.in[0] + static_cast<size_t>(y) * m.in_stride[0];
      const uint8_t* iv = m.in[1] + static_cast<size_t>(y) * m.in_stride[1];
      uint8_t* ou = m.out[0] + static_cast<size_t>(y) * m.out_stride[0];
      uint8_t* ov = m.out[1] + static_cast<size_t>(y) * m.out_stride[1];
      if (!vec) {
        for (int i = s0; i < min(s0 + 8, m.samples); ++i) {
          const int a = m.in_semi ? 2 * i + (m.in_vu ? 1 : 0) : i;
          const int b = m.in_semi ? 2 * i + (m.in_vu ? 0 : 1) : i;
          const uint8_t u = iu[a], v = iv[b];
          ou[m.out_semi ? 2 * i + (m.out_vu ? 1 : 0) : i] = u;
          ov[m.out_semi ? 2 * i + (m.out_vu ? 0 : 1) : i] = v;
        }
        continue;
      }
      // u, v: the 8 samples of U and of V, 4 a word.
      uint2 u, v;
      if (m.in_semi) {
        const uint4 q = *reinterpret_cast<const uint4*>(iu + 2 * s0);
        const uint32_t lo = m.in_vu ? 0x7531u : 0x6420u, hi = m.in_vu ? 0x6420u : 0x7531u;
        u = make_uint2(__byte_perm(q.x, q.y, lo), __byte_perm(q.z, q.w, lo));
        v = make_uint2(__byte_perm(q.x, q.y, hi), __byte_perm(q.z, q.w, hi));
      } else {
        u = *reinterpret_cast<const uint2*>(iu + s0);
        v = *reinterpret_cast<const uint2*>(iv + s0);
      }
      if (m.out_semi) {
        const uint2 a = m.out_vu ? v : u, b = m.out_vu ? u : v;
        *reinterpret_cast<uint4*>(ou + 2 * s0) =
            make_uint4(__byte_perm(a.x, b.x, 0x5140), __byte_perm(a.x, b.x, 0x7362),
                       __byte_perm(a.y, b.y, 0x5140), __byte_perm(a.y, b.y, 0x7362));
      } else {
        *reinterpret_cast<uint2*>(ou + s0) = u;
        *reinterpret_cast<uint2*>(ov + s0) = v;
      }
    }
  }
}

}  // namespace

bool moves_chroma(PixelFormat in, PixelFormat out, const ConvertCoefficients& k) {
  using F = PixelFormat;
  auto side = [](F f) { return f == F::kI420 || f == F::kNV12 || f == F::kNV21; };
  auto side422 = [](F f) { return f == F::kY42B || f == F::kNV16; };
  return in != out && ((side(in) && side(out)) || (side422(in) && side422(out))) &&
         k.in_side.sample_bytes == 1 && k.out_side.sample_bytes == 1;
}

void move_chroma_cuda(const ImageRef& in, const ImageRef& out, const ConvertCoefficients& k,
                      cudaStream_t stream) {
  const ConvertSide &is = k.in_side, &os = k.out_side;
  ChromaMove m{};
  m.samples = (out.width + (1 << os.x_sub) - 1) >> os.x_sub;
  m.rows = (out.height + (1 << os.y_sub) - 1) >> os.y_sub;
  if (m.samples == 0 || m.rows == 0) return;
  m.in_semi = is.plane[1] == is.plane[2];
  m.out_semi = os.plane[1] == os.plane[2];
  m.in_vu = m.in_semi && is.offset[2] < is.offset[1];
  m.out_vu = m.out_semi && os.offset[2] < os.offset[1];
  m.vec = true;
  for (int c = 0; c < 2; ++c) {
    // Semi-planar: both pointers at the plane's start.
    const PlaneRef& ip = in.planes[is.plane[1 + c]];
    const PlaneRef& op = out.planes[os.plane[1 + c]];
    m.in[c] = ip.data;
    m.in_stride[c] = ip.stride;
    m.out[c] = op.data;
    m.out_stride[c] = op.stride;
    m.vec = m.vec && aligned_to(ip, m.in_semi ? 16 : 8) && aligned_to(op, m.out_semi ? 16 : 8);
  }
  const int bands = (m.rows + kMoveBand - 1) / kMoveBand;
  m.luma = luma_copy(in.planes[0], out.planes[0], out.width, out.height,
                     (out.height + bands - 1) / bands);
  const int chroma_blocks = (m.samples + 8 * kBlockX - 1) / (8 * kBlockX);
  const dim3 grid(luma_blocks(m.luma) + chroma_blocks, std::min<unsigned>(bands, kMaxGridY));
  move_chroma_kernel<<<grid, dim3(kBlockX, kBlockY), 0, stream>>>(m);
  CO_CUDA_CHECK_LAUNCH("the convert kernel (chroma moved)");
}

}  // namespace convert_detail
}  // namespace cudaoverlap
