"""scripts/slurm_train.sbatch maps SLURM's variables to torchrun's, checked without SLURM:
fake `scontrol`, `srun` and `torchrun` on PATH record what the script runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "slurm_train.sbatch"


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def _fake_slurm(tmp_path: Path, listing: str, **variables: str) -> tuple[dict, Path]:
    """PATH with fake scontrol (`show hostnames` runs the shell `listing`), srun and
    torchrun (recording its arguments and OMP_NUM_THREADS), and the SLURM `variables`;
    returns (env, record)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "torchrun.args"
    _fake(bin_dir, "scontrol", f'test "$1 $2" = "show hostnames" && {listing}')
    _fake(bin_dir, "srun", 'exec "$@"')
    _fake(
        bin_dir,
        "torchrun",
        f'printf "%s\\n" "$@" > {record}; echo "OMP=$OMP_NUM_THREADS" >> {record}',
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **variables}
    return env, record


def _run_script(tmp_path: Path, env: dict, *args: str) -> None:
    subprocess.run(["bash", str(SCRIPT), *args], env=env, check=True, cwd=tmp_path, timeout=60)


def test_slurm_variables_become_torchrun_arguments(tmp_path):
    env, record = _fake_slurm(
        tmp_path,
        'printf "gpu-a\\ngpu-b\\n"',
        SLURM_JOB_NODELIST="gpu-[a-b]",
        SLURM_NNODES="2",
        SLURM_JOB_ID="4242",
    )
    _run_script(tmp_path, env, "configs/orarl.yaml", "rollout.n=8")
    args = record.read_text().splitlines()
    assert args[:5] == [
        "--nnodes=2",
        "--nproc-per-node=8",
        "--rdzv-id=4242",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=gpu-a:29500",  # the first host of the allocation
    ]
    assert args[5:] == [
        "-m",
        "videorl",
        "train",
        "configs/orarl.yaml",
        "trainer.nproc=16",  # nodes x GPUs per node
        "rollout.n=8",
        "--resume",
        "auto",
        "OMP=8",
    ]


def test_gpus_per_node_is_read_from_the_environment(tmp_path):
    env, record = _fake_slurm(
        tmp_path,
        "echo n1",
        SLURM_JOB_NODELIST="n1",
        SLURM_NNODES="1",
        SLURM_JOB_ID="7",
        GPUS_PER_NODE="4",
    )
    _run_script(tmp_path, env, "c.yaml")
    args = record.read_text().splitlines()
    assert "--nproc-per-node=4" in args and "trainer.nproc=4" in args


def test_a_long_node_list_does_not_kill_the_script(tmp_path):
    """50,000 host names (more than a pipe holds): reading only the first with `head` would
    end the listing with SIGPIPE, fatal under `set -o pipefail`."""
    env, record = _fake_slurm(
        tmp_path,
        'seq -f "node%05g" 1 50000',
        SLURM_JOB_NODELIST="node[00001-50000]",
        SLURM_NNODES="50000",
        SLURM_JOB_ID="9",
    )
    _run_script(tmp_path, env, "c.yaml")
    assert "--rdzv-endpoint=node00001:29500" in record.read_text().splitlines()
