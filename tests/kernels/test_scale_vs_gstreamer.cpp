// The scale reference against GStreamer's videoscale on the same frames: a
// 96x72 frame of random samples goes through appsrc ! videoscale !
// appsink and through the reference at x2, x1.5, x3, /2, /1.5 and /3 (exact
// on the 4:2:0 chroma grid too) for RGBA, NV12, YUY2 and P010_10LE, and the
// element (cudaoverlap backend=cpu kernel=scale) is checked to give the
// reference byte for byte on the same frames. Samples are random in
// 64..191 (of 255): videoscale clamps its 8-bit intermediate rows to 0..255
// where ours keeps them, and on full-range noise the filters' overshoot
// makes that clamp the largest difference (lanczos x1.5: 46, against 22).
//
// videoscale's counterparts (1.22: gstvideoconvertscale.c, video-resampler.c):
//   nearest   method=nearest-neighbour (one tap, floor((o + 0.5) in / out))
//   bilinear  enlarging method=bilinear (LINEAR, max-taps 2); shrinking
//             method=bilinear2 (LINEAR, ceil(2 in / out) taps: the triangle
//             widened by in / out as ours; bilinear stays 2 taps and aliases)
//   bicubic   method=mitchell: CUBIC with B = C = 1/3 (hermite, spline and
//             catrom are the other B, C)
//   lanczos   method=lanczos envelope=3: sinc(x) sinc(x / 3) over 6 taps
//             (widened when shrinking), Lanczos-3 as ours; the default
//             envelope 2 is Lanczos-2 (TheCausesOfTheDifferences)
// with chroma-resampler the same filter (its default, linear, would scale
// NV12's chroma plane by the triangle whatever the method), and dither=none
// (which matters to P010 only).
//
// Bounds, Y (or R, G, B, A) / chroma / mean absolute difference per sample on
// the 8-bit scale (a 10-bit step is 0.25): measured, plus 1 (P010: plus 0.5,
// rounded up) and 10 % on the mean. Letters: why a difference remains.
//                  x2          x1.5        x3          /2         /1.5        /3
//  nearest  RGBA   0/-/0       0/-/0       0/-/0       0/-/0      0/-/0       0/-/0
//  nearest  NV12   0/0/0       0/0/0       0/0/0       0/0/0      0/0/0       0/0/0
//  nearest  YUY2   0/0/0       0/0/0       0/0/0       0/0/0      0/0/0       0/0/0
//  nearest  P010   0/53/5.76   0/81/7.29   0/53/5.54   0/79/9.38  0/81/9.98   0/89/12.03
//  bilinear RGBA   30/-/4.71   21/-/3.22   42/-/6.55   2/-/0.22   18/-/2.82   3/-/0.34
//  bilinear NV12   31/0/3.12   21/2/2.18   41/2/4.29   32/2/5.74  19/17/2.87  3/2/0.35
//  bilinear YUY2   0/0/0       2/2/0.12    2/2/0.17    2/2/0.23   19/16/2.88  2/2/0.36
//  bilinear P010   1/11/1.16   1/20/1.63   1/46/1.76   1/8/0.65   18/5/2.13   1/8/0.7
//  bicubic  RGBA   13/-/0.58   16/-/0.57   15/-/1.72   3/-/0.44   4/-/0.53    7/-/4.12
//  bicubic  NV12   13/20/0.6   10/12/0.59  14/17/1.72  3/3/0.42   3/3/0.54    7/7/4.05
//  bicubic  YUY2   12/12/0.58  11/11/0.58  13/18/1.71  3/3/0.43   3/3/0.53    7/7/4.07
//  bicubic  P010   9/15/1.62   10/18/1.83  11/19/1.5   1/10/0.73  1/5/0.43    1/8/0.78
//  lanczos  RGBA   20/-/0.83   23/-/0.72   22/-/0.51   4/-/0.68   4/-/0.51    3/-/0.47
//  lanczos  NV12   20/33/0.86  14/13/0.74  21/26/0.54  4/4/0.68   3/3/0.53    3/3/0.48
//  lanczos  YUY2   18/20/0.85  15/16/0.73  21/26/0.52  3/4/0.68   3/3/0.52    3/3/0.47
//  lanczos  P010   15/41/3.86  16/41/4.07  18/43/3.64  1/19/1.52  1/21/1.82   1/17/1.27
//
// (a) Edges, enlarging (bicubic, lanczos: the maxima of x2, x1.5, x3):
//     videoscale clamps each output's centre into [0, in - 1]
//     (resampler_calculate_taps), ours keeps (o + 0.5) in / out - 0.5 and
//     repeats the edge sample. Away from the edges they are within 2-3
//     (bicubic x3: 6, see c; P010's Y: 0.5).
// (b) Precision: videoscale's 8-bit rows use 6-bit weights (video-scaler.c
//     defines LQ) and round each pass to 8 bits, 16-bit ones 12-bit weights;
//     ours are 14-bit, and it scales first along the axis that leaves fewer
//     samples, ours along x. Elsewhere 1-3.
// (c) bicubic x3 and /3: where an output sits on an input sample its taps
//     are symmetric, the 6-bit roundings of a pair move together, and
//     resampler_convert_coeff ends at a sum of 63 or 65 instead of 64: a flat
//     128 becomes 130 per axis (TheCausesOfTheDifferences), the mean of ~4
//     at /3.
// (d) bilinear enlarging, RGBA and NV12's Y: videoscale's 2-tap rows of
//     4 x 8 bits and of one 8-bit plane (video_scale_h_2tap_4u8 and _1u8,
//     ORC ldreslin) sit at o (in - 1) / (out - 1), corners aligned, not at
//     the resampler's centres: up to 41. Its other rows (YUY2, NV12's UV,
//     P010) and its columns are centred: within 1.
// (e) bilinear /1.5: 3 taps, placed from floor(centre - 1), so for a centre
//     at k + 0.75 the window k - 1 .. k + 1 leaves out input k + 2 (a ninth
//     of the weight): up to 18. Lanczos (9 taps) loses a tail the same
//     way, within (b).
// (f) bilinear /2, NV12's Y: videoscale halves a plane of 1-byte samples by
//     2x2 averages (convert_plane_hv_halve), ours by the widened triangle
//     (taps 1 3 3 1): up to 31.
// (g) P010's chroma: video-converter.c has no fast path for P010_10LE; its
//     general path unpacks to AYUV64, upsamples chroma to 4:4:4
//     (chroma-mode=full), scales at the luma's size and downsamples, so its
//     chroma is not resampled on the chroma grid (even nearest: up to 89).
//     NV12's and YUY2's chroma go through the fast path, on their own grid
//     with the centres aligned as ours.
#include <cstdio>

#include "gst_frames.h"

namespace cudaoverlap::test {
namespace {

struct Difference {
  double y = 0;     // largest over Y (R, G, B, A) samples, on the 8-bit scale
  double uv = 0;    // largest over chroma samples
  double mean = 0;  // over all samples
};

// Sample by sample on the 8-bit scale (for_each_sample).
Difference sample_difference(const ImageRef& a, const ImageRef& b) {
  const bool yuv = format_info(a.format).is_yuv;
  Difference d;
  double sum = 0;
  long n = 0;
  for_each_sample(a, b, [&](int c, int, int, double va, double vb) {
    const double e = std::abs(va - vb);
    double& worst = yuv && c > 0 ? d.uv : d.y;
    worst = std::max(worst, e);
    sum += e;
    ++n;
  });
  d.mean = sum / static_cast<double>(n);
  return d;
}

const char* const kOurMethods[] = {"nearest", "bilinear", "bicubic", "lanczos"};
// videoscale's counterpart of each of ours, when enlarging and when
// shrinking (see the header).
const char* const kVideoscale[][2] = {
    {"method=nearest-neighbour", "method=nearest-neighbour"},
    {"method=bilinear", "method=bilinear2"},
    {"method=mitchell chroma-resampler=cubic", "method=mitchell chroma-resampler=cubic"},
    {"method=lanczos envelope=3 chroma-resampler=lanczos",
     "method=lanczos envelope=3 chroma-resampler=lanczos"}};
const PixelFormat kFormats[] = {PixelFormat::kRGBA, PixelFormat::kNV12, PixelFormat::kYUY2,
                                PixelFormat::kP010_10LE};
// From 96x72, every ratio exact on the 4:2:0 chroma grid (48x36) too.
constexpr int kInWidth = 96, kInHeight = 72;
struct Ratio {
  const char* name;
  int width, height;
};
const Ratio kRatios[] = {{"x2", 192, 144}, {"x1.5", 144, 108}, {"x3", 288, 216},
                         {"/2", 48, 36},   {"/1.5", 64, 48},   {"/3", 32, 24}};

// The header's bounds (Y, chroma, mean), [method][format][ratio] in the
// order of kOurMethods, kFormats and kRatios.
struct Bound {
  double y, uv, mean;
};
const Bound kBounds[4][4][6] = {
    {
        {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
        {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
        {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
        {{0, 53, 5.76}, {0, 81, 7.29}, {0, 53, 5.54}, {0, 79, 9.38}, {0, 81, 9.98}, {0, 89, 12.03}},
    },
    {
        {{30, 0, 4.71}, {21, 0, 3.22}, {42, 0, 6.55}, {2, 0, 0.22}, {18, 0, 2.82}, {3, 0, 0.34}},
        {{31, 0, 3.12}, {21, 2, 2.18}, {41, 2, 4.29}, {32, 2, 5.74}, {19, 17, 2.87}, {3, 2, 0.35}},
        {{0, 0, 0}, {2, 2, 0.12}, {2, 2, 0.17}, {2, 2, 0.23}, {19, 16, 2.88}, {2, 2, 0.36}},
        {{1, 11, 1.16}, {1, 20, 1.63}, {1, 46, 1.76}, {1, 8, 0.65}, {18, 5, 2.13}, {1, 8, 0.7}},
    },
    {
        {{13, 0, 0.58}, {16, 0, 0.57}, {15, 0, 1.72}, {3, 0, 0.44}, {4, 0, 0.53}, {7, 0, 4.12}},
        {{13, 20, 0.6}, {10, 12, 0.59}, {14, 17, 1.72}, {3, 3, 0.42}, {3, 3, 0.54}, {7, 7, 4.05}},
        {{12, 12, 0.58}, {11, 11, 0.58}, {13, 18, 1.71}, {3, 3, 0.43}, {3, 3, 0.53}, {7, 7, 4.07}},
        {{9, 15, 1.62}, {10, 18, 1.83}, {11, 19, 1.5}, {1, 10, 0.73}, {1, 5, 0.43}, {1, 8, 0.78}},
    },
    {
        {{20, 0, 0.83}, {23, 0, 0.72}, {22, 0, 0.51}, {4, 0, 0.68}, {4, 0, 0.51}, {3, 0, 0.47}},
        {{20, 33, 0.86}, {14, 13, 0.74}, {21, 26, 0.54}, {4, 4, 0.68}, {3, 3, 0.53}, {3, 3, 0.48}},
        {{18, 20, 0.85}, {15, 16, 0.73}, {21, 26, 0.52}, {3, 4, 0.68}, {3, 3, 0.52}, {3, 3, 0.47}},
        {{15, 41, 3.86},
         {16, 41, 4.07},
         {18, 43, 3.64},
         {1, 19, 1.52},
         {1, 21, 1.82},
         {1, 17, 1.27}},
    },
};

// The reference of `method` on `in` at `ratio`.
OwnedImage reference_of(int method, const ImageRef& in, const Ratio& ratio) {
  KernelParams params;
  params.set("method", method);
  params.sizes = FrameSizes{in.width, in.height, ratio.width, ratio.height};
  OwnedImage want(in.format, ratio.width, ratio.height, 4);
  reference("scale", params, in, want.image);
  return want;
}

// Runs `element` on a frame of `format` at `ratio` and passes the output
// and the reference on the same frame to `check`.
template <typename Check>
void scale_both(const std::string& element, int method, PixelFormat format, const Ratio& ratio,
                uint32_t seed, Check check, int flat = -1) {
  gst_init(nullptr, nullptr);
  const std::string what = element + " " + format_info(format).name + " " + ratio.name;
  GstVideoInfo info;
  gst_video_info_set_format(&info, gst_format(format), kInWidth, kInHeight);
  // Samples mid-range (64..191), 10-bit ones too (their high byte).
  GstBuffer* frame = random_frame(info, seed, 64, 128, flat);
  std::string why;
  GstCaps* caps = gst_video_info_to_caps(&info);
  GstSample* sample =
      run_element_caps(element + " ! video/x-raw,width=" + std::to_string(ratio.width) +
                           ",height=" + std::to_string(ratio.height),
                       caps, frame, &why);
  gst_caps_unref(caps);
  GstVideoInfo out_info;
  if (!sample) {
    ADD_FAILURE() << why;
  } else if (!gst_video_info_from_caps(&out_info, gst_sample_get_caps(sample)) ||
             GST_VIDEO_INFO_FORMAT(&out_info) != gst_format(format) ||
             GST_VIDEO_INFO_WIDTH(&out_info) != ratio.width ||
             GST_VIDEO_INFO_HEIGHT(&out_info) != ratio.height) {
    ADD_FAILURE() << what << ": unexpected output caps";
  } else {
    MappedFrame in(frame, info, format);
    MappedFrame out(gst_sample_get_buffer(sample), out_info, format);
    if (in.ok() && out.ok())
      check(out.image(), reference_of(method, in.image(), ratio).image, what);
    else
      ADD_FAILURE() << what << ": cannot map the frames";
  }
  if (sample) gst_sample_unref(sample);
  gst_buffer_unref(frame);
}

TEST(ScaleVsVideoscale, WithinTheMeasuredBoundsOfVideoscale) {
  int compared = 0;
  for (int m = 0; m < 4; ++m)
    for (int f = 0; f < 4; ++f) {
      if (!element_takes("videoscale", kFormats[f])) continue;
      for (int r = 0; r < 6; ++r) {
        const Ratio& ratio = kRatios[r];
        const bool shrinks = ratio.width < kInWidth;
        const std::string element =
            std::string("videoscale dither=none ") + kVideoscale[m][shrinks];
        const Bound& bound = kBounds[m][f][r];
        scale_both(element, m, kFormats[f], ratio, static_cast<uint32_t>(7 + r),
                   [&](const ImageRef& theirs, const ImageRef& ours, const std::string& what) {
                     const Difference d = sample_difference(theirs, ours);
                     std::printf("%-9s %-10s %-5s Y %6.2f  UV %6.2f  mean %5.3f\n", kOurMethods[m],
                                 format_info(kFormats[f]).name, ratio.name, d.y, d.uv, d.mean);
                     EXPECT_LE(d.y, bound.y + 1e-9) << what;
                     if (format_info(kFormats[f]).is_yuv) {
                       EXPECT_LE(d.uv, bound.uv + 1e-9) << what;
                     }
                     EXPECT_LE(d.mean, bound.mean) << what;
                     ++compared;
                   });
      }
    }
  EXPECT_EQ(compared, 4 * 4 * 6);
}

// What the element outputs is the reference, byte for byte, on the frames
// compared with videoscale above.
TEST(ScaleVsVideoscale, CudaoverlapCpuBackendEqualsTheReference) {
  for (int m = 0; m < 4; ++m)
    for (PixelFormat f : kFormats)
      for (int r = 0; r < 6; ++r)
        scale_both(std::string("cudaoverlap backend=cpu kernel=scale method=") + kOurMethods[m], m,
                   f, kRatios[r], static_cast<uint32_t>(7 + r),
                   [](const ImageRef& out, const ImageRef& want, const std::string& what) {
                     EXPECT_EQ(compare_images(out, want), "") << what;
                   });
}

// Two of the causes in the header, checked: videoscale's bicubic /3 makes a
// flat 128 brighter by up to 4 (its 6-bit taps sum to 65/64 along each
// axis; less where taps fold at the edges) where ours stays 128; and its
// default lanczos (envelope 2: Lanczos-2) is further from ours than
// envelope=3 (Lanczos-3).
TEST(ScaleVsVideoscale, TheCausesOfTheDifferences) {
  scale_both(
      "videoscale method=mitchell", 2, PixelFormat::kRGBA, kRatios[5], 1,
      [](const ImageRef& theirs, const ImageRef& ours, const std::string& what) {
        int not_flat = 0;
        for (int y = 0; y < ours.height; ++y)
          for (int x = 0; x < 4 * ours.width; ++x)
            not_flat += ours.planes[0].data[y * ours.planes[0].stride + x] != 128;
        EXPECT_EQ(not_flat, 0) << what;
        const Difference d = sample_difference(theirs, ours);
        EXPECT_EQ(d.y, 4) << what;
        EXPECT_GE(d.mean, 3.5) << what;
      },
      128);
  double mean[2] = {};
  for (int envelope : {2, 3})
    scale_both("videoscale method=lanczos envelope=" + std::to_string(envelope), 3,
               PixelFormat::kRGBA, kRatios[0], 7,
               [&](const ImageRef& theirs, const ImageRef& ours, const std::string&) {
                 mean[envelope - 2] = sample_difference(theirs, ours).mean;
               });
  std::printf("lanczos x2 vs videoscale envelope=2: mean %.3f; envelope=3: mean %.3f\n", mean[0],
              mean[1]);
  EXPECT_GT(mean[0], 3 * mean[1]);
}

}  // namespace
}  // namespace cudaoverlap::test
