// The cpu backend's fast paths (Operation::run_cpu, run_cpu_rows) against
// the plain CPU references, byte for byte: every operation with every
// parameter set of the kernel suites, every format it takes and every
// format it makes of it (convert in three colorimetries), at sizes that
// leave odd pixels, odd chroma and short rows, with three row paddings,
// random samples and samples at their extremes; with AVX2 and without.
// The whole output buffer is compared, row padding included, so a fast
// path that writes past a row's end fails too. Bands: rows computed in the
// engine's cuts equal the whole frame.
#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "kernel_test_util.h"
#include "kernels/chain/chain.h"
#include "kernels/cpu_simd.h"
#include "parameter_sets.h"

namespace cudaoverlap::test {
namespace {

struct Size {
  int width, height;
};
// 1x1; odd both ways; even and short; rows of more than one vector.
constexpr Size kSizes[] = {{1, 1}, {3, 5}, {34, 7}, {67, 33}};
constexpr size_t kPads[] = {0, 5, 64};

struct Outputs {
  OwnedImage fast;
  OwnedImage reference;
};

// Runs `op` from `in` into two images of `to` (the fast path's and the
// reference's), both first filled with the same bytes, with rows 3 bytes
// longer than the input's (on the cpu backend the input is upstream's
// buffer, the output the slot's). `odd`: the input read from a copy of
// its bytes that starts one byte past an aligned address.
Outputs run_both(const Operation& op, const OwnedImage& in, PixelFormat to, int w, int h,
                 size_t pad, bool odd = false) {
  Outputs out{OwnedImage(to, w, h, pad + 3), OwnedImage(to, w, h, pad + 3)};
  out.fast.fill_random(7);
  out.reference.fill_random(7);
  std::vector<uint8_t> shifted(in.bytes.size() + 1);
  std::memcpy(shifted.data() + 1, in.bytes.data(), in.bytes.size());
  const ImageRef from = odd ? in.layout.at(shifted.data() + 1) : in.image;
  std::vector<uint8_t> memory(op.workspace_bytes());
  const Workspace workspace{memory.data(), memory.size()};
  op.prepare_reference(workspace);
  op.run_reference(from, out.reference.image, workspace);
  op.run_cpu(from, out.fast.image, workspace);
  return out;
}

// The three colorimetries convert is held to (as on the GPU).
std::vector<KernelParams> convert_params() {
  std::vector<KernelParams> all;
  for (const Colorimetry colour :
       {colorimetry(YuvMatrix::kBT601), colorimetry(YuvMatrix::kBT2020, true),
        colorimetry(YuvMatrix::kBT709, false, true)}) {
    KernelParams params;
    params.convert.in = params.convert.out = colour;
    all.push_back(params);
  }
  return all;
}

// Where two images of one layout differ: a pixel byte, or padding.
std::string difference(const OwnedImage& a, const OwnedImage& b) {
  const std::string pixels = compare_images(a.image, b.image);
  return pixels.empty() ? "bytes outside the rows' pixels differ" : pixels;
}

class CpuFastPath : public ::testing::TestWithParam<PixelFormat> {};

// `only`: the operations to run (null: every one).
void expect_equal_to_reference(PixelFormat from, const std::set<std::string>* only = nullptr) {
  int ran = 0;
  for (const NamedParams& set : parameter_sets(0)) {
    if (only && !only->count(set.kernel)) continue;
    std::vector<KernelParams> variants{set.params};
    if (std::string(set.kernel) == "convert") variants = convert_params();
    // An operation whose size is downstream's (scale, convert) also at the
    // input's size (its one-size paths), narrower and taller (more taps
    // along x than y), and at half and twice the size (weights that are
    // multiples of a power of two).
    const bool sized = make_operation(set.kernel, set.params)->size_from_downstream();
    enum Shape { kOwn, kOneSize, kNarrower, kHalf, kTwice };
    for (const KernelParams& base : variants)
      for (const Size size : kSizes)
        for (const Shape shape : {kOwn, kOneSize, kNarrower, kHalf, kTwice}) {
          if (shape != kOwn && !sized) continue;
          // Half and twice the size for scale alone (convert's scaling is
          // scale's steps, which the other shapes run through convert).
          if ((shape == kHalf || shape == kTwice) && std::string(set.kernel) != "scale") continue;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
          // Under a sanitizer the references run many times slower: the
          // largest outputs only in the plain build.
          if (shape == kTwice) continue;
#endif
          const bool resized = shape != kOneSize;
          KernelParams params = base;
          int w = size.width, h = size.height;
          if (shape == kOwn) output_size(set.kernel, &params, size.width, size.height, &w, &h);
          if (shape == kNarrower) {
            w = std::max(1, size.width * 2 / 5);
            h = size.height * 3 / 2 + 1;
          } else if (shape == kHalf) {
            w = std::max(1, size.width / 2);
            h = std::max(1, size.height / 2);
          } else if (shape == kTwice) {
            w = size.width * 2;
            h = size.height * 2;
          }
          if (shape != kOwn && shape != kOneSize)
            params.sizes = FrameSizes{size.width, size.height, w, h};
          const auto op = make_operation(set.kernel, params);
          for (PixelFormat to : op->output_formats(from))
            for (size_t pad : kPads) {
              OwnedImage in(from, size.width, size.height, pad);
              in.fill_random(static_cast<uint32_t>(size.width * 131 + size.height + pad));
              // The widest padding with samples at their extremes (every byte 0
              // or 255), whose sums land on the roundings' edges.
              if (pad == kPads[2])
                for (uint8_t& byte : in.bytes) byte = byte & 0x40 ? 255 : 0;
              OwnedImage probe(to, w, h, pad);
              if (!op->check(in.image, probe.image).empty()) continue;
              ++ran;
              const Outputs out = run_both(*op, in, to, w, h, pad, pad == 5);
              EXPECT_TRUE(out.fast.bytes == out.reference.bytes)
                  << set.kernel << " " << set.name << " " << format_info(from).name << " -> "
                  << format_info(to).name << " " << size.width << "x" << size.height << " pad "
                  << pad << " to " << w << "x" << h << (resized ? "" : " (one size)") << ": "
                  << difference(out.fast, out.reference);
            }
        }
  }
  if (!only) {
    EXPECT_GE(ran, 2) << "copy and invert take every format";
  }
}

TEST_P(CpuFastPath, EqualsReferenceByteForByte) { expect_equal_to_reference(GetParam()); }

// The same with the paths a processor without AVX2 runs, for the
// operations that have AVX2 code (kernels/cpu_simd.h).
TEST_P(CpuFastPath, BaselineEqualsReferenceByteForByte) {
  if (!cpu_avx2()) GTEST_SKIP() << "the run above took the baseline paths already";
  if (format_info(GetParam()).sample_bytes != 1) GTEST_SKIP() << "AVX2 code is for 8-bit samples";
  struct Baseline {
    Baseline() { cpu_allow_avx2(false); }
    ~Baseline() { cpu_allow_avx2(true); }
  } baseline;
  const std::set<std::string> with_avx2{"scale", "blur"};
  expect_equal_to_reference(GetParam(), &with_avx2);
}

// Scaling up by large ratios folds an output's whole weight onto one pixel
// near the edges (bilinear 5 -> 64: 2^14, a byte quotient of 128, beyond
// int8): the fast paths leave such windows to wider sums.
TEST(CpuFastScale, LargeRatiosUpEqualTheReference) {
  struct Ratio {
    int in_w, in_h, out_w, out_h;
  };
  for (const Ratio r : {Ratio{5, 8, 64, 8}, Ratio{10, 6, 640, 6}, Ratio{4, 4, 256, 12},
                        Ratio{8, 64, 512, 3}, Ratio{9, 3, 64, 40}})
    for (const int method : {1, 2, 3})
      for (const PixelFormat format :
           {PixelFormat::kRGBA, PixelFormat::kBGRx, PixelFormat::kI420}) {
        KernelParams params;
        params.set("method", method);
        params.sizes = FrameSizes{r.in_w, r.in_h, r.out_w, r.out_h};
        const auto op = make_operation("scale", params);
        OwnedImage in(format, r.in_w, r.in_h, 0);
        in.fill_random(static_cast<uint32_t>(r.out_w + method));
        const Outputs out = run_both(*op, in, format, r.out_w, r.out_h, 0);
        EXPECT_TRUE(out.fast.bytes == out.reference.bytes)
            << format_info(format).name << " method " << method << " " << r.in_w << "x" << r.in_h
            << " to " << r.out_w << "x" << r.out_h << ": " << difference(out.fast, out.reference);
      }
}

// Bands: run_cpu_rows over the engine's cuts makes the whole frame's bytes,
// where the engine cuts them (a halo, not by view) or the cpu backend's
// threads do (cpu_rows_at_once: 4:2:0 to RGB, say, rows of the whole frame).
TEST_P(CpuFastPath, BandsEqualTheWholeFrame) {
  const PixelFormat from = GetParam();
  for (const NamedParams& set : parameter_sets(0)) {
    // An operation whose size is downstream's (scale, convert) at another
    // size and at the input's own; convert in the colorimetries it is held
    // to (interpolated chroma among them).
    std::vector<KernelParams> variants{set.params};
    if (std::string(set.kernel) == "convert") variants = convert_params();
    const bool sized = make_operation(set.kernel, set.params)->size_from_downstream();
    for (const bool own_size : {false, true}) {
      if (own_size && !sized) continue;
      for (KernelParams params : variants) {
        int w = 67, h = 33;
        if (!own_size) output_size(set.kernel, &params, 67, 33, &w, &h);
        const auto op = make_operation(set.kernel, params);
        for (PixelFormat to : op->output_formats(from)) {
          if ((op->band_halo(from, to) < 0 || op->bands_by_view(from, to)) &&
              !op->cpu_rows_at_once(from, to))
            continue;
          OwnedImage in(from, 67, 33, 5);
          in.fill_random(11);
          OwnedImage whole(to, w, h, 5), banded(to, w, h, 5);
          if (!op->check(in.image, whole.image).empty()) continue;
          std::vector<uint8_t> memory(op->workspace_bytes());
          const Workspace workspace{memory.data(), memory.size()};
          op->prepare_reference(workspace);
          op->run_reference(in.image, whole.image, workspace);
          const std::vector<int> rows = band_cuts(h, 3, band_row_step(from, to));
          for (size_t k = 0; k + 1 < rows.size(); ++k)
            op->run_cpu_rows(in.image, banded.image, workspace, rows[k], rows[k + 1]);
          EXPECT_TRUE(banded.bytes == whole.bytes)
              << set.kernel << " " << set.name << " " << format_info(from).name << " -> "
              << format_info(to).name << (own_size ? " at one size" : "") << ": "
              << difference(banded, whole);
        }
      }
    }
  }
}

// Chains run each step's fast path: whole frames, each launch's part
// (timed frames) and bands equal the reference's.
TEST(CpuFastChain, EqualsItsReference) {
  struct Case {
    const char* chain;
    PixelFormat in, out;
  };
  const Case cases[] = {
      {"balance contrast=1.2 saturation=0.8 ! blur sigma=2 ! invert", PixelFormat::kRGBA,
       PixelFormat::kRGBA},
      {"invert ! convert", PixelFormat::kNV12, PixelFormat::kBGRx},
      {"flip video-direction=horiz ! balance hue=0.3 ! invert", PixelFormat::kI420,
       PixelFormat::kI420},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.chain);
    KernelParams params;
    params.chain = parse_chain(c.chain);
    params.sizes = FrameSizes{67, 34, 67, 34};
    const auto op = make_operation("chain", params);
    OwnedImage in(c.in, 67, 34, 5);
    in.fill_random(3);
    const Outputs out = run_both(*op, in, c.out, 67, 34, 5);
    EXPECT_TRUE(out.fast.bytes == out.reference.bytes) << difference(out.fast, out.reference);
    std::vector<uint8_t> memory(op->workspace_bytes());
    const Workspace workspace{memory.data(), memory.size()};
    op->prepare_reference(workspace);
    OwnedImage parts(c.out, 67, 34, 8);
    parts.fill_random(7);
    const size_t n = op->parts(c.in, c.out).size();
    for (size_t part = 0; part < n; ++part)
      op->run_cpu_part(part, in.image, parts.image, workspace);
    if (n > 0) {
      EXPECT_EQ(compare_images(parts.image, out.reference.image), "") << "part by part";
    }
    if (op->band_halo(c.in, c.out) >= 0 && !op->bands_by_view(c.in, c.out)) {
      OwnedImage banded(c.out, 67, 34, 8);
      const std::vector<int> rows = band_cuts(34, 3, band_row_step(c.in, c.out));
      for (size_t k = 0; k + 1 < rows.size(); ++k)
        op->run_cpu_rows(in.image, banded.image, workspace, rows[k], rows[k + 1]);
      EXPECT_EQ(compare_images(banded.image, out.reference.image), "") << "in bands";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, CpuFastPath, ::testing::ValuesIn(all_pixel_formats()),
                         [](const auto& info) {
                           return std::string(format_info(info.param).name);
                         });

}  // namespace
}  // namespace cudaoverlap::test
