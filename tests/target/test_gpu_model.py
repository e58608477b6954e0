"""The GPU performance model's counts on kernels counted by hand (no timing assertions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import MLCError
from mlc.target.cuda_sim import PROFILES, count, predict, search
from mlc.target.cuda_sim.model import profile, sectors, shared_reads, wavefronts


def _bench():
    """benchmarks/gpu_model.py, whose schedules the notebook and the lead's run use."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_model.py"
    spec = importlib.util.spec_from_file_location("mlc_bench_gpu_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_coalesced_float32_warp_load_is_4_sectors() -> None:
    assert sectors(np.arange(32) * 4) == 4


def test_stride_32_float32_warp_load_is_32_sectors() -> None:
    assert sectors(np.arange(32) * 32 * 4) == 32


def test_same_address_for_the_whole_warp_is_one_sector() -> None:
    assert sectors(np.zeros(32, np.int64)) == 1


def test_two_warps_count_separately() -> None:
    addr = np.tile(np.arange(32) * 4, 2)
    assert sectors(addr, np.repeat([0, 1], 32)) == 8


def test_column_of_32x32_float_shared_array_is_a_32_way_conflict() -> None:
    passes, ideal = wavefronts(np.arange(32) * 32 * 4)
    assert (passes, ideal) == (32, 1)


def test_padding_the_row_to_33_removes_the_conflict() -> None:
    assert wavefronts(np.arange(32) * 33 * 4) == (1, 1)


def test_row_of_shared_array_and_broadcast_have_no_conflict() -> None:
    assert wavefronts(np.arange(32) * 4) == (1, 1)
    assert wavefronts(np.zeros(32, np.int64)) == (1, 1)


def _elementwise(n: int, threads: int):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=threads)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return mlc.lower(s, [A, B, C], target="cuda-sim")


def test_elementwise_counts_over_the_whole_grid() -> None:
    n = 4096
    arrays = [np.ones(n, np.float32) for _ in range(3)]
    (c,) = count(_elementwise(n, 128), *arrays, blocks=4)
    assert (c.blocks, c.threads_per_block, c.sampled_blocks) == (32, 128, 4)
    warps = n // 32
    assert c.global_requests == 3 * warps            # A, B loads and the C store
    assert c.global_sectors == 3 * warps * 4         # 128 bytes per warp = 4 sectors
    assert c.coalescing == 1.0
    assert c.flops == 2 * n                           # a multiply and an add per element
    assert c.dram_bytes == 3 * n * 4
    assert c.shared_wavefronts == 0


def test_shared_tiled_matmul_counts() -> None:
    (c,) = count(mlc.build(_bench().shared_matmul(32, 8).mod, target="cuda-sim"),
                 *[np.ones((32, 32), np.float32) for _ in range(3)], blocks=None)
    assert c.shared_bytes_per_block == 2 * 8 * 8 * 4
    assert c.flops == 2 * 32 ** 3
    assert c.bank_conflict_factor >= 1.0


def test_prediction_ranks_shared_tiles_ahead_of_the_naive_kernel() -> None:
    b = _bench()
    naive_matmul, register_matmul, shared_matmul = b.naive_matmul, b.register_matmul, \
        b.shared_matmul
    n = 256
    args = [np.ones((n, n), np.float32) for _ in range(3)]
    times = {}
    for name, make in (("naive", naive_matmul), ("shared", shared_matmul),
                       ("register", register_matmul)):
        # 16 SMs: even the register tile's 16 blocks fill the laptop GPU at n = 256
        p = predict(mlc.lower(make(n).mod, target="cuda-sim"), *args, gpu="rtx3050-laptop")
        k = p.kernels[0]
        assert k.bound in k.times and 0 < k.counts.occupancy <= 1
        assert k.attainable_gflops > 0 and p.time > 0
        times[name] = p.time
    assert times["register"] < times["shared"] < times["naive"]
    assert "predicted on" in repr(p)


def test_laptop_profile_is_slower_than_h100() -> None:
    func = _elementwise(1 << 16, 256)
    arrays = [np.ones(1 << 16, np.float32) for _ in range(3)]
    assert predict(func, *arrays, gpu="rtx3050-laptop").time > predict(func, *arrays).time


def test_unknown_gpu_names_the_profiles() -> None:
    assert {"h100", "rtx3050-laptop"} <= set(PROFILES)
    with pytest.raises(MLCError, match="h100"):
        profile("gtx480")


# -- shared-memory reads as the compiled kernel makes them ----------------------------------

def _reads(pattern: list[list[int]]) -> tuple[int, int, int]:
    """shared_reads of one warp (lanes 0..31): pattern[e][lane] is the float index lane
    reads in load e (-1: none)."""
    ev, lanes, addr = [], [], []
    for e, row in enumerate(pattern):
        for lane, word in enumerate(row):
            if word >= 0:
                ev.append(e)
                lanes.append(lane)
                addr.append(word * 4)
    lane_ids = np.arange(32)
    return shared_reads(np.array(ev), np.array(lanes), np.array(addr), lane_ids * 0, lane_ids)


def test_a_word_reread_between_barriers_comes_from_a_register() -> None:
    row = list(range(32))
    assert _reads([row]) == (1, 1, 1)
    assert _reads([row, row, row]) == (1, 1, 1)


def test_four_consecutive_floats_per_thread_are_one_float4_load_in_four_passes() -> None:
    # lane t reads A[t, 0..3] in 4 unrolled loads: one ld.shared.v4 (512 bytes, 4 quarter-warps)
    pattern = [[t * 4 + k for t in range(32)] for k in range(4)]
    assert _reads(pattern) == (1, 4, 4)


def test_float4_broadcast_to_two_rows_of_threads_is_served_per_quarter_warp() -> None:
    # the register-tiled matmul's B fragment: lanes t and t + 16 read the same float4
    pattern = [[(t % 16) * 4 + k for t in range(32)] for k in range(4)]
    assert _reads(pattern) == (1, 4, 4)


def test_row_stride_of_a_float4_tile_conflicts_within_a_quarter_warp() -> None:
    # lane t reads row t of a [32, 8] float tile, 8 floats: two float4 loads; in a quarter-warp
    # the rows start 8 words apart, so lanes 0 and 4 meet in bank 0: 2 passes per phase
    pattern = [[t * 8 + k for t in range(32)] for k in range(8)]
    loads, passes, ideal = _reads(pattern)
    assert loads == 2
    assert passes == 2 * 4 * 2 and ideal == 2 * 4


def test_sampling_the_k_loop_gives_the_counts_of_the_full_run() -> None:
    n = 128
    f = mlc.lower(_bench().register_matmul(n).mod, target="cuda-sim")
    args = [np.ones((n, n), np.float32) for _ in range(3)]
    (full,) = count(f, *args, blocks=2, loops=None)
    (sampled,) = count(f, *args, blocks=2, loops=2)
    for name in ("flops", "global_requests", "global_sectors", "shared_requests",
                 "shared_wavefronts"):
        assert getattr(sampled, name) == getattr(full, name), name


def test_the_prediction_is_the_kernel_and_the_launch_is_apart() -> None:
    func = _elementwise(1 << 16, 256)
    arrays = [np.ones(1 << 16, np.float32) for _ in range(3)]
    p = predict(func, *arrays)
    assert p.launch == PROFILES["h100"].launch_us * 1e-6
    assert p.time == p.kernels[0].time
    # 3 x 256 KiB at 3 TB/s, spread over 256 blocks on 132 SMs
    assert p.time < 1e-6


def test_h100_profile_rates_follow_from_the_hardware() -> None:
    h = PROFILES["h100"]
    assert h.fp32_tflops == pytest.approx(132 * 128 * 2 * 1.98 / 1e3)
    assert h.l1_gbs == pytest.approx(132 * 32 * 4 * 1.98)


def test_search_ranks_tile_sizes_by_predicted_time_and_keeps_refusals_last() -> None:
    b = _bench()
    n = 256
    arrays = [np.zeros((n, n), np.float32) for _ in range(3)]

    def lower(cfg):
        if cfg == "bad":
            raise MLCError("no such schedule")
        return mlc.lower(b.gemm(cfg)(n).mod, target="cuda-sim")

    ranked = search([(8, 8, 4, 4, 8, 4), "bad", (8, 16, 8, 8, 8, 4)], lower, *arrays,
                    gpu="rtx3050-laptop")
    # at 256 the 64 x 128 tiles make 8 blocks for 16 SMs: the 32 x 32 tiles (64 blocks) win
    assert [c.config for c in ranked] == [(8, 8, 4, 4, 8, 4), (8, 16, 8, 8, 8, 4), "bad"]
    assert ranked[0].time < ranked[1].time and ranked[2].prediction is None
    assert "no such schedule" in repr(ranked[2]) and "predicted" in repr(ranked[0])


def test_a_block_over_48_kib_of_shared_memory_does_not_fit() -> None:
    from mlc.target.cuda_sim.model import KernelCounts, estimate

    c = KernelCounts("k", blocks=10, threads_per_block=256, sampled_blocks=1, flops=1.0,
                     shared_bytes_per_block=64 * 1024, registers_per_thread=32)
    p = estimate(c, PROFILES["h100"])
    assert p.time == float("inf") and "shared memory per block" in p.bound
