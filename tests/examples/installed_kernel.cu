// Compiled by installed.sh with nvcc against the installed header: an
// application's own kernel on co::Frame, for RGBA described by hand.
#include <cudaoverlap/pixel.cuh>

using Rgba8 = co::Format<false, 3, 1, co::Component<0, 0, 4, 8, 0, 0, 0>,
                         co::Component<0, 1, 4, 8, 0, 0, 0>, co::Component<0, 2, 4, 8, 0, 0, 0>,
                         co::Component<0, 3, 4, 8, 0, 0, 0>>;

__global__ void to_grey(co::Frame<Rgba8> in, co::Frame<Rgba8> out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= in.width || y >= in.height) return;
  const co::Rgba p = in.rgba(x, y);
  const float g = 0.299f * p.r + 0.587f * p.g + 0.114f * p.b;
  out.set_rgba(x, y, co::Rgba{g, g, g, p.a});
}
