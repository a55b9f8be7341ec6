// CUDA implementation of the `flip` kernel (see flip.h).
//
// Two kernels share the work:
//
// - flip_word_kernel does the planes of YUV and GRAY8 (1-byte samples, and
//   NV12's 2-byte UV pairs), moving 4-byte words on both sides. All planes
//   of an image go in one launch: a flat grid of output tiles, each block
//   finding its plane from its index, so I420's small chroma planes add
//   blocks instead of launches. The directions that keep rows gather each
//   output word from one source row (a funnel shift when the source is not
//   word-aligned, then a byte permute to reverse it). The transposing ones
//   load 4x4-byte blocks (4 rows, one word each), transpose them in
//   registers with byte permutes and write the words to a shared tile in
//   output order, from which output rows leave as whole words. Byte-wide
//   accesses wasted most of every memory transaction.
// - flip_plane_kernel does packed RGB: a 32x32 tile of pixels in shared
//   memory, read and written row by row, so both sides are coalesced.
//
// Every global access in the word paths is a whole word only when the word
// lies inside the row; edges and planes whose pointer or stride is not a
// multiple of 4 go byte by byte.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"
#include "error.h"
#include "flip.h"

namespace cudaoverlap {
namespace {

// ---------------------------------------------------------------------------
// Word-wide kernel.

constexpr int kWordTile = 64;               // output tile, bytes x rows
constexpr int kTileWords = kWordTile / 4;   // words in a tile row
constexpr int kWordThreads = 256;           // 16 words x 16 rows
constexpr int kTilePitch = kTileWords + 1;  // shared row pitch in words: see the store below
// Transposing 2-byte pairs: the same 64-byte x 64-row source tile becomes
// 32 output rows of 64 pairs (128 bytes).
constexpr int kPairTileRows = 32;
constexpr int kPairTileWords = 32;
constexpr int kPairPitch = 36;  // see the store in transpose_pairs_tile
// Shared words per block, enough for either transpose.
constexpr int kSharedWords = kPairTileRows * kPairPitch;
static_assert(kWordTile * kTilePitch <= kSharedWords, "the byte tile must fit too");
constexpr int kMaxWordPlanes = kMaxPlanes;

struct WordPlane {
  const uint8_t* src;
  size_t src_stride;
  uint8_t* dst;
  size_t dst_stride;
  int in_w, in_h;                 // bytes per row, rows
  int out_w, out_h;               // bytes per row, rows
  int element;                    // bytes per pixel group: 1 or 2
  int tile_w, tile_h;             // output tile: bytes x rows
  int tiles_x;                    // output tiles per tile row
  int first_tile;                 // this plane's first block index
  bool src_aligned, dst_aligned;  // pointer and stride multiples of 4
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
// (mirror_x ? in_w - 1 - x : x, mirror_y ? in_h - 1 - y : y), x in groups.
__device__ __forceinline__ void row_tile(const WordPlane& pl, int d, int ox0, int oy0) {
  const bool mirror_x = d == 2 || d == 4;  // 180, horiz
  const bool mirror_y = d == 2 || d == 5;  // 180, vert
  // Reverses the groups within a word: bytes for 1-byte groups, byte pairs
  // for 2-byte ones.
  const unsigned reverse = pl.element == 1 ? 0x0123 : 0x1032;
  const int col = ox0 + 4 * (threadIdx.x % kTileWords);
  const int row0 = oy0 + threadIdx.x / kTileWords;
  constexpr int kPasses = kWordTile * kTileWords / kWordThreads;
  uint32_t v[kPasses];
  // All loads first, so each thread has 16 bytes in flight.
#pragma unroll
  for (int k = 0; k < kPasses; ++k) {
    const int y = row0 + k * (kWordThreads / kTileWords);
    v[k] = 0;
    if (y >= pl.out_h || col >= pl.out_w) continue;
    const int sy = mirror_y ? pl.in_h - 1 - y : y;
    const uint8_t* s = pl.src + static_cast<size_t>(sy) * pl.src_stride;
    // Output bytes [col, col + 4) come from [in_w - 4 - col, in_w - col)
    // reversed group-wise (in_w is a whole number of groups).
    v[k] = mirror_x
               ? __byte_perm(load_bytes4(s, pl.in_w - 4 - col, pl.in_w, pl.src_aligned), 0, reverse)
               : load_bytes4(s, col, pl.in_w, pl.src_aligned);
  }
#pragma unroll
  for (int k = 0; k < kPasses; ++k) {
    const int y = row0 + k * (kWordThreads / kTileWords);
    if (y >= pl.out_h || col >= pl.out_w) continue;
    store_word(pl.dst + static_cast<size_t>(y) * pl.dst_stride, col, pl.out_w, pl.dst_aligned,
               v[k]);
  }
}

// Transposing directions on 1-byte planes: output (x, y) takes input
// (sx, sy) = (flip_sx ? in_w - 1 - y : y, flip_sy ? in_h - 1 - x : x).
// `tile` holds the output tile's rows, each kTileWords words, padded by one
// word: the 4 words a thread stores go to rows 4 apart, and the pad spreads
// a warp's stores over all 32 banks.
__device__ __forceinline__ void transpose_tile(const WordPlane& pl, int d, int ox0, int oy0,
                                               uint32_t (*tile)[kTilePitch]) {
  const bool flip_sx = d == 3 || d == 7;  // 90L, ur-ll
  const bool flip_sy = d == 1 || d == 7;  // 90R, ur-ll
  // The source tile: its rows are the output tile's columns and its columns
  // the output tile's rows. S[r][c] = in(sx0 + c, sy0 + r); parts outside
  // the input read as 0 and map to outputs outside the output.
  const int sx0 = flip_sx ? pl.in_w - kWordTile - oy0 : oy0;
  const int sy0 = flip_sy ? pl.in_h - kWordTile - ox0 : ox0;
  // A warp takes 8 words x 4 rows, which makes the shared stores below
  // conflict-free (bank 4 * bx + by).
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int bx = lane % 8 + 8 * (warp % 2);  // source word column, 0..15
  const int by = lane / 8 + 4 * (warp / 2);  // source 4-row group, 0..15
  uint32_t w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int sy = sy0 + 4 * by + k;
    w[k] = 0;
    if (sy >= 0 && sy < pl.in_h)
      w[k] = load_bytes4(pl.src + static_cast<size_t>(sy) * pl.src_stride, sx0 + 4 * bx, pl.in_w,
                         pl.src_aligned);
  }
  // t[m] byte k = w[k] byte m: the 4x4 block transposed.
  const uint32_t a0 = __byte_perm(w[0], w[1], 0x5140), a1 = __byte_perm(w[0], w[1], 0x7362);
  const uint32_t b0 = __byte_perm(w[2], w[3], 0x5140), b1 = __byte_perm(w[2], w[3], 0x7362);
  uint32_t t[4] = {__byte_perm(a0, b0, 0x5410), __byte_perm(a0, b0, 0x7632),
                   __byte_perm(a1, b1, 0x5410), __byte_perm(a1, b1, 0x7632)};
  // S[4by + k][4bx + m] is output (i, j) = (flip_sy ? 63 - 4by - k : 4by + k,
  // flip_sx ? 63 - 4bx - m : 4bx + m) of the tile: t[m] is output row j,
  // word column (flip_sy ? 15 - by : by), bytes in reverse when flip_sy.
  const int word_col = flip_sy ? kTileWords - 1 - by : by;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const int j = flip_sx ? kWordTile - 1 - 4 * bx - m : 4 * bx + m;
    tile[j][word_col] = flip_sy ? __byte_perm(t[m], 0, 0x0123) : t[m];
  }
  __syncthreads();
  const int col = threadIdx.x % kTileWords;
  const int x = ox0 + 4 * col;
  if (x >= pl.out_w) return;
  for (int j = threadIdx.x / kTileWords; j < kWordTile; j += kWordThreads / kTileWords) {
    const int y = oy0 + j;
    if (y >= pl.out_h) break;
    store_word(pl.dst + static_cast<size_t>(y) * pl.dst_stride, x, pl.out_w, pl.dst_aligned,
               tile[j][col]);
  }
}

// Transposing directions on 2-byte pairs (NV12's UV): as transpose_tile,
// with the 4x4-byte block being 4 rows of 2 pairs, which become 2 output
// rows of 4 pairs (2 words each). ox0 is in bytes.
__device__ __forceinline__ void transpose_pairs_tile(const WordPlane& pl, int d, int ox0, int oy0,
                                                     uint32_t (*tile)[kPairPitch]) {
  const bool flip_sx = d == 3 || d == 7;  // 90L, ur-ll
  const bool flip_sy = d == 1 || d == 7;  // 90R, ur-ll
  // In pairs: S[r][c] = in(sx0 + c, sy0 + r), r < 64, c < 32; output pair
  // (ox0 / 2 + i, oy0 + j) is S[flip_sy ? 63 - i : i][flip_sx ? 31 - j : j].
  const int in_pairs = pl.in_w / 2;
  const int oxp = ox0 / 2;
  const int sx0 = flip_sx ? in_pairs - kPairTileRows - oy0 : oy0;
  const int sy0 = flip_sy ? pl.in_h - 2 * kPairTileWords - oxp : oxp;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int bx = lane % 8 + 8 * (warp % 2);  // source word column (pairs 2bx, 2bx + 1)
  const int by = lane / 8 + 4 * (warp / 2);  // source 4-row group
  uint32_t w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int sy = sy0 + 4 * by + k;
    w[k] = 0;
    if (sy >= 0 && sy < pl.in_h)
      w[k] = load_bytes4(pl.src + static_cast<size_t>(sy) * pl.src_stride, 2 * sx0 + 4 * bx,
                         pl.in_w, pl.src_aligned);
  }
  // Pair m of the 4 rows: output row j, pairs i = 4by .. 4by + 3 (words 2by
  // and 2by + 1), or reversed (words 31 - 2by and 30 - 2by, halves swapped)
  // when flip_sy. With the pitch of 36 a warp's stores fall on 16 banks.
#pragma unroll
  for (int m = 0; m < 2; ++m) {
    const unsigned sel = m == 0 ? 0x5410 : 0x7632;
    const int j = flip_sx ? kPairTileRows - 1 - 2 * bx - m : 2 * bx + m;
    if (flip_sy) {
      tile[j][kPairTileWords - 1 - 2 * by] = __byte_perm(w[1], w[0], sel);
      tile[j][kPairTileWords - 2 - 2 * by] = __byte_perm(w[3], w[2], sel);
    } else {
      tile[j][2 * by] = __byte_perm(w[0], w[1], sel);
      tile[j][2 * by + 1] = __byte_perm(w[2], w[3], sel);
    }
  }
  __syncthreads();
  const int col = threadIdx.x % kPairTileWords;
  const int x = ox0 + 4 * col;
  if (x >= pl.out_w) return;
  for (int j = threadIdx.x / kPairTileWords; j < kPairTileRows;
       j += kWordThreads / kPairTileWords) {
    const int y = oy0 + j;
    if (y >= pl.out_h) break;
    store_word(pl.dst + static_cast<size_t>(y) * pl.dst_stride, x, pl.out_w, pl.dst_aligned,
               tile[j][col]);
  }
}

__global__ void __launch_bounds__(kWordThreads) flip_word_kernel(WordPlanes planes) {
  __shared__ uint32_t shared[kSharedWords];
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
    transpose_tile(pl, planes.direction, ox0, oy0,
                   reinterpret_cast<uint32_t(*)[kTilePitch]>(shared));
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

struct FlipGeometry {
  int in_w, in_h, out_w, out_h;  // in pixel groups
  int direction;                 // FlipDirection
};

// Source coordinates of output pixel (x, y); the same table as flip_ref.cpp.
__device__ __forceinline__ void source_of(const FlipGeometry& g, int x, int y, int* sx, int* sy) {
  switch (g.direction) {
    case 1:  // 90R
      *sx = y;
      *sy = g.in_h - 1 - x;
      return;
    case 2:  // 180
      *sx = g.in_w - 1 - x;
      *sy = g.in_h - 1 - y;
      return;
    case 3:  // 90L
      *sx = g.in_w - 1 - y;
      *sy = x;
      return;
    case 4:  // horiz
      *sx = g.in_w - 1 - x;
      *sy = y;
      return;
    case 5:  // vert
      *sx = x;
      *sy = g.in_h - 1 - y;
      return;
    case 6:  // ul-lr
      *sx = y;
      *sy = x;
      return;
    case 7:  // ur-ll
      *sx = g.in_w - 1 - y;
      *sy = g.in_h - 1 - x;
      return;
    default:
      *sx = x;
      *sy = y;
      return;
  }
}

template <typename T>
__global__ void flip_plane_kernel(const uint8_t* __restrict__ src, size_t src_stride,
                                  uint8_t* __restrict__ dst, size_t dst_stride, FlipGeometry g) {
  __shared__ T tile[kTile][kTile + 1];  // +1: no bank conflicts on column reads
  const int ox0 = blockIdx.x * kTile;
  const int oy0 = blockIdx.y * kTile;
  // The source tile is the image of the whole (unclipped) output tile: the
  // smaller coordinates of two opposite corners.
  int ax, ay, bx, by;
  source_of(g, ox0, oy0, &ax, &ay);
  source_of(g, ox0 + kTile - 1, oy0 + kTile - 1, &bx, &by);
  const int sx0 = min(ax, bx);
  const int sy0 = min(ay, by);

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

bool aligned_to(const void* p, size_t stride, size_t n) {
  return reinterpret_cast<uintptr_t>(p) % n == 0 && stride % n == 0;
}

template <typename Word, typename Unaligned>
void launch_plane(const PlaneRef& in, const PlaneRef& out, size_t n, const FlipGeometry& g,
                  bool inject_launch_failure, cudaStream_t stream) {
  dim3 grid((g.out_w + kTile - 1) / kTile, (g.out_h + kTile - 1) / kTile);
  if (grid.y > 65535) throw Error("flip: the image is too tall (more than 2,097,120 rows)");
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid.x = 0;
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

void flip_cuda(const ImageRef& in, const ImageRef& out, FlipDirection direction,
               bool inject_launch_failure, CUstream_st* stream) {
  const FormatInfo& info = format_info(in.format);
  const bool swaps = flip_swaps_size(direction);
  WordPlanes words{};
  words.direction = static_cast<int>(direction);
  long tiles = 0;
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
      // Into the word kernel's single launch, below.
      WordPlane& w = words.plane[words.n_planes++];
      w.src = in.planes[p].data;
      w.src_stride = in.planes[p].stride;
      w.dst = out.planes[p].data;
      w.dst_stride = out.planes[p].stride;
      w.in_w = g.in_w * static_cast<int>(n);
      w.in_h = g.in_h;
      w.out_w = g.out_w * static_cast<int>(n);
      w.out_h = g.out_h;
      w.element = static_cast<int>(n);
      const bool pairs_turned = n == 2 && swaps;
      w.tile_w = pairs_turned ? 4 * kPairTileWords : kWordTile;
      w.tile_h = pairs_turned ? kPairTileRows : kWordTile;
      w.tiles_x = (w.out_w + w.tile_w - 1) / w.tile_w;
      w.first_tile = static_cast<int>(tiles);
      w.src_aligned = aligned_to(w.src, w.src_stride, 4);
      w.dst_aligned = aligned_to(w.dst, w.dst_stride, 4);
      tiles += static_cast<long>(w.tiles_x) * ((w.out_h + w.tile_h - 1) / w.tile_h);
      continue;
    }
    // Packed RGB.
    launch_plane<uint32_t, Bytes<4>>(in.planes[p], out.planes[p], n, g, inject_launch_failure,
                                     stream);
  }
  if (words.n_planes == 0) return;
  if (tiles > 0x7FFFFFFF) throw Error("flip: the image is too large");
  unsigned grid = static_cast<unsigned>(tiles);
  // An empty grid is an invalid configuration: CUDA reports it at launch.
  if (inject_launch_failure) grid = 0;
  flip_word_kernel<<<grid, kWordThreads, 0, stream>>>(words);
  CO_CUDA_CHECK_LAUNCH("the flip kernel (word-wide)");
}

}  // namespace cudaoverlap
