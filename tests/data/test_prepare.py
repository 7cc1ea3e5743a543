"""`videorl prepare`: planted duplicates and benchmark leaks, quotas, canary, determinism."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from videorl.data.families import Family
from videorl.data.identity import LeakIndex, normalize_path, normalize_text, sample_identity
from videorl.data.loaders import load_records
from videorl.data.prepare import load_spec, prepare
from videorl.data.records import ChoiceAnswer, MediaRef, TaskRecord, TemporalAnswer
from videorl.errors import ConfigError, DataError


def jsonl(path: Path, rows: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path.name


def sources_yaml(folder: Path, **spec) -> Path:
    path = folder / "sources.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def vtg(qid: int, query: str, vid: str, window=(1.0, 3.0)) -> dict:
    return {
        "qid": qid,
        "query": query,
        "duration": 30.0,
        "vid": vid,
        "relevant_windows": [list(window)],
    }


def timer(video: str, sentence: str, window: tuple[float, float]) -> dict:
    return {"video": video, "duration": 30.0, "timestamp": list(window), "sentence": sentence}


def mcq(question: str, options: list[str], answer: str, video: str, subtype: str) -> dict:
    return {
        "question": question,
        "options": options,
        "answer": answer,
        "video": video,
        "question_type": subtype,
    }


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """Three sources, two benchmarks; every duplicate and leak below is planted on purpose.

    charades (vtg, 6 rows, media under videos/): c4 repeats c1 with other case, punctuation,
      spacing and answer (duplicate within); c5 is on a benchmark's video by stem (b7.webm vs
      b7.mp4); c6 is on a benchmark's exact path.
    timer (timer1, 4 rows, same media root): t1 repeats c2 (duplicate across sources);
      t2 asks c3's question on another video (not a duplicate); t4's file shares only
      its basename with a benchmark video in another folder.
    qa (mcq, 4 rows): q1 is a benchmark question verbatim (identity); q4 has a filtered-out
      subtype.
    """
    media = tmp_path / "videos"
    jsonl(
        tmp_path / "charades.jsonl",
        [
            vtg(1, "A person opens the door.", "v1"),
            vtg(2, "a person sits down", "v2"),
            vtg(3, "a dog runs", "v3"),
            vtg(4, "a PERSON   opens the door!", "v1", window=(5.0, 9.0)),
            vtg(5, "someone waves", "b7"),
            vtg(6, "someone laughs", "bench_exact"),
        ],
    )
    jsonl(
        tmp_path / "timer.jsonl",
        [
            timer("v2.mp4", "A person sits down", (2.0, 4.0)),
            timer("v9.mp4", "a dog runs", (2.0, 4.0)),
            timer("v10.mp4", "a cat jumps", (0.0, 1.0)),
            timer("sub/shared_name.mp4", "a bird sings", (0.0, 1.0)),
        ],
    )
    jsonl(
        tmp_path / "qa.jsonl",
        [
            mcq("What color is the car?", ["red", "blue"], "A", "q1.mp4", "color"),
            mcq("How many people?", ["one", "two"], "B", "q2.mp4", "count"),
            mcq("Is it raining?", ["yes", "no"], "A", "q3.mp4", "weather"),
            mcq("Which room?", ["kitchen", "hall"], "A", "q4.mp4", "ignored"),
        ],
    )
    jsonl(
        tmp_path / "bench" / "tg_test.jsonl",
        [
            {**vtg(100, "unrelated query", "b7"), "video_file": "b7.webm"},  # c5 by stem
            {**vtg(101, "another query", "x"), "video_file": str(media / "bench_exact.mp4")},
            {**vtg(102, "third", "y"), "video_file": "other/shared_name.mp4"},
        ],
    )
    jsonl(
        tmp_path / "bench" / "qa_test.jsonl",
        [
            mcq("what color is the car", ["red", "blue"], "B", str(media / "q1.mp4"), "COLOR"),
        ],
    )
    (media / "v1.mp4").parent.mkdir(parents=True, exist_ok=True)
    (media / "v1.mp4").write_bytes(b"\0")  # one media file exists; the manifest counts it
    return sources_yaml(
        tmp_path,
        seed=3,
        sources=[
            {
                "name": "charades",
                "path": "charades.jsonl",
                "format": "vtg",
                "quota": 3,
                "media_root": "videos",
            },
            {"name": "timer", "path": "timer.jsonl", "format": "timer1", "media_root": "videos"},
            {
                "name": "qa",
                "path": "qa.jsonl",
                "format": "mcq",
                "family": "video_qa",
                "media_root": "videos",
                "subtypes": ["color", "count", "weather"],
            },
        ],
        benchmarks=[
            {"name": "tg_test", "path": "bench/tg_test.jsonl", "format": "vtg"},
            {"name": "qa_test", "path": "bench/qa_test.jsonl", "format": "mcq"},
        ],
    )


def test_planted_duplicates_and_leaks_are_removed_with_counts(planted, tmp_path):
    result = prepare(planted, tmp_path / "out")
    manifest = result.manifest
    charades, timer, qa = (manifest["sources"][n]["counts"] for n in ("charades", "timer", "qa"))
    assert (charades["leaked"], charades["duplicates_within"], charades["selected"]) == (2, 1, 3)
    assert (timer["duplicates_across"], timer["leaked"], timer["selected"]) == (1, 1, 2)
    assert (qa["leaked"], qa["subtype_filtered"], qa["selected"]) == (1, 1, 2)
    tg, qa_bench = manifest["benchmarks"]["tg_test"], manifest["benchmarks"]["qa_test"]
    assert tg["excluded"] == {"identity": 0, "path": 1, "basename": 1, "stem": 1, "total": 3}
    assert qa_bench["excluded"] == {"identity": 1, "path": 0, "basename": 0, "stem": 0, "total": 1}
    assert manifest["exclusions"]["leaked"] == 4 and manifest["exclusions"]["duplicates"] == 2
    ids = [row["id"] for row in read_jsonl(result.train_path)]
    assert ids == [
        "charades/1",
        "charades/2",
        "charades/3",
        "timer/timer-2",
        "timer/timer-3",
        "qa/qa-2",
        "qa/qa-3",
    ]
    assert manifest["train"]["families"] == {"temporal_grounding": 5, "video_qa": 2}
    assert manifest["train"]["media_files"] == 7 and manifest["train"]["media_files_present"] == 1
    assert manifest["outputs"]["train.jsonl"]["sha256"] and read_jsonl(result.canary_path) == []
    assert len(load_records(result.train_path).records) == 7  # readable as training data


def test_leak_match_path_keeps_basename_and_stem_matches(planted, tmp_path):
    spec = yaml.safe_load(planted.read_text())
    sources_yaml(tmp_path, **{**spec, "leak_match": "path"})
    manifest = prepare(planted, tmp_path / "out").manifest
    assert manifest["benchmarks"]["tg_test"]["excluded"] == {"identity": 0, "path": 1, "total": 1}
    assert manifest["sources"]["timer"]["counts"]["selected"] == 3  # shared_name.mp4 kept


def test_same_inputs_and_seed_give_byte_identical_outputs(tmp_path):
    jsonl(tmp_path / "a.jsonl", [vtg(i, f"query {i}", f"v{i}") for i in range(40)])
    files = ("train.jsonl", "canary.jsonl", "manifest.json")

    def run(seed: int, out: str) -> list[bytes]:
        sources_yaml(
            tmp_path,
            seed=seed,
            canary={"count": 4},
            sources=[{"name": "a", "path": "a.jsonl", "quota": 10}],
        )
        prepare(tmp_path / "sources.yaml", tmp_path / out)
        return [(tmp_path / out / f).read_bytes() for f in files]

    first, again, other = run(0, "one"), run(0, "two"), run(1, "three")
    assert first == again
    assert first[0] != other[0] and first[1] != other[1]  # the seed drives the selection
    manifest = json.loads(first[2])
    assert manifest["seed"] == 0 and manifest["canary"]["records"] == 4


def test_quota_shortfall_names_the_source_and_the_amount(tmp_path):
    jsonl(tmp_path / "a.jsonl", [vtg(i, f"query {i}", f"v{i}") for i in range(5)])
    jsonl(tmp_path / "b.jsonl", [vtg(i, "same query", "same") for i in range(3)])
    sources_yaml(
        tmp_path,
        sources=[
            {"name": "a", "path": "a.jsonl", "quota": 5},
            {"name": "b", "path": "b.jsonl", "quota": 3},
        ],
    )
    with pytest.raises(DataError, match=r"source 'b' is short by 2 \(quota 3, selected 1.* 2 dup"):
        prepare(tmp_path / "sources.yaml", tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written


def test_tightest_quota_first_under_a_shared_media_cap(tmp_path):
    # Both sources ask about the same 4 videos; one prompt per video. `scarce` needs all 4,
    # `plenty` needs 4 of its 8 (two per video). Listed first, `plenty` would still starve
    # `scarce` if it were served first.
    jsonl(
        tmp_path / "plenty.jsonl",
        [vtg(i, f"plenty {i}", f"v{i % 4}") for i in range(8)]
        + [vtg(10 + i, f"own {i}", f"own{i}") for i in range(4)],
    )
    jsonl(tmp_path / "scarce.jsonl", [vtg(i, f"scarce {i}", f"v{i}") for i in range(4)])
    sources_yaml(
        tmp_path,
        max_prompts_per_media=1,
        sources=[
            {"name": "plenty", "path": "plenty.jsonl", "quota": 4},
            {"name": "scarce", "path": "scarce.jsonl", "quota": 4},
        ],
    )
    result = prepare(tmp_path / "sources.yaml", tmp_path / "out")
    assert result.manifest["selection_order"] == ["scarce", "plenty"]
    train = read_jsonl(result.train_path)
    videos = [Path(row["video"]["path"]).name for row in train]
    assert len(videos) == len(set(videos)) == 8  # the cap holds across sources
    assert sum(row["id"].startswith("scarce/") for row in train) == 4


def test_media_cap_limits_prompts_per_video(tmp_path):
    jsonl(tmp_path / "a.jsonl", [vtg(i, f"query {i}", f"v{i % 2}") for i in range(6)])
    sources_yaml(
        tmp_path, max_prompts_per_media=2, sources=[{"name": "a", "path": "a.jsonl"}]
    )  # quota null: take all it can
    counts = prepare(tmp_path / "sources.yaml", tmp_path / "out").manifest["sources"]["a"]["counts"]
    assert counts["selected"] == 4 and counts["media_capped"] == 2


def test_canary_media_is_disjoint_from_training_and_spares_tight_quotas(tmp_path):
    jsonl(tmp_path / "big.jsonl", [vtg(i, f"query {i}", f"v{i // 3}") for i in range(30)])
    jsonl(tmp_path / "tight.jsonl", [vtg(i, f"tight {i}", f"t{i}") for i in range(5)])
    sources_yaml(
        tmp_path,
        seed=7,
        canary={"fraction": 0.2},
        sources=[
            {"name": "big", "path": "big.jsonl", "quota": 20},
            {"name": "tight", "path": "tight.jsonl", "quota": 5},
        ],
    )
    result = prepare(tmp_path / "sources.yaml", tmp_path / "out")
    canary, train = read_jsonl(result.canary_path), read_jsonl(result.train_path)
    assert len(canary) == 7  # round(0.2 * 35)
    canary_media = {row["video"]["path"] for row in canary}
    assert not canary_media & {row["video"]["path"] for row in train}
    assert all(row["id"].startswith("big/") for row in canary)  # tight has no surplus
    counts = result.manifest["sources"]["big"]["counts"]
    assert counts["canary"] == 7 and counts["canary_media"] == 3 * len(canary_media) - 7
    assert result.manifest["canary"]["media_files"] == len(canary_media)


def test_canary_that_would_starve_a_quota_fails(tmp_path):
    jsonl(tmp_path / "a.jsonl", [vtg(i, f"query {i}", f"v{i}") for i in range(5)])
    sources_yaml(
        tmp_path, canary={"count": 2}, sources=[{"name": "a", "path": "a.jsonl", "quota": 4}]
    )
    with pytest.raises(DataError, match="canary needs 2 samples but only 1"):
        prepare(tmp_path / "sources.yaml", tmp_path / "out")


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            {"sources": [{"name": "a", "path": "a.jsonl", "quot": 3}]},
            r"'sources\[0\]\.quot' is unknown; did you mean 'quota'",
        ),
        (
            {"sources": [{"name": "a", "path": "a.jsonl"}], "benchmark": []},
            r"'benchmark' is unknown; did you mean 'benchmarks'",
        ),
        ({"sources": [{"name": "a"}]}, r"sources\[0\]: key 'path' is missing"),
        ({"sources": [{"name": "a", "path": "a.jsonl", "quota": 0}]}, r"sources\[0\]\.quota=0"),
        (
            {"sources": [{"name": "a", "path": "a.jsonl", "format": "csv"}]},
            r"format='csv' is unknown",
        ),
        ({"sources": [{"name": "a", "path": "a.jsonl", "family": "tgg"}]}, r"unknown task family"),
        (
            {"sources": [{"name": "a", "path": "x"}, {"name": "a", "path": "y"}]},
            r"'a' is used twice",
        ),
        (
            {"sources": [{"name": "a", "path": "a"}], "canary": {"count": 1, "fraction": 0.1}},
            r"canary: set only one of 'fraction'",
        ),
        ({"sources": [{"name": "a", "path": "a"}], "leak_match": "name"}, r"'leak_match' = 'name'"),
        ({"seed": 1}, r"key 'sources' is missing"),
    ],
)
def test_sources_file_errors_name_the_key_and_the_fix(tmp_path, spec, message):
    path = sources_yaml(tmp_path, **spec)
    with pytest.raises(ConfigError, match=message) as err:
        load_spec(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_identity_ignores_spelling_and_answer_but_not_subtype_or_clip():
    base = TaskRecord(
        id="1",
        family=Family("video_qa"),
        problem="What color is the car?",
        answer=ChoiceAnswer("A"),
        video=MediaRef(path="/d/Videos/a.mp4"),
        options=("red", "blue"),
        subtype="color",
    )
    same = TaskRecord(
        id="2",
        family=Family("video_qa"),
        problem="  what COLOR is the car ",
        answer=ChoiceAnswer("B"),
        video=MediaRef(path="/d/videos/./A.MP4"),
        subtype="Color",
    )
    assert sample_identity(base) == sample_identity(same)
    other_subtype = TaskRecord(**{**base.__dict__, "subtype": "shade"})
    clip = TaskRecord(
        **{**base.__dict__, "video": MediaRef(path="/d/videos/a.mp4", start=0.0, end=5.0)}
    )
    assert len({sample_identity(r) for r in (base, other_subtype, clip)}) == 3
    assert normalize_text("Hello,  World!\n") == "hello world"
    assert normalize_path("C:\\Data\\x\\..\\Clip.MP4") == "c:/data/clip.mp4"


def test_leak_index_reports_the_strongest_rule_per_benchmark():
    def tg(path: str, problem: str = "q") -> TaskRecord:
        return TaskRecord(
            id="x",
            family=Family("temporal_grounding"),
            problem=problem,
            answer=TemporalAnswer(((0.0, 1.0),)),
            video=MediaRef(path=path),
        )

    index = LeakIndex("stem")
    index.add("b1", tg("/bench/a.mp4"))
    index.add("b2", tg("/other/a.webm"))
    record = tg("/bench/a.mp4")
    assert index.matches(record, sample_identity(record)) == {"b1": "identity", "b2": "stem"}
    unrelated = tg("/bench/b.mp4")
    assert index.matches(unrelated, sample_identity(unrelated)) == {}


def test_cli_prepare_writes_outputs_and_reports_errors_in_one_line(
    planted, tmp_path, monkeypatch, capsys
):
    from videorl import cli

    out = tmp_path / "cli_out"
    monkeypatch.setattr(
        sys, "argv", ["videorl", "prepare", "--sources", str(planted), "--out", str(out)]
    )
    with pytest.raises(SystemExit) as done:
        cli.main()
    assert done.value.code == 0
    assert {p.name for p in out.iterdir()} == {"train.jsonl", "canary.jsonl", "manifest.json"}
    assert "wrote 7 training and 0 canary records" in capsys.readouterr().out
    bad = sources_yaml(tmp_path, sources=[{"name": "a", "path": "a.jsonl", "quota": 1}])
    monkeypatch.setattr(
        sys, "argv", ["videorl", "prepare", "--sources", str(bad), "--out", str(out)]
    )
    with pytest.raises(SystemExit) as failed:
        cli.main()
    assert failed.value.code == 2
    printed = capsys.readouterr().out
    assert "error:" in printed and "data file not found" in printed


def test_prepare_never_writes_into_its_own_inputs_nor_a_non_empty_out(
    planted, tmp_path, monkeypatch, capsys
):
    from tests.cli_runner import run_cli

    source = planted.parent / "charades.jsonl"
    before = source.read_bytes()
    for flags in ((), ("--overwrite",)):  # the source lies inside --out
        result = run_cli(
            capsys, monkeypatch, "prepare", "--sources", planted, "--out", planted.parent, *flags
        )
        assert result.code == 2 and len(result.lines) == 1, result.output
        assert "overlaps its own input" in result.output
    assert source.read_bytes() == before

    out = tmp_path / "mixture"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    args = ("prepare", "--sources", planted, "--out", out)
    refused = run_cli(capsys, monkeypatch, *args)
    assert refused.code == 2 and "is not empty; pass --overwrite" in refused.output
    assert [p.name for p in out.iterdir()] == ["notes.md"]
    assert run_cli(capsys, monkeypatch, *args, "--overwrite").code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "canary.jsonl",
        "manifest.json",
        "notes.md",
        "train.jsonl",
    ]


def test_the_documented_sources_file_is_valid(tmp_path):
    """docs/data.md's SOURCES.yaml example loads as written (the format is documented there)."""
    from videorl.data.prepare import load_spec

    page = (Path(__file__).resolve().parents[2] / "docs" / "data.md").read_text()
    block = page.split("<!-- sources-example -->", 1)[1].split("<!-- end of sources-example -->")[0]
    example = block.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "SOURCES.yaml").write_text(example)
    spec = load_spec(tmp_path / "SOURCES.yaml")
    assert [s.name for s in spec.sources] == ["charades", "nextqa"]
    assert spec.sources[1].subtypes == ("causal", "temporal") and spec.canary.fraction == 0.05
    assert [b.name for b in spec.benchmarks] == ["charades_test"]
