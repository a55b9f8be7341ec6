// Cropping and borders in pipelines: crop-* against videocrop byte for
// byte, a GstVideoCropMeta taken without a copy, and add-borders against
// videoscale, with regions of interest following the picture.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/gstvideometa.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "app_pipeline.h"
#include "element_test_util.h"
#include "video_frames.h"

namespace cudaoverlap_test {
namespace {

using cudaoverlap::ImageRef;

// --- Crop ------------------------------------------------------------------

// crop-* crops as videocrop does: the window's size in the caps and its
// pixels byte for byte; a region of interest moves with the window, and one
// the crop leaves out does not come out.
TEST(Crop, EqualsVideocrop) {
  SKIP_WITHOUT_BACKEND();
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420,
                                GST_VIDEO_FORMAT_YUY2}) {
    SCOPED_TRACE(gst_video_format_to_string(format));
    const GstVideoInfo info = video_info(format, 40, 30);
    AppPipeline ours(info, "kernel=scale crop-left=4 crop-right=6 crop-top=2 crop-bottom=8");
    AppPipeline theirs(info, "kernel=copy ! videocrop left=4 right=6 top=2 bottom=8");
    ASSERT_TRUE(ours.ok() && theirs.ok());
    GstBuffer* input = make_frame(info, 9);
    gst_buffer_add_video_region_of_interest_meta(input, "in", 10, 10, 10, 10);
    gst_buffer_add_video_region_of_interest_meta(input, "out", 0, 0, 3, 30);
    ours.push(gst_buffer_ref(input));
    theirs.push(input);
    GstSample* a = ours.pull();
    GstSample* b = theirs.pull();
    ASSERT_NE(a, nullptr) << ours.error();
    ASSERT_NE(b, nullptr) << theirs.error();
    GstVideoInfo ia, ib;
    ASSERT_TRUE(gst_video_info_from_caps(&ia, gst_sample_get_caps(a)));
    ASSERT_TRUE(gst_video_info_from_caps(&ib, gst_sample_get_caps(b)));
    EXPECT_EQ(size_text(GST_VIDEO_INFO_WIDTH(&ia), GST_VIDEO_INFO_HEIGHT(&ia)), "30x20");
    EXPECT_EQ(size_text(GST_VIDEO_INFO_WIDTH(&ib), GST_VIDEO_INFO_HEIGHT(&ib)), "30x20");
    GstVideoFrame fa, fb;
    ASSERT_TRUE(gst_video_frame_map(&fa, &ia, gst_sample_get_buffer(a), GST_MAP_READ));
    ASSERT_TRUE(gst_video_frame_map(&fb, &ib, gst_sample_get_buffer(b), GST_MAP_READ));
    const ImageRef x = image_of(&fa), y = image_of(&fb);
    for (int p = 0; p < cudaoverlap::format_info(x.format).n_planes; ++p)
      for (size_t r = 0; r < cudaoverlap::plane_rows(x.format, p, 20); ++r)
        ASSERT_EQ(std::memcmp(x.planes[p].data + r * x.planes[p].stride,
                              y.planes[p].data + r * y.planes[p].stride,
                              cudaoverlap::plane_row_bytes(x.format, p, 30)),
                  0)
            << "plane " << p << " row " << r;
    gst_video_frame_unmap(&fa);
    gst_video_frame_unmap(&fb);
    std::vector<std::string> regions;
    gpointer state = nullptr;
    while (GstMeta* m = gst_buffer_iterate_meta_filtered(
               gst_sample_get_buffer(a), &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
      const auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(m);
      regions.push_back(std::string(g_quark_to_string(roi->roi_type)) + " " +
                        std::to_string(roi->x) + "," + std::to_string(roi->y) + " " +
                        size_text(roi->w, roi->h));
    }
    EXPECT_EQ(regions, std::vector<std::string>({"in 6,8 10x10"}));
    gst_sample_unref(a);
    gst_sample_unref(b);
    ours.end();
    theirs.end();
  }
}

// --- Borders --------------------------------------------------------------

// Downstream fixing width, height and square pixels that change the
// display aspect ratio: the picture scaled to fit and centred, black
// around it, byte for byte what videoscale makes (a frame of one colour,
// so the filters agree), letterboxed and pillarboxed, in RGB and YUV;
// without add-borders the picture is stretched over the whole frame.
TEST(Borders, AreTheOnesVideoscaleAdds) {
  SKIP_WITHOUT_BACKEND();
  const uint32_t colour[3] = {180, 60, 200};
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420,
                                GST_VIDEO_FORMAT_YUY2}) {
    for (const char* size : {"width=48,height=24", "width=48,height=48"}) {
      SCOPED_TRACE(std::string(gst_video_format_to_string(format)) + " 48x36 to " + size);
      GstVideoInfo info = video_info(format, 48, 36);
      const std::string caps = std::string(" ! video/x-raw,") + size + ",pixel-aspect-ratio=1/1";
      AppPipeline ours(info, "kernel=scale" + caps);
      AppPipeline theirs(info, "kernel=copy ! videoscale" + caps);
      AppPipeline stretched(info, "kernel=scale add-borders=false" + caps);
      ASSERT_TRUE(ours.ok() && theirs.ok() && stretched.ok());
      GstBuffer* input = uniform_frame(info, colour);
      gst_buffer_add_video_region_of_interest_meta(input, "all", 0, 0, 48, 36);
      ours.push(gst_buffer_ref(input));
      theirs.push(gst_buffer_ref(input));
      stretched.push(input);
      GstSample* a = ours.pull();
      GstSample* b = theirs.pull();
      GstSample* c = stretched.pull();
      ASSERT_NE(a, nullptr) << ours.error();
      ASSERT_NE(b, nullptr) << theirs.error();
      ASSERT_NE(c, nullptr) << stretched.error();
      EXPECT_EQ(compare_samples(a, b), "");
      EXPECT_NE(compare_samples(a, c), "") << "no borders";
      // The region covering the whole input covers the picture alone.
      gpointer state = nullptr;
      const auto* roi =
          reinterpret_cast<GstVideoRegionOfInterestMeta*>(gst_buffer_iterate_meta_filtered(
              gst_sample_get_buffer(a), &state, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE));
      ASSERT_NE(roi, nullptr);
      EXPECT_EQ(
          std::to_string(roi->x) + "," + std::to_string(roi->y) + " " + size_text(roi->w, roi->h),
          std::string(size) == "width=48,height=24" ? "8,0 32x24" : "0,6 48x36");
      gst_sample_unref(a);
      gst_sample_unref(b);
      gst_sample_unref(c);
      ours.end();
      theirs.end();
      stretched.end();
    }
  }
}

// Aspect ratios far apart leave a picture of a pixel, not of none (whose
// tap tables divided by zero): a frame comes out, of downstream's size.
TEST(Borders, AFarAspectRatioLeavesAPictureOfAPixel) {
  SKIP_WITHOUT_BACKEND();
  for (const auto& [in, out] : {std::pair{std::pair{320, 240}, std::pair{1, 100}},
                                {std::pair{1, 1000}, std::pair{100, 10}},
                                {std::pair{320, 240}, std::pair{2, 100}}}) {
    SCOPED_TRACE(size_text(in.first, in.second) + " to " + size_text(out.first, out.second));
    for (GstVideoFormat format : {GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_I420}) {
      if (format == GST_VIDEO_FORMAT_I420 && out.first % 2) continue;
      const GstVideoInfo info = video_info(format, in.first, in.second);
      AppPipeline pipeline(info, "kernel=scale ! video/x-raw,width=" + std::to_string(out.first) +
                                     ",height=" + std::to_string(out.second) +
                                     ",pixel-aspect-ratio=1/1");
      ASSERT_TRUE(pipeline.ok());
      pipeline.push(make_frame(info, 4));
      GstSample* sample = pipeline.pull();
      ASSERT_NE(sample, nullptr) << pipeline.error();
      GstVideoInfo got;
      ASSERT_TRUE(gst_video_info_from_caps(&got, gst_sample_get_caps(sample)));
      EXPECT_EQ(size_text(GST_VIDEO_INFO_WIDTH(&got), GST_VIDEO_INFO_HEIGHT(&got)),
                size_text(out.first, out.second));
      gst_sample_unref(sample);
      pipeline.end();
    }
  }
}

// Interlaced video keeps its fields: a picture bordered above and below
// starts on an even row (videoconvertscale would start it on row 1 here),
// so output row 0 is input row 0.
TEST(Borders, InterlacedVideoKeepsItsFields) {
  SKIP_WITHOUT_BACKEND();
  GstVideoInfo info = video_info(GST_VIDEO_FORMAT_RGBA, 40, 30);
  GST_VIDEO_INFO_INTERLACE_MODE(&info) = GST_VIDEO_INTERLACE_MODE_INTERLEAVED;
  AppPipeline pipeline(info,
                       "kernel=scale ! video/x-raw,width=40,height=32,pixel-aspect-ratio=1/1");
  ASSERT_TRUE(pipeline.ok());
  GstBuffer* input = make_frame(info, 5);
  pipeline.push(gst_buffer_ref(input));
  GstSample* sample = pipeline.pull();
  ASSERT_NE(sample, nullptr) << pipeline.error();
  GstVideoInfo out;
  ASSERT_TRUE(gst_video_info_from_caps(&out, gst_sample_get_caps(sample)));
  GstVideoFrame a, b;
  ASSERT_TRUE(gst_video_frame_map(&a, &info, input, GST_MAP_READ));
  ASSERT_TRUE(gst_video_frame_map(&b, &out, gst_sample_get_buffer(sample), GST_MAP_READ));
  const ImageRef x = image_of(&a), y = image_of(&b);
  for (int row = 0; row < 30; ++row)
    EXPECT_EQ(std::memcmp(x.planes[0].data + row * x.planes[0].stride,
                          y.planes[0].data + row * y.planes[0].stride, 40 * 4),
              0)
        << "row " << row;
  gst_video_frame_unmap(&a);
  gst_video_frame_unmap(&b);
  gst_sample_unref(sample);
  gst_buffer_unref(input);
  pipeline.end();
}

// border-color fills the borders, as the output format stores the colour:
// RGBA's bytes, and NV12's samples as convert makes them from RGB.
TEST(Borders, BorderColorFillsThem) {
  SKIP_WITHOUT_BACKEND();
  const uint32_t colour[3] = {10, 20, 30};
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12}) {
    SCOPED_TRACE(gst_video_format_to_string(format));
    GstVideoInfo info = video_info(format, 48, 36);
    AppPipeline ours(info,
                     "kernel=scale border-color=0x8040c020 ! "
                     "video/x-raw,width=48,height=24,pixel-aspect-ratio=1/1");
    AppPipeline green(
        video_info(GST_VIDEO_FORMAT_RGBA, 2, 2),
        "kernel=convert ! video/x-raw,format=" + std::string(gst_video_format_to_string(format)));
    ASSERT_TRUE(ours.ok() && green.ok());
    ours.push(uniform_frame(info, colour));
    // The colour as RGBA bytes: R 0x40, G 0xc0, B 0x20, A 0x80.
    GstBuffer* rgba = gst_buffer_new_allocate(nullptr, 16, nullptr);
    const uint8_t px[4] = {0x40, 0xc0, 0x20, 0x80};
    for (int i = 0; i < 4; ++i) gst_buffer_fill(rgba, 4 * i, px, 4);
    green.push(rgba);
    GstSample* a = ours.pull();
    GstSample* b = green.pull();
    ASSERT_NE(a, nullptr) << ours.error();
    ASSERT_NE(b, nullptr) << green.error();
    GstVideoInfo ia, ib;
    ASSERT_TRUE(gst_video_info_from_caps(&ia, gst_sample_get_caps(a)));
    ASSERT_TRUE(gst_video_info_from_caps(&ib, gst_sample_get_caps(b)));
    GstVideoFrame fa, fb;
    ASSERT_TRUE(gst_video_frame_map(&fa, &ia, gst_sample_get_buffer(a), GST_MAP_READ));
    ASSERT_TRUE(gst_video_frame_map(&fb, &ib, gst_sample_get_buffer(b), GST_MAP_READ));
    const ImageRef x = image_of(&fa), y = image_of(&fb);
    const cudaoverlap::FormatInfo& f = cudaoverlap::format_info(x.format);
    // Columns 0-7 and 40-47 are border, 8-39 the picture.
    // Samples are read on each component's own grid.
    for (int c = 0; c < f.n_components; ++c) {
      const int xs = f.comp[c].x_sub, ys = f.comp[c].y_sub;
      const uint32_t border = cudaoverlap::read_sample(y, c, 0, 0);
      for (int row : {0, 23})
        for (int col : {0, 6, 40, 46}) {
          EXPECT_EQ(cudaoverlap::read_sample(x, c, col >> xs, row >> ys), border)
              << "component " << c << " at " << col << "," << row;
          EXPECT_NE(cudaoverlap::read_sample(x, c, 20 >> xs, row >> ys), border)
              << "component " << c << " of the picture";
        }
    }
    gst_video_frame_unmap(&fa);
    gst_video_frame_unmap(&fb);
    gst_sample_unref(a);
    gst_sample_unref(b);
    ours.end();
    green.end();
  }
}

// A crop that leaves nothing, or an odd left edge on 4:2:0, is an error
// naming the property.
TEST(Crop, AnImpossibleCropIsAnError) {
  SKIP_WITHOUT_BACKEND();
  for (const auto& [format, properties, words] :
       {std::tuple{GST_VIDEO_FORMAT_RGBA, "kernel=convert crop-left=20 crop-right=20",
                   "leave nothing"},
        std::tuple{GST_VIDEO_FORMAT_NV12, "kernel=scale crop-left=3", "crop-left must be even"}}) {
    const GstVideoInfo info = video_info(format, 40, 30);
    const std::string error = refusal(info, properties, make_frame(info, 1));
    EXPECT_NE(error.find(words), std::string::npos) << error;
  }
}

// --- Crop meta -------------------------------------------------------------

// appsrc (`info`) ! <middle> ! appsink, one frame through: the sample
// (null after 10 s or an error, whose text goes to `error`), and how many
// buffers reached the element named "o" with a GstVideoCropMeta.
GstSample* run_one(const GstVideoInfo& info, GstBuffer* frame, const std::string& middle,
                   int* crop_metas, std::string* error) {
  const std::string description =
      "appsrc name=src format=time ! " + middle + " ! appsink name=sink sync=false";
  GstElement* pipeline = gst_parse_launch(description.c_str(), nullptr);
  if (pipeline == nullptr) {
    *error = "cannot parse " + description;
    gst_buffer_unref(frame);
    return nullptr;
  }
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstElement* o = gst_bin_get_by_name(GST_BIN(pipeline), "o");
  GstCaps* caps = caps_of(info);
  g_object_set(src, "caps", caps, nullptr);
  gst_caps_unref(caps);
  static std::atomic<int> seen;
  seen = 0;
  GstPad* pad = gst_element_get_static_pad(o, "sink");
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad*, GstPadProbeInfo* probe, gpointer) {
        if (gst_buffer_get_video_crop_meta(GST_PAD_PROBE_INFO_BUFFER(probe))) ++seen;
        return GST_PAD_PROBE_OK;
      },
      nullptr, nullptr);
  gst_object_unref(pad);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  gst_app_src_push_buffer(GST_APP_SRC(src), frame);
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND);
  if (sample == nullptr) {
    GstBus* bus = gst_element_get_bus(pipeline);
    GstMessage* m = gst_bus_timed_pop_filtered(bus, GST_SECOND, GST_MESSAGE_ERROR);
    if (m) {
      GError* e = nullptr;
      gst_message_parse_error(m, &e, nullptr);
      *error = e->message;
      g_error_free(e);
      gst_message_unref(m);
    }
    gst_object_unref(bus);
  }
  *crop_metas = seen;
  run_or_die("pipeline to NULL", std::chrono::seconds(10),
             [&] { gst_element_set_state(pipeline, GST_STATE_NULL); });
  gst_object_unref(o);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
  return sample;
}

// videocrop before the element crops through a GstVideoCropMeta (the
// element's ALLOCATION answer takes one): no copy upstream, and the frame
// is what cropping by copy makes, byte for byte, into a kernel that knows
// nothing of crops (invert) and into scale. Before convert passing buffers
// through, the query goes on to appsink, which takes no crop meta, so
// videocrop copies and the frame is the same.
TEST(CropMeta, FromVideocropIsTakenWithoutACopy) {
  SKIP_WITHOUT_BACKEND();
  const std::string element = "cudaoverlap name=o " + backend_properties() + " ";
  for (GstVideoFormat format : {GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420,
                                GST_VIDEO_FORMAT_YUY2}) {
    for (const auto& [kernel, metas] : {std::pair{"kernel=invert", 1},
                                        {"kernel=scale ! video/x-raw,width=15,height=10", 1},
                                        {"kernel=convert", 0}}) {
      SCOPED_TRACE(std::string(gst_video_format_to_string(format)) + " " + kernel);
      const GstVideoInfo info = video_info(format, 40, 30);
      GstBuffer* frame = make_frame(info, 31);
      int with_meta = -1, copied_meta = -1;
      std::string error, copied_error;
      GstSample* a = run_one(info, gst_buffer_ref(frame),
                             "videocrop left=4 right=6 top=2 bottom=8 ! " + element + kernel,
                             &with_meta, &error);
      GstSample* b = run_one(info, frame,
                             "cudaoverlap backend=cpu kernel=scale crop-left=4 crop-right=6 "
                             "crop-top=2 crop-bottom=8 ! " +
                                 element + kernel,
                             &copied_meta, &copied_error);
      ASSERT_NE(a, nullptr) << error;
      ASSERT_NE(b, nullptr) << copied_error;
      EXPECT_EQ(with_meta, metas) << "buffers with a crop meta reaching the element";
      EXPECT_EQ(copied_meta, 0);
      EXPECT_EQ(compare_samples(a, b), "");
      EXPECT_EQ(gst_buffer_get_video_crop_meta(gst_sample_get_buffer(a)), nullptr)
          << "the crop meta went on";
      gst_sample_unref(a);
      gst_sample_unref(b);
    }
  }
}

// A buffer that still carries a crop meta while buffers pass through
// (before upstream negotiated again) goes on as its window, copied, with
// no crop meta, since downstream may take none.
TEST(CropMeta, PassedThroughItIsTheWindowCopied) {
  SKIP_WITHOUT_BACKEND();
  GstVideoInfo full = video_info(GST_VIDEO_FORMAT_NV12, 40, 30);
  const GstVideoInfo caps = video_info(GST_VIDEO_FORMAT_NV12, 30, 20);
  GstBuffer* frame = make_frame(full, 8);
  gst_buffer_add_video_meta_full(frame, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_NV12, 40, 30, 2,
                                 full.offset, full.stride);
  GstVideoCropMeta* crop = gst_buffer_add_video_crop_meta(frame);
  crop->x = 4;
  crop->y = 2;
  crop->width = 30;
  crop->height = 20;
  int metas = 0;
  std::string error, copied_error;
  GstSample* a =
      run_one(caps, gst_buffer_ref(frame),
              "cudaoverlap name=o " + backend_properties() + " kernel=convert", &metas, &error);
  ASSERT_NE(a, nullptr) << error;
  EXPECT_EQ(metas, 1);
  EXPECT_EQ(gst_buffer_get_video_crop_meta(gst_sample_get_buffer(a)), nullptr);
  // The same window cut out by crop-*.
  GstBuffer* plain = gst_buffer_copy_deep(frame);
  gst_buffer_remove_meta(plain, &gst_buffer_get_video_crop_meta(plain)->meta);
  GstSample* b = run_one(full, plain,
                         "cudaoverlap name=o " + backend_properties() +
                             " kernel=scale crop-left=4 crop-right=6 crop-top=2 crop-bottom=8",
                         &metas, &copied_error);
  ASSERT_NE(b, nullptr) << copied_error;
  EXPECT_EQ(compare_samples(a, b), "");
  gst_sample_unref(a);
  gst_sample_unref(b);
  gst_buffer_unref(frame);
}

// A crop meta that splits NV12's chroma pairs, or reaches past the picture,
// is an error saying so.
TEST(CropMeta, OneTheFrameCannotHoldIsAnError) {
  SKIP_WITHOUT_BACKEND();
  GstVideoInfo full = video_info(GST_VIDEO_FORMAT_NV12, 40, 30);
  const GstVideoInfo caps = video_info(GST_VIDEO_FORMAT_NV12, 30, 20);
  for (const auto& [x, y, words] : {std::tuple{3, 2, "starts inside a group of pixels"},
                                    std::tuple{12, 2, "past the 40x30 picture"}}) {
    GstBuffer* frame = make_frame(full, 7);
    gst_buffer_add_video_meta_full(frame, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_NV12, 40, 30,
                                   2, full.offset, full.stride);
    GstVideoCropMeta* crop = gst_buffer_add_video_crop_meta(frame);
    crop->x = static_cast<guint>(x);
    crop->y = static_cast<guint>(y);
    crop->width = 30;
    crop->height = 20;
    int metas = 0;
    std::string error;
    GstSample* sample =
        run_one(caps, frame, "cudaoverlap name=o " + backend_properties(), &metas, &error);
    EXPECT_EQ(sample, nullptr);
    if (sample) gst_sample_unref(sample);
    EXPECT_NE(error.find(words), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace cudaoverlap_test
