#!/usr/bin/env bash
# Builds the cpu backend with a sanitizer and runs every suite under it:
#   scripts/sanitize.sh asan [meson test args]   # AddressSanitizer + UndefinedBehaviorSanitizer
#   scripts/sanitize.sh tsan [meson test args]   # ThreadSanitizer
# Build folders: build-asan, build-tsan. Exits non-zero when a suite fails
# or a sanitizer reports. GStreamer and GLib are not instrumented:
# tests/sanitizers/ holds the suppressions for what they do that a
# sanitizer cannot see through, each with why.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: sanitize.sh asan|tsan [meson test args]}
shift
case $kind in
  asan) sanitize=address,undefined runtimes="libasan.so libubsan.so" ;;
  tsan) sanitize=thread runtimes="libtsan.so" ;;
  *) echo "sanitize: asan or tsan, not $kind" >&2; exit 2 ;;
esac
scripts/setup.sh >/dev/null  # the packages; the normal build is not needed
dir=build-$kind
[ -f "$dir/build.ninja" ] ||
  meson setup "$dir" -Dcuda=disabled -Db_sanitize=$sanitize -Db_lundef=false -Dbuildtype=debug
ninja -C "$dir" -j "${CUDAOVERLAP_JOBS:-2}"

supp=$PWD/tests/sanitizers
# Plugins load in this process (no scanner child), so the plugin under test
# runs with the sanitizer's runtime of the test program.
export GST_REGISTRY_FORK=no
# gst-plugins-bad is installed for bayer2rgb (kernel-vs-gst compares with
# it); loaded whole, its plugins' own initialisation leaks (OpenNI2's
# drivers, fontconfig, interned strings of dozens of element classes). The
# suites see the system's plugins without it, bayer2rgb's excepted.
plugins=$PWD/$dir/system-plugins
rm -rf "$plugins"
mkdir -p "$plugins"
bad=$(dpkg -L gstreamer1.0-plugins-bad 2>/dev/null | grep '\.so$' | xargs -r -n1 basename || true)
for f in "$(pkg-config --variable=pluginsdir gstreamer-1.0)"/*.so; do
  name=$(basename "$f")
  if [ "$name" != libgstbayer.so ] && grep -qx "$name" <<<"$bad"; then continue; fi
  ln -s "$f" "$plugins/$name"
done
export GST_PLUGIN_SYSTEM_PATH_1_0=$plugins
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Full stacks at malloc, so that leaks are told apart by where they were made.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0

export TSAN_OPTIONS=suppressions=$supp/tsan.supp:ignore_noninstrumented_modules=1:halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0
# gst-launch-1.0 (trace-file, latency-check) is not linked with the runtime:
# preload it there, and only there (python, which runs one of them, leaks by
# design).
preload=""
for r in $runtimes; do preload="$preload $(gcc -print-file-name="$r")"; done
# ThreadSanitizer is told what GLib's locks mean (tests/sanitizers/).
[ $kind = tsan ] && preload="$preload $PWD/$dir/tests/libglib-tsan-shim.so"
export CUDAOVERLAP_SANITIZER_PRELOAD=${preload# }
# The kernel suites (suite pixels) check bytes: on one thread, or (kernel-
# vs-gst) through the element, whose threads the element suites run.
# ThreadSanitizer leaves them to AddressSanitizer unless suites or tests
# are named.
skip=()
if [ $kind = tsan ]; then
  skip=(--no-suite pixels)
  for a in "$@"; do
    case $a in --suite* | --no-suite* | [!-]*) skip=() ;; esac
  done
fi
meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes "${CUDAOVERLAP_JOBS:-2}" \
  --timeout-multiplier 4 ${skip[@]+"${skip[@]}"} "$@"
