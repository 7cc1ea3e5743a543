"""The RGB conversion of decoded frames: PyAV's `frame.to_ndarray(format="rgb24")` builds a new
scaler context for every frame; `videorl.video.backends` keeps one `VideoReformatter` per file.
Both are timed in the reader's loop (decode a frame, convert it) on H.264 files at several sizes (encoded here, so the
run is offline), side by side in one process, after checking that they give the same pixels.

    PYTHONPATH=src python bench/decode_convert.py [--frames 48] [--repeats 5] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import harness
import numpy as np

SIZES = ((64, 64), (96, 96), (224, 224), (640, 360), (1280, 720))


def encode(path: Path, width: int, height: int, frames: int, content: str) -> Path:
    """An H.264 yuv420p file: `noise` (textured blocks panning) or `flat` (a grey screen with a
    moving square, as the synthetic tasks draw)."""
    import av

    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(8))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            if content == "noise":
                image = np.roll(base, 4 * i, axis=1)
            else:
                image = np.full((height, width, 3), 96, dtype=np.uint8)
                side = max(height // 4, 8)
                left = (4 * i) % max(width - side, 1)
                image[:side, left : left + side] = (230, 40, 40)
            out.mux(stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        out.mux(stream.encode())
    return path


def per_frame(frame: Any, _reformatter: Any) -> np.ndarray:
    return frame.to_ndarray(format="rgb24")


def one_reformatter(frame: Any, reformatter: Any) -> np.ndarray:
    return reformatter.reformat(frame, format="rgb24").to_ndarray()


def decode(path: Path, convert: Callable[[Any, Any], np.ndarray]) -> tuple[float, list[np.ndarray]]:
    """Decode every frame and convert it as it comes (the reader's loop); ms per frame."""
    import av
    from av.video.reformatter import VideoReformatter

    start, reformatter, images = time.perf_counter(), VideoReformatter(), []
    with av.open(str(path)) as container:
        for frame in container.decode(container.streams.video[0]):
            images.append(convert(frame, reformatter))
    return (time.perf_counter() - start) / len(images) * 1e3, images


def ms_per_frame(path: Path, convert: Callable[[Any, Any], np.ndarray], repeats: int) -> float:
    return statistics.median(decode(path, convert)[0] for _ in range(repeats))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=5)
    args = harness.parse_args(parser, "decode_convert", argv)
    sizes, frames, repeats = (SIZES[:2], 8, 1) if args.quick else (SIZES, args.frames, args.repeats)
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for (width, height), content in itertools.product(sizes, ("flat", "noise")):
        path = encode(
            args.work / f"convert-{content}-{width}x{height}.mp4", width, height, frames, content
        )
        same = all(
            map(np.array_equal, decode(path, per_frame)[1], decode(path, one_reformatter)[1])
        )
        before = ms_per_frame(path, per_frame, repeats)
        after = ms_per_frame(path, one_reformatter, repeats)
        rows.append(
            {
                "size": f"{width}x{height}",
                "content": content,
                "same_pixels": same,
                "per_frame_ms": round(before, 4),
                "one_reformatter_ms": round(after, 4),
                "speedup": round(before / after, 2),
            }
        )
    headers = ["size", "content", "same pixels", "per frame, ms", "one reformatter, ms", "speed-up"]
    print(harness.markdown_table(headers, [list(row.values()) for row in rows]))
    command = "PYTHONPATH=src python bench/decode_convert.py" + (" --quick" if args.quick else "")
    payload = {"command": command, "frames": frames, "repeats": repeats, "rows": rows}
    harness.write_results(args.out, payload | {"threads": args.threads})


if __name__ == "__main__":
    main()
