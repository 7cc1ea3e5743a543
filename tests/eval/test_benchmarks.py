"""Benchmark names resolve to files under the benchmark root; errors say where to put them."""

import pytest

from videorl.data.families import Family
from videorl.errors import ConfigError, DataError
from videorl.eval.benchmarks import REGISTRY, resolve_benchmark


def test_file_path_is_used_as_is(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text("")
    benchmark = resolve_benchmark(str(path))
    assert benchmark.path == path and benchmark.format == "auto"


@pytest.mark.parametrize("name", ["qvhighlights", "QVH", "qv_highlights"])
def test_name_and_aliases_resolve_under_the_root(tmp_path, name):
    (tmp_path / "qvhighlights").mkdir()
    (tmp_path / "qvhighlights" / "highlight_val_release.jsonl").write_text("")
    benchmark = resolve_benchmark(name, benchmark_root=tmp_path)
    assert benchmark.name == "qvhighlights" and benchmark.format == "vtg"
    assert benchmark.family == Family("temporal_grounding")


def test_video_root_is_the_default_root(tmp_path):
    (tmp_path / "tvgbench.jsonl").write_text("")
    assert resolve_benchmark("tvgbench", video_root=tmp_path).path == tmp_path / "tvgbench.jsonl"


def test_missing_annotations_name_the_expected_paths(tmp_path):
    with pytest.raises(DataError, match=r"charades_sta/test\.jsonl.*--benchmark-root"):
        resolve_benchmark("charades", benchmark_root=tmp_path)


def test_unknown_name_suggests(tmp_path):
    with pytest.raises(ConfigError, match="did you mean tvgbench"):
        resolve_benchmark("tvgbenchh", benchmark_root=tmp_path)


def test_registry_covers_the_vtg_benchmarks():
    assert set(REGISTRY) == {"charades_sta", "activitynet_captions", "qvhighlights", "tvgbench"}
