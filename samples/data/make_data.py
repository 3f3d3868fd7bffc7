#!/usr/bin/env python3
"""Writes the data files of samples/load_data.weft: points.csv and values.npy.

Run from anywhere: python3 samples/data/make_data.py. Standard library only (the .npy file is
written by hand, format version 1.0, so numpy is not needed). The values are dyadic fractions,
exact in f32, so that every executor reads exactly the same numbers.
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write_npy_f32(path, values):
    """A 1-D little-endian float32 array in .npy format 1.0."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    # The magic (6 bytes), the version (2), the header length (2) and the header, padded with
    # spaces and ended by a newline, make a multiple of 64 bytes.
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00")
        f.write(struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def main():
    # 12 points (x, y, mass), as decimal text.
    rows = []
    for i in range(12):
        x = ((i * 5) % 12) * 0.25 - 1.5
        y = ((i * 7) % 12) * 0.125 - 0.75
        mass = 0.5 + (i % 4) * 0.25
        rows.append(f"{x},{y},{mass}")
    with open(os.path.join(HERE, "points.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    # 16 values: (i * i) mod 17, in quarters.
    write_npy_f32(os.path.join(HERE, "values.npy"), [((i * i) % 17) * 0.25 for i in range(16)])


if __name__ == "__main__":
    main()
