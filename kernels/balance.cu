// CUDA implementation of the `balance` kernel (see balance.h).
//
// The luma table (256 bytes) travels in the kernel arguments and is copied to
// shared memory per block. The chroma result depends only on the (u, v) pair
// and the parameters, so, as videobalance does, it comes from a 256x256
// table: built on the GPU in double precision with the explicitly rounded
// intrinsics (__dmul_rn, __dadd_rn), which keep nvcc from fusing a multiply
// and an add into an FMA that would round differently from the host's
// separate operations. Computing it per sample cost a dozen double-precision
// operations and conversions per pair, which bounded the kernel; a lookup
// costs one cached 2-byte load. Each stream keeps its own table and rebuilds
// it (one small launch) only when the parameters change, so tables are never
// rewritten while another stream's kernel reads them.
//
// Every thread handles a 16-byte word (4 RGB pixels, 16 luma samples, 8
// chroma pairs) and planar formats do luma and chroma in a single launch.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>

#include "balance.h"
#include "copy.h"
#include "cuda_check.h"

namespace cudaoverlap {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxGridY = 65535;

struct BalanceArgs {
  BalanceConstants k;
  int r, g, b;             // byte offsets in packed RGB
  const uint16_t* chroma;  // the chroma table of these parameters, on the device
};

// Entries of the chroma table: u' in the low byte, v' in the high one,
// indexed by u * 256 + v.
constexpr int kChromaEntries = 256 * 256;

__device__ __forceinline__ uint32_t round_clamp(double v) {
  v = v < 0.0 ? 0.0 : (v > 255.0 ? 255.0 : v);
  return static_cast<uint32_t>(rint(v));
}

// videobalance's tableu[u][v] and tablev[u][v], for u = blockIdx.x and
// v = threadIdx.x.
__global__ void chroma_table_kernel(double hue_cos, double hue_sin, double saturation,
                                    uint16_t* table) {
  const int u = blockIdx.x, v = threadIdx.x;
  const double i = u - 128;
  const double j = v - 128;
  const double mi = -(u - 128);
  const double su = __dadd_rn(__dmul_rn(i, hue_cos), __dmul_rn(j, hue_sin));
  const double sv = __dadd_rn(__dmul_rn(mi, hue_sin), __dmul_rn(j, hue_cos));
  const uint32_t uo = round_clamp(__dadd_rn(128.0, __dmul_rn(su, saturation)));
  const uint32_t vo = round_clamp(__dadd_rn(128.0, __dmul_rn(sv, saturation)));
  table[u * 256 + v] = static_cast<uint16_t>(uo | vo << 8);
}

// The table's (u', v') for index u * 256 + v, as the bytes of a 16-bit value.
__device__ __forceinline__ uint32_t balance_chroma(const uint16_t* __restrict__ table,
                                                   uint32_t index) {
  return __ldg(table + index);
}

// Two NV12 (u, v) pairs in a word. A pair read as a 16-bit value is its
// table index byte-swapped, and the entry is the output pair as stored.
__device__ __forceinline__ uint32_t nv12_pairs(const uint16_t* __restrict__ table, uint32_t w) {
  return balance_chroma(table, __byte_perm(w, 0, 0x4401)) |
         balance_chroma(table, __byte_perm(w, 0, 0x4423)) << 16;
}

__device__ __forceinline__ void load_table(const BalanceArgs& a, uint8_t* table) {
  for (int i = threadIdx.x; i < 256; i += blockDim.x) table[i] = a.k.table_y[i];
  __syncthreads();
}

// Bytes (luma) or pixels (packed RGB) one thread handles: a 16-byte word of
// luma or RGB when aligned. One byte or pixel per thread left each warp
// moving 32 or 128 bytes and spent as much time on indexing as on data.
constexpr int kLumaChunk = 16;
constexpr int kRgbChunk = 4;
// Chroma pairs per thread: 16 bytes of NV12's UV, 8 of each I420 plane, so
// a chroma row needs as many threads as a luma row.
constexpr int kChromaChunk = 8;

__device__ __forceinline__ uint32_t map_word(const uint8_t* table, uint32_t w) {
  return static_cast<uint32_t>(table[w & 0xFF]) |
         static_cast<uint32_t>(table[(w >> 8) & 0xFF]) << 8 |
         static_cast<uint32_t>(table[(w >> 16) & 0xFF]) << 16 |
         static_cast<uint32_t>(table[w >> 24]) << 24;
}

struct PlanarArgs {
  // Luma plane.
  const uint8_t* sy;
  size_t sy_stride;
  uint8_t* dy;
  size_t dy_stride;
  int y_bytes, y_rows;
  // Chroma: U and V samples at su[x * step], sv[x * step] (NV12: one plane,
  // sv = su + 1, step 2; I420: two planes, step 1).
  const uint8_t* su;
  size_t su_stride;
  const uint8_t* sv;
  size_t sv_stride;
  uint8_t* du;
  size_t du_stride;
  uint8_t* dv;
  size_t dv_stride;
  int pairs, c_rows;
  bool nv12;
  bool vector_ok;  // every plane pointer and stride 16-byte aligned
};

// Luma (blockIdx.z == 0) and chroma (blockIdx.z == 1) of planar YUV or GRAY8
// in one launch: the chroma planes are small, and a launch of their own
// costs about as much as their data.
__global__ void balance_planar_kernel(PlanarArgs p, BalanceArgs a) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.z == 0) {
    __shared__ uint8_t table[256];
    load_table(a, table);
    const int begin = t * kLumaChunk;
    if (begin >= p.y_bytes) return;
    const int end = min(begin + kLumaChunk, p.y_bytes);
    for (int y = blockIdx.y; y < p.y_rows; y += gridDim.y) {
      const uint8_t* s = p.sy + static_cast<size_t>(y) * p.sy_stride;
      uint8_t* d = p.dy + static_cast<size_t>(y) * p.dy_stride;
      if (p.vector_ok && end - begin == kLumaChunk) {
        uint4 v = *reinterpret_cast<const uint4*>(s + begin);
        v.x = map_word(table, v.x);
        v.y = map_word(table, v.y);
        v.z = map_word(table, v.z);
        v.w = map_word(table, v.w);
        *reinterpret_cast<uint4*>(d + begin) = v;
      } else {
        for (int x = begin; x < end; ++x) d[x] = table[s[x]];
      }
    }
    return;
  }
  const int begin = t * kChromaChunk;
  if (begin >= p.pairs) return;
  const int end = min(begin + kChromaChunk, p.pairs);
  for (int y = blockIdx.y; y < p.c_rows; y += gridDim.y) {
    const uint8_t* su = p.su + static_cast<size_t>(y) * p.su_stride;
    const uint8_t* sv = p.sv + static_cast<size_t>(y) * p.sv_stride;
    uint8_t* du = p.du + static_cast<size_t>(y) * p.du_stride;
    uint8_t* dv = p.dv + static_cast<size_t>(y) * p.dv_stride;
    if (p.vector_ok && end - begin == kChromaChunk) {
      if (p.nv12) {
        uint4 w = *reinterpret_cast<const uint4*>(su + 2 * begin);
        w.x = nv12_pairs(a.chroma, w.x);
        w.y = nv12_pairs(a.chroma, w.y);
        w.z = nv12_pairs(a.chroma, w.z);
        w.w = nv12_pairs(a.chroma, w.w);
        *reinterpret_cast<uint4*>(du + 2 * begin) = w;
      } else {
        const uint2 wu = *reinterpret_cast<const uint2*>(su + begin);
        const uint2 wv = *reinterpret_cast<const uint2*>(sv + begin);
        uint32_t ou[2] = {0, 0}, ov[2] = {0, 0};
        for (int h = 0; h < 2; ++h) {
          const uint32_t u4 = h == 0 ? wu.x : wu.y, v4 = h == 0 ? wv.x : wv.y;
          for (int i = 0; i < 4; ++i) {
            // Byte i of the V word and of the U word: index u * 256 + v.
            const uint32_t t =
                balance_chroma(a.chroma, __byte_perm(v4, u4, 0x40 + 0x11 * i) & 0xFFFF);
            ou[h] |= (t & 0xFF) << (8 * i);
            ov[h] |= (t >> 8) << (8 * i);
          }
        }
        *reinterpret_cast<uint2*>(du + begin) = make_uint2(ou[0], ou[1]);
        *reinterpret_cast<uint2*>(dv + begin) = make_uint2(ov[0], ov[1]);
      }
    } else {
      const int step = p.nv12 ? 2 : 1;
      for (int x = begin; x < end; ++x) {
        const uint32_t t = balance_chroma(a.chroma, su[x * step] << 8 | sv[x * step]);
        du[x * step] = static_cast<uint8_t>(t);
        dv[x * step] = static_cast<uint8_t>(t >> 8);
      }
    }
  }
}

__device__ __forceinline__ int apply_matrix(int m0, int m1, int m2, int m3, int a, int b, int c) {
  return (m0 * a + m1 * b + m2 * c + m3) >> 8;
}

__device__ __forceinline__ uint8_t clamp_u8(int v) {
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// One packed pixel as 4 bytes in a word (byte c of the pixel in bits 8c).
__device__ __forceinline__ uint32_t balance_pixel(const BalanceArgs& a, const uint8_t* table,
                                                  uint32_t w) {
  const int r = (w >> (8 * a.r)) & 0xFF, g = (w >> (8 * a.g)) & 0xFF, b = (w >> (8 * a.b)) & 0xFF;
  const int yy = max(0, min(255, apply_matrix(66, 129, 25, 4096, r, g, b)));
  const int u0 = max(0, min(255, apply_matrix(-38, -74, 112, 32768, r, g, b)));
  const int v0 = max(0, min(255, apply_matrix(112, -94, -18, 32768, r, g, b)));
  const int y1 = table[yy];
  const uint32_t t = balance_chroma(a.chroma, u0 << 8 | v0);
  const int u1 = t & 0xFF, v1 = t >> 8;
  // Alpha or padding kept, the colours over it.
  w &= ~((0xFFu << (8 * a.r)) | (0xFFu << (8 * a.g)) | (0xFFu << (8 * a.b)));
  w |= static_cast<uint32_t>(clamp_u8(apply_matrix(298, 0, 409, -57068, y1, u1, v1))) << (8 * a.r);
  w |= static_cast<uint32_t>(clamp_u8(apply_matrix(298, -100, -208, 34707, y1, u1, v1)))
       << (8 * a.g);
  w |= static_cast<uint32_t>(clamp_u8(apply_matrix(298, 516, 0, -70870, y1, u1, v1))) << (8 * a.b);
  return w;
}

// kRgbChunk packed pixels per thread: one 16-byte word when the plane is
// 16-byte aligned, else pixel by pixel (4-byte words when 4-byte aligned).
template <int kAlign>
__global__ void balance_rgb_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                                   uint8_t* __restrict__ dst, size_t dst_stride, int width,
                                   int rows, BalanceArgs a) {
  __shared__ uint8_t table[256];
  load_table(a, table);
  const int begin = (blockIdx.x * blockDim.x + threadIdx.x) * kRgbChunk;
  if (begin >= width) return;
  const int end = min(begin + kRgbChunk, width);
  for (int y = blockIdx.y; y < rows; y += gridDim.y) {
    const uint8_t* s = src + static_cast<size_t>(y) * src_stride;
    uint8_t* d = dst + static_cast<size_t>(y) * dst_stride;
    if (kAlign == 16 && end - begin == kRgbChunk) {
      uint4 v = *reinterpret_cast<const uint4*>(s + static_cast<size_t>(begin) * 4);
      v.x = balance_pixel(a, table, v.x);
      v.y = balance_pixel(a, table, v.y);
      v.z = balance_pixel(a, table, v.z);
      v.w = balance_pixel(a, table, v.w);
      *reinterpret_cast<uint4*>(d + static_cast<size_t>(begin) * 4) = v;
      continue;
    }
    for (int x = begin; x < end; ++x) {
      const uint8_t* sp = s + static_cast<size_t>(x) * 4;
      uint8_t* dp = d + static_cast<size_t>(x) * 4;
      if (kAlign >= 4) {
        *reinterpret_cast<uint32_t*>(dp) =
            balance_pixel(a, table, *reinterpret_cast<const uint32_t*>(sp));
      } else {
        uint32_t w = 0;
        for (int c = 0; c < 4; ++c) w |= static_cast<uint32_t>(sp[c]) << (8 * c);
        w = balance_pixel(a, table, w);
        for (int c = 0; c < 4; ++c) dp[c] = static_cast<uint8_t>(w >> (8 * c));
      }
    }
  }
}

dim3 grid_for(size_t items, size_t rows, bool inject_launch_failure) {
  dim3 grid(static_cast<unsigned>((items + kThreads - 1) / kThreads),
            static_cast<unsigned>(std::min<size_t>(rows, kMaxGridY)));
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
  return grid;
}

bool aligned_to(const PlaneRef& p, size_t n) {
  return reinterpret_cast<uintptr_t>(p.data) % n == 0 && p.stride % n == 0;
}

// A device buffer holding one chroma table, freed on destruction; neither
// copied nor moved (the cache holds it by pointer).
class ChromaTable {
 public:
  ChromaTable() { CO_CUDA_CHECK(cudaMalloc(&data_, kChromaEntries * sizeof(uint16_t))); }
  ~ChromaTable() { CO_CUDA_CHECK_NOEXCEPT(cudaFree(data_)); }
  ChromaTable(const ChromaTable&) = delete;
  ChromaTable& operator=(const ChromaTable&) = delete;
  uint16_t* get() const { return data_; }

  // The parameters the last build on this table's stream used; unset until
  // a build was enqueued without error.
  bool built = false;
  double hue_cos = 0, hue_sin = 0, saturation = 0;

 private:
  uint16_t* data_ = nullptr;
};

// One table per (device, stream): work on one stream runs in order, so a
// rebuild there never overtakes a kernel still reading the previous table,
// and no stream reads another's. A destroyed stream's handle is only reused
// once its work has finished. Tables live until the process ends.
class ChromaTableCache {
  // (device, stream, host thread): the thread only for cudaStreamPerThread,
  // which names a different stream on every host thread.
  using Key = std::tuple<int, cudaStream_t, std::thread::id>;

 public:
  // Any thread. Returns the table of `k` for the current device and
  // `stream`, enqueuing its build on `stream` first if needed.
  const uint16_t* get(const BalanceConstants& k, cudaStream_t stream) {
    int device = 0;
    CO_CUDA_CHECK(cudaGetDevice(&device));
    std::lock_guard<std::mutex> lock(mutex_);
    const Key key{device, stream,
                  stream == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id()};
    std::unique_ptr<ChromaTable>& table = tables_[key];
    if (!table) {
      if (tables_.size() > kMaxTables) evict_all_but(key);
      table = std::make_unique<ChromaTable>();
    }
    if (!(table->built && table->hue_cos == k.hue_cos && table->hue_sin == k.hue_sin &&
          table->saturation == k.saturation)) {
      table->built = false;
      chroma_table_kernel<<<256, 256, 0, stream>>>(k.hue_cos, k.hue_sin, k.saturation,
                                                   table->get());
      CO_CUDA_CHECK_LAUNCH("the balance chroma table kernel");
      table->built = true;
      table->hue_cos = k.hue_cos;
      table->hue_sin = k.hue_sin;
      table->saturation = k.saturation;
    }
    return table->get();
  }

 private:
  // Past this many streams (128 KiB each), the others' tables go. Rare:
  // the engine keeps its streams; only a process making many short-lived
  // streams gets here.
  static constexpr size_t kMaxTables = 64;

  // Called with mutex_ held. Waits for the device first, since a freed
  // table may still be read by work enqueued on its stream.
  void evict_all_but(const Key& key) {
    CO_CUDA_CHECK(cudaDeviceSynchronize());
    for (auto it = tables_.begin(); it != tables_.end();)
      it = it->first == key ? std::next(it) : tables_.erase(it);
  }

  std::mutex mutex_;
  // Guarded by mutex_.
  std::map<Key, std::unique_ptr<ChromaTable>> tables_;
};

ChromaTableCache& chroma_tables() {
  static ChromaTableCache cache;
  return cache;
}

}  // namespace

void balance_cuda(const ImageRef& in, const ImageRef& out, const BalanceParams& params,
                  bool inject_launch_failure, CUstream_st* stream) {
  if (params.is_identity()) {
    copy_cuda(in, out, inject_launch_failure, stream);
    return;
  }
  BalanceArgs a;
  a.k = balance_constants(params);
  rgb_byte_offsets(in.format, &a.r, &a.g, &a.b);
  const FormatInfo& info = format_info(in.format);
  if (in.width == 0 || in.height == 0) return;
  a.chroma = in.format == PixelFormat::kGRAY8 ? nullptr : chroma_tables().get(a.k, stream);

  if (!info.is_yuv && in.format != PixelFormat::kGRAY8) {
    const size_t chunks = (static_cast<size_t>(in.width) + kRgbChunk - 1) / kRgbChunk;
    const dim3 grid = grid_for(chunks, in.height, inject_launch_failure);
    const PlaneRef& s = in.planes[0];
    const PlaneRef& d = out.planes[0];
    if (aligned_to(s, 16) && aligned_to(d, 16))
      balance_rgb_kernel<16><<<grid, kThreads, 0, stream>>>(s.data, s.stride, d.data, d.stride,
                                                            in.width, in.height, a);
    else if (aligned_to(s, 4) && aligned_to(d, 4))
      balance_rgb_kernel<4><<<grid, kThreads, 0, stream>>>(s.data, s.stride, d.data, d.stride,
                                                           in.width, in.height, a);
    else
      balance_rgb_kernel<1><<<grid, kThreads, 0, stream>>>(s.data, s.stride, d.data, d.stride,
                                                           in.width, in.height, a);
    CO_CUDA_CHECK_LAUNCH("the balance kernel (RGB)");
    return;
  }

  PlanarArgs p{};
  p.sy = in.planes[0].data;
  p.sy_stride = in.planes[0].stride;
  p.dy = out.planes[0].data;
  p.dy_stride = out.planes[0].stride;
  p.y_bytes = static_cast<int>(plane_row_bytes(in.format, 0, in.width));
  p.y_rows = static_cast<int>(plane_rows(in.format, 0, in.height));
  p.vector_ok = aligned_to(in.planes[0], 16) && aligned_to(out.planes[0], 16);
  size_t chunks = (static_cast<size_t>(p.y_bytes) + kLumaChunk - 1) / kLumaChunk;
  size_t rows = p.y_rows;
  unsigned planes = 1;
  if (in.format != PixelFormat::kGRAY8) {
    planes = 2;
    p.nv12 = in.format == PixelFormat::kNV12;
    const int v_plane = p.nv12 ? 1 : 2;
    p.su = in.planes[1].data;
    p.su_stride = in.planes[1].stride;
    p.sv = in.planes[v_plane].data + (p.nv12 ? 1 : 0);
    p.sv_stride = in.planes[v_plane].stride;
    p.du = out.planes[1].data;
    p.du_stride = out.planes[1].stride;
    p.dv = out.planes[v_plane].data + (p.nv12 ? 1 : 0);
    p.dv_stride = out.planes[v_plane].stride;
    p.pairs = static_cast<int>(plane_row_bytes(in.format, 1, in.width) / info.pixel_bytes[1]);
    p.c_rows = static_cast<int>(plane_rows(in.format, 1, in.height));
    for (int i = 1; i < info.n_planes; ++i)
      p.vector_ok = p.vector_ok && aligned_to(in.planes[i], 16) && aligned_to(out.planes[i], 16);
    chunks = std::max(chunks, (static_cast<size_t>(p.pairs) + kChromaChunk - 1) / kChromaChunk);
    rows = std::max(rows, static_cast<size_t>(p.c_rows));
  }
  dim3 grid = grid_for(chunks, rows, inject_launch_failure);
  grid.z = planes;
  balance_planar_kernel<<<grid, kThreads, 0, stream>>>(p, a);
  CO_CUDA_CHECK_LAUNCH("the balance kernel (planar)");
}

}  // namespace cudaoverlap
