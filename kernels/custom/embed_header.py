#!/usr/bin/env python3
"""Writes a C++ file defining cudaoverlap::kPixelHeaderText as the text of
the header given: the runtime compiler gets <cudaoverlap/pixel.cuh> from the
library itself, so it never finds a different version on disk."""
import sys

source, output = sys.argv[1], sys.argv[2]
text = open(source, encoding="utf-8").read()
delimiter = "co_header"
assert ")" + delimiter + '"' not in text
with open(output, "w", encoding="utf-8") as out:
    out.write("// Generated from %s by embed_header.py; do not edit.\n" % source.split("/")[-1])
    out.write('#include "kernels/custom/custom.h"\n\n')
    out.write("namespace cudaoverlap {\n")
    # Split into pieces: a string literal may be no longer than 64 KiB.
    out.write("const char kPixelHeaderText[] =\n")
    for start in range(0, len(text), 8000):
        out.write('    R"%s(%s)%s"\n' % (delimiter, text[start:start + 8000], delimiter))
    out.write(";\n}  // namespace cudaoverlap\n")
