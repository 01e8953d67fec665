#!/usr/bin/env python3
"""Writes a damaged copy of a .pt2 archive for the importer's error tests.

    rewrite_pt2.py IN OUT shorten ENTRY          ENTRY loses its last 4 bytes
    rewrite_pt2.py IN OUT deflate ENTRY          ENTRY stored compressed
    rewrite_pt2.py IN OUT replace ENTRY TEXT     ENTRY's bytes become TEXT
    rewrite_pt2.py IN OUT sub ENTRY OLD NEW      the first OLD in ENTRY becomes NEW
ENTRY is relative to the archive's folder."""
import sys
import zipfile

src, dst, how, entry = sys.argv[1:5]
zin = zipfile.ZipFile(src)
root = zin.namelist()[0].split("/")[0]
with zipfile.ZipFile(dst, "w") as zout:
    for info in zin.infolist():
        data = zin.read(info)
        method = zipfile.ZIP_STORED
        if info.filename == root + "/" + entry:
            if how == "shorten":
                data = data[:-4]
            elif how == "deflate":
                method = zipfile.ZIP_DEFLATED
            elif how == "replace":
                data = sys.argv[5].encode()
            elif how == "sub":
                data = data.replace(sys.argv[5].encode(), sys.argv[6].encode(), 1)
        zout.writestr(info.filename, data, compress_type=method)
