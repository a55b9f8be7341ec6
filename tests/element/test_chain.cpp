// The chain property: one element running several kernels makes, byte for
// byte, what the same kernels make as elements of their own, with one
// upload and one download a frame; a chain that cannot run is an error
// naming its step.
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "element_test_util.h"
#include "pipeline_outcome.h"

namespace cudaoverlap_test {
namespace {

struct ChainCase {
  const char* format;
  const char* chain;
  const char* out_fields;  // caps after the element, where the last step negotiates
};

std::string source(const char* format, int frames) {
  return std::string("videotestsrc num-buffers=") + std::to_string(frames) +
         " pattern=smpte ! video/x-raw,format=" + format + ",width=98,height=66 ! ";
}

// "blur sigma=2 ! invert" as elements: "cudaoverlap kernel=blur sigma=2 !
// cudaoverlap kernel=invert", the first named `o`.
std::string as_elements(const std::string& chain) {
  std::string elements;
  size_t at = 0;
  for (int k = 0;; ++k) {
    const size_t bang = chain.find('!', at);
    std::string step = chain.substr(at, bang == std::string::npos ? std::string::npos : bang - at);
    while (!step.empty() && step.front() == ' ') step.erase(0, 1);
    elements += std::string(k == 0 ? "" : " ! ") + "cudaoverlap " + (k == 0 ? "name=o " : "") +
                backend_properties() + " kernel=" + step;
    if (bang == std::string::npos) break;
    at = bang + 1;
  }
  return elements;
}

class Chain : public ::testing::TestWithParam<ChainCase> {};

// A quarter turn before scale: the picture is placed in what the turn
// made (pillarboxed here), as with the two as elements of their own.
TEST(ChainBorders, ATurnBeforeScaleLetterboxesAsElementsDo) {
  SKIP_WITHOUT_BACKEND();
  const std::string src =
      "videotestsrc num-buffers=2 pattern=smpte ! "
      "video/x-raw,format=RGBA,width=160,height=90,pixel-aspect-ratio=1/1 ! ";
  const std::string after =
      " ! video/x-raw,width=160,height=90,pixel-aspect-ratio=1/1 ! appsink name=out sync=false";
  for (const char* chain :
       {"flip video-direction=90r ! scale add-borders=true", "flip video-direction=90l ! scale"}) {
    SCOPED_TRACE(chain);
    const PipelineOutcome one = run_to_frames(src + "cudaoverlap name=o " + backend_properties() +
                                              " chain=\"" + chain + "\"" + after);
    const PipelineOutcome two = run_to_frames(src + as_elements(chain) + after);
    ASSERT_EQ(one.error, "");
    ASSERT_EQ(two.error, "");
    ASSERT_EQ(one.frames.size(), 2u);
    ASSERT_EQ(two.frames.size(), 2u);
    EXPECT_TRUE(one.frames[0] == two.frames[0]);
    // Borders: the first pixel is border-color's black, not the picture.
    EXPECT_EQ(one.frames[0][0], 0);
  }
}

TEST_P(Chain, EqualsItsStepsAsElementsOfTheirOwn) {
  SKIP_WITHOUT_BACKEND();
  const ChainCase& c = GetParam();
  const std::string after = std::string(*c.out_fields ? " ! video/x-raw" : "") + c.out_fields +
                            " ! appsink name=out sync=false";
  const PipelineOutcome chain =
      run_to_frames(source(c.format, 5) + "cudaoverlap name=o " + backend_properties() +
                   " chain=\"" + c.chain + "\"" + after);
  const PipelineOutcome steps = run_to_frames(source(c.format, 5) + as_elements(c.chain) + after);
  ASSERT_EQ(chain.error, "");
  ASSERT_EQ(steps.error, "");
  ASSERT_EQ(chain.frames.size(), 5u);
  ASSERT_EQ(steps.frames.size(), 5u);
  for (size_t i = 0; i < chain.frames.size(); ++i)
    EXPECT_TRUE(chain.frames[i] == steps.frames[i]) << "frame " << i << " differs";
  // One upload a frame, as the first of the separate elements makes; none
  // on the cpu backend, which copies nothing.
  EXPECT_EQ(chain.uploaded, steps.uploaded);
  if (test_backend() == "cpu")
    EXPECT_EQ(chain.downloaded, 0u);
  else
    EXPECT_GT(chain.downloaded, 0u);
  // Cut into bands where every step allows it: the same frames.
  const PipelineOutcome banded =
      run_to_frames(source(c.format, 5) + "cudaoverlap name=o bands=4 " + backend_properties() +
                    " chain=\"" + c.chain + "\"" + after);
  ASSERT_EQ(banded.error, "");
  ASSERT_EQ(banded.frames.size(), 5u);
  for (size_t i = 0; i < banded.frames.size(); ++i)
    EXPECT_TRUE(banded.frames[i] == chain.frames[i]) << "frame " << i << " differs in bands";
}

INSTANTIATE_TEST_SUITE_P(
    Chains, Chain,
    ::testing::Values(
        ChainCase{"RGBA", "balance contrast=1.2 saturation=0.8 ! blur sigma=2 ! invert", ""},
        ChainCase{"NV12", "invert ! flip video-direction=90r ! convert", ",format=RGBA"},
        ChainCase{"I420", "blur sigma=1 ! scale method=bicubic", ",width=50,height=30"},
        ChainCase{"YUY2", "balance brightness=0.1 ! convert", ",format=BGRx"},
        ChainCase{"P010_10LE", "invert ! flip video-direction=horiz", ""},
        // Fused on CUDA: per-pixel steps on packed RGB, 4- and 3-byte.
        ChainCase{"RGBA", "balance contrast=1.2 saturation=0.8 hue=0.1 ! invert ! convert",
                  ",format=BGRx"},
        ChainCase{"RGB", "invert ! balance brightness=0.1 ! blur sigma=1 ! invert ! convert",
                  ",format=ARGB"}),
    [](const auto& info) {
      std::string name = std::string(info.param.format) + "_" + info.param.chain;
      for (char& ch : name)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name.substr(0, 60);
    });

TEST(ChainErrors, AChainThatCannotRunIsAnErrorNamingTheStep) {
  SKIP_WITHOUT_BACKEND();
  const struct {
    const char* chain;
    const char* says;
  } cases[] = {
      // Read when the element starts.
      {"invert ! blr", "cudaoverlap cannot run its chain: chain step 2: there is no kernel 'blr'"},
      {"blur sigma=99", "chain step 1 (blur): sigma takes"},
      // Found when the caps come.
      {"convert ! invert", "chain step 1 (convert) takes its output's format or size from "
                           "downstream's caps, so it can only be the chain's last step"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.chain);
    std::string error;
    run_pipeline(source("NV12", 3) + "cudaoverlap " + backend_properties() + " chain=\"" +
                     c.chain + "\" ! fakesink",
                 &error);
    EXPECT_NE(error.find(c.says), std::string::npos) << error;
  }
}

TEST(ChainProperty, ReadsBackAndEmptyMeansKernel) {
  GstElement* element = make_cudaoverlap({{"chain", "invert ! blur sigma=2"}});
  gchar* text = nullptr;
  g_object_get(element, "chain", &text, nullptr);
  EXPECT_STREQ(text, "invert ! blur sigma=2");
  g_free(text);
  g_object_set(element, "chain", "", nullptr);
  g_object_get(element, "chain", &text, nullptr);
  EXPECT_EQ(text, nullptr);
  g_free(text);
  gst_object_unref(element);
}

}  // namespace
}  // namespace cudaoverlap_test
