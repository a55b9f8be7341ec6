// One frame's pass through a slot: its upload, kernels and download, band by
// band, on the engine's three streams, with the barrier events between them
// (docs/architecture.md, "The engine"). The engine enqueues every frame
// through SlotPass, call by call or inside a graph capture (graph_cache.h);
// cudaoverlap-bench times the same calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device.h"
#include "frame_layout.h"
#include "kernels/operation.h"

namespace cudaoverlap {

// The streams a pass runs on; in serial mode all three are one stream.
struct PassStreams {
  Stream* upload = nullptr;
  Stream* compute = nullptr;
  Stream* download = nullptr;
};

// A slot's barrier events. `uploaded` and `computed` hold one per band, the
// last band's standing for the whole frame's; `downloaded` is the one the
// host waits on. The *_started events exist only where the device stages
// are timed (EngineConfig::timing): the barriers are then timing events too
// and end the spans those start.
struct SlotEvents {
  std::vector<std::unique_ptr<Event>> uploaded;
  std::vector<std::unique_ptr<Event>> computed;
  std::unique_ptr<Event> downloaded;
  std::unique_ptr<Event> upload_started;
  std::unique_ptr<Event> compute_started;
  std::unique_ptr<Event> download_started;
  // Timed frames of an operation of parts (Operation::parts), computed
  // whole: one timing event after each part (FrameTiming::part_end_ns).
  std::vector<std::unique_ptr<Event>> parts_done;
};

// Where one frame's pass reads and writes. `source` is the input the
// upload reads (DMA-able host memory, or device memory where
// source_on_device), `destination` the output the download writes (host,
// or device memory where destination_on_device); `device_in` and
// `device_out` the frames the kernel reads and writes: the slot's, laid
// out as SlotPass's device layouts, or `source` and `destination`
// themselves where read_in_place and write_in_place.
struct PassImages {
  ImageRef source;
  bool source_on_device = false;  // `source` in device memory (InputFrame::on_device)
  ImageRef device_in;
  ImageRef device_out;
  ImageRef destination;
  bool destination_on_device = false;  // InputFrame::destination
  // The kernel reads `source` itself (device_in is it): no upload copy.
  bool read_in_place = false;
  // The kernel writes `destination` itself (device_out is it): no
  // download copy.
  bool write_in_place = false;
};

// The step of a frame's enqueueing under way, for an error message.
enum class Stage { kStaging, kUpload, kCompute, kDownload };
const char* stage_name(Stage stage);

// How frames are cut into horizontal bands (EngineConfig::bands): where each
// band of output rows starts, top to bottom, then the output's height (two
// entries for a whole frame); and the same for the input rows each band's
// upload carries (the output's rows where the heights agree). For
// operations that compute bands by view (Operation::bands_by_view), the
// halo the scratch image is made for and its layout: the output format, as
// many rows as the largest band's view.
struct BandPlan {
  std::vector<int> rows;
  std::vector<int> in_rows;
  int step = 1;        // band_row_step of the formats
  int view_halo = -1;  // -1: bands are not computed by view
  FrameLayout scratch_layout;
  int bands() const { return static_cast<int>(rows.size()) - 1; }
  bool by_view() const { return view_halo >= 0; }
};

// As many bands as `requested` where `op` and the mode allow it (see
// EngineConfig::bands), on rows that are a multiple of both formats'
// vertical period; `device_align` pads the scratch image's rows.
BandPlan plan_bands(const FrameLayout& in, const FrameLayout& out, const Operation& op,
                    int requested, bool overlapped, size_t device_align);

// How the current operation reads bands (Operation::band_halo,
// bands_by_view), worked out when it is set rather than for every frame.
struct BandReading {
  int halo = -1;
  bool by_view = false;
};

// Enqueues passes of one engine's frames: its streams, formats, bands and
// device memory shared by every slot (the operation's workspace, the
// scratch image of bands computed by view). Holds no memory of its own.
// One thread enqueues at a time.
class SlotPass {
 public:
  SlotPass() = default;
  // `scratch` holds plan.scratch_layout where plan.by_view(), else null.
  SlotPass(PassStreams streams, const FrameLayout& input, const FrameLayout& output, BandPlan plan,
           Workspace workspace, uint8_t* scratch);

  // Enqueues one frame: each band's upload (then "uploaded"), the kernels
  // whose input rows are uploaded by then (each after the "uploaded" of the
  // band holding its last row, then "computed"), each followed by its
  // download (after its "computed"), then "downloaded" after the last. With
  // `timed`, records the *_started events at the first band's stages.
  // `stage`, when given, follows the calls for an error message. Throws
  // Error as the streams do.
  void enqueue(const SlotEvents& events, const PassImages& images, const Operation& op,
               BandReading reading, bool timed, Stage* stage = nullptr) const;

  const PassStreams& streams() const { return streams_; }
  const BandPlan& plan() const { return plan_; }
  int bands() const { return plan_.bands(); }

 private:
  PassStreams streams_;
  FrameLayout input_;
  FrameLayout output_;
  BandPlan plan_;
  Workspace workspace_;
  uint8_t* scratch_ = nullptr;
};

}  // namespace cudaoverlap
