// Chains (kernels/chain/chain.h): the text parsed into steps with their
// values, refused with a sentence naming the step where it is wrong; a
// chain's frame equal, byte for byte, to its steps run one after another
// as operations of their own, on the CPU reference and on the GPU, fused
// or not; its orientation the composition of its steps'.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "custom_sources.h"
#include "kernel_test_util.h"
#include "kernels/chain/chain.h"
#include "kernels/chain/fused_pixels.h"
#include "kernels/pixel_stage.h"

namespace cudaoverlap::test {
namespace {

KernelParams chain_params(const std::string& text, int in_w, int in_h, int out_w, int out_h) {
  KernelParams params;
  params.chain = parse_chain(text);
  params.sizes = FrameSizes{in_w, in_h, out_w, out_h};
  return params;
}

// chain_params with `user` as each custom step's kernel, as the element
// loads it.
KernelParams chain_params(const std::string& text, int in_w, int in_h, int out_w, int out_h,
                          const CustomKernelParams& user) {
  KernelParams params = chain_params(text, in_w, in_h, out_w, out_h);
  auto spec = std::make_shared<ChainSpec>(*params.chain);
  for (ChainStep& step : spec->steps)
    if (step.name == "custom") step.custom = std::make_shared<const CustomKernelParams>(user);
  params.chain = spec;
  return params;
}

CustomKernelParams invert_pixel_kernel() {
  CustomKernelParams p;
  p.source = kInvertPixelSource;
  p.source_name = "invert_pixel.cu";
  return p;
}

// `in` through each step of `text` as an operation of its own, into
// `out`: what the chain must make.
void steps_one_by_one(const std::string& text, const ImageRef& in, OwnedImage& out) {
  const auto spec = parse_chain(text);
  std::vector<std::unique_ptr<OwnedImage>> frames;
  ImageRef from = in;
  for (size_t k = 0; k < spec->steps.size(); ++k) {
    KernelParams params;
    params.values = spec->steps[k].values;
    const bool last = k + 1 == spec->steps.size();
    if (last) params.sizes = FrameSizes{from.width, from.height, out.image.width, out.image.height};
    const auto op = make_operation(spec->steps[k].name, params);
    if (last) {
      ASSERT_EQ(op->check(from, out.image), "") << spec->steps[k].name;
      run_reference(*op, from, out.image);
      return;
    }
    const bool swap = op->swaps_axes();
    frames.push_back(std::make_unique<OwnedImage>(op->output_formats(from.format).front(),
                                                  swap ? from.height : from.width,
                                                  swap ? from.width : from.height, 5));
    ASSERT_EQ(op->check(from, frames.back()->image), "") << spec->steps[k].name;
    run_reference(*op, from, frames.back()->image);
    from = frames.back()->image;
  }
}

TEST(ChainParse, StepsAndTheirValues) {
  const auto spec =
      parse_chain(" balance contrast=1.2 saturation=0.8 ! blur sigma=2 !flip video-direction=90r! "
                  "convert");
  ASSERT_EQ(spec->steps.size(), 4u);
  EXPECT_EQ(spec->steps[0].name, "balance");
  EXPECT_DOUBLE_EQ(spec->steps[0].values.number("contrast"), 1.2);
  EXPECT_DOUBLE_EQ(spec->steps[0].values.number("saturation"), 0.8);
  EXPECT_EQ(spec->steps[1].name, "blur");
  EXPECT_DOUBLE_EQ(spec->steps[1].values.number("sigma"), 2);
  EXPECT_EQ(spec->steps[2].values.choice<FlipDirection>("video-direction"), FlipDirection::k90R);
  EXPECT_EQ(spec->steps[3].name, "convert");
  EXPECT_TRUE(spec->steps[3].values.values().empty());
}

// A user's kernel is a step: its words kept as written (quotes gone) for
// the element to load, and the chain refuses to be made before they are.
TEST(ChainParse, ACustomStepKeepsItsWords) {
  const auto spec = parse_chain(
      "invert ! custom kernel-file=/k/sepia.cu kernel-params=\"params, amount=(float)0.8\" "
      "kernel-launch=32x8");
  ASSERT_EQ(spec->steps.size(), 2u);
  EXPECT_FALSE(chain_has_custom(*parse_chain("invert ! blur")));
  ASSERT_TRUE(chain_has_custom(*spec));
  const std::vector<std::pair<std::string, std::string>> want{
      {"kernel-file", "/k/sepia.cu"},
      {"kernel-params", "params, amount=(float)0.8"},
      {"kernel-launch", "32x8"}};
  EXPECT_EQ(spec->steps[1].texts, want);
  try {
    make_operation("chain", chain_params(spec->text, 64, 48, 64, 48));
    ADD_FAILURE() << "a chain whose custom kernel was not loaded was made";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chain step 2 (custom): its kernel was not loaded"),
              std::string::npos)
        << e.what();
  }
}

TEST(ChainParse, MistakesAreNamedWithTheirStep) {
  const struct {
    const char* text;
    const char* says;
  } cases[] = {
      {"invert ! blr", "chain step 2: there is no kernel 'blr'"},
      {"blur sigmaa=2", "chain step 1 (blur): blur has no parameter 'sigmaa'; it takes sigma"},
      {"invert ! blur sigma=500", "chain step 2 (blur): sigma takes"},
      {"flip video-direction=sideways", "chain step 1 (flip): video-direction=sideways is not"},
      {"invert ! ! blur", "chain step 2 is empty"},
      {"invert ! chain", "chain step 2 (chain): a chain's steps are copy, invert"},
      {"invert ! custom sigma=2", "chain step 2 (custom): sigma=2 is not one of its words"},
      {"custom kernel-file", "chain step 1 (custom): kernel-file is not one of its words"},
      {"blur sigma=\"2", "a quote is not closed"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      parse_chain(c.text);
      ADD_FAILURE() << "taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
}

TEST(ChainCheck, ImpossibleChainsAreRefusedNamingTheStep) {
  OwnedImage in(PixelFormat::kNV12, 64, 48);
  OwnedImage out(PixelFormat::kNV12, 64, 48);
  const auto convert_first = make_operation("chain", chain_params("convert ! invert", 64, 48, 64, 48));
  EXPECT_NE(convert_first->check(in.image, out.image)
                .find("chain step 1 (convert) takes its output's format or size from downstream"),
            std::string::npos);
  // A crop after a flip would be placed on the wrong edge by the metas'
  // mapping (crop, then flip): refused.
  for (const char* flip : {"90r", "horiz"}) {
    SCOPED_TRACE(flip);
    const auto crop_after_flip = make_operation(
        "chain", chain_params(std::string("flip video-direction=") + flip + " ! scale crop-left=2",
                              64, 48, 20, 30));
    OwnedImage small(PixelFormat::kNV12, 20, 30);
    EXPECT_NE(crop_after_flip->check(in.image, small.image)
                  .find("crops a frame an earlier step flipped or turned"),
              std::string::npos);
  }
  // A step that does not take what the one before makes: edge takes no
  // NV16 ... every kernel here keeps the format, so convert makes it last.
  const auto fine = make_operation("chain", chain_params("invert ! blur sigma=1", 64, 48, 64, 48));
  EXPECT_EQ(fine->check(in.image, out.image), "");
}

struct ChainCase {
  const char* text;
  PixelFormat in;
  PixelFormat out;
  int in_w, in_h, out_w, out_h;
};

const ChainCase kChainCases[] = {
    {"invert ! blur sigma=2", PixelFormat::kRGBA, PixelFormat::kRGBA, 67, 41, 67, 41},
    {"invert ! blur sigma=2", PixelFormat::kNV12, PixelFormat::kNV12, 66, 42, 66, 42},
    {"balance contrast=1.2 saturation=0.8 ! blur sigma=2 ! invert", PixelFormat::kI420,
     PixelFormat::kI420, 64, 48, 64, 48},
    {"flip video-direction=90r ! invert ! convert", PixelFormat::kNV12, PixelFormat::kRGBA, 64,
     36, 36, 64},
    {"blur sigma=1 ! scale method=lanczos", PixelFormat::kRGBA, PixelFormat::kRGBA, 96, 54, 40, 30},
    {"balance brightness=0.1 ! flip video-direction=horiz ! convert", PixelFormat::kYUY2,
     PixelFormat::kBGRx, 50, 20, 50, 20},
};

// A case's input, and what its steps make of it one by one.
struct Expected {
  explicit Expected(const ChainCase& c) : in(c.in, c.in_w, c.in_h), want(c.out, c.out_w, c.out_h) {
    in.fill_random(static_cast<uint32_t>(c.in_w * 7 + c.in_h));
    steps_one_by_one(c.text, in.image, want);
  }
  OwnedImage in;
  OwnedImage want;
};

TEST(ChainReference, EqualsItsStepsOneByOne) {
  for (const ChainCase& c : kChainCases) {
    SCOPED_TRACE(std::string(c.text) + " " + format_info(c.in).name);
    Expected e(c);
    const OwnedImage& in = e.in;
    const OwnedImage& want = e.want;
    OwnedImage got(c.out, c.out_w, c.out_h, 7);
    const KernelParams params = chain_params(c.text, c.in_w, c.in_h, c.out_w, c.out_h);
    ASSERT_EQ(check("chain", params, in.image, got.image), "");
    reference("chain", params, in.image, got.image);
    EXPECT_EQ(compare_images(got.image, want.image), "");
  }
}

TEST(GpuChain, EqualsItsStepsOneByOne) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  for (const ChainCase& c : kChainCases) {
    SCOPED_TRACE(std::string(c.text) + " " + format_info(c.in).name);
    Expected e(c);
    const OwnedImage& in = e.in;
    const OwnedImage& want = e.want;
    for (size_t align : {size_t{256}, size_t{4}}) {
      OwnedImage got(c.out, c.out_w, c.out_h, 9);
      run_on_device(*device, "chain", chain_params(c.text, c.in_w, c.in_h, c.out_w, c.out_h), in,
                    got, align);
      EXPECT_EQ(compare_images(got.image, want.image), "") << "align " << align;
    }
  }
}

// Every format: a chain of steps each format has (invert, flip, and
// balance where it takes the format, fused on packed RGB) equals its steps
// one by one, on the CPU reference and, where there is a device, on CUDA.
TEST(ChainFormats, EveryFormatEqualsItsStepsOneByOne) {
  std::string why;
  std::shared_ptr<Device> device;
  if (cuda_device_count(&why) > 0) {
    device = make_cuda_device(0);
    device->make_current();
  }
  const auto balance = make_operation("balance", {});
  for (PixelFormat f : all_pixel_formats()) {
    if (is_bayer(f)) continue;
    const bool balanced = !balance->output_formats(f).empty();
    const std::string text = std::string(balanced ? "balance contrast=1.3 hue=0.2 ! " : "") +
                             "invert ! flip video-direction=horiz ! invert";
    SCOPED_TRACE(text + " " + format_info(f).name);
    const ChainCase c{text.c_str(), f, f, 37, 10, 37, 10};
    Expected e(c);
    const KernelParams params = chain_params(text, c.in_w, c.in_h, c.out_w, c.out_h);
    OwnedImage got(f, c.out_w, c.out_h, 7);
    ASSERT_EQ(check("chain", params, e.in.image, got.image), "");
    reference("chain", params, e.in.image, got.image);
    EXPECT_EQ(compare_images(got.image, e.want.image), "") << "reference";
    if (!device) continue;
    for (size_t align : {size_t{256}, size_t{4}}) {
      OwnedImage on_device(f, c.out_w, c.out_h, 9);
      run_on_device(*device, "chain", params, e.in, on_device, align);
      EXPECT_EQ(compare_images(on_device.image, e.want.image), "") << "CUDA, align " << align;
    }
  }
}

// Bands: a chain of steps that allow them reads its steps' halos in all,
// and band by band makes the whole frame's bytes, writing only its rows;
// a chain with a turn is not cut.
TEST(ChainBands, EveryBandEqualsTheWholeFrameAndWritesOnlyItsRows) {
  const int w = 97, h = kSanitized ? 61 : 143;
  for (PixelFormat f : {PixelFormat::kRGBA, PixelFormat::kNV12, PixelFormat::kI420}) {
    SCOPED_TRACE(format_info(f).name);
    const std::string text = "invert ! blur sigma=2 ! balance contrast=1.3 ! blur sigma=1";
    const auto chain = make_operation("chain", chain_params(text, w, h, w, h));
    KernelParams blur2, blur1;
    blur2.set("sigma", 2.0);
    blur1.set("sigma", 1.0);
    const int halos =
        make_operation("blur", blur2)->band_halo(f, f) + make_operation("blur", blur1)->band_halo(f, f);
    ASSERT_GE(chain->band_halo(f, f), halos);
    ASSERT_LE(chain->band_halo(f, f), halos + 3);  // each step's rows rounded to its row step
    OwnedImage in(f, w, h);
    in.fill_random(11);
    OwnedImage whole(f, w, h, 5);
    std::vector<uint8_t> space(chain->workspace_bytes());
    const Workspace workspace{space.data(), space.size()};
    chain->prepare_reference(workspace);
    chain->run_reference(in.image, whole.image, workspace);
    OwnedImage banded(f, w, h, 5);
    std::fill(banded.bytes.begin(), banded.bytes.end(), 0x5C);
    const std::vector<int> rows = band_cuts(h, 5, band_row_step(f, f));
    const int halo = chain->band_halo(f, f);
    for (size_t k = 0; k + 1 < rows.size(); ++k) {
      const std::vector<uint8_t> before = banded.bytes;
      chain->run_reference_rows(in.image, banded.image, workspace, rows[k], rows[k + 1]);
      EXPECT_EQ(compare_outside_rows(banded.layout, banded.bytes.data(), before.data(), rows[k],
                                     rows[k + 1]),
                "")
          << "band " << k << " wrote outside its rows";
      // Rows beyond the halo changed: the band's own rows do not.
      OwnedImage poisoned(f, w, h);
      poisoned.bytes = in.bytes;
      poison_outside(poisoned, rows[k] - halo, rows[k + 1] + halo);
      OwnedImage alone(f, w, h, 5);
      chain->run_reference_rows(poisoned.image, alone.image, workspace, rows[k], rows[k + 1]);
      EXPECT_EQ(compare_images(image_rows(alone.image, rows[k], rows[k + 1]),
                               image_rows(whole.image, rows[k], rows[k + 1])),
                "")
          << "band " << k << " read beyond its halo of " << halo;
    }
    EXPECT_EQ(compare_images(banded.image, whole.image), "");
  }
  EXPECT_LT(make_operation("chain", chain_params("invert ! flip video-direction=90r", 8, 4, 4, 8))
                ->band_halo(PixelFormat::kRGBA, PixelFormat::kRGBA),
            0);
}

// Two flips in a chain turn the picture as the one flip whose frame is the
// same: what metas and navigation events are mapped by.
TEST(ChainOrientation, IsTheCompositionOfItsSteps) {
  OwnedImage in(PixelFormat::kGRAY8, 6, 4);
  in.fill_random(3);
  for (FlipDirection a : kAllDirections)
    for (FlipDirection b : kAllDirections) {
      const std::string text = std::string("flip video-direction=") + direction_name(a) +
                               " ! flip video-direction=" + direction_name(b);
      std::string spelled = text;
      for (char& ch : spelled)
        if (ch == '_') ch = '-';
      SCOPED_TRACE(spelled);
      const auto chain = make_operation("chain", chain_params(spelled, 6, 4, 0, 0));
      const bool swap = chain->swaps_axes();
      OwnedImage two(PixelFormat::kGRAY8, swap ? 4 : 6, swap ? 6 : 4);
      steps_one_by_one(spelled, in.image, two);
      KernelParams one_params;
      one_params.set("video-direction", chain->orientation());
      OwnedImage one(PixelFormat::kGRAY8, swap ? 4 : 6, swap ? 6 : 4);
      reference("flip", one_params, in.image, one.image);
      EXPECT_EQ(compare_images(one.image, two.image), "")
          << "orientation " << direction_name(chain->orientation());
    }
}

// Which steps run fused: runs of two or more per-pixel steps on packed
// 8-bit RGB, at most kMaxFusedStages a launch; none on other formats, none
// where fusion is off.
TEST(ChainFusion, RunsOfPerPixelStepsOnRgbAreOneLaunch) {
  using F = PixelFormat;
  const auto launches = [](const std::string& text, F in, F out, bool fuse = true) {
    const ChainOperation chain(parse_chain(text), chain_params(text, 64, 48, 64, 48), fuse);
    std::string got;
    for (const ChainOperation::Launch& l : chain.launches(in, out))
      got += "[" + std::to_string(l.first) +
             (l.last > l.first ? "-" + std::to_string(l.last) : "") + "]";
    return got;
  };
  const std::string mixed = "balance contrast=1.2 ! invert ! blur sigma=2 ! invert ! convert";
  EXPECT_EQ(launches(mixed, F::kRGBA, F::kBGRx), "[0-1][2][3-4]");
  EXPECT_EQ(launches(mixed, F::kRGB, F::kARGB), "[0-1][2][3-4]");
  EXPECT_EQ(launches(mixed, F::kNV12, F::kRGBA), "[0][1][2][3][4]");
  EXPECT_EQ(launches(mixed, F::kRGBA, F::kNV12), "[0-1][2][3][4]");  // convert to YUV: its own
  EXPECT_EQ(launches(mixed, F::kRGBA, F::kBGRx, false), "[0][1][2][3][4]");
  EXPECT_EQ(launches("invert ! flip video-direction=horiz ! invert", F::kRGBA, F::kRGBA),
            "[0][1][2]");
  EXPECT_EQ(launches("invert", F::kRGBA, F::kRGBA), "[0]");
  std::string ten = "invert";
  for (int i = 1; i < 10; ++i) ten += " ! invert";
  ASSERT_EQ(kMaxFusedStages, 8);
  EXPECT_EQ(launches(ten, F::kBGRA, F::kBGRA), "[0-7][8-9]");
}

// A user's per-pixel function (custom, per-pixel form) on packed RGB fuses
// with the per-pixel steps around it, one user's function a launch; a whole
// kernel (kernel-launch) is its own launch.
TEST(ChainFusion, AUsersPerPixelFunctionIsOneOfTheLaunchsStages) {
  using F = PixelFormat;
  const auto launches = [](const std::string& text, F in, F out, const CustomKernelParams& user) {
    const KernelParams params = chain_params(text, 64, 48, 64, 48, user);
    const ChainOperation chain(params.chain, params);
    std::string got;
    for (const ChainOperation::Launch& l : chain.launches(in, out))
      got += "[" + std::to_string(l.first) +
             (l.last > l.first ? "-" + std::to_string(l.last) : "") +
             (l.user >= 0 ? " user " + std::to_string(l.user) : "") + "]";
    return got;
  };
  const CustomKernelParams pixel = invert_pixel_kernel();
  CustomKernelParams whole = pixel;
  whole.block_x = 32;
  whole.block_y = 8;
  const std::string text = "balance ! custom ! invert ! custom ! convert";
  EXPECT_EQ(launches(text, F::kRGBA, F::kBGR, pixel), "[0-2 user 1][3-4 user 3]");
  EXPECT_EQ(launches(text, F::kRGBA, F::kBGR, whole), "[0][1][2][3][4]");
  EXPECT_EQ(launches("invert ! custom", F::kRGB, F::kRGB, whole), "[0][1]");
  EXPECT_EQ(launches("custom ! blur sigma=1 ! custom ! invert", F::kBGRx, F::kBGRx, pixel),
            "[0][1][2-3 user 2]");
  EXPECT_EQ(launches("custom ! invert", F::kNV12, F::kNV12, pixel), "[0][1]");
}

// The stages a chain fuses do what the operations do alone: convert's
// reordering between every pair of packed RGB formats, invert's mask (the
// GPU tests below run balance's).
TEST(PixelStage, ShufflesEqualConvertAndInvert) {
  std::vector<PixelFormat> formats;
  for (PixelFormat f : all_pixel_formats())
    if (is_pixel_stage_format(f)) formats.push_back(f);
  ASSERT_EQ(formats.size(), 8u);  // six 4-byte orders, RGB, BGR
  const int w = 13;
  for (PixelFormat a : formats) {
    OwnedImage in(a, w, 1);
    in.fill_random(static_cast<uint32_t>(a) + 1);
    const auto pixel = [](const OwnedImage& image, int x) {
      const int bytes = pixel_stage_bytes(image.layout.format);
      uint32_t p = 0;
      for (int b = 0; b < bytes; ++b)
        p |= uint32_t{image.image.planes[0].data[x * bytes + b]} << (8 * b);
      return p;
    };
    const auto bytes_of = [](PixelFormat f) {
      return pixel_stage_bytes(f) == 4 ? 0xFFFFFFFFu : 0xFFFFFFu;
    };
    for (PixelFormat b : formats) {
      SCOPED_TRACE(std::string(format_info(a).name) + " -> " + format_info(b).name);
      OwnedImage want(b, w, 1);
      reference("convert", {}, in.image, want.image);
      const PixelStage stage = rgb_shuffle_stage(a, b);
      for (int x = 0; x < w; ++x)
        EXPECT_EQ(apply_shuffle(stage, pixel(in, x)) & bytes_of(b), pixel(want, x))
            << "pixel " << x;
    }
    OwnedImage inverted(a, w, 1);
    reference("invert", {}, in.image, inverted.image);
    PixelStage stage;
    ASSERT_TRUE(make_operation("invert", {})->pixel_stage(a, a, Workspace{}, &stage));
    for (int x = 0; x < w; ++x)
      EXPECT_EQ(apply_shuffle(stage, pixel(in, x)) & bytes_of(a), pixel(inverted, x));
  }
  PixelStage unused;
  EXPECT_FALSE(make_operation("invert", {})->pixel_stage(PixelFormat::kNV12, PixelFormat::kNV12,
                                                         Workspace{}, &unused));
  EXPECT_FALSE(make_operation("blur", {})->pixel_stage(PixelFormat::kRGBA, PixelFormat::kRGBA,
                                                       Workspace{}, &unused));
}

// Two shuffles composed into one move and flip each byte as the two do one
// after the other: random selectors (input bytes and constants), masks and
// constants.
TEST(PixelStage, ComposedShufflesEqualTheTwoInTurn) {
  std::mt19937 random(7);
  const auto stage = [&] {
    PixelStage s;
    s.selector = 0;
    for (int k = 0; k < 4; ++k) s.selector |= (random() % 8) << (4 * k);
    s.constant = static_cast<uint32_t>(random());
    s.mask = static_cast<uint32_t>(random());
    return s;
  };
  for (int i = 0; i < 1000; ++i) {
    const PixelStage a = stage(), b = stage();
    const PixelStage ab = compose_shuffles(a, b);
    for (int j = 0; j < 4; ++j) {
      const uint32_t pixel = static_cast<uint32_t>(random());
      ASSERT_EQ(apply_shuffle(ab, pixel), apply_shuffle(b, apply_shuffle(a, pixel)))
          << std::hex << "selectors " << a.selector << ", " << b.selector;
    }
  }
}

// Fused chains on the GPU equal their steps one by one: every packed RGB
// format in and out, 3- and 4-byte pixels both ways, runs cut by a step
// that is not per pixel, a run written in place over its input (the frame
// two steps back; 4- and 3-byte pixels), a run longer than one launch takes, identity balance;
// whole frames and bands, rows on 256 and on 4 bytes, odd widths.
TEST(GpuChain, FusedRunsEqualTheirStepsOneByOne) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  using F = PixelFormat;
  const std::string bic = "balance contrast=1.2 saturation=0.8 hue=0.1 ! invert ! convert";
  std::string ten = "balance brightness=0.1";
  for (int i = 1; i < 10; ++i) ten += i % 3 ? " ! invert" : " ! balance saturation=1.4";
  const ChainCase cases[] = {
      {bic.c_str(), F::kRGBA, F::kBGRx, 67, 41, 67, 41},
      {bic.c_str(), F::kRGB, F::kABGR, 67, 41, 67, 41},
      {bic.c_str(), F::kBGRx, F::kBGR, 70, 33, 70, 33},
      {bic.c_str(), F::kBGR, F::kRGB, 129, 20, 129, 20},
      {bic.c_str(), F::kARGB, F::kARGB, 64, 24, 64, 24},
      {"invert ! balance brightness=0.1 ! blur sigma=1 ! invert ! balance saturation=1.5",
       F::kARGB, F::kARGB, 61, 37, 61, 37},
      {"blur sigma=1 ! invert ! balance contrast=1.3 ! blur sigma=1", F::kRGBx, F::kRGBx, 45, 30,
       45, 30},
      {"blur sigma=1 ! invert ! balance contrast=1.3 ! blur sigma=1", F::kRGB, F::kRGB, 45, 30, 45,
       30},
      {ten.c_str(), F::kRGBA, F::kRGBA, 50, 20, 50, 20},
      {"balance ! invert", F::kBGRA, F::kBGRA, 31, 9, 31, 9},
  };
  for (const ChainCase& c : cases) {
    SCOPED_TRACE(std::string(c.text) + " " + format_info(c.in).name + " -> " +
                 format_info(c.out).name);
    const KernelParams params = chain_params(c.text, c.in_w, c.in_h, c.out_w, c.out_h);
    const ChainOperation chain(params.chain, params);
    bool fused = false;
    for (const ChainOperation::Launch& l : chain.launches(c.in, c.out)) fused |= l.last > l.first;
    EXPECT_TRUE(fused);
    Expected e(c);
    for (size_t align : {size_t{256}, size_t{4}})
      for (int bands : {1, 3}) {
        if (bands > 1 && chain.band_halo(c.in, c.out) < 0) continue;
        OwnedImage got(c.out, c.out_w, c.out_h, 9);
        run_on_device(*device, "chain", params, e.in, got, align, bands);
        EXPECT_EQ(compare_images(got.image, e.want.image), "")
            << "align " << align << ", bands " << bands;
      }
  }
}

// A user's per-pixel function fused with built-in stages gives the bytes of
// the built-in steps: the custom invert in place of invert, on 4- and
// 3-byte pixels either side, odd widths, rows on 256 and on 4 bytes; and a
// function on another view (sepia on co::Rgba, with a parameter) gives, fused,
// the bytes of the same chain run a launch a step.
TEST(GpuChain, AUsersFunctionFusedGivesTheBytesOfItsStepsApart) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  auto device = make_cuda_device(0);
  device->make_current();
  using F = PixelFormat;
  struct UserCase {
    std::string text;  // with custom for the user's invert
    F in, out;
    int width, height;
  };
  const UserCase cases[] = {
      {"balance contrast=1.2 saturation=0.8 ! custom ! convert", F::kRGBA, F::kBGRx, 67, 41},
      {"balance contrast=1.2 saturation=0.8 ! custom ! convert", F::kRGB, F::kABGR, 67, 41},
      {"invert ! custom ! convert", F::kBGRx, F::kBGR, 70, 33},
      {"custom ! balance hue=0.3", F::kBGR, F::kBGR, 129, 20},
      {"blur sigma=1 ! custom ! invert ! custom", F::kARGB, F::kARGB, 45, 30},
  };
  for (const UserCase& c : cases) {
    std::string built_in = c.text;
    for (size_t at; (at = built_in.find("custom")) != std::string::npos;)
      built_in.replace(at, 6, "invert");
    SCOPED_TRACE(c.text + " " + format_info(c.in).name + " -> " + format_info(c.out).name);
    const ChainCase expected_case{built_in.c_str(), c.in, c.out, c.width, c.height, c.width,
                                  c.height};
    Expected e(expected_case);
    const KernelParams params =
        chain_params(c.text, c.width, c.height, c.width, c.height, invert_pixel_kernel());
    const ChainOperation chain(params.chain, params);
    bool user_fused = false;
    for (const ChainOperation::Launch& l : chain.launches(c.in, c.out))
      user_fused |= l.user >= 0 && l.last > l.first;
    EXPECT_TRUE(user_fused);
    for (size_t align : {size_t{256}, size_t{4}}) {
      OwnedImage got(c.out, c.width, c.height, 9);
      run_on_device(*device, "chain", params, e.in, got, align);
      EXPECT_EQ(compare_images(got.image, e.want.image), "") << "align " << align;
    }
  }

  CustomKernelParams sepia;
  sepia.source = kReadmeSepiaSource;
  sepia.source_name = "sepia.cu";
  sepia.params = {{"amount", CustomParam::Type::kFloat, 0.8}};
  const std::string text = "invert ! custom ! convert";
  OwnedImage in(F::kRGBA, 53, 17);
  in.fill_random(53);
  OwnedImage fused(F::kRGB, 53, 17, 3), apart(F::kRGB, 53, 17, 5);
  const KernelParams params = chain_params(text, 53, 17, 53, 17, sepia);
  const auto one = std::make_shared<ChainOperation>(params.chain, params);
  const auto three = std::make_shared<ChainOperation>(params.chain, params, false);
  ASSERT_EQ(one->launches(F::kRGBA, F::kRGB).size(), 1u);
  ASSERT_EQ(three->launches(F::kRGBA, F::kRGB).size(), 3u);
  run_on_device(*device, one, in, fused, 4);
  run_on_device(*device, three, in, apart, 4);
  EXPECT_EQ(compare_images(fused.image, apart.image), "");

  // Rounding at every half step, values below 0 and above 1, -0 and NaN:
  // the fused launch quantises as the per-pixel kernel does, each 4- and
  // 3-byte order either side; every input byte read.
  CustomKernelParams probe;
  probe.source_name = "probe.cu";
  probe.source = R"(
co::Pixel process(co::Pixel px, int x, int y, const Params& params) {
  co::Pixel q;
  q.c[0] = float(x % 511) * 0.5f / 255.f;
  q.c[1] = x % 7 == 0 ? -0.f : (float(x) - 40.f) / 170.f;
  q.c[2] = y == 1 ? __int_as_float(0x7fc00000) : px.c[2] * 1.37f - 0.1f;
  q.a = px.a * 0.999f + px.c[0];
  return q;
}
)";
  for (auto [from, to] : {std::pair{F::kRGBA, F::kRGBA}, {F::kBGR, F::kBGR}, {F::kRGBx, F::kBGR},
                          {F::kRGB, F::kABGR}, {F::kARGB, F::kBGRA}}) {
    SCOPED_TRACE(std::string(format_info(from).name) + " -> " + format_info(to).name);
    OwnedImage bytes(from, 1030, 3);
    for (size_t b = 0; b < bytes.bytes.size(); ++b) bytes.bytes[b] = static_cast<uint8_t>(b * 7);
    const std::string probed =
        from == to ? "invert ! custom ! invert" : "invert ! custom ! convert";
    const KernelParams p = chain_params(probed, 1030, 3, 1030, 3, probe);
    for (size_t align : {size_t{256}, size_t{4}}) {
      OwnedImage one_launch(to, 1030, 3, 3), launches(to, 1030, 3, 5);
      run_on_device(*device, std::make_shared<ChainOperation>(p.chain, p), bytes, one_launch,
                    align);
      run_on_device(*device, std::make_shared<ChainOperation>(p.chain, p, false), bytes, launches,
                    align);
      EXPECT_EQ(compare_images(one_launch.image, launches.image), "") << "align " << align;
    }
  }
}

}  // namespace
}  // namespace cudaoverlap::test
