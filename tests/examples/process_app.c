/* An application that puts its own GPU work on cudaoverlap's compute stream
 * (kernel=application, the `process` signal), and checks every frame that
 * comes out against the same computation on the CPU.
 *
 *   cudaoverlap-process-example thrust|kernel [FRAMES]
 *
 * thrust: a library of the CUDA toolkit (Thrust) inverts every byte of the
 * frame, on the given stream (process_thrust.cu). kernel: the application's
 * own kernel mirrors each row (process_kernel.cu). Built against the
 * installed interface (<cudaoverlap/cudaoverlap.h>, pkg-config
 * cudaoverlap-1.0) as any application would be. Exits 0 when every frame
 * matched, 77 (skipped) without a CUDA device, 1 otherwise. */
#include <cudaoverlap/cudaoverlap.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process_example.h"

enum { WIDTH = 640, HEIGHT = 480 };

static gboolean on_process(GstElement* element, const CudaOverlapImage* in,
                           const CudaOverlapImage* out, gpointer stream, gpointer user_data) {
  (void)element;
  const char* what = user_data;
  if (strcmp(what, "thrust") == 0) return example_invert_with_thrust(in, out, stream) == 0;
  return example_mirror_with_kernel(in, out, stream) == 0;
}

/* The input pattern of frame `n`, and what the CPU says comes out of it. */
static unsigned char input_byte(int n, int x, int y, int c) {
  return (unsigned char)(x * 3 + y * 7 + c * 50 + n * 11);
}
static unsigned char expected_byte(const char* what, int n, int x, int y, int c) {
  if (strcmp(what, "thrust") == 0) return (unsigned char)(255 - input_byte(n, x, y, c));
  return input_byte(n, WIDTH - 1 - x, y, c);
}

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  const int frames = argc > 2 ? atoi(argv[2]) : 100;
  if (strcmp(what, "thrust") != 0 && strcmp(what, "kernel") != 0) {
    fprintf(stderr, "usage: %s thrust|kernel [FRAMES]\n", argv[0]);
    return 2;
  }
  if (!example_have_cuda_device()) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  gst_init(&argc, &argv);
  GError* error = NULL;
  GstElement* pipeline = gst_parse_launch(
      "appsrc name=src format=time caps=video/x-raw,format=RGBA,width=640,height=480,"
      "framerate=30/1 ! cudaoverlap name=overlap backend=cuda kernel=application ! "
      "appsink name=sink sync=false",
      &error);
  if (!pipeline) {
    fprintf(stderr, "%s\n", error->message);
    return 1;
  }
  GstElement* overlap = gst_bin_get_by_name(GST_BIN(pipeline), "overlap");
  g_signal_connect(overlap, "process", G_CALLBACK(on_process), (gpointer)what);
  GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "src");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  gst_element_set_state(pipeline, GST_STATE_PLAYING);

  int bad = 0, received = 0;
  for (int n = 0; n < frames; ++n) {
    GstBuffer* buffer = gst_buffer_new_allocate(NULL, WIDTH * HEIGHT * 4, NULL);
    GstMapInfo map;
    gst_buffer_map(buffer, &map, GST_MAP_WRITE);
    for (int y = 0; y < HEIGHT; ++y)
      for (int x = 0; x < WIDTH; ++x)
        for (int c = 0; c < 4; ++c) map.data[(y * WIDTH + x) * 4 + c] = input_byte(n, x, y, c);
    gst_buffer_unmap(buffer, &map);
    GST_BUFFER_PTS(buffer) = n * GST_SECOND / 30;
    gst_app_src_push_buffer(GST_APP_SRC(src), buffer);
  }
  gst_app_src_end_of_stream(GST_APP_SRC(src));
  for (int n = 0; n < frames; ++n) {
    GstSample* sample = gst_app_sink_try_pull_sample(GST_APP_SINK(sink), 10 * GST_SECOND);
    if (!sample) break;
    ++received;
    GstMapInfo map;
    GstBuffer* out = gst_sample_get_buffer(sample);
    gst_buffer_map(out, &map, GST_MAP_READ);
    int wrong = 0;
    for (int y = 0; y < HEIGHT && !wrong; ++y)
      for (int x = 0; x < WIDTH && !wrong; ++x)
        for (int c = 0; c < 4; ++c)
          if (map.data[(y * WIDTH + x) * 4 + c] != expected_byte(what, n, x, y, c)) {
            fprintf(stderr, "frame %d differs at (%d,%d) byte %d: %d, expected %d\n", n, x, y, c,
                    map.data[(y * WIDTH + x) * 4 + c], expected_byte(what, n, x, y, c));
            wrong = 1;
            break;
          }
    bad += wrong;
    gst_buffer_unmap(out, &map);
    gst_sample_unref(sample);
  }
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
  if (message) {
    GError* e = NULL;
    gst_message_parse_error(message, &e, NULL);
    fprintf(stderr, "error: %s\n", e->message);
    g_error_free(e);
    gst_message_unref(message);
    bad = bad ? bad : 1;
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(src);
  gst_object_unref(sink);
  gst_object_unref(overlap);
  gst_object_unref(pipeline);
  printf("%s: %d of %d frames out, %d differing from the CPU computation\n", what, received, frames,
         bad);
  return received == frames && bad == 0 ? 0 : 1;
}
