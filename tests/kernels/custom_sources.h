// kernel=custom sources the suites and the benchmark share: `invert` written
// against <cudaoverlap/pixel.cuh> in both of its forms, each of which must
// give kernel=invert's bytes in every format.
#pragma once

namespace cudaoverlap::test {

// The per-pixel form on the format's own samples.
inline constexpr char kInvertPixelSource[] = R"(#include <cudaoverlap/pixel.cuh>

// max - v on every colour sample; alpha and padding kept.
co::Pixel process(co::Pixel px, int x, int y, const Params& params) {
  for (int c = 0; c < 3; ++c) px.c[c] = 1.f - px.c[c];
  return px;
}
)";

// A whole kernel on raw samples (kernel-launch 32x8): one thread per pixel,
// each sample written by the pixel at the top-left of the block it covers.
inline constexpr char kInvertRawSource[] = R"(#include <cudaoverlap/pixel.cuh>

template <int I>
void invert_component(const InFrame& in, const OutFrame& out, int x, int y) {
  using C = typename co::ComponentOf<Format, I>::type;
  if constexpr (C::present) {
    if ((x & ((1 << C::x_sub) - 1)) != 0 || (y & ((1 << C::y_sub) - 1)) != 0) return;
    const unsigned v = in.raw<I>(x, y);
    out.set_raw<I>(x, y, I < Format::colours ? ((1u << C::depth) - 1u) - v : v);
  }
}

__global__ void process(InFrame in, OutFrame out, Params params) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= in.width || y >= in.height) return;
  invert_component<0>(in, out, x, y);
  invert_component<1>(in, out, x, y);
  invert_component<2>(in, out, x, y);
  invert_component<3>(in, out, x, y);
}
)";

// The README's examples, compiled by the tests so that they stay true.
inline constexpr char kReadmeSepiaSource[] = R"(// sepia.cu
co::Rgba process(co::Rgba px, int x, int y, const Params& params) {
  const float grey = 0.299f * px.r + 0.587f * px.g + 0.114f * px.b;
  const float k = params.amount;
  return co::Rgba{px.r + k * (1.07f * grey - px.r), px.g + k * (0.74f * grey - px.g),
                  px.b + k * (0.43f * grey - px.b), px.a};
}
)";

inline constexpr char kReadmeWholeKernelSource[] = R"(
__global__ void process(InFrame in, OutFrame out, Params params) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < in.width && y < in.height) out.set_rgba(x, y, in.rgba(x, y));
}
)";

}  // namespace cudaoverlap::test
