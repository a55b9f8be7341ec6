#!/usr/bin/env bash
# Sets up what is missing, builds, and runs the whole test suite. On a
# machine without a GPU the cuda suites skip themselves; run this on a GPU
# machine to exercise them too.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. scripts/env.sh
status=0
meson test -C build --print-errorlogs --num-processes "${CUDAOVERLAP_JOBS:-2}" "$@" || status=$?
# One closing line over every GoogleTest case (meson counts executables).
python3 - build/meson-logs/testlog.junit.xml <<'PY' || true
import sys, xml.etree.ElementTree as ET
passed = failed = skipped = 0
for case in ET.parse(sys.argv[1]).getroot().iter('testcase'):
    if case.find('failure') is not None or case.find('error') is not None:
        failed += 1
    elif case.find('skipped') is not None:
        skipped += 1
    else:
        passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
