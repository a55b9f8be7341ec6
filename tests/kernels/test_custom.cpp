// kernel=custom: the program written around the user's source, NVRTC's
// compile and the disk cache (no GPU needed: NVRTC compiles anywhere), and
// on a GPU the user's kernels against the built-in ones and CPU
// computations, byte for byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "custom_sources.h"
#include "kernel_test_util.h"
#include "kernels/custom/custom.h"
#include "kernels/custom/runtime_compiler.h"
#include "kernels/pixel_stage.h"

namespace cudaoverlap::test {
namespace {

// A cache directory of the test's own, removed with it.
struct TemporaryDir {
  TemporaryDir() {
    char pattern[] = "/tmp/cudaoverlap-kernels-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TemporaryDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string path;
};

CustomKernelParams invert_pixel() {
  CustomKernelParams p;
  p.source = kInvertPixelSource;
  p.source_name = "invert_pixel.cu";
  return p;
}

CustomKernelParams invert_raw() {
  CustomKernelParams p;
  p.source = kInvertRawSource;
  p.source_name = "invert_raw.cu";
  p.block_x = 32;
  p.block_y = 8;
  return p;
}

std::vector<PixelFormat> raw_formats() {
  std::vector<PixelFormat> formats;
  for (PixelFormat f : all_pixel_formats())
    if (!is_bayer(f)) formats.push_back(f);
  return formats;
}

CompiledProgram compile(const CustomKernelParams& params, PixelFormat format,
                        const std::string& cache = {}) {
  return compile_program(custom_program(params, format, 90), cache);
}

// --- Without a GPU --------------------------------------------------------

TEST(CustomProgram, ParametersBecomeParamsMembersByNameAndType) {
  CustomKernelParams p = invert_pixel();
  p.params = {{"amount", CustomParam::Type::kFloat, 1.5},
              {"radius", CustomParam::Type::kInt, 2},
              {"on", CustomParam::Type::kBool, 1}};
  const std::string text = custom_program(p, PixelFormat::kNV12, 90).text;
  EXPECT_NE(text.find("struct Params {\n  float amount;\n  int radius;\n  bool on;\n};"),
            std::string::npos)
      << text;
  // The user's lines are numbered from 1 in their own file's name.
  EXPECT_NE(text.find("#line 1 \"invert_pixel.cu\"\n#include <cudaoverlap/pixel.cuh>"),
            std::string::npos);
}

TEST(CustomProgram, RefusesWhatCannotBeCompiled) {
  CustomKernelParams p;
  EXPECT_NE(check_custom_params(p).find("kernel-file or kernel-source"), std::string::npos);
  p = invert_pixel();
  EXPECT_EQ(check_custom_params(p), "");
  p.entry = "not a name";
  EXPECT_NE(check_custom_params(p).find("kernel-entry"), std::string::npos);
  p = invert_pixel();
  p.params = {{"1st", CustomParam::Type::kInt, 1}};
  EXPECT_NE(check_custom_params(p).find("'1st'"), std::string::npos);
  p = invert_raw();
  p.block_x = 64;
  p.block_y = 32;
  EXPECT_NE(check_custom_params(p).find("1024"), std::string::npos);
}

TEST(CustomCompile, BothFormsCompileForEveryFormat) {
  if (!kernels_have_cuda()) GTEST_SKIP() << "built without CUDA";
  for (PixelFormat f : raw_formats()) {
    SCOPED_TRACE(format_info(f).name);
    for (const CustomKernelParams& p : {invert_pixel(), invert_raw()}) {
      const CompiledProgram program = compile(p, f);
      EXPECT_FALSE(program.image.empty());
      EXPECT_EQ(program.target, "sm_90");
      ASSERT_EQ(program.kernel_symbols.size(), 1u);
    }
  }
}

// A chain's fused launch around the per-pixel form compiles for every
// packed RGB format, with each pixel size either side, with a function
// on another view (the README's sepia on co::Rgba, with a parameter), and
// beside user helpers named as the launch's own.
TEST(CustomCompile, TheFusedLaunchCompilesForEveryStageFormat) {
  if (!kernels_have_cuda()) GTEST_SKIP() << "built without CUDA";
  CustomKernelParams sepia;
  sepia.source = kReadmeSepiaSource;
  sepia.source_name = "sepia.cu";
  sepia.params = {{"amount", CustomParam::Type::kFloat, 0.8}};
  struct Case {
    CustomKernelParams params;
    PixelFormat format;
    int in_bytes, out_bytes;
  };
  // Helpers named as the launch's own are the user's business.
  CustomKernelParams same_names = invert_pixel();
  same_names.source_name = "same_names.cu";
  same_names.source = R"(
template <class C> __device__ float from_byte(unsigned w) { return 0.f; }
__device__ unsigned to_byte(float v) { return 0u; }
template <class F> __device__ unsigned to_pixel(const co::Pixel& q) { return 0u; }
co::Pixel process(co::Pixel px, int x, int y, const Params& params) {
  px.c[0] = from_byte<Format::Comp0>(to_byte(px.c[1]) + to_pixel<Format>(px));
  return px;
}
)";
  std::vector<Case> cases{{sepia, PixelFormat::kBGRx, 4, 3},
                          {same_names, PixelFormat::kRGBA, 4, 4}};
  for (PixelFormat f : raw_formats())
    if (is_pixel_stage_format(f))
      cases.push_back({invert_pixel(), f, 3 + static_cast<int>(cases.size() % 2),
                       3 + static_cast<int>(cases.size() / 2 % 2)});
  ASSERT_EQ(cases.size(), 10u);
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(format_info(c.format).name) + ", " + std::to_string(c.in_bytes) +
                 " to " + std::to_string(c.out_bytes) + " bytes, " + c.params.source_name);
    const CompiledProgram program =
        compile_program(fused_custom_program(c.params, c.format, c.in_bytes, c.out_bytes, 90), {});
    EXPECT_FALSE(program.image.empty());
    ASSERT_EQ(program.kernel_symbols.size(), 1u);
  }
}

// The launch's tile width (custom_tile_width, on the host) is the kernel's
// (co::detail::tile_width, in the compiled program) for every format: a
// static_assert in the program compares them where NVRTC compiles it.
TEST(CustomCompile, TheHostsTileWidthIsTheKernelsForEveryFormat) {
  if (!kernels_have_cuda()) GTEST_SKIP() << "built without CUDA";
  auto asserting = [](PixelFormat f, int width) {
    ProgramSource source = custom_program(invert_pixel(), f, 90);
    source.text += "\nstatic_assert(co::detail::tile_width<Format>() == " + std::to_string(width) +
                   ", \"tile width\");\n";
    return source;
  };
  for (PixelFormat f : raw_formats())
    EXPECT_NO_THROW(compile_program(asserting(f, custom_tile_width(f)), {}))
        << format_info(f).name << ": " << custom_tile_width(f);
  // The assertion is evaluated: a wrong width does not compile.
  EXPECT_THROW(
      compile_program(asserting(PixelFormat::kNV12, 2 * custom_tile_width(PixelFormat::kNV12)), {}),
      Error);
}

TEST(CustomCompile, EveryPixelViewCompiles) {
  if (!kernels_have_cuda()) GTEST_SKIP() << "built without CUDA";
  for (const char* view : {"co::Rgba", "co::Yuva"}) {
    CustomKernelParams p;
    p.source = std::string(view) + " process(" + view +
               " px, int x, int y, const Params& params) { return px; }\n";
    for (PixelFormat f : {PixelFormat::kRGBA, PixelFormat::kNV12, PixelFormat::kYUY2,
                          PixelFormat::kP010_10LE, PixelFormat::kGRAY8, PixelFormat::kBGR})
      EXPECT_NO_THROW(compile(p, f)) << view << " " << format_info(f).name;
  }
}

TEST(CustomCompile, TheReadmesExamplesCompile) {
  if (!kernels_have_cuda()) GTEST_SKIP() << "built without CUDA";
  CustomKernelParams sepia;
  sepia.source = kReadmeSepiaSource;
  sepia.params = {{"amount", CustomParam::Type::kFloat, 0.8}};
  CustomKernelParams whole;
  whole.source = kReadmeWholeKernelSource;
  whole.block_x = 32;
  whole.block_y = 8;
  for (PixelFormat f : {PixelFormat::kRGBA, PixelFormat::kNV12, PixelFormat::kYUY2,
                        PixelFormat::kI420_10LE, PixelFormat::kBGR, PixelFormat::kGRAY16_LE}) {
    EXPECT_NO_THROW(compile(sepia, f)) << format_info(f).name;
    EXPECT_NO_THROW(compile(whole, f)) << format_info(f).name;
  }
}

TEST(CustomCompile, AnErrorCarriesNvrtcsLogWithTheUsersLineNumbers) {
  if (!kernels_have_cuda()) GTEST_SKIP() << "built without CUDA";
  CustomKernelParams p;
  p.source_name = "sharpen.cu";
  p.source =
      "co::Rgba process(co::Rgba px, int x, int y, const Params& params) {\n"
      "  return px;\n"
      "  undeclared_thing += 1;\n"
      "}\n";
  try {
    compile(p, PixelFormat::kRGBA);
    FAIL() << "compiled";
  } catch (const Error& e) {
    const std::string log = e.what();
    EXPECT_NE(log.find("sharpen.cu(3)"), std::string::npos) << log;
    EXPECT_NE(log.find("undeclared_thing"), std::string::npos) << log;
  }
}

TEST(CustomCompile, AWholeKernelOfAnotherSignatureDoesNotCompile) {
  if (!kernels_have_cuda()) GTEST_SKIP() << "built without CUDA";
  CustomKernelParams p = invert_raw();
  p.source = "__global__ void process(InFrame in, OutFrame out, Params params, int more) {}\n";
  try {
    compile(p, PixelFormat::kRGBA);
    FAIL() << "compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaoverlap-kernel-check"), std::string::npos)
        << e.what();
  }
}

TEST(CustomCompile, TheDiskCacheServesTheSameProgramAndOnlyIt) {
  if (!kernels_have_cuda()) GTEST_SKIP() << "built without CUDA";
  TemporaryDir dir;
  CustomKernelParams p = invert_pixel();
  p.params = {{"amount", CustomParam::Type::kFloat, 1.5}};
  const CompiledProgram first = compile(p, PixelFormat::kNV12, dir.path);
  EXPECT_FALSE(first.from_cache);
  const CompiledProgram second = compile(p, PixelFormat::kNV12, dir.path);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.image, first.image);
  EXPECT_EQ(second.kernel_symbols, first.kernel_symbols);
  // A value is not part of the program; a type, the format and the source are.
  p.params[0].value = 3;
  EXPECT_TRUE(compile(p, PixelFormat::kNV12, dir.path).from_cache);
  p.params[0].type = CustomParam::Type::kDouble;
  EXPECT_FALSE(compile(p, PixelFormat::kNV12, dir.path).from_cache);
  EXPECT_FALSE(compile(p, PixelFormat::kNV21, dir.path).from_cache);
  p.source += "\n// changed\n";
  EXPECT_FALSE(compile(p, PixelFormat::kNV12, dir.path).from_cache);
}

TEST(CustomCompile, ACorruptCacheFileIsCompiledAgain) {
  if (!kernels_have_cuda()) GTEST_SKIP() << "built without CUDA";
  TemporaryDir dir;
  const CompiledProgram first = compile(invert_pixel(), PixelFormat::kRGBA, dir.path);
  // Cut every file in the cache to half its length.
  const std::string list = dir.path + "/list";
  ASSERT_EQ(std::system(("ls " + dir.path + "/*.bin > " + list).c_str()), 0);
  std::ifstream names(list);
  int files = 0;
  for (std::string name; std::getline(names, name); ++files) {
    std::ifstream in(name, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(name, std::ios::binary | std::ios::trunc) << data.substr(0, data.size() / 2);
  }
  EXPECT_EQ(files, 1);
  const CompiledProgram again = compile(invert_pixel(), PixelFormat::kRGBA, dir.path);
  EXPECT_FALSE(again.from_cache);
  EXPECT_EQ(again.image, first.image);
}

// Interlaced fields stay apart only through a kernel that keeps to its rows:
// a per-pixel function does, except where it averages chroma over two rows.
TEST(CustomOperationTest, OnlyAPerPixelFunctionWithoutVerticalChromaKeepsToItsRows) {
  const CustomOperation pixel(invert_pixel(), Colorimetry{});
  EXPECT_FALSE(pixel.mixes_rows(PixelFormat::kRGBA, PixelFormat::kRGBA));
  EXPECT_FALSE(pixel.mixes_rows(PixelFormat::kYUY2, PixelFormat::kYUY2));
  EXPECT_FALSE(pixel.mixes_rows(PixelFormat::kNV16, PixelFormat::kNV16));
  EXPECT_TRUE(pixel.mixes_rows(PixelFormat::kNV12, PixelFormat::kNV12));
  EXPECT_TRUE(pixel.mixes_rows(PixelFormat::kI420_10LE, PixelFormat::kI420_10LE));
  const CustomOperation whole(invert_raw(), Colorimetry{});
  EXPECT_TRUE(whole.mixes_rows(PixelFormat::kRGBA, PixelFormat::kRGBA));
}

TEST(CustomOperationTest, TheCpuReferenceRefusesWithASentence) {
  CustomOperation op(invert_pixel(), Colorimetry{});
  OwnedImage in(PixelFormat::kRGBA, 4, 4), out(PixelFormat::kRGBA, 4, 4);
  try {
    op.run_reference(in.image, out.image, Workspace{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda backend"), std::string::npos);
  }
}

// --- On a GPU ---------------------------------------------------------------

// Real 10-bit streams hold 0 in the bits beside each sample.
void clear_bits_beside_samples(OwnedImage& image) {
  const FormatInfo& info = format_info(image.image.format);
  if (info.sample_bytes != 2 || info.comp[0].depth == 16) return;
  for (int c = 0; c < info.n_components; ++c) {
    const int samples = stored_samples(image.image.format, c, image.image.width);
    const int rows =
        static_cast<int>(plane_rows(image.image.format, info.comp[c].plane, image.image.height));
    for (int y = 0; y < rows; ++y)
      for (int x = 0; x < samples; ++x)
        write_sample(image.image, c, x, y, read_sample(image.image, c, x, y));
  }
  // write_sample keeps the bits beside: clear them through a whole word.
  for (int c = 0; c < info.n_components; ++c) {
    const Component& k = info.comp[c];
    const int samples = stored_samples(image.image.format, c, image.image.width);
    const int rows = static_cast<int>(plane_rows(image.image.format, k.plane, image.image.height));
    for (int y = 0; y < rows; ++y)
      for (int x = 0; x < samples; ++x) {
        uint8_t* s = image.image.planes[k.plane].data + y * image.image.planes[k.plane].stride +
                     k.offset + x * k.pixel_stride;
        const uint32_t word = (s[0] | s[1] << 8) & (((1u << k.depth) - 1) << k.shift);
        s[0] = static_cast<uint8_t>(word);
        s[1] = static_cast<uint8_t>(word >> 8);
      }
  }
}

struct GpuCustomCase {
  PixelFormat format;
  int width, height;
};

class GpuCustomInvert : public ::testing::TestWithParam<GpuCustomCase> {};

TEST_P(GpuCustomInvert, BothFormsGiveTheBuiltInInvertsBytes) {
  const GpuCustomCase& c = GetParam();
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  OwnedImage in(c.format, c.width, c.height);
  in.fill_random(static_cast<uint32_t>(c.width * 7 + c.height));
  clear_bits_beside_samples(in);
  OwnedImage want(c.format, c.width, c.height, 3);
  reference("invert", {}, in.image, want.image);
  for (const CustomKernelParams& custom : {invert_pixel(), invert_raw()}) {
    // The whole kernel covers the picture; an odd-width packed 4:2:2 row
    // also stores a luma sample past it, which only the per-pixel form
    // (like invert) writes.
    if (custom.block_x > 0 &&
        format_info(c.format).comp[0].plane == format_info(c.format).comp[1].plane &&
        format_info(c.format).comp[1].x_sub > 0 && c.width % 2 != 0)
      continue;
    KernelParams params;
    params.custom = custom;
    for (size_t align : {size_t{256}, size_t{4}}) {
      OwnedImage got(c.format, c.width, c.height, 9);
      run_on_device(*device, "custom", params, in, got, align);
      EXPECT_EQ(compare_images(got.image, want.image), "")
          << custom.source_name << " align " << align;
    }
  }
}

std::vector<GpuCustomCase> gpu_custom_cases() {
  std::vector<GpuCustomCase> cases;
  for (PixelFormat f : raw_formats())
    for (auto [w, h] : {std::pair{1, 1}, {3, 5}, {34, 7}, {641, 479}, {1920, 1080}})
      cases.push_back({f, w, h});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllFormatsAndSizes, GpuCustomInvert,
                         ::testing::ValuesIn(gpu_custom_cases()),
                         [](const ::testing::TestParamInfo<GpuCustomCase>& info) {
                           return std::string(format_info(info.param.format).name) + "_" +
                                  std::to_string(info.param.width) + "x" +
                                  std::to_string(info.param.height);
                         });

TEST(GpuCustom, ParametersReachTheKernelByName) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  KernelParams params;
  params.custom.source =
      "co::Pixel process(co::Pixel px, int x, int y, const Params& p) {\n"
      "  px.c[0] = p.level;                       // float\n"
      "  px.c[1] = float(p.steps) / 255.f;        // int\n"
      "  px.c[2] = p.flag ? float(p.big) : 0.f;   // bool, double\n"
      "  px.a = float(p.count + x) / 255.f;       // unsigned, and the pixel's x\n"
      "  return px;\n"
      "}\n";
  params.custom.params = {{"level", CustomParam::Type::kFloat, 0.5},
                          {"steps", CustomParam::Type::kInt, 7},
                          {"flag", CustomParam::Type::kBool, 1},
                          {"big", CustomParam::Type::kDouble, 1.0},
                          {"count", CustomParam::Type::kUInt, 20}};
  OwnedImage in(PixelFormat::kRGBA, 8, 2);
  in.fill_random(1);
  OwnedImage got(PixelFormat::kRGBA, 8, 2);
  run_on_device(*device, "custom", params, in, got, 256);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 8; ++x) {
      const uint8_t* px = got.image.planes[0].data + y * got.image.planes[0].stride + 4 * x;
      EXPECT_EQ(px[0], 128);  // 127.5, rounded to even
      EXPECT_EQ(px[1], 7);
      EXPECT_EQ(px[2], 255);
      EXPECT_EQ(px[3], 20 + x);
    }
}

TEST(GpuCustom, RgbaOfAYuvStreamIsItsColour) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  // Limited-range BT.601 NV12 in; each pixel made pure red through co::Rgba;
  // out comes red's samples: Y 81, U 90, V 240 (videoconvert's values).
  KernelParams params;
  params.custom.source =
      "co::Rgba process(co::Rgba px, int x, int y, const Params&) {\n"
      "  return co::Rgba{1.f, 0.f, 0.f, 1.f};\n"
      "}\n";
  OwnedImage in(PixelFormat::kNV12, 6, 4);
  in.fill_random(2);
  OwnedImage got(PixelFormat::kNV12, 6, 4);
  run_on_device(*device, "custom", params, in, got, 256);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x) EXPECT_EQ(read_sample(got.image, 0, x, y), 81u);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x) {
      EXPECT_EQ(read_sample(got.image, 1, x, y), 90u);
      EXPECT_EQ(read_sample(got.image, 2, x, y), 240u);
    }
}

}  // namespace
}  // namespace cudaoverlap::test
