// CUDA implementation of the `flip` kernel (see flip.h).
//
// Two kernels share most of the work (packed 4:2:2, whose mirrored and
// turned pairs mix two pixels' chroma, has two of its own in
// flip_packed422.cu):
//
// - flip_word_kernel does the planes of YUV and GRAY8 (1-byte samples, and
//   NV12's 2-byte UV pairs). All planes of an image go in one launch: a
//   flat grid of output tiles, each block finding its plane from its index,
//   so I420's small chroma planes add blocks instead of launches. Each
//   thread moves 16-byte chunks and issues all its loads (64 bytes) before
//   its stores: with 4-byte words and 16 bytes in flight per thread the
//   kernel was bound by latency and instruction issue at a fraction of the
//   memory's bandwidth. The directions that keep rows copy each chunk from
//   one source row, reversing words and the groups within them when
//   mirrored. The transposing ones load 16 bytes of 4 rows, transpose each
//   4x4-byte block in registers with byte permutes and write the words to a
//   shared tile in output order, from which output rows leave as chunks.
// - flip_plane_kernel does packed RGB: a 32x32 tile of pixels in shared
//   memory, read and written row by row, so both sides are coalesced.
//   24-bit RGB on planes aligned to 16 bytes has flip_rgb24_kernel
//   (flip_rgb24.cu), whose tiles come in and leave as 16-byte chunks.
//
// In the word kernel a global access is 16 bytes wide only when the chunk
// lies inside its row and the plane's pointer, stride and (for rows read
// right to left) row length are multiples of 16; otherwise it goes word by
// word, with the words inside the row whole where the plane is word-aligned
// and the rest byte by byte.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/cuda_check.h"
#include "kernels/error.h"
#include "kernels/flip/flip.h"
#include "kernels/flip/flip_geometry.cuh"
#include "kernels/flip/flip_launch.h"

namespace cudaoverlap {
namespace {

using flip_detail::aligned_to;
using flip_detail::FlipGeometry;
using flip_detail::source_of;
using flip_detail::source_tile;

// ---------------------------------------------------------------------------
// Word-wide kernel.

constexpr int kWordThreads = 256;
// Transposing bytes: a 128 x 128-byte tile, kTrPitch words per shared row
// (see transpose_tile).
constexpr int kTrTile = 128;
constexpr int kTrPitch = kTrTile / 4 + 1;
// Transposing 2-byte pairs: the 128-byte x 128-row source tile becomes 64
// output rows of 128 pairs (64 words). The pitch needs no pad: see the
// stores in transpose_pairs_tile.
constexpr int kPairTileRows = 64;
constexpr int kPairTileWords = 64;
constexpr int kPairPitch = kPairTileWords;
// Shared words per block, enough for either transpose.
constexpr int kSharedWords = kTrTile * kTrPitch;
static_assert(kPairTileRows * kPairPitch <= kSharedWords, "the pair tile must fit too");
// Directions that keep rows: a tile of 256 bytes x 64 rows, 16 threads of
// 16 bytes across, kRowPasses rows per thread.
constexpr int kRowTileW = 256;
constexpr int kRowChunks = kRowTileW / 16;           // 16-byte chunks in a tile row
constexpr int kRowStep = kWordThreads / kRowChunks;  // rows between a thread's rows
constexpr int kRowPasses = 4;
constexpr int kRowTileH = kRowStep * kRowPasses;
constexpr int kMaxWordPlanes = kMaxPlanes;

struct WordPlane {
  const uint8_t* src;
  size_t src_stride;
  uint8_t* dst;
  size_t dst_stride;
  int in_w, in_h;    // bytes per row, rows
  int out_w, out_h;  // bytes per row, rows
  int element;       // bytes per pixel group: 1, 2, or 4 (a packed 4:2:2 pair)
  // Mirrored rows: the byte permute that reverses a word's groups (bytes
  // for 1-byte groups, byte pairs for 2-byte ones; a packed 4:2:2 pair word
  // keeps its chroma and swaps its two luma bytes).
  unsigned reverse;
  int tile_w, tile_h;             // output tile: bytes x rows
  int tiles_x;                    // output tiles per tile row
  int first_tile;                 // this plane's first block index
  bool src_aligned, dst_aligned;  // pointer and stride multiples of 4
  // Pointer and stride multiples of 16, and for the source, every chunk's
  // offset in its row too (in_w is, when the direction reads rows right to
  // left): 16-byte accesses where a chunk lies inside its row.
  bool src_vec16, dst_vec16;
};

struct WordPlanes {
  WordPlane plane[kMaxWordPlanes];
  int n_planes;
  int direction;  // FlipDirection
};

// Bytes [p, p + 4) of a row of `w` bytes as a little-endian word; bytes
// outside the row read as 0 (their outputs lie outside the output too).
__device__ __forceinline__ uint32_t load_word(const uint8_t* row, int p, int w, bool aligned) {
  if (aligned && (p & 3) == 0 && p >= 0 && p + 4 <= w)
    return *reinterpret_cast<const uint32_t*>(row + p);
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    if (p + i >= 0 && p + i < w) v |= static_cast<uint32_t>(row[p + i]) << (8 * i);
  return v;
}

// Bytes [p, p + 4) for any p: on a word-aligned row, the two aligned words
// around them and a funnel shift, so the loads stay word-wide.
__device__ __forceinline__ uint32_t load_bytes4(const uint8_t* row, int p, int w, bool aligned) {
  if (!aligned) return load_word(row, p, w, false);
  const int base = p & ~3;  // rounds down, also below 0
  const int off = p - base;
  const uint32_t lo = load_word(row, base, w, true);
  if (off == 0) return lo;
  const uint32_t hi = load_word(row, base + 4, w, true);
  return __byte_perm(lo, hi, 0x3210 + 0x1111 * off);
}

// Writes the bytes of `v` that fall inside a row of `w` bytes at [p, p + 4).
__device__ __forceinline__ void store_word(uint8_t* row, int p, int w, bool aligned, uint32_t v) {
  if (aligned && p + 4 <= w) {
    *reinterpret_cast<uint32_t*>(row + p) = v;
    return;
  }
  for (int i = 0; i < 4 && p + i < w; ++i) row[p + i] = static_cast<uint8_t>(v >> (8 * i));
}

__device__ __forceinline__ bool direction_swaps(int d) {
  return d == 1 || d == 3 || d == 6 || d == 7;  // 90R, 90L, ul-lr, ur-ll
}

// Directions that keep rows as rows: output (x, y) takes input
// (mirror_x ? in_w - 1 - x : x, mirror_y ? in_h - 1 - y : y), x in groups
// (for packed 4:2:2, in pair words, each reversed by pl.reverse).
// A thread takes a 16-byte chunk of kRowPasses rows, kRowStep rows apart,
// and issues all its loads before its stores.
__device__ __forceinline__ void row_tile(const WordPlane& pl, int d, int ox0, int oy0) {
  const bool mirror_x = d == 2 || d == 4;  // 180, horiz
  const bool mirror_y = d == 2 || d == 5;  // 180, vert
  const unsigned reverse = pl.reverse;
  const int col = ox0 + 16 * (static_cast<int>(threadIdx.x) % kRowChunks);
  const int y0 = oy0 + static_cast<int>(threadIdx.x) / kRowChunks;
  if (col >= pl.out_w || y0 >= pl.out_h) return;
  // Rows of this thread inside the output (at least one).
  const int rows = min(kRowPasses, (pl.out_h - y0 + kRowStep - 1) / kRowStep);
  if (pl.src_vec16 && pl.dst_vec16 && col + 16 <= pl.out_w) {
    // When mirrored, output bytes [col, col + 16) come from [in_w - 16 -
    // col, in_w - col) reversed group-wise (in_w is a whole number of
    // groups): the words in reverse order, each reversed. That source offset
    // is a multiple of 16 too (src_vec16). Row pointers step by kRowStep
    // rows, upwards in the source when it is mirrored; pointers of rows past
    // the output's end are never used.
    const int sx = mirror_x ? pl.in_w - 16 - col : col;
    const int sy0 = mirror_y ? pl.in_h - 1 - y0 : y0;
    const ptrdiff_t src_step =
        (mirror_y ? -1 : 1) * static_cast<ptrdiff_t>(pl.src_stride) * kRowStep;
    const size_t dst_step = pl.dst_stride * kRowStep;
    const uint8_t* s = pl.src + static_cast<size_t>(sy0) * pl.src_stride + sx;
    uint8_t* o = pl.dst + static_cast<size_t>(y0) * pl.dst_stride + col;
    uint4 v[kRowPasses];
#pragma unroll
    for (int k = 0; k < kRowPasses; ++k, s += src_step)
      if (k < rows) v[k] = __ldg(reinterpret_cast<const uint4*>(s));
#pragma unroll
    for (int k = 0; k < kRowPasses; ++k, o += dst_step) {
      if (k >= rows) break;
      uint4 w = v[k];
      if (mirror_x) {
        w.x = __byte_perm(v[k].w, 0, reverse);
        w.y = __byte_perm(v[k].z, 0, reverse);
        w.z = __byte_perm(v[k].y, 0, reverse);
        w.w = __byte_perm(v[k].x, 0, reverse);
      }
      *reinterpret_cast<uint4*>(o) = w;
    }
    return;
  }
  // Planes without 16-byte alignment, and the last chunk of a row that ends
  // inside it: word by word, with word-wide loads and stores where the plane
  // allows them. This path is rare, so it is kept small (registers are
  // allocated for the worst path of the kernel): one word at a time.
#pragma unroll 1
  for (int k = 0; k < rows; ++k) {
    const int y = y0 + k * kRowStep;
    const int sy = mirror_y ? pl.in_h - 1 - y : y;
    const uint8_t* s = pl.src + static_cast<size_t>(sy) * pl.src_stride;
    uint8_t* o = pl.dst + static_cast<size_t>(y) * pl.dst_stride;
#pragma unroll 1
    for (int c = col; c < col + 16 && c < pl.out_w; c += 4) {
      // Output bytes [c, c + 4) come from [in_w - 4 - c, in_w - c) reversed
      // group-wise.
      const uint32_t v =
          mirror_x
              ? __byte_perm(load_bytes4(s, pl.in_w - 4 - c, pl.in_w, pl.src_aligned), 0, reverse)
              : load_bytes4(s, c, pl.in_w, pl.src_aligned);
      store_word(o, c, pl.out_w, pl.dst_aligned, v);
    }
  }
}

// Bytes [p, p + 16) of row `row` of the source tile (a row of `w` bytes),
// as four little-endian words; rows outside the plane, and bytes outside
// the row, read as 0 (their outputs lie outside the output too). One 16-byte
// load when the plane allows it and the chunk lies inside the row.
__device__ __forceinline__ uint4 load_chunk(const WordPlane& pl, int row, int p) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (row < 0 || row >= pl.in_h) return v;
  const uint8_t* s = pl.src + static_cast<size_t>(row) * pl.src_stride;
  if (pl.src_vec16 && p >= 0 && p + 16 <= pl.in_w)
    return __ldg(reinterpret_cast<const uint4*>(s + p));
  v.x = load_bytes4(s, p, pl.in_w, pl.src_aligned);
  v.y = load_bytes4(s, p + 4, pl.in_w, pl.src_aligned);
  v.z = load_bytes4(s, p + 8, pl.in_w, pl.src_aligned);
  v.w = load_bytes4(s, p + 12, pl.in_w, pl.src_aligned);
  return v;
}

// Writes the bytes of `v` that fall inside output row y at [x, x + 16); one
// 16-byte store when the plane allows it and the chunk lies inside the row.
__device__ __forceinline__ void store_chunk(const WordPlane& pl, int y, int x, uint4 v) {
  uint8_t* o = pl.dst + static_cast<size_t>(y) * pl.dst_stride;
  if (pl.dst_vec16 && x + 16 <= pl.out_w) {
    *reinterpret_cast<uint4*>(o + x) = v;
    return;
  }
  store_word(o, x, pl.out_w, pl.dst_aligned, v.x);
  if (x + 4 < pl.out_w) store_word(o, x + 4, pl.out_w, pl.dst_aligned, v.y);
  if (x + 8 < pl.out_w) store_word(o, x + 8, pl.out_w, pl.dst_aligned, v.z);
  if (x + 12 < pl.out_w) store_word(o, x + 12, pl.out_w, pl.dst_aligned, v.w);
}

// Word q of a 16-byte chunk; q is known at compile time after unrolling, so
// this is a plain register.
__device__ __forceinline__ uint32_t word_of(const uint4& v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

// The source tile of both transposes: 128 bytes x 128 rows, S[r][c] =
// in(sx0 + c, sy0 + r) in bytes; parts outside the input read as 0 and map
// to outputs outside the output. Each thread loads 16 bytes of 4 rows
// (chunk column bx, rows 4by .. 4by + 3), so 64 bytes are in flight per
// thread. A warp takes 2 chunk columns x 16 row groups: every row it loads
// is one whole 32-byte sector, and the shared stores below are
// conflict-free. With flip_sy the output takes the rows bottom up, so the
// chunks come in reverse row order (the byte and pair reversals below
// follow from that).
__device__ __forceinline__ void load_transpose_source(const WordPlane& pl, int sx0, int sy0,
                                                      bool flip_sy, int* bx, int* by, uint4 r[4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  *bx = 2 * (warp % 4) + lane / 16;   // chunk column, 0..7
  *by = lane % 16 + 16 * (warp / 4);  // 4-row group, 0..31
#pragma unroll
  for (int k = 0; k < 4; ++k)
    r[k] = load_chunk(pl, sy0 + 4 * *by + (flip_sy ? 3 - k : k), sx0 + 16 * *bx);
}

// Transposing directions on 1-byte planes: output (x, y) takes input
// (sx, sy) = (flip_sx ? in_w - 1 - y : y, flip_sy ? in_h - 1 - x : x). The
// output tile is 128 bytes x 128 rows; `tile` holds its rows, kTrPitch words
// apart: the odd pitch puts the two chunk columns of a warp 16 banks apart,
// and spreads the word reads of the store phase over all banks.
__device__ __forceinline__ void transpose_tile(const WordPlane& pl, int d, int ox0, int oy0,
                                               uint32_t (*tile)[kTrPitch]) {
  const bool flip_sx = d == 3 || d == 7;  // 90L, ur-ll
  const bool flip_sy = d == 1 || d == 7;  // 90R, ur-ll
  // S[r][c] is output (i, j) = (flip_sy ? 127 - r : r, flip_sx ? 127 - c : c)
  // of the tile.
  const int sx0 = flip_sx ? pl.in_w - kTrTile - oy0 : oy0;
  const int sy0 = flip_sy ? pl.in_h - kTrTile - ox0 : ox0;
  int bx, by;
  uint4 r[4];
  load_transpose_source(pl, sx0, sy0, flip_sy, &bx, &by, r);
  // Source bytes 16bx + 4q + m of the 4 rows become output row j, word
  // column by (or 31 - by, its bytes reversed, which the reversed order of
  // r[] already did): t byte k = r[k] word q byte m.
  const int word_col = flip_sy ? kTrTile / 4 - 1 - by : by;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint32_t w0 = word_of(r[0], q), w1 = word_of(r[1], q);
    const uint32_t w2 = word_of(r[2], q), w3 = word_of(r[3], q);
    const uint32_t a0 = __byte_perm(w0, w1, 0x5140), a1 = __byte_perm(w0, w1, 0x7362);
    const uint32_t b0 = __byte_perm(w2, w3, 0x5140), b1 = __byte_perm(w2, w3, 0x7362);
    const uint32_t t[4] = {__byte_perm(a0, b0, 0x5410), __byte_perm(a0, b0, 0x7632),
                           __byte_perm(a1, b1, 0x5410), __byte_perm(a1, b1, 0x7632)};
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const int c = 16 * bx + 4 * q + m;
      tile[flip_sx ? kTrTile - 1 - c : c][word_col] = t[m];
    }
  }
  __syncthreads();
  // Output rows leave as 16-byte chunks, 8 to a row.
  const int col = threadIdx.x % 8;
  const int x = ox0 + 16 * col;
  if (x >= pl.out_w) return;
#pragma unroll 1
  for (int j = threadIdx.x / 8; j < kTrTile; j += kWordThreads / 8) {
    const int y = oy0 + j;
    if (y >= pl.out_h) break;
    const uint32_t* t = tile[j] + 4 * col;
    store_chunk(pl, y, x, make_uint4(t[0], t[1], t[2], t[3]));
  }
}

// Transposing directions on 2-byte pairs (NV12's UV): as transpose_tile,
// with the source tile being 64 pairs x 128 rows, which become 64 output
// rows of 128 pairs (256 bytes, kPairPitch words). ox0 is in bytes.
__device__ __forceinline__ void transpose_pairs_tile(const WordPlane& pl, int d, int ox0, int oy0,
                                                     uint32_t (*tile)[kPairPitch]) {
  const bool flip_sx = d == 3 || d == 7;  // 90L, ur-ll
  const bool flip_sy = d == 1 || d == 7;  // 90R, ur-ll
  // In pairs: S[r][c] = in(sx0 + c, sy0 + r), r < 128, c < 64; output pair
  // (ox0 / 2 + i, oy0 + j) is S[flip_sy ? 127 - i : i][flip_sx ? 63 - j : j].
  const int in_pairs = pl.in_w / 2;
  const int oxp = ox0 / 2;
  const int sx0 = flip_sx ? in_pairs - kPairTileRows - oy0 : oy0;
  const int sy0 = flip_sy ? pl.in_h - kTrTile - oxp : oxp;
  int bx, by;
  uint4 r[4];
  load_transpose_source(pl, 2 * sx0, sy0, flip_sy, &bx, &by, r);
  // Pair m of word q of the 4 rows (source pair 8bx + 2q + m) is output row
  // j, pairs 4by .. 4by + 3 (words 2by and 2by + 1), or 127 - 4by - 3 ..
  // 127 - 4by (words 62 - 2by and 63 - 2by) when flip_sy, the reversed
  // order of r[] reversing them. Both words go in one 8-byte store: a half
  // warp then writes 128 contiguous bytes, free of bank conflicts.
  const int word_col = flip_sy ? kPairTileWords - 2 - 2 * by : 2 * by;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint32_t w0 = word_of(r[0], q), w1 = word_of(r[1], q);
    const uint32_t w2 = word_of(r[2], q), w3 = word_of(r[3], q);
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      const unsigned sel = m == 0 ? 0x5410 : 0x7632;
      const int c = 8 * bx + 2 * q + m;
      *reinterpret_cast<uint2*>(&tile[flip_sx ? kPairTileRows - 1 - c : c][word_col]) =
          make_uint2(__byte_perm(w0, w1, sel), __byte_perm(w2, w3, sel));
    }
  }
  __syncthreads();
  // Output rows leave as 16-byte chunks, 16 to a row.
  const int col = threadIdx.x % 16;
  const int x = ox0 + 16 * col;
  if (x >= pl.out_w) return;
#pragma unroll 1
  for (int j = threadIdx.x / 16; j < kPairTileRows; j += kWordThreads / 16) {
    const int y = oy0 + j;
    if (y >= pl.out_h) break;
    store_chunk(pl, y, x, *reinterpret_cast<const uint4*>(tile[j] + 4 * col));
  }
}

__global__ void __launch_bounds__(kWordThreads) flip_word_kernel(WordPlanes planes) {
  __shared__ __align__(16) uint32_t shared[kSharedWords];
  // The plane of this block: planes are laid out one after another. Picked
  // with constant indices, since a run-time index into the parameters would
  // copy them to local memory.
  WordPlane pl = planes.plane[0];
#pragma unroll
  for (int p = 1; p < kMaxWordPlanes; ++p)
    if (p < planes.n_planes && static_cast<int>(blockIdx.x) >= planes.plane[p].first_tile)
      pl = planes.plane[p];
  const int tile = static_cast<int>(blockIdx.x) - pl.first_tile;
  const int ox0 = (tile % pl.tiles_x) * pl.tile_w;
  const int oy0 = (tile / pl.tiles_x) * pl.tile_h;
  // Uniform per block, so the whole block takes one branch (the shared
  // tile's __syncthreads is only in the transposing ones).
  if (!direction_swaps(planes.direction))
    row_tile(pl, planes.direction, ox0, oy0);
  else if (pl.element == 1)
    transpose_tile(pl, planes.direction, ox0, oy0, reinterpret_cast<uint32_t(*)[kTrPitch]>(shared));
  else
    transpose_pairs_tile(pl, planes.direction, ox0, oy0,
                         reinterpret_cast<uint32_t(*)[kPairPitch]>(shared));
}

// ---------------------------------------------------------------------------
// Packed RGB: 4-byte pixels, one per thread and access.

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // block of 32x8 threads, 4 rows each

// A pixel group of N bytes with byte alignment, for planes whose pointers or
// strides do not allow the natural word type.
template <int N>
struct Bytes {
  uint8_t b[N];
};

template <typename T>
__global__ void flip_plane_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                                  uint8_t* __restrict__ dst, size_t dst_stride, FlipGeometry g) {
  __shared__ T tile[kTile][kTile + 1];  // +1: no bank conflicts on column reads
  const int ox0 = blockIdx.x * kTile;
  const int oy0 = blockIdx.y * kTile;
  const int2 s0 = source_tile(g, ox0, oy0, kTile);
  const int sx0 = s0.x, sy0 = s0.y;

  for (int ly = threadIdx.y; ly < kTile; ly += kRowsPerPass) {
    const int sx = sx0 + threadIdx.x;
    const int sy = sy0 + ly;
    if (sx >= 0 && sx < g.in_w && sy >= 0 && sy < g.in_h)
      tile[ly][threadIdx.x] =
          reinterpret_cast<const T*>(src + static_cast<size_t>(sy) * src_stride)[sx];
  }
  __syncthreads();
  for (int ly = threadIdx.y; ly < kTile; ly += kRowsPerPass) {
    const int x = ox0 + threadIdx.x;
    const int y = oy0 + ly;
    if (x >= g.out_w || y >= g.out_h) continue;
    int sx, sy;
    source_of(g, x, y, &sx, &sy);
    reinterpret_cast<T*>(dst + static_cast<size_t>(y) * dst_stride)[x] = tile[sy - sy0][sx - sx0];
  }
}

template <typename Word, typename Unaligned>
void launch_plane(const PlaneRef& in, const PlaneRef& out, size_t n, const FlipGeometry& g,
                  cudaStream_t stream) {
  dim3 grid((g.out_w + kTile - 1) / kTile, (g.out_h + kTile - 1) / kTile);
  if (grid.y > 65535) throw Error("flip: the image is too tall (more than 2,097,120 rows)");
  const dim3 block(kTile, kRowsPerPass);
  if (aligned_to(in.data, in.stride, n) && aligned_to(out.data, out.stride, n))
    flip_plane_kernel<Word>
        <<<grid, block, 0, stream>>>(in.data, in.stride, out.data, out.stride, g);
  else
    flip_plane_kernel<Unaligned>
        <<<grid, block, 0, stream>>>(in.data, in.stride, out.data, out.stride, g);
  CO_CUDA_CHECK_LAUNCH("the flip kernel");
}

}  // namespace

using flip_detail::flip_rgb24_cuda;
using flip_detail::flip_y422_odd_cuda;
using flip_detail::turn_y422_cuda;

void flip_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
               CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  if (is_packed422(in.format) && flip_swaps_size(direction)) {
    turn_y422_cuda(in, out, direction, stream);
    return;
  }
  const bool swaps = flip_swaps_size(direction);
  // Directions that read source rows right to left (180, horiz, 90L, ur-ll).
  const bool right_to_left = direction == FlipDirection::k180 ||
                             direction == FlipDirection::kHoriz ||
                             direction == FlipDirection::k90L || direction == FlipDirection::kUrLl;
  WordPlanes words{};
  words.direction = static_cast<int>(direction);
  long tiles = 0;
  // Adds plane p to the word kernel's launch: rows of in_w and out_w bytes
  // in groups of `element` bytes.
  auto add_word_plane = [&](int p, int in_w, int in_h, int out_w, int out_h, int element,
                            unsigned reverse) {
    WordPlane& w = words.plane[words.n_planes++];
    w.src = in.planes[p].data;
    w.src_stride = in.planes[p].stride;
    w.dst = out.planes[p].data;
    w.dst_stride = out.planes[p].stride;
    w.in_w = in_w;
    w.in_h = in_h;
    w.out_w = out_w;
    w.out_h = out_h;
    w.element = element;
    w.reverse = reverse;
    const bool pairs_turned = element == 2 && swaps;
    w.tile_w = !swaps ? kRowTileW : pairs_turned ? 4 * kPairTileWords : kTrTile;
    w.tile_h = !swaps ? kRowTileH : pairs_turned ? kPairTileRows : kTrTile;
    w.tiles_x = (w.out_w + w.tile_w - 1) / w.tile_w;
    w.first_tile = static_cast<int>(tiles);
    w.src_aligned = aligned_to(w.src, w.src_stride, 4);
    w.dst_aligned = aligned_to(w.dst, w.dst_stride, 4);
    w.src_vec16 = aligned_to(w.src, w.src_stride, 16) && (!right_to_left || w.in_w % 16 == 0);
    w.dst_vec16 = aligned_to(w.dst, w.dst_stride, 16);
    tiles += static_cast<long>(w.tiles_x) * ((w.out_h + w.tile_h - 1) / w.tile_h);
  };
  if (is_packed422(in.format) && direction != FlipDirection::kIdentity) {
    const int pairs = (out.width + 1) / 2;
    if (pairs == 0 || out.height == 0) return;
    if (in.width % 2 != 0) {
      flip_y422_odd_cuda(in, out, direction, stream);
      return;
    }
    // Rows kept at an even width: each output pair word is an input pair
    // word (mirrored: the word at the other end, its luma bytes swapped),
    // so the rows go through the word kernel as 4-byte groups.
    const int y_off = info.comp[0].offset;
    const unsigned swap_luma = 0x3210u ^ (0x2u << (4 * y_off)) ^ (0x2u << (4 * (y_off + 2)));
    add_word_plane(0, 4 * pairs, out.height, 4 * pairs, out.height, 4, swap_luma);
  } else {
    for (int p = 0; p < info.n_planes; ++p) {
      const size_t n = static_cast<size_t>(info.pixel_bytes[p]);
      FlipGeometry g;
      g.in_w = static_cast<int>(plane_row_bytes(in.format, p, in.width) / n);
      g.in_h = static_cast<int>(plane_rows(in.format, p, in.height));
      g.out_w = static_cast<int>(plane_row_bytes(out.format, p, out.width) / n);
      g.out_h = static_cast<int>(plane_rows(out.format, p, out.height));
      g.direction = static_cast<int>(direction);
      if (g.out_w == 0 || g.out_h == 0) continue;
      if (n <= 2) {
        // Into the word kernel's single launch, below. Mirrored words reverse
        // their bytes, or their byte pairs.
        add_word_plane(p, g.in_w * static_cast<int>(n), g.in_h, g.out_w * static_cast<int>(n),
                       g.out_h, static_cast<int>(n), n == 1 ? 0x0123u : 0x1032u);
        continue;
      }
      // Packed RGB, or P010's (U, V) pairs: 4-byte elements; 24-bit RGB: 3.
      if (n == 4)
        launch_plane<uint32_t, Bytes<4>>(in.planes[p], out.planes[p], n, g, stream);
      else if (aligned_to(in.planes[p].data, in.planes[p].stride, 16) &&
               aligned_to(out.planes[p].data, out.planes[p].stride, 16))
        flip_rgb24_cuda(in.planes[p], out.planes[p], g, stream);
      else
        launch_plane<Bytes<3>, Bytes<3>>(in.planes[p], out.planes[p], n, g, stream);
    }
  }
  if (words.n_planes == 0) return;
  if (tiles > 0x7FFFFFFF) throw Error("flip: the image is too large");
  unsigned grid = static_cast<unsigned>(tiles);
  flip_word_kernel<<<grid, kWordThreads, 0, stream>>>(words);
  CO_CUDA_CHECK_LAUNCH("the flip kernel (word-wide)");
}

}  // namespace cudaoverlap
