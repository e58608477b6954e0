"""A hostile student on the VDLA accelerator: cores that are not 8 x 8 x 8, loops too big to
simulate, tampered bias arrays, bad calls of a compiled VDLA module, the hetero MLP with
inputs of the wrong width. Results are compared with numpy; mistakes must raise an MLCError
that says what would work."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc.errors import (
    ArgumentError,
    ArgumentTypeError,
    MLCError,
    VDLAProgramError,
)
from mlc.vdla import DRAM, Alu, AluOp, Finish, Gemm, Load, Program, UOp, simulate, uop_buffer
from mlc.vdla.config import VDLAConfig
from mlc.vdla.conv import ConvTiling, conv2d, conv2d_reference
from mlc.vdla.gemm import GemmTiling, gemm
from mlc.vdla.schedules import gemm_schedule

RNG = np.random.default_rng(7)


def _int8(*shape: int) -> np.ndarray:
    return RNG.integers(-128, 128, shape).astype(np.int8)


# ---------------------------------------------------------------------------------------------
# cores whose tiles 256 bytes does not divide: DRAM regions started between two tiles


@pytest.mark.parametrize("config, m, n, k", [
    (VDLAConfig(batch=3, block_in=5, block_out=7), 13, 17, 29),   # 15/35/84-byte tiles
    (VDLAConfig(batch=16, block_in=16, block_out=16), 33, 17, 40),  # 1024-byte acc tiles
])
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_on_a_core_whose_tiles_do_not_divide_256_bytes(
    config: VDLAConfig, m: int, n: int, k: int, threads: int
) -> None:
    """Regions were 256-byte aligned and a region's tile address was base // tile_bytes
    (rounded down): a correct program was refused ("touches DRAM bytes ... in no region")."""
    a, w = _int8(m, k), _int8(n, k)
    out, _, _ = gemm(a, w, GemmTiling(2, 2, 2), threads, config)
    np.testing.assert_array_equal(out, a.astype(np.int64) @ w.astype(np.int64).T)


def test_conv2d_on_a_core_whose_tiles_do_not_divide_256_bytes() -> None:
    config = VDLAConfig(batch=3, block_in=5, block_out=7)
    x, w = _int8(3, 5, 4, 4), _int8(14, 5, 3, 3)
    bias = RNG.integers(-1000, 1000, 14).astype(np.int32)
    out, _, _ = conv2d(x, w, bias, 8, True, ConvTiling(2, 1), 1, config)
    np.testing.assert_array_equal(out, conv2d_reference(x, w, bias, 8, True))


def test_a_region_that_does_not_start_on_a_tile_is_an_error_not_rounded_down() -> None:
    dram = DRAM()  # 256-byte regions
    dram.alloc("A", 10)
    b = dram.alloc("B", 1024)
    with pytest.raises(VDLAProgramError, match=r"region 'B' starts at byte 256, which is not "
                                               r"a whole number of 1024-byte tiles.*dram_align"):
        b.out_tile(1024)
    assert VDLAConfig(batch=16, block_in=16, block_out=16).dram_align == 1024
    assert VDLAConfig().dram_align == 256


@pytest.mark.parametrize("field, value, message", [
    ("acc_buffer_bytes", 2**40, "at most 268,435,456"),
    ("inp_buffer_bytes", 10**12, "at most 268,435,456"),
    ("batch", 10**6, "tile side of at most 1024"),
    ("dram_latency", True, "dram_latency must be an int >= 0, got True"),
    ("block_in", 8.0, "block_in must be an int >= 1, got 8.0"),
])
def test_configs_the_simulator_cannot_hold_are_refused(field: str, value: object,
                                                        message: str) -> None:
    """A 1 TiB accumulator buffer was accepted and the simulator's np.zeros died (or the
    kernel killed the process)."""
    with pytest.raises(VDLAProgramError, match=message):
        VDLAConfig(**{field: value})


def test_a_config_of_numpy_integers_works() -> None:
    config = VDLAConfig(batch=np.int64(8), block_in=np.int32(8))  # type: ignore[arg-type]
    assert config.batch == 8 and type(config.batch) is int
    a, w = _int8(8, 8), _int8(8, 8)
    out, _, _ = gemm(a, w, GemmTiling(1, 1, 1), 1, config)
    np.testing.assert_array_equal(out, a.astype(np.int64) @ w.astype(np.int64).T)


# ---------------------------------------------------------------------------------------------
# instructions whose loops no memory can hold


@pytest.mark.parametrize("ins, message", [
    (Gemm(uop_begin=0, uop_end=1, lp0=10**6, lp1=10**6), "lp0=1,000,000 but the loop fields"),
    (Alu(op=AluOp.ADD, uop_begin=0, uop_end=1, lp0=1, lp1=10**5, imm=1),
     "lp1=100,000 but the loop fields"),
    (Gemm(uop_begin=0, uop_end=1, lp0=16000, lp1=16000), "the simulator runs at most 262,144"),
])
def test_a_loop_too_big_to_simulate_is_refused_before_it_runs(ins: Gemm | Alu,
                                                              message: str) -> None:
    """Factors (0, 0) keep every access in range, so the check passed and the machine built
    an index grid of 10**12 int64: MemoryError (or the kernel killed the process)."""
    load = Load(scope=uop_buffer, sram_base=0, dram_base=0, y_size=1, x_size=1, x_stride=1)
    program = Program((load, ins, Finish()), (UOp(0, 0, 0),))
    with pytest.raises(VDLAProgramError, match=message):
        simulate(program, DRAM())


# ---------------------------------------------------------------------------------------------
# conv2d's bias and shift


@pytest.mark.parametrize("bias, message", [
    (np.full(8, 1.7), "bias must hold int32 values.*float64"),
    (np.full(8, 2**40, dtype=np.int64), "bias must hold int32 values.*1099511627776"),
])
def test_conv2d_refuses_a_bias_it_would_truncate_or_wrap(bias: np.ndarray, message: str) -> None:
    """bias.astype(np.int32) turned 1.7 into 1 and 2**40 into 0 without a word."""
    x, w = _int8(8, 8, 4, 4), _int8(8, 8, 3, 3)
    with pytest.raises(VDLAProgramError, match=message):
        conv2d(x, w, bias, 8, False, ConvTiling(2, 1))


def test_conv2d_takes_a_numpy_integer_shift() -> None:
    x, w = _int8(8, 8, 4, 4), _int8(8, 8, 3, 3)
    bias = RNG.integers(-1000, 1000, 8).astype(np.int32)
    out, _, _ = conv2d(x, w, bias, np.int64(6), False, ConvTiling(2, 1))  # type: ignore[arg-type]
    np.testing.assert_array_equal(out, conv2d_reference(x, w, bias, 6, False))


# ---------------------------------------------------------------------------------------------
# calling a module built for target="vdla"


@pytest.fixture(scope="module")
def vdla_gemm() -> object:
    s, args = gemm_schedule(32, 32, 32, block=16)
    return mlc.build(s, args, target="vdla")


def _abc() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _int8(32, 32), _int8(32, 32), np.zeros((32, 32), np.int32)


def test_the_vdla_module_computes_what_numpy_does(vdla_gemm) -> None:  # type: ignore[no-untyped-def]
    a, b, c = _abc()
    vdla_gemm(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64).T)


@pytest.mark.parametrize("make, error, message", [
    (lambda a, b, c: ((a, b), {}), ArgumentTypeError, r"takes 3 arrays by position.*got 2"),
    (lambda a, b, c: ((a, b), {"C": c}), ArgumentTypeError, r"got the keyword\(s\) C="),
    (lambda a, b, c: ((a.astype(np.int16), b, c), {}), ArgumentTypeError,
     "argument 0 'A' must be a numpy array of int8, got dtype int16"),
    (lambda a, b, c: ((a.tolist(), b, c), {}), ArgumentTypeError, "got list"),
    (lambda a, b, c: ((a[:16], b, c), {}), ArgumentError, r"shape \(16, 32\) but the program"),
    (lambda a, b, c: ((np.ma.masked_array(a, mask=a > 0), b, c), {}), ArgumentTypeError,
     "masked array"),
])
def test_a_wrong_call_of_the_vdla_module_is_a_typed_error(vdla_gemm, make, error,  # type: ignore[no-untyped-def]
                                                          message: str) -> None:
    """They were plain ValueError / TypeError, and a masked input ran with its mask ignored."""
    args, kwargs = make(*_abc())
    with pytest.raises(error, match=message):
        vdla_gemm(*args, **kwargs)


def test_a_read_only_output_of_the_vdla_module_is_refused_before_it_runs(vdla_gemm) -> None:  # type: ignore[no-untyped-def]
    """It ran the whole simulation, then np.copyto raised ValueError."""
    a, b, c = _abc()
    c.flags.writeable = False
    with pytest.raises(ArgumentError, match="argument 2 'C' is written by the program but the "
                                            "array is read-only"):
        vdla_gemm(a, b, c)


def test_odd_virtual_thread_counts_compile_and_compute_right() -> None:
    s, args = gemm_schedule(48, 32, 32, block=16, threads=3)
    f = mlc.build(s, args, target="vdla")
    a, b, c = _int8(48, 32), _int8(32, 32), np.zeros((48, 32), np.int32)
    f(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64).T)


# ---------------------------------------------------------------------------------------------
# the hetero CPU + VDLA MLP: an input of the wrong shape was zero-padded (too few features,
# a silently wrong answer) or failed in numpy; an unknown accelerator was a plain ValueError


@pytest.fixture(scope="module")
def small_mlp():  # type: ignore[no-untyped-def]
    from mlc.graph.hetero import build_hetero_mlp, quantize_mlp_for_vdla

    def normal(*shape: int) -> np.ndarray:
        return RNG.normal(size=shape).astype(np.float32)

    params = [(normal(16, 12), normal(16)), (normal(5, 16), normal(5))]
    x = RNG.normal(size=(8, 12)).astype(np.float32)
    qm = quantize_mlp_for_vdla(params, x)
    return build_hetero_mlp(qm, 8), qm, x


def test_the_hetero_mlp_matches_numpy(small_mlp) -> None:  # type: ignore[no-untyped-def]
    from mlc.graph.hetero import integer_forward

    net, qm, x = small_mlp
    np.testing.assert_array_equal(net.logits(x), integer_forward(qm, x))


def test_the_hetero_mlp_refuses_too_few_features(small_mlp) -> None:  # type: ignore[no-untyped-def]
    net, _, x = small_mlp
    with pytest.raises(MLCError, match="12"):
        net.logits(x[:, :10])  # 10 features for a layer of 12: silently padded with zeros


@pytest.mark.parametrize("shape", [(8, 20), (12,)])
def test_the_hetero_mlp_refuses_an_input_of_the_wrong_shape(small_mlp, shape) -> None:  # type: ignore[no-untyped-def]
    net, _, _ = small_mlp
    with pytest.raises(MLCError):
        net.logits(np.zeros(shape, np.float32))


def test_build_hetero_mlp_refuses_an_unknown_accelerator_with_a_typed_error(small_mlp) -> None:  # type: ignore[no-untyped-def]
    from mlc.graph.hetero import build_hetero_mlp

    _, qm, _ = small_mlp
    with pytest.raises(MLCError, match="cuda"):
        build_hetero_mlp(qm, 8, accel="cuda")


# ---------------------------------------------------------------------------------------------
# DRAM misuse


def test_dram_misuse_is_a_typed_error() -> None:
    """get of a region that does not exist was a KeyError, of the wrong size numpy's
    ValueError; an object array a TypeError; a 1 PiB region a MemoryError."""
    dram = DRAM()
    dram.put("A", np.arange(16, dtype=np.int8))
    with pytest.raises(VDLAProgramError, match=r"no DRAM region named 'B'; the regions are"):
        dram.get("B", np.int8, (16,))
    with pytest.raises(VDLAProgramError, match="holds 16 bytes, but int32 of shape"):
        dram.get("A", np.int32, (16,))
    with pytest.raises(VDLAProgramError, match="an array of object has no bytes"):
        dram.put("O", np.array([1, "a"], dtype=object))
    with pytest.raises(VDLAProgramError, match="32-bit addresses"):
        dram.alloc("H", 2**50)
    np.testing.assert_array_equal(dram.get("A", np.int8, (4, 4)), np.arange(16).reshape(4, 4))


def test_arguments_of_the_wrong_kind_are_typed_errors_and_tiling_tuples_work() -> None:
    """A dict for the config, None for the DRAM, a list for a program were AttributeErrors;
    a tiling written as a tuple (gemm(a, w, (1, 1, 1))) was one too."""
    a, w = _int8(8, 8), _int8(16, 8)
    out, _, program = gemm(a, w, (1, 1, 1))  # type: ignore[arg-type]
    np.testing.assert_array_equal(out, a.astype(np.int64) @ w.astype(np.int64).T)
    with pytest.raises(VDLAProgramError, match="config must be a vdla.VDLAConfig"):
        gemm(a, w, config={"batch": 8})  # type: ignore[arg-type]
    with pytest.raises(VDLAProgramError, match="config must be a vdla.VDLAConfig"):
        simulate(program, DRAM(), {"batch": 8})  # type: ignore[arg-type]
    with pytest.raises(VDLAProgramError, match="simulate needs a vdla.DRAM"):
        simulate(program, None)  # type: ignore[arg-type]
    with pytest.raises(VDLAProgramError, match="GemmTiling.*or a tuple of three ints, got 3"):
        gemm(a, w, 3)  # type: ignore[arg-type]
    with pytest.raises(VDLAProgramError, match="insert_dependencies expects a vdla Program"):
        mlc.vdla.insert_dependencies(list(program.instructions))  # type: ignore[arg-type]
    x, wt = _int8(8, 8, 4, 4), _int8(8, 8, 3, 3)
    bias = np.zeros(8, np.int32)
    got, _, _ = conv2d(x, wt, bias, 8, False, (2, 1))  # type: ignore[arg-type]
    np.testing.assert_array_equal(got, conv2d_reference(x, wt, bias, 8, False))


def test_get_source_of_an_unknown_format_is_an_error_not_the_instructions(vdla_gemm) -> None:  # type: ignore[no-untyped-def]
    """get_source("ll") (or any typo) returned the instruction stream as if it were asked."""
    instructions = vdla_gemm.get_source()
    assert "FINISH" in instructions and vdla_gemm.get_source("asm") == instructions
    assert vdla_gemm.get_source("ir") != instructions
    with pytest.raises(ArgumentError, match="unknown source format 'll' for a VDLA module"):
        vdla_gemm.get_source("ll")


def test_the_instruction_base_class_is_not_an_instruction() -> None:
    """vdla.Instruction() passed the checks and the simulator died of NotImplementedError
    (its opcode)."""
    with pytest.raises(VDLAProgramError, match="not a VDLA instruction .Load, Store"):
        simulate(Program((mlc.vdla.Instruction(), Finish())), DRAM())
