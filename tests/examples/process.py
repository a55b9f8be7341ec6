#!/usr/bin/env python3
"""kernel=application from Python: a handler of cudaoverlap's `process`
signal, through GObject introspection.

The handler gets the frame's input and output (each a CudaOverlapImage,
<cudaoverlap/cudaoverlap.h>, mirrored below with ctypes) and the CUDA stream.
On the cpu backend the planes are host memory and the handler inverts them
with ctypes; on the cuda backend, where CuPy is installed, it wraps the
device planes and the stream with CuPy and inverts them there, on the
element's stream (without CuPy it says so and stops).

  process.py [--backend cpu|cuda] [--frames N] [--check]

--check compares every frame that comes out with the inverted input and
exits 1 on a difference (the test suite runs it so, on the cpu backend).
Exits 77 (skipped) where GObject introspection for GStreamer is missing.
"""
import argparse
import ctypes
import sys

try:
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    from gi.repository import Gst, GstApp  # noqa: F401 (GstApp: appsrc/appsink methods)
except (ImportError, ValueError) as e:
    print(f"process.py: no GObject introspection for GStreamer ({e}): skipped")
    sys.exit(77)

WIDTH, HEIGHT = 64, 48


class CudaOverlapImage(ctypes.Structure):
    """<cudaoverlap/cudaoverlap.h>'s CudaOverlapImage."""

    _fields_ = [
        ("format", ctypes.c_int),
        ("width", ctypes.c_int),
        ("height", ctypes.c_int),
        ("n_planes", ctypes.c_int),
        ("data", ctypes.c_void_p * 4),
        ("stride", ctypes.c_size_t * 4),
        ("row_bytes", ctypes.c_size_t * 4),
        ("rows", ctypes.c_int * 4),
    ]


def image_at(pointer):
    # PyGObject hands a gpointer over as a GPointer object; its hash is the
    # address it holds.
    return CudaOverlapImage.from_address(hash(pointer))


INVERT = bytes(255 - v for v in range(256))


def invert_on_host(inp, out):
    for p in range(inp.n_planes):
        for y in range(inp.rows[p]):
            row = ctypes.string_at(inp.data[p] + y * inp.stride[p], inp.row_bytes[p])
            ctypes.memmove(out.data[p] + y * out.stride[p], row.translate(INVERT), len(row))


def invert_with_cupy(inp, out, stream_address):
    import cupy

    with cupy.cuda.ExternalStream(stream_address):
        for p in range(inp.n_planes):
            shape = (inp.rows[p], inp.row_bytes[p])

            def plane(image):
                size = image.stride[p] * image.rows[p]
                memory = cupy.cuda.UnownedMemory(image.data[p], size, owner=None)
                return cupy.ndarray(shape, cupy.uint8, cupy.cuda.MemoryPointer(memory, 0),
                                    strides=(image.stride[p], 1))

            cupy.subtract(255, plane(inp), out=plane(out), dtype=cupy.uint8)


def on_process(element, inp, out, stream):
    inp, out = image_at(inp), image_at(out)
    if stream is None:  # the cpu backend: host planes
        invert_on_host(inp, out)
    else:
        invert_with_cupy(inp, out, hash(stream))
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.backend == "cuda":
        try:
            import cupy  # noqa: F401
        except ImportError:
            print("process.py: --backend cuda needs CuPy, which is not installed here")
            return 77
    Gst.init(None)
    pipeline = Gst.parse_launch(
        "appsrc name=src format=time caps=video/x-raw,format=NV12,width=%d,height=%d,"
        "framerate=30/1 ! cudaoverlap name=overlap kernel=application backend=%s ! "
        "appsink name=sink sync=false" % (WIDTH, HEIGHT, args.backend))
    pipeline.get_by_name("overlap").connect("process", on_process)
    src, sink = pipeline.get_by_name("src"), pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PLAYING)
    size = WIDTH * HEIGHT * 3 // 2
    inputs = []
    for n in range(args.frames):
        data = bytes((i * 7 + n * 13) & 255 for i in range(size))
        inputs.append(data)
        buffer = Gst.Buffer.new_wrapped(data)
        buffer.pts = n * Gst.SECOND // 30
        src.emit("push-buffer", buffer)
    src.emit("end-of-stream")
    wrong = received = 0
    for n in range(args.frames):
        sample = sink.emit("try-pull-sample", 10 * Gst.SECOND)
        if sample is None:
            break
        received += 1
        buffer = sample.get_buffer()
        ok, info = buffer.map(Gst.MapFlags.READ)
        if bytes(info.data) != inputs[n].translate(INVERT):
            wrong += 1
        buffer.unmap(info)
    message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
    if message:
        print("error:", message.parse_error()[0].message)
    pipeline.set_state(Gst.State.NULL)
    print("%s backend: %d of %d frames out, %d differing from the inverted input"
          % (args.backend, received, args.frames, wrong))
    if args.check and (received != args.frames or wrong or message):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
