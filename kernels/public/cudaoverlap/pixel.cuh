// cudaoverlap's header for kernels of your own (kernel=custom): the frames a
// kernel gets, their pixels as normalised floats in any format the element
// takes, and raw access to their planes.
//
// The element compiles your source at run time with NVRTC, after a prelude
// it writes for the stream's format:
//
//   #include <cudaoverlap/pixel.cuh>
//   struct Params { float amount; int radius; };  // kernel-params' fields
//   using Format = co::Format<...>;               // the stream's format
//   using InFrame = co::Frame<Format>;
//   using OutFrame = co::Frame<Format>;
//   #line 1 "your-file.cu"
//   <your source>
//
// Your source is one of two forms.
//
// A per-pixel function (the default). The element writes the __global__
// kernel around it: one thread per chroma block (2x2 pixels of NV12, 2x1 of
// YUY2, one pixel of RGBA), each pixel read, passed to your function and
// written back; a subsampled chroma sample gets the mean of its block's
// results. It may also run where its result is dropped (a chain's fused
// launch runs it on slots past the picture's edge, with the nearest pixel's
// coordinates): keep it free of side effects. The type of the first
// parameter chooses how pixels look:
//
//   co::Rgba process(co::Rgba px, int x, int y, const Params& params);
//   co::Yuva process(co::Yuva px, int x, int y, const Params& params);
//   co::Pixel process(co::Pixel px, int x, int y, const Params& params);
//
// A whole __global__ kernel (kernel-launch="32x8" or "32x8/4x1": the block,
// and the pixels a thread covers; the grid covers the picture):
//
//   __global__ void process(InFrame in, OutFrame out, Params params);
//
// What the values mean:
// - Every value is a sample divided by its maximum (255, 1023, 65535), 0..1.
// - co::Pixel is the format's own samples: c[0..2] are R, G, B or Y, U, V
//   (grey in c[0] alone), untouched by any conversion, so a kernel that
//   works on samples is exact in every format.
// - co::Rgba from a YUV format is converted with the stream's matrix
//   (BT.601 or BT.709) and range; co::Yuva from an RGB format likewise (Y,
//   U, V then mean the samples a limited-range BT.601/709 stream would
//   hold). Grey reads as R = G = B; written, grey is the luma.
// - a is the alpha sample where the format has one, and the fourth byte of
//   RGBx/BGRx (read and written as it is); 1 in every other format.
// - Results are clamped to 0..1 and rounded to the nearest sample. The bits
//   of a 16-bit word outside a 10-bit sample are written as 0.
//
// Raw access: Frame::row(plane, y) is the first byte of a row of a plane;
// Frame::stride[p], Frame::width, Frame::height, and Format's components
// (plane, byte offset, bytes from one sample to the next, depth, shift,
// subsampling) say where every sample is.
//
// The header includes nothing, so it compiles under NVRTC as it is, and
// with nvcc for kernels that an application launches itself.
#pragma once

namespace co {

// --- Pixels ----------------------------------------------------------------

struct Rgba {
  float r, g, b, a;
};
struct Yuva {
  float y, u, v, a;
};
struct Pixel {
  float c[3];
  float a;
};

// --- Formats -----------------------------------------------------------------

// One component of a format, as GStreamer's GstVideoFormatInfo describes it:
// the plane that holds it, the byte of its first sample in a row, the bytes
// from one sample to the next, its significant bits, the bits it sits above
// bit 0 of its little-endian word, and log2 of its subsampling across and
// down. Plane -1: the format has no such component.
template <int Plane, int Offset, int Step, int Depth, int Shift, int XSub, int YSub>
struct Component {
  static constexpr int plane = Plane;
  static constexpr int offset = Offset;
  static constexpr int step = Step;
  static constexpr int depth = Depth;
  static constexpr int shift = Shift;
  static constexpr int x_sub = XSub;
  static constexpr int y_sub = YSub;
  static constexpr bool present = Plane >= 0;
};
using NoComponent = Component<-1, 0, 0, 0, 0, 0, 0>;

// A format: whether its colours are Y, U, V (else R, G, B, or grey alone),
// how many colour components it has (3, or 1 for grey), bytes per sample (1
// or 2, little-endian), the colour components, and the fourth (alpha, or
// RGBx's padding byte; NoComponent where there is none).
template <bool Yuv, int Colours, int SampleBytes, class C0, class C1, class C2, class C3>
struct Format {
  static constexpr bool yuv = Yuv;
  static constexpr int colours = Colours;
  static constexpr int sample_bytes = SampleBytes;
  using Comp0 = C0;
  using Comp1 = C1;
  using Comp2 = C2;
  using Comp3 = C3;
  // Subsampling of the whole format: the block of pixels one thread of a
  // per-pixel kernel takes (log2 across and down).
  static constexpr int block_x_sub = C1::x_sub > C2::x_sub ? C1::x_sub : C2::x_sub;
  static constexpr int block_y_sub = C1::y_sub > C2::y_sub ? C1::y_sub : C2::y_sub;
  // Four 8-bit samples in one 4-byte word per pixel (RGBA, BGRx, …).
  static constexpr bool packed32 = SampleBytes == 1 && Colours == 3 && C3::present &&
                                   C0::step == 4 && C1::step == 4 && C2::step == 4 &&
                                   C3::step == 4 && C0::plane == 0 && C1::plane == 0 &&
                                   C2::plane == 0 && C3::plane == 0;
};

template <class F, int I>
struct ComponentOf;
template <class F>
struct ComponentOf<F, 0> {
  using type = typename F::Comp0;
};
template <class F>
struct ComponentOf<F, 1> {
  using type = typename F::Comp1;
};
template <class F>
struct ComponentOf<F, 2> {
  using type = typename F::Comp2;
};
template <class F>
struct ComponentOf<F, 3> {
  using type = typename F::Comp3;
};

// --- Colour ------------------------------------------------------------------

enum Matrix { kBT601 = 0, kBT709 = 1, kFCC = 2, kSMPTE240M = 3, kBT2020 = 4 };

// How the samples of a frame map to colours: the YUV matrix and range, and
// for an RGB frame whether its samples sit on 16..235.
struct Colorimetry {
  int matrix;      // Matrix
  int full_range;  // YUV samples on 0..max (else 16..235 and 16..240, scaled)
  int rgb_limited;
  float kr, kb;  // the matrix's luma weights of red and blue
};

__device__ inline float clamp01(float v) { return v < 0.f ? 0.f : (v > 1.f ? 1.f : v); }

struct Coefficients {
  float kr, kb;
};
__device__ inline Coefficients coefficients(const Colorimetry& c) {
  return Coefficients{c.kr, c.kb};
}

// Normalised samples of a `depth`-bit stream to Y in 0..1 and U, V in
// -0.5..0.5, and back.
__device__ inline void samples_to_ycc(const Colorimetry& c, int depth, float y, float u, float v,
                                      float* Y, float* U, float* V) {
  const float max = float((1 << depth) - 1), s = float(1 << (depth - 8));
  if (c.full_range) {
    *Y = y;
    *U = (u * max - 128.f * s) / max;
    *V = (v * max - 128.f * s) / max;
  } else {
    *Y = (y * max - 16.f * s) / (219.f * s);
    *U = (u * max - 128.f * s) / (224.f * s);
    *V = (v * max - 128.f * s) / (224.f * s);
  }
}
__device__ inline void ycc_to_samples(const Colorimetry& c, int depth, float Y, float U, float V,
                                      float* y, float* u, float* v) {
  const float max = float((1 << depth) - 1), s = float(1 << (depth - 8));
  if (c.full_range) {
    *y = Y;
    *u = (U * max + 128.f * s) / max;
    *v = (V * max + 128.f * s) / max;
  } else {
    *y = (Y * 219.f * s + 16.f * s) / max;
    *u = (U * 224.f * s + 128.f * s) / max;
    *v = (V * 224.f * s + 128.f * s) / max;
  }
}

__device__ inline Rgba ycc_to_rgb(const Colorimetry& c, float Y, float U, float V, float a) {
  const Coefficients k = coefficients(c);
  const float r = Y + 2.f * (1.f - k.kr) * V;
  const float b = Y + 2.f * (1.f - k.kb) * U;
  const float g = (Y - k.kr * r - k.kb * b) / (1.f - k.kr - k.kb);
  return Rgba{r, g, b, a};
}
__device__ inline void rgb_to_ycc(const Colorimetry& c, const Rgba& p, float* Y, float* U,
                                  float* V) {
  const Coefficients k = coefficients(c);
  *Y = k.kr * p.r + (1.f - k.kr - k.kb) * p.g + k.kb * p.b;
  *U = (p.b - *Y) / (2.f * (1.f - k.kb));
  *V = (p.r - *Y) / (2.f * (1.f - k.kr));
}

// --- Frames ------------------------------------------------------------------

// The layout of a frame in device memory, as the element passes it. Plain
// data, the same on the host (cudaoverlap/image.h has its C twin).
struct FrameData {
  int width;   // pixels
  int height;  // rows
  unsigned char* plane[4];
  unsigned long long stride[4];  // bytes from one row of a plane to the next
  Colorimetry colorimetry;
};

template <class F>
struct Frame : FrameData {
  using Fmt = F;

  // First byte of row y of plane p (y counts the plane's own rows).
  __device__ unsigned char* row(int p, int y) const { return plane[p] + stride[p] * y; }

  // Component I's raw sample for pixel (x, y), and writing one (a 16-bit
  // word is written whole: the bits outside the sample become 0).
  template <int I>
  __device__ unsigned raw(int x, int y) const {
    using C = typename ComponentOf<F, I>::type;
    const unsigned char* s = row(C::plane, y >> C::y_sub) + C::offset + (x >> C::x_sub) * C::step;
    if (F::sample_bytes == 1) return *s;
    const unsigned word = *reinterpret_cast<const unsigned short*>(s);
    return (word >> C::shift) & ((1u << C::depth) - 1u);
  }
  template <int I>
  __device__ void set_raw(int x, int y, unsigned value) const {
    using C = typename ComponentOf<F, I>::type;
    unsigned char* d = row(C::plane, y >> C::y_sub) + C::offset + (x >> C::x_sub) * C::step;
    if (F::sample_bytes == 1)
      *d = static_cast<unsigned char>(value);
    else
      *reinterpret_cast<unsigned short*>(d) = static_cast<unsigned short>(value << C::shift);
  }

  // The same, normalised to 0..1.
  template <int I>
  __device__ float sample(int x, int y) const {
    using C = typename ComponentOf<F, I>::type;
    if constexpr (!C::present)
      return 1.f;
    else
      return float(raw<I>(x, y)) * (1.f / float((1u << C::depth) - 1u));
  }
  template <int I>
  __device__ void set_sample(int x, int y, float v) const {
    using C = typename ComponentOf<F, I>::type;
    if constexpr (C::present) {
      const float max = float((1u << C::depth) - 1u);
      set_raw<I>(x, y, static_cast<unsigned>(__float2int_rn(clamp01(v) * max)));
    }
  }

  // Pixel (x, y) as the format's own samples.
  __device__ Pixel pixel(int x, int y) const {
    Pixel p;
    if constexpr (F::packed32) {
      const unsigned w = *reinterpret_cast<const unsigned*>(row(0, y) + 4 * x);
      p.c[0] = float((w >> (8 * F::Comp0::offset)) & 255u) * (1.f / 255.f);
      p.c[1] = float((w >> (8 * F::Comp1::offset)) & 255u) * (1.f / 255.f);
      p.c[2] = float((w >> (8 * F::Comp2::offset)) & 255u) * (1.f / 255.f);
      p.a = float((w >> (8 * F::Comp3::offset)) & 255u) * (1.f / 255.f);
    } else {
      p.c[0] = sample<0>(x, y);
      p.c[1] = F::colours == 3 ? sample<1>(x, y) : 0.f;
      p.c[2] = F::colours == 3 ? sample<2>(x, y) : 0.f;
      p.a = sample<3>(x, y);
    }
    return p;
  }
  // Writes pixel (x, y): every sample of it, chroma included, so where the
  // chroma is subsampled the last pixel of a block written wins (a
  // per-pixel kernel writes the block's mean instead).
  __device__ void set_pixel(int x, int y, const Pixel& p) const {
    if constexpr (F::packed32) {
      const unsigned w = (quantise8(p.c[0]) << (8 * F::Comp0::offset)) |
                         (quantise8(p.c[1]) << (8 * F::Comp1::offset)) |
                         (quantise8(p.c[2]) << (8 * F::Comp2::offset)) |
                         (quantise8(p.a) << (8 * F::Comp3::offset));
      *reinterpret_cast<unsigned*>(row(0, y) + 4 * x) = w;
    } else {
      set_sample<0>(x, y, p.c[0]);
      if constexpr (F::colours == 3) {
        set_sample<1>(x, y, p.c[1]);
        set_sample<2>(x, y, p.c[2]);
      }
      set_sample<3>(x, y, p.a);
    }
  }

  // Conversions between the format's own samples and RGBA or YUVA.
  __device__ Rgba to_rgba(const Pixel& p) const {
    if (F::colours == 1) return Rgba{p.c[0], p.c[0], p.c[0], p.a};
    if (!F::yuv) {
      if (!colorimetry.rgb_limited) return Rgba{p.c[0], p.c[1], p.c[2], p.a};
      return Rgba{from_limited(p.c[0]), from_limited(p.c[1]), from_limited(p.c[2]), p.a};
    }
    float Y, U, V;
    samples_to_ycc(colorimetry, F::Comp0::depth, p.c[0], p.c[1], p.c[2], &Y, &U, &V);
    return ycc_to_rgb(colorimetry, Y, U, V, p.a);
  }
  __device__ Pixel from_rgba(const Rgba& q) const {
    Pixel p;
    p.a = q.a;
    if (F::colours == 1) {
      const Coefficients k = coefficients(colorimetry);
      p.c[0] = k.kr * q.r + (1.f - k.kr - k.kb) * q.g + k.kb * q.b;
      p.c[1] = p.c[2] = 0.f;
    } else if (!F::yuv) {
      p.c[0] = colorimetry.rgb_limited ? to_limited(q.r) : q.r;
      p.c[1] = colorimetry.rgb_limited ? to_limited(q.g) : q.g;
      p.c[2] = colorimetry.rgb_limited ? to_limited(q.b) : q.b;
    } else {
      float Y, U, V;
      rgb_to_ycc(colorimetry, q, &Y, &U, &V);
      ycc_to_samples(colorimetry, F::Comp0::depth, Y, U, V, &p.c[0], &p.c[1], &p.c[2]);
    }
    return p;
  }
  __device__ Yuva to_yuva(const Pixel& p) const {
    if (F::yuv) return Yuva{p.c[0], p.c[1], p.c[2], p.a};
    const Rgba q = to_rgba(p);
    float Y, U, V, y, u, v;
    rgb_to_ycc(colorimetry, q, &Y, &U, &V);
    Colorimetry limited = colorimetry;
    limited.full_range = 0;
    ycc_to_samples(limited, 8, Y, U, V, &y, &u, &v);
    return Yuva{y, u, v, q.a};
  }
  __device__ Pixel from_yuva(const Yuva& q) const {
    if (F::yuv) {
      Pixel p;
      p.c[0] = q.y;
      p.c[1] = q.u;
      p.c[2] = q.v;
      p.a = q.a;
      return p;
    }
    Colorimetry limited = colorimetry;
    limited.full_range = 0;
    float Y, U, V;
    samples_to_ycc(limited, 8, q.y, q.u, q.v, &Y, &U, &V);
    return from_rgba(ycc_to_rgb(colorimetry, Y, U, V, q.a));
  }

  __device__ Rgba rgba(int x, int y) const { return to_rgba(pixel(x, y)); }
  __device__ void set_rgba(int x, int y, const Rgba& q) const { set_pixel(x, y, from_rgba(q)); }
  __device__ Yuva yuva(int x, int y) const { return to_yuva(pixel(x, y)); }
  __device__ void set_yuva(int x, int y, const Yuva& q) const { set_pixel(x, y, from_yuva(q)); }

  // The same three, reading and writing pixels in any of the three forms.
  __device__ Pixel as_pixel(const Pixel& p) const { return p; }
  __device__ Pixel as_pixel(const Rgba& q) const { return from_rgba(q); }
  __device__ Pixel as_pixel(const Yuva& q) const { return from_yuva(q); }
  __device__ void view(const Pixel& p, Pixel* out) const { *out = p; }
  __device__ void view(const Pixel& p, Rgba* out) const { *out = to_rgba(p); }
  __device__ void view(const Pixel& p, Yuva* out) const { *out = to_yuva(p); }

 private:
  __device__ static unsigned quantise8(float v) {
    return static_cast<unsigned>(__float2int_rn(clamp01(v) * 255.f));
  }
  __device__ static float from_limited(float v) { return (v * 255.f - 16.f) / 219.f; }
  __device__ static float to_limited(float v) { return (v * 219.f + 16.f) / 255.f; }
};

namespace detail {

// The pixel type a per-pixel function takes (its first parameter).
template <class V, class R, class P>
V view_of(R (*)(V, int, int, P));

// --- The per-pixel form's tiles -------------------------------------------
//
// Where it can, a thread of a per-pixel kernel takes a tile of pixels whose
// every plane's bytes are a whole number of 16-byte words: it loads them
// with 16-byte loads, takes each sample out of registers at an offset known
// when the program is compiled, and builds and stores its output the same
// way. That is how a hand-written kernel moves memory; one sample at a time
// would take several times as long.

template <class F>
struct Components {
  // Where component i is: plane -1 where the format has no component i.
  struct Where {
    int plane, step, x_sub, y_sub;
  };
  template <class C>
  __host__ __device__ static constexpr Where where_of() {
    return Where{C::plane, C::step, C::x_sub, C::y_sub};
  }
  __host__ __device__ static constexpr Where where(int i) {
    return i == 0   ? where_of<typename F::Comp0>()
           : i == 1 ? where_of<typename F::Comp1>()
           : i == 2 ? where_of<typename F::Comp2>()
                    : where_of<typename F::Comp3>();
  }
  __host__ __device__ static constexpr int plane(int i) { return where(i).plane; }
  __host__ __device__ static constexpr int step(int i) { return where(i).step; }
  __host__ __device__ static constexpr int x_sub(int i) { return where(i).x_sub; }
  __host__ __device__ static constexpr int y_sub(int i) { return where(i).y_sub; }
  // The first component in plane p, or -1 when no component is.
  __host__ __device__ static constexpr int first_in_plane(int p) {
    return plane(0) == p ? 0 : plane(1) == p ? 1 : plane(2) == p ? 2 : plane(3) == p ? 3 : -1;
  }
};

// Pixels across a tile: the fewest, a multiple of the chroma block, that
// make every component's run of bytes a multiple of 4 and the longest at
// least 16. A plane's run then starts on a multiple of its length, so it
// moves in loads and stores of 16, 8 or 4 bytes (the largest that divides
// the length). Wider tiles would mean fewer threads than the GPU needs to
// keep its memory busy. The element's launch computes the same (custom.cu).
template <class F>
__host__ __device__ constexpr int tile_width() {
  using K = Components<F>;
  int tx = 1 << F::block_x_sub;
  for (;;) {
    bool whole = true;
    int longest = 0;
    for (int i = 0; i < 4; ++i) {
      if (K::plane(i) < 0) continue;
      const int bytes = (tx >> K::x_sub(i)) * K::step(i);
      if (bytes % 4 != 0) whole = false;
      if (bytes > longest) longest = bytes;
    }
    if (whole && longest >= 16) return tx;
    tx *= 2;
  }
}

// Bytes and rows of plane p in a tile; 0 for a plane no component uses.
template <class F>
__host__ __device__ constexpr int tile_bytes(int p) {
  using K = Components<F>;
  const int k = K::first_in_plane(p);
  return k < 0 ? 0 : (tile_width<F>() >> K::x_sub(k)) * K::step(k);
}
template <class F>
__host__ __device__ constexpr int tile_rows(int p) {
  using K = Components<F>;
  const int k = K::first_in_plane(p);
  return k < 0 ? 0 : (1 << F::block_y_sub) >> K::y_sub(k);
}
// One plane's part of a tile, as 32-bit words, row by row.
template <class F, int P, int Rows = tile_rows<F>(P), int Words = tile_bytes<F>(P) / 4>
struct PlaneRun {
  unsigned w[Rows > 0 ? Rows : 1][Words > 0 ? Words : 1];

  __device__ static const unsigned char* start(const Frame<F>& f, int x0, int y0, int r) {
    using K = Components<F>;
    constexpr int k = K::first_in_plane(P);
    return f.row(P, (y0 >> K::y_sub(k)) + r) + (x0 >> K::x_sub(k)) * K::step(k);
  }
  // Bytes one load or store moves: 16, 8 or 4, whichever divides the run.
  static constexpr int kChunk = (Words * 4) % 16 == 0 ? 16 : (Words * 4) % 8 == 0 ? 8 : 4;

  __device__ void load(const Frame<F>& f, int x0, int y0) {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      const unsigned char* at = start(f, x0, y0, r);
#pragma unroll
      for (int q = 0; q < Words * 4 / kChunk; ++q) {
        if constexpr (kChunk == 16) {
          const uint4 v = reinterpret_cast<const uint4*>(at)[q];
          w[r][4 * q] = v.x;
          w[r][4 * q + 1] = v.y;
          w[r][4 * q + 2] = v.z;
          w[r][4 * q + 3] = v.w;
        } else if constexpr (kChunk == 8) {
          const uint2 v = reinterpret_cast<const uint2*>(at)[q];
          w[r][2 * q] = v.x;
          w[r][2 * q + 1] = v.y;
        } else {
          w[r][q] = reinterpret_cast<const unsigned*>(at)[q];
        }
      }
    }
  }
  __device__ void clear() {
#pragma unroll
    for (int r = 0; r < Rows; ++r)
#pragma unroll
      for (int q = 0; q < Words; ++q) w[r][q] = 0u;
  }
  __device__ void store(const Frame<F>& f, int x0, int y0) const {
#pragma unroll
    for (int r = 0; r < Rows; ++r) {
      unsigned char* at = const_cast<unsigned char*>(start(f, x0, y0, r));
#pragma unroll
      for (int q = 0; q < Words * 4 / kChunk; ++q) {
        if constexpr (kChunk == 16)
          reinterpret_cast<uint4*>(at)[q] =
              make_uint4(w[r][4 * q], w[r][4 * q + 1], w[r][4 * q + 2], w[r][4 * q + 3]);
        else if constexpr (kChunk == 8)
          reinterpret_cast<uint2*>(at)[q] = make_uint2(w[r][2 * q], w[r][2 * q + 1]);
        else
          reinterpret_cast<unsigned*>(at)[q] = w[r][q];
      }
    }
  }
};

// A tile's samples, plane by plane.
template <class F>
struct Tile {
  static constexpr int tx = tile_width<F>();
  static constexpr int by = 1 << F::block_y_sub;
  PlaneRun<F, 0> p0;
  PlaneRun<F, 1> p1;
  PlaneRun<F, 2> p2;
  PlaneRun<F, 3> p3;

  template <int P>
  __device__ auto& plane() {
    if constexpr (P == 0)
      return p0;
    else if constexpr (P == 1)
      return p1;
    else if constexpr (P == 2)
      return p2;
    else
      return p3;
  }
  template <int P>
  __device__ const auto& plane() const {
    if constexpr (P == 0)
      return p0;
    else if constexpr (P == 1)
      return p1;
    else if constexpr (P == 2)
      return p2;
    else
      return p3;
  }
  template <int P>
  __device__ void load_plane(const Frame<F>& f, int x0, int y0) {
    if constexpr (tile_bytes<F>(P) > 0) plane<P>().load(f, x0, y0);
  }
  template <int P>
  __device__ void clear_plane() {
    if constexpr (tile_bytes<F>(P) > 0) plane<P>().clear();
  }
  template <int P>
  __device__ void store_plane(const Frame<F>& f, int x0, int y0) const {
    if constexpr (tile_bytes<F>(P) > 0) plane<P>().store(f, x0, y0);
  }
  __device__ void load(const Frame<F>& f, int x0, int y0) {
    load_plane<0>(f, x0, y0);
    load_plane<1>(f, x0, y0);
    load_plane<2>(f, x0, y0);
    load_plane<3>(f, x0, y0);
  }
  __device__ void clear() {
    clear_plane<0>();
    clear_plane<1>();
    clear_plane<2>();
    clear_plane<3>();
  }
  __device__ void store(const Frame<F>& f, int x0, int y0) const {
    store_plane<0>(f, x0, y0);
    store_plane<1>(f, x0, y0);
    store_plane<2>(f, x0, y0);
    store_plane<3>(f, x0, y0);
  }

  // Component I's sample for tile pixel (dx, dy), normalised.
  template <int I>
  __device__ float get(int dx, int dy) const {
    using C = typename ComponentOf<F, I>::type;
    if constexpr (!C::present) {
      return 1.f;
    } else {
      const int b = (dx >> C::x_sub) * C::step + C::offset;
      const unsigned word = plane<C::plane>().w[dy >> C::y_sub][b >> 2] >> (8 * (b & 3));
      const unsigned max = (1u << C::depth) - 1u;
      const unsigned raw =
          F::sample_bytes == 1 ? (word & 255u) : (((word & 0xffffu) >> C::shift) & max);
      return float(raw) * (1.f / float(max));
    }
  }
  template <int I>
  __device__ void put(int dx, int dy, float v) {
    using C = typename ComponentOf<F, I>::type;
    if constexpr (C::present) {
      const int b = (dx >> C::x_sub) * C::step + C::offset;
      const unsigned max = (1u << C::depth) - 1u;
      const unsigned raw = static_cast<unsigned>(__float2int_rn(clamp01(v) * float(max)));
      plane<C::plane>().w[dy >> C::y_sub][b >> 2] |= (raw << C::shift) << (8 * (b & 3));
    }
  }
  __device__ Pixel pixel(int dx, int dy) const {
    Pixel p;
    p.c[0] = get<0>(dx, dy);
    p.c[1] = F::colours == 3 ? get<1>(dx, dy) : 0.f;
    p.c[2] = F::colours == 3 ? get<2>(dx, dy) : 0.f;
    p.a = get<3>(dx, dy);
    return p;
  }
};

// Whether every plane of `f` starts on 16 bytes and keeps to them row by row.
template <class F>
__device__ bool aligned16(const Frame<F>& f) {
  bool ok = true;
#pragma unroll
  for (int p = 0; p < 4; ++p)
    if (tile_bytes<F>(p) > 0)
      ok = ok && ((reinterpret_cast<unsigned long long>(f.plane[p]) | f.stride[p]) & 15u) == 0;
  return ok;
}

// The tile at (x0, y0), which lies wholly inside both frames: `fn(view, x,
// y)` gives each pixel's result as a co::Pixel.
template <class View, class F, class Fn>
__device__ void map_tile(const Frame<F>& in, const Frame<F>& out, int x0, int y0, Fn fn) {
  using T = Tile<F>;
  constexpr int bx = 1 << F::block_x_sub;
  constexpr bool sub = F::block_x_sub > 0 || F::block_y_sub > 0;
  T src, dst;
  src.load(in, x0, y0);
  dst.clear();
  float u[T::tx / bx], v[T::tx / bx];
#pragma unroll
  for (int b = 0; b < T::tx / bx; ++b) u[b] = v[b] = 0.f;
#pragma unroll
  for (int dy = 0; dy < T::by; ++dy) {
#pragma unroll
    for (int dx = 0; dx < T::tx; ++dx) {
      View view;
      in.view(src.pixel(dx, dy), &view);
      const Pixel q = fn(view, x0 + dx, y0 + dy);
      dst.template put<0>(dx, dy, q.c[0]);
      dst.template put<3>(dx, dy, q.a);
      if constexpr (F::colours == 3) {
        if constexpr (sub) {
          u[dx / bx] += q.c[1];
          v[dx / bx] += q.c[2];
        } else {
          dst.template put<1>(dx, dy, q.c[1]);
          dst.template put<2>(dx, dy, q.c[2]);
        }
      }
    }
  }
  if constexpr (F::colours == 3 && sub) {
    constexpr float n = float(bx * T::by);
#pragma unroll
    for (int b = 0; b < T::tx / bx; ++b) {
      dst.template put<1>(b * bx, 0, u[b] / n);
      dst.template put<2>(b * bx, 0, v[b] / n);
    }
  }
  dst.store(out, x0, y0);
}

}  // namespace detail

}  // namespace co
