#include "slot_pass.h"

#include <algorithm>
#include <utility>

namespace cudaoverlap {

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::kStaging:
      return "staging copy";
    case Stage::kUpload:
      return "upload";
    case Stage::kCompute:
      return "kernel";
    case Stage::kDownload:
      return "download";
  }
  return "";
}

BandPlan plan_bands(const FrameLayout& in, const FrameLayout& out, const Operation& op,
                    int requested, bool overlapped, size_t device_align) {
  BandPlan plan;
  const int step = band_row_step(in.format, out.format);
  plan.step = step;
  const bool by_view = op.bands_by_view(in.format, out.format);
  int bands = 1;
  if (requested > 1 && overlapped && !op.swaps_axes() && (in.height == out.height || !by_view) &&
      op.band_halo(in.format, out.format) >= 0)
    bands = std::min(requested, std::min(in.height, out.height) / step);
  bands = std::max(bands, 1);
  for (int k = 0; k < bands; ++k)
    plan.rows.push_back(static_cast<int>(int64_t{k} * out.height / bands / step * step));
  plan.rows.push_back(out.height);
  // Uploads in the output's rows where the operation reads its own rows
  // and a halo; where it reads others (a change of height, a crop, a
  // letterbox), each band's upload ends where its kernel's reads end, so
  // that a kernel waits for no more of the input than it reads.
  plan.in_rows = plan.rows;
  const int halo = op.band_halo(in.format, out.format);
  bool reads_others = in.height != out.height;
  for (int k = 0; k < bands && !reads_others; ++k)
    reads_others =
        op.band_reads(in.format, out.format, plan.rows[k], plan.rows[k + 1], in.height).last !=
        std::min(plan.rows[k + 1] + halo, in.height);
  if (reads_others)
    for (int k = 1; k < bands; ++k) {
      const int last =
          op.band_reads(in.format, out.format, plan.rows[k - 1], plan.rows[k], in.height).last;
      plan.in_rows[k] = std::clamp((last + step - 1) / step * step, plan.in_rows[k - 1], in.height);
    }
  plan.in_rows[bands] = in.height;
  if (bands > 1 && by_view) {
    plan.view_halo = op.band_halo(in.format, out.format);
    int view_rows = 0;
    for (int k = 0; k < bands; ++k) {
      const RowRange view =
          band_view(plan.rows[k], plan.rows[k + 1], plan.view_halo, step, in.height);
      view_rows = std::max(view_rows, view.last - view.first);
    }
    plan.scratch_layout =
        FrameLayout::packed(out.format, out.width, view_rows, device_align, device_align);
  }
  return plan;
}

SlotPass::SlotPass(PassStreams streams, const FrameLayout& input, const FrameLayout& output,
                   BandPlan plan, Workspace workspace, uint8_t* scratch)
    : streams_(streams),
      input_(input),
      output_(output),
      plan_(std::move(plan)),
      workspace_(workspace),
      scratch_(scratch) {}

// Each stream gets its calls in band order; the host issues them band by
// band (a band's upload, then the kernels whose input is uploaded by then,
// each followed by its download), so that the first band's download is on
// its stream as soon as its kernel can have run, rather than after every
// other band's calls: a frame's calls take longer to make (cold, 4 to 6 us
// each, 30 for 4 bands) than a band's upload at 1080p, and the download
// stream, which then carries the whole frame, would start late by that much.
void SlotPass::enqueue(const SlotEvents& events, const PassImages& images, const Operation& op,
                       BandReading reading, bool timed, Stage* stage) const {
  Stage ignored;
  Stage& at = stage ? *stage : ignored;
  Stream& up = *streams_.upload;
  Stream& compute = *streams_.compute;
  Stream& down = *streams_.download;
  const FrameLayout& in = input_;
  const FrameLayout& out = output_;
  const std::vector<int>& rows = plan_.rows;
  const std::vector<int>& in_rows = plan_.in_rows;
  const int bands = plan_.bands();
  const int halo = bands > 1 ? reading.halo : 0;
  const bool by_view = bands > 1 && reading.by_view;
  const ImageRef& source = images.source;
  const ImageRef& device_in = images.device_in;
  const ImageRef& device_out = images.device_out;
  const ImageRef& destination = images.destination;

  // The input rows band k's kernel reads.
  const auto reads = [&](int k) {
    if (by_view) return band_view(rows[k], rows[k + 1], halo, plan_.step, rows[bands]);
    return op.band_reads(in.format, out.format, rows[k], rows[k + 1], in.height);
  };
  const auto upload = [&](int k) {
    at = Stage::kUpload;
    if (timed && k == 0) up.record(*events.upload_started);
    for (int p = 0; p < in.n_planes() && !images.read_in_place; ++p) {
      const size_t r0 = plane_rows(in.format, p, in_rows[k]),
                   r1 = plane_rows(in.format, p, in_rows[k + 1]);
      if (r1 == r0) continue;
      up.copy_2d(device_in.planes[p].data + r0 * device_in.planes[p].stride,
                 device_in.planes[p].stride, source.planes[p].data + r0 * source.planes[p].stride,
                 source.planes[p].stride, in.row_bytes(p), r1 - r0,
                 images.source_on_device ? CopyKind::kDeviceToDevice : CopyKind::kHostToDevice);
    }
    up.record(*events.uploaded[k]);
  };
  const auto kernel = [&](int k, int needed) {
    at = Stage::kCompute;
    const RowRange read = reads(k);
    // Barrier "uploaded": the kernel reads the slot's device input down to
    // read.last: it waits for the band that holds that row (the upload
    // stream runs bands in order).
    compute.wait(*events.uploaded[needed]);
    if (timed && k == 0) compute.record(*events.compute_started);
    // Part by part where the events are for this operation's parts (one
    // that replaced the engine's first may have others).
    if (bands == 1 && timed && !events.parts_done.empty() &&
        op.parts(in.format, out.format).size() == events.parts_done.size()) {
      for (size_t part = 0; part < events.parts_done.size(); ++part) {
        compute.launch_part(op, part, device_in, device_out, workspace_);
        compute.record(*events.parts_done[part]);
      }
    } else if (bands == 1) {
      compute.launch(op, device_in, device_out, workspace_);
    } else if (!by_view) {
      compute.launch_rows(op, device_in, device_out, workspace_, rows[k], rows[k + 1]);
    } else {
      // The whole-frame kernel on the band's view, into the scratch image,
      // whose band rows then go to the output. The compute stream runs one
      // band after another, so one scratch image serves all.
      const ImageRef scratch =
          image_rows(plan_.scratch_layout.at(scratch_), 0, read.last - read.first);
      compute.launch(op, image_rows(device_in, read.first, read.last), scratch, workspace_);
      for (int p = 0; p < out.n_planes(); ++p) {
        const size_t r0 = plane_rows(out.format, p, rows[k]);
        const size_t r1 = plane_rows(out.format, p, rows[k + 1]);
        const size_t from = r0 - plane_rows(out.format, p, read.first);
        compute.copy_2d(
            device_out.planes[p].data + r0 * device_out.planes[p].stride,
            device_out.planes[p].stride, scratch.planes[p].data + from * scratch.planes[p].stride,
            scratch.planes[p].stride, out.row_bytes(p), r1 - r0, CopyKind::kDeviceToDevice);
      }
    }
    compute.record(*events.computed[k]);
  };
  const auto download = [&](int k) {
    at = Stage::kDownload;
    // Barrier "computed": the download reads the band's device output.
    down.wait(*events.computed[k]);
    if (timed && k == 0) down.record(*events.download_started);
    for (int p = 0; p < out.n_planes() && !images.write_in_place; ++p) {
      const size_t r0 = plane_rows(out.format, p, rows[k]),
                   r1 = plane_rows(out.format, p, rows[k + 1]);
      down.copy_2d(destination.planes[p].data + r0 * destination.planes[p].stride,
                   destination.planes[p].stride,
                   device_out.planes[p].data + r0 * device_out.planes[p].stride,
                   device_out.planes[p].stride, out.row_bytes(p), r1 - r0,
                   images.destination_on_device ? CopyKind::kDeviceToDevice
                                                : CopyKind::kDeviceToHost);
    }
  };
  // `next`: the first band whose kernel is not enqueued yet; `needed`: the
  // band whose upload holds the last row it reads.
  for (int k = 0, next = 0, needed = 0; k < bands; ++k) {
    upload(k);
    while (next < bands) {
      const int last = reads(next).last;
      while (needed + 1 < bands && in_rows[needed + 1] < last) ++needed;
      if (needed > k) break;
      kernel(next, needed);
      download(next);
      ++next;
    }
  }
  down.record(*events.downloaded);
}

}  // namespace cudaoverlap
