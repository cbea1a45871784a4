#!/usr/bin/env python3
"""Renders clustersim's SVG plots with rsvg-convert and checks that nothing is drawn outside
the canvas: legend names, tick labels and bar labels included, with the real font's metrics.

Each picture is rendered on a canvas grown by a margin on every side (its viewBox widened);
any pixel drawn in that margin is something that left the picture. The plots checked: the
sweep plots of a results file with long layout names (written here), a campaign trial, and
the validation plots shipped in validation/.

Usage: check_svg_render.py CLUSTERSIM SOURCE_DIR
Exit 0 when every picture stays inside its canvas, 1 otherwise, 77 (skipped) without
rsvg-convert (Debian: librsvg2-bin).
"""
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

MARGIN = 40  # px added on each side


def read_png_alpha(path):
    """(width, height, alpha rows) of an 8-bit RGBA, non-interlaced PNG (what rsvg-convert writes)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat = 8, b""
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (depth, colour, interlace) == (8, 6, 0), (path, depth, colour, interlace)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw, stride, bpp = zlib.decompress(idat), w * 4, 4
    prev, rows, i = bytearray(stride), [], 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 0xFF
        elif f == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 0xFF
        elif f == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 0xFF
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pred) & 0xFF
        rows.append(line[3::4])
        prev = line
    return w, h, rows


def outside_pixels(svg_path, work):
    """Bounding box of what is drawn outside the canvas (None when nothing), and the count of
    opaque pixels inside it."""
    text = open(svg_path).read()
    m = re.search(r'<svg [^>]*width="([\d.]+)" height="([\d.]+)" viewBox="0 0 [\d.]+ [\d.]+"',
                  text)
    if not m:
        raise SystemExit(f"{svg_path}: no width/height/viewBox on the root element")
    w, h = float(m.group(1)), float(m.group(2))
    W, H = w + 2 * MARGIN, h + 2 * MARGIN
    # A background of 100% would fill the grown canvas: it is the original one.
    text = text.replace('<rect width="100%" height="100%"', f'<rect width="{w}" height="{h}"', 1)
    grown = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'viewBox="{-MARGIN} {-MARGIN} {W} {H}"')
    text = re.sub(r'<svg xmlns="http://www.w3.org/2000/svg" width="[\d.]+" height="[\d.]+" '
                  r'viewBox="0 0 [\d.]+ [\d.]+"', grown, text, count=1)
    base = os.path.join(work, os.path.basename(svg_path))
    open(base + ".grown.svg", "w").write(text)
    subprocess.run(["rsvg-convert", "-f", "png", "-o", base + ".png", base + ".grown.svg"],
                   check=True)
    pw, ph, alpha = read_png_alpha(base + ".png")
    x_hi, y_hi = MARGIN + int(-(-w // 1)), MARGIN + int(-(-h // 1))
    box, inside = None, 0
    for y in range(ph):
        row = alpha[y]
        for x in range(pw):
            if row[x] == 0:
                continue
            if MARGIN <= x < x_hi and MARGIN <= y < y_hi:
                inside += 1
            else:
                bx = (x - MARGIN, y - MARGIN)
                box = [bx[0], bx[1], bx[0], bx[1]] if box is None else [
                    min(box[0], bx[0]), min(box[1], bx[1]), max(box[2], bx[0]), max(box[3], bx[1])]
    return box, inside


def sweep_results(path):
    """A results file whose layout names are as long as a sweep over every axis makes them."""
    parts = ["DP{dp} TP8 PP4 VPP5 CP2 EP8 mb1 ZeRO-1 recompute:selective grad:bf16",
             "NIC {nic}Gb/s NVLink 900GB/s oversub:2 hgx-h200-2048x8-rail llama3-405b"]
    records = []
    for i, (gpus, nic) in enumerate([(g, n) for g in (512, 1024, 2048, 4096) for n in (200, 400)]):
        dp = gpus // 64
        series = " ".join(parts).format(dp=dp, nic=nic).split(" ", 1)[1]
        step = 10.0 + i
        records.append({
            "index": i, "key": f"{i:016x}", "build": "0", "status": "ok", "reason": "",
            "label": f"{gpus} GPUs " + " ".join(parts).format(dp=dp, nic=nic),
            "series": series, "warnings": [],
            "parameters": {"gpus": gpus, "dp": dp, "tp": 8, "pp": 4, "vpp": 5, "cp": 2, "ep": 8},
            "metrics": {"mfu": 0.30 + 0.01 * i, "step_time_s": step, "gpus": gpus,
                        "memory_per_gpu_GiB": 50.0 + i, "memory_usable_GiB": 70.0},
            "breakdown": {"compute_s": step * 0.6, "tp_s": step * 0.1, "pp_s": step * 0.05,
                          "dp_s": step * 0.05, "ep_s": step * 0.05, "bubble_s": step * 0.1,
                          "optimizer_s": step * 0.02, "idle_s": step * 0.03}})
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    binary, source = sys.argv[1], sys.argv[2]
    if shutil.which("rsvg-convert") is None:
        print("skipped: rsvg-convert not found (Debian: librsvg2-bin)")
        return 77
    work = tempfile.mkdtemp(prefix="clustersim-svg-")
    try:
        results = os.path.join(work, "results.jsonl")
        sweep_results(results)
        subprocess.run([binary, "sweep", "plot", results, "--out", os.path.join(work, "plots")],
                       check=True, stdout=subprocess.DEVNULL)
        campaign = os.path.join(work, "campaign.svg")
        subprocess.run([binary, "campaign", os.path.join(source, "scenarios",
                                                         "campaign-seed-before.json"),
                        "--trials", "2", "--svg", campaign, "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        files = sorted(glob.glob(os.path.join(work, "plots", "*.svg"))) + [campaign] + sorted(
            glob.glob(os.path.join(source, "validation", "*.svg")))
        failed = 0
        for svg in files:
            box, inside = outside_pixels(svg, work)
            name = os.path.relpath(svg, work) if svg.startswith(work) else os.path.relpath(svg, source)
            if box is not None:
                failed += 1
                print(f"FAIL {name}: drawn outside the canvas, x {box[0]}..{box[2]}, "
                      f"y {box[1]}..{box[3]} (canvas origin at 0, 0)")
            elif inside == 0:
                failed += 1
                print(f"FAIL {name}: nothing drawn")
            else:
                print(f"ok   {name}")
        print(f"{len(files) - failed} of {len(files)} pictures inside their canvas")
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
