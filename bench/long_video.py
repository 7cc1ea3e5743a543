"""Long videos (issue 46): decode time and peak resident memory of 64 frames at 2 fps from
1-, 10- and 60-minute 1280x720 30 fps H.264 files, keyframes every 2 s and every 250 frames.

Readers, each on every file:

- `before`: the PyAV reader before issue 46 (a copy of it below): reads forward from the first
  wanted frame to the last, holds the wanted frames at the file's resolution, then resizes;
- `new`: `decode_video` as it is (seeks to keyframes when sampling is sparse, resizes each
  frame as it is decoded);
- `seek_each`: the new reader told to seek to every wanted frame's keyframe (the plain loop);
- `torchcodec`: torchcodec's exact seek mode, where it is installed.

Every decode runs in a fresh process, so its peak resident set (`ru_maxrss`) is its own,
after the file was read once into the page cache;
`added_mb` is that peak less the process's resident set just before decoding. `identical`
says whether every reader returned the same frames (bytes) as `before`.

The files are made here: a panning noise texture (it decodes at about 400 frames/s at 720p
on one core here, near camera video's rate; flat content decodes 7x faster and would make
the fixed costs, resizing above all, look larger than they are) encoded once with x264
`ultrafast` as a 50 s piece (1500 frames = 6 x 250 = 25 x 60, so the keyframes stay regular),
whose packets are repeated with shifted timestamps up to each length (encoding an hour at
720p would take most of an hour here). So the content repeats every 50 s; the frame-exactness
of seeking is tested on index-coded files (tests/video/test_seeking.py). The old reader
decodes every frame from the first wanted to the last, so it is run up to
`--before-max-minutes` (default 10: on the hour-long files it would take minutes each).

    python bench/long_video.py [--minutes 1,10,60] [--before-max-minutes 10] [--quick]
    python bench/long_video.py --steps 6  # step time with prefetch 0 and 1 (long_video_steps.py)
    python bench/long_video.py --encodes --repeats 5  # encodes in a 3-turn tool rollout
    python bench/long_video.py --table    # write the results' table into docs/long_videos.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import harness
import long_video_encodes
import numpy as np
import torch
from long_video_steps import measure_steps, page_lines

FPS = 30
PIECE = 1500  # frames of the encoded piece: a multiple of both keyframe intervals
GOPS = {"2s": 60, "250f": 250}
READERS = ("before", "new", "seek_each", "torchcodec")
PAGE = harness.ROOT / "docs" / "long_videos.md"
SCRIPT = "bench/long_video.py"


# ----- the files ---------------------------------------------------------------------------


def encode_piece(path: Path, width: int, height: int, gop: int) -> Path:
    """PIECE frames of a panning noise texture, x264 ultrafast, a keyframe exactly every `gop`
    frames."""
    import av

    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.mp4")
    rng = np.random.default_rng(0)
    blocks = rng.integers(0, 256, (height // 8 + 2, width // 8 + 2), dtype=np.uint8)
    texture = np.kron(blocks, np.ones((8, 8), np.uint8)).astype(np.int16)
    texture = (texture + rng.integers(-20, 20, texture.shape)).clip(0, 255).astype(np.uint8)
    with av.open(str(tmp), mode="w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        g = str(gop)
        stream.options = {"preset": "ultrafast", "g": g, "keyint_min": g, "sc_threshold": "0"}
        planes = np.full((height * 3 // 2, width), 128, np.uint8)
        for k in range(PIECE):  # the texture pans, 2 and 3 pixels a frame
            y, x = (2 * k) % 16, (3 * k) % 16
            planes[:height] = texture[y : y + height, x : x + width]
            frame = av.VideoFrame.from_ndarray(planes, format="yuv420p")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    tmp.rename(path)
    return path


def tile(piece: Path, path: Path, frames: int) -> Path:
    """`frames` frames of `piece` repeated (packets copied, timestamps shifted)."""
    import av

    if path.is_file():
        return path
    tmp = path.with_suffix(".tmp.mp4")
    with av.open(str(piece)) as source, av.open(str(tmp), mode="w") as out:
        template = source.streams.video[0]
        stream = out.add_stream_from_template(template)
        period = None
        written, copy = 0, 0
        while written < frames:
            source.seek(0)
            for packet in source.demux(template):
                if packet.pts is None or written >= frames:
                    continue
                assert packet.dts is not None and template.time_base is not None
                if period is None:  # ticks per piece, from the frame duration
                    period = int(PIECE / FPS / float(template.time_base))
                packet.pts += copy * period
                packet.dts += copy * period
                packet.stream = stream
                out.mux(packet)
                written += 1
            copy += 1
    tmp.rename(path)
    return path


def make_files(
    work: Path, quick: bool, minutes: list[float], gops: dict[str, int]
) -> dict[str, Path]:
    width, height = (160, 96) if quick else (1280, 720)
    folder = work / "long_video"
    files = {}
    for name, gop in gops.items():
        piece = encode_piece(folder / f"piece-{width}x{height}-{name}.mp4", width, height, gop)
        for m in minutes:
            label = f"{m:g}min_kf{name}"
            files[label] = tile(
                piece, folder / f"{width}x{height}-{label}.mp4", round(m * 60 * FPS)
            )
            print(f"  made {label} ({files[label].stat().st_size / 2**20:.0f} MiB)", flush=True)
    return files


# ----- the reader before issue 46, as it was -------------------------------------------------


def before_read(path: str, plan: Any, counts: dict[str, int]) -> tuple[Any, np.ndarray]:
    """`videorl.video.backends.read_pyav` before issue 46 (less its re-plan of short files)."""
    import av

    from videorl.video.backends import SourceInfo, _pyav_info

    with av.open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        info: SourceInfo = _pyav_info(container, stream)
        indices = plan(info)
        fps = info.fps
        wanted = sorted(set(indices))
        start_pts = stream.start_time or 0
        assert stream.time_base is not None
        time_base = float(stream.time_base)
        if wanted[0] / fps > 1.0:
            target = int(wanted[0] / fps / time_base) + start_pts
            container.seek(target, stream=stream, backward=True)
        picked: dict[int, np.ndarray] = {}
        pointer = 0
        for counter, frame in enumerate(container.decode(stream)):
            counts["decoded"] = counts.get("decoded", 0) + 1
            index = (
                counter if frame.pts is None else round((frame.pts - start_pts) * time_base * fps)
            )
            if index < wanted[pointer]:
                continue
            array = frame.to_ndarray(format="rgb24")
            while pointer < len(wanted) and wanted[pointer] <= index:
                picked[wanted[pointer]] = array
                pointer += 1
            if pointer == len(wanted):
                break
        return info, np.stack([picked[i] for i in indices])


def decode_with(reader: str, path: str) -> tuple[Any, dict[str, int]]:
    """Decode `path` with `reader` under the default sampling (2 fps, at most 64 frames)."""
    from dataclasses import replace

    from videorl.video import backends, decode

    config = decode.VideoConfig()
    counts: dict[str, int] = {}
    if reader == "before":
        planned: dict[str, Any] = {}
        plan = decode._planner(config, None, None, planned)
        info, source = before_read(path, plan, counts)
        frames = torch.from_numpy(np.ascontiguousarray(source)).permute(0, 3, 1, 2)
        src = (int(frames.shape[2]), int(frames.shape[3]))
        size = decode._frame_size(*src, len(planned["indices"]), config)
        meta = decode._meta(info, planned, config, None, None, src, size)
        resized = decode.resize_frames(frames, *size).contiguous()
        return decode.DecodedVideo(frames=resized, meta=meta), counts
    if reader == "torchcodec":
        return decode.decode_video(path, replace(config, backend="torchcodec")), counts
    mode: backends.SeekMode = "always" if reader == "seek_each" else "auto"
    backends.READERS["pyav"] = backends.pyav_reader(mode, counts)
    return decode.decode_video(path, config), counts


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(reader: str, path: str) -> dict[str, Any]:
    """One decode in this (fresh) process: seconds, memory, what came back."""
    import torch

    torch.set_num_threads(1)
    import videorl.video.decode  # noqa: F401  (imported before the baseline is read)

    baseline = _rss_mb()
    start = time.perf_counter()
    video, counts = decode_with(reader, path)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    frames = video.frames.contiguous()
    return {
        "seconds": round(seconds, 3),
        "peak_rss_mb": round(peak, 1),
        "baseline_rss_mb": round(baseline, 1),
        "added_mb": round(peak - baseline, 1),
        "frames": list(frames.shape),
        "frames_decoded": counts.get("decoded"),
        "seeks": counts.get("seeks"),
        "sha256": hashlib.sha256(frames.numpy().tobytes()).hexdigest(),
        "indices": list(video.meta.frame_indices),
    }


def warm_page_cache(path: Path) -> None:
    """Read `path` once so that no reader pays for the first read from disk (the first reader
    of an hour-long file otherwise does)."""
    with path.open("rb") as file:
        while file.read(1 << 24):
            pass


def run_child(reader: str, path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", reader, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"{reader} on {path} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ----- the run ------------------------------------------------------------------------------


def measure(files: dict[str, Path], before_max: float, repeats: int) -> dict[str, Any]:
    from videorl.video.backends import backend_available

    readers = [r for r in READERS if r != "torchcodec" or backend_available("torchcodec")]
    out: dict[str, Any] = {}
    for label, path in files.items():
        minutes = float(label.split("min")[0])
        row: dict[str, Any] = {}
        warm_page_cache(path)
        for reader in readers:
            if reader == "before" and minutes > before_max:
                continue
            runs = [run_child(reader, path) for _ in range(repeats)]
            row[reader] = {
                **{k: v for k, v in runs[0].items() if k != "seconds"},
                "seconds": harness.spread([r["seconds"] for r in runs], 3),
            }
            print(
                f"  {label} {reader}: {row[reader]['seconds']['median']:.2f} s, "
                f"peak {row[reader]['peak_rss_mb']:.0f} MB "
                f"(+{row[reader]['added_mb']:.0f}), decoded {row[reader]['frames_decoded']}",
                flush=True,
            )
        reference = row.get("before", row["seek_each"])
        out[label] = {
            "minutes": minutes,
            "keyframes": label.split("_kf")[1],
            "readers": row,
            "identical": {
                r: v["sha256"] == reference["sha256"] and v["indices"] == reference["indices"]
                for r, v in row.items()
            },
        }
        for r in row.values():
            del r["sha256"], r["indices"]
    return out


def summary(results: dict[str, Any], minutes: list[float], gops: dict[str, int]) -> dict[str, Any]:
    """The done-when ratios: speed-ups over `before` and `seek_each`, and the new reader's
    peak memory on the longest file over the shortest's, per keyframe interval."""

    def med(label: str, reader: str) -> float | None:
        readers = results[label]["readers"]
        return readers[reader]["seconds"]["median"] if reader in readers else None

    out: dict[str, Any] = {}
    for name in gops:
        for m in minutes:
            label = f"{m:g}min_kf{name}"
            new, before, each = med(label, "new"), med(label, "before"), med(label, "seek_each")
            out[label] = {
                "speedup_over_before": round(before / new, 2) if before and new else None,
                "speedup_over_seek_each": round(each / new, 2) if each and new else None,
            }
        short, long = f"{min(minutes):g}min_kf{name}", f"{max(minutes):g}min_kf{name}"
        out[f"new_peak_rss_{max(minutes):g}min_over_{min(minutes):g}min_kf{name}"] = round(
            results[long]["readers"]["new"]["peak_rss_mb"]
            / results[short]["readers"]["new"]["peak_rss_mb"],
            3,
        )
    return out


def page_text(result: dict[str, Any]) -> str:
    """What docs/long_videos.md shows between this script's markers: the table and the
    done-when ratios of a results file."""
    lines = [table(result["files"]), ""]
    if "step_time" in result:
        lines += [*page_lines(result["step_time"]), ""]
    if "encodes" in result:
        lines += [*long_video_encodes.page_lines(result["encodes"]), ""]
    for label, ratios in result["summary"].items():
        if isinstance(ratios, dict):
            parts = [
                f"{name.removeprefix('speedup_over_')} / new = {ratio:.2f}x"
                for name, ratio in ratios.items()
                if ratio is not None
            ]
            lines.append(f"- `{label}`, decode time: " + ", ".join(parts))
        else:
            lines.append(f"- `{label}`: {ratios:.3f}")
    return "\n".join(lines)


def table(results: dict[str, Any]) -> str:
    rows = []
    for res in results.values():
        for reader, r in res["readers"].items():
            rows.append(
                [
                    f"{res['minutes']:g} min",
                    res["keyframes"],
                    reader,
                    f"{r['seconds']['median']:.2f} s",
                    r["frames_decoded"] if r["frames_decoded"] is not None else "-",
                    f"{r['peak_rss_mb']:.0f} MB",
                    f"{r['added_mb']:.0f} MB",
                    "yes" if res["identical"][reader] else "NO",
                ]
            )
    headers = [
        "video",
        "keyframes",
        "reader",
        "decode time",
        "frames decoded",
        "peak RSS",
        "added by decoding",
        "same frames",
    ]
    return harness.markdown_table(headers, rows)


def run_encodes(out: Path, work: Path, quick: bool, repeats: int) -> None:
    """`--encodes`: measure, print, and write the results file's `encodes`, keeping the rest."""
    saved = json.loads(out.read_text()) if out.is_file() else {}
    saved["encodes"] = long_video_encodes.measure_encodes(work, quick, repeats)
    flags = " --quick" if quick else f" --repeats {repeats}"
    saved["encodes"]["command"] = f"python {SCRIPT} --encodes{flags}"
    saved.pop("machine_at_end", None)
    print("\n".join(long_video_encodes.page_lines(saved["encodes"])))
    harness.write_results(out, saved)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", default="1,10,60", help="video lengths, comma-separated")
    parser.add_argument(
        "--before-max-minutes",
        type=float,
        default=10,
        help="skip the old reader on longer files (it decodes all of their frames)",
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs per reader and file (per arm with --encodes)"
    )
    parser.add_argument(
        "--table", action="store_true", help=f"write the results' table into {PAGE.name}"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=0,
        help="instead of decoding: train this many steps on 1-minute videos with prefetch 0 "
        "and 1, into the results file's step_time",
    )
    parser.add_argument(
        "--encodes",
        action="store_true",
        help="instead of decoding: vision encodes per row in a 3-turn tool rollout before and "
        "after the cache encoded each clip once, into the results file's encodes",
    )
    args = harness.parse_args(parser, "long_video", argv)
    if args.encodes:
        run_encodes(args.out, args.work, args.quick, 1 if args.quick else args.repeats)
        return
    if args.steps:
        saved = json.loads(args.out.read_text()) if args.out.is_file() else {}
        saved["step_time"] = measure_steps(args.work, args.steps, args.quick)
        saved.pop("machine_at_end", None)
        print("\n".join(page_lines(saved["step_time"])))
        harness.write_results(args.out, saved)
        return
    if args.table:
        harness.write_marked(PAGE, SCRIPT, page_text(json.loads(args.out.read_text())))
        print(f"wrote the table of {args.out} into {PAGE}")
        return
    minutes = [float(m) for m in args.minutes.split(",")]
    gops = GOPS
    if args.quick:  # one 30 s file of 160x96 frames, a keyframe every 250 frames
        minutes, args.repeats, gops = [0.5], 1, {"250f": GOPS["250f"]}
    run = harness.RunFacts()
    files = make_files(args.work, args.quick, minutes, gops)
    results = measure(files, args.before_max_minutes, args.repeats)
    result = {
        "benchmark": "long_video",
        "command": "python bench/long_video.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "sampling": {"fps": 2.0, "max_frames": 64, "config": "VideoConfig() defaults"},
        "video": {
            "size": "160x96" if args.quick else "1280x720",
            "fps": FPS,
            "codec": "H.264, x264 ultrafast, a 50 s piece repeated",
        },
        "files": results,
        "summary": summary(results, minutes, gops),
        **run.facts(),
    }
    if args.out.is_file() and not args.quick:  # the results of `--steps` and `--encodes`, kept
        earlier = json.loads(args.out.read_text())
        result.update({k: earlier[k] for k in ("step_time", "encodes") if k in earlier})
    print()
    print(page_text(result))
    harness.write_results(args.out, result)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
    else:
        main()
