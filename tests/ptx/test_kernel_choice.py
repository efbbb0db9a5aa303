"""``KernelChoice``: a function's kernel variants tried in order, each admitted by its guard,
each later one made on the first launch that needs it; and ``build_choice``, which makes
the variants ``offload.ptx.plan`` declares (index widths, then thread mappings)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from offload.lowering import check_and_lower
from offload.opt.manager import run_pipeline
from offload.options import CompileOptions
from offload.ptx.choice import (
    WALK_THREADS_PER_SM,
    FillGuard,
    KernelChoice,
    Variant,
    WalkGuard,
    build_choice,
)
from offload.ptx.config import tile_count
from offload.ptx.guard import IndexGuard
from offload.ptx.plan import GPU_PLAN, SIM_PLAN

pytestmark = pytest.mark.unit


@dataclass
class _Source:
    tile: int | None
    blocking: tuple[int, ...]
    index_bits: int = 32
    unit_last: bool = False


@dataclass
class _Kernel:
    source: _Source
    launches: list[tuple[int, ...]] = field(default_factory=list)

    def launch(self, shape, outs, captures):
        self.launches.append(shape)


def _fills(kernel: _Kernel) -> FillGuard:
    return FillGuard(kernel.source.tile, kernel.source.blocking, 132)


def _chain(kernels: list[_Kernel], made: list[int]) -> KernelChoice:
    """Blocked kernels then the unblocked one, each but the last guarded by its fill."""

    def make(k: int) -> Variant:
        made.append(k)
        last = k == len(kernels) - 1
        return Variant(f"v{k}", kernels[k], None if last else _fills(kernels[k]))

    return KernelChoice([f"v{k}" for k in range(len(kernels))], make)


def test_tiles_count_the_blocked_elements_per_tile():
    assert tile_count((2048, 2048), 16, (8, 8)) == 16 * 16
    assert tile_count((129, 1), 16, (8, 8)) == 2
    assert tile_count((100, 300), 16, (4, 2)) == 2 * 10


def test_large_spaces_take_the_first_variant_and_never_build_the_other():
    made: list[int] = []
    blocked, plain = _Kernel(_Source(16, (8, 8))), _Kernel(_Source(16, ()))
    choice = _chain([blocked, plain], made)
    choice.launch((2048, 2048), [], [])
    assert blocked.launches == [(2048, 2048)] and made == [0]
    assert choice.leading() is blocked and choice.first.name == "v0"


def test_small_spaces_take_the_next_variant_made_once():
    made: list[int] = []
    blocked, plain = _Kernel(_Source(16, (8, 8))), _Kernel(_Source(16, ()))
    choice = _chain([blocked, plain], made)
    choice.launch((512, 512), [], [])  # 16 tiles of 128 x 128 < 132 SMs
    choice.launch((1000, 1000), [], [])  # 64 tiles
    assert not blocked.launches and made == [0, 1]
    assert plain.launches == [(512, 512), (1000, 1000)]
    choice.launch((1700, 1700), [], [])  # 14 x 14 = 196 tiles
    assert blocked.launches == [(1700, 1700)]


def test_the_largest_blocking_that_fills_the_machine_runs():
    plain = _Kernel(_Source(16, ()))
    kernels = [_Kernel(_Source(16, (8, 8))), _Kernel(_Source(16, (4, 4))), plain]
    choice = _chain(kernels, [])
    assert choice.pick((2048, 2048), []).source.blocking == (8, 8)
    assert choice.pick((1100, 1100), []).source.blocking == (4, 4)  # 81 tiles of 8x8, 324 of 4x4
    assert choice.pick((100, 100), []) is plain


def test_a_variant_that_does_not_apply_is_skipped():
    plain = _Kernel(_Source(16, ()))
    made: list[int] = []

    def make(k: int) -> Variant | None:
        made.append(k)
        return None if k == 0 else Variant("plain", plain, None)

    choice = KernelChoice(["blocked", "plain"], make)
    assert choice.first.kernel is plain and made == [0, 1]
    assert [v.name for v in choice.variants()] == ["plain"]


def test_nested_choices_pick_through_every_level():
    inner_kernels = [_Kernel(_Source(16, (8, 8))), _Kernel(_Source(16, ()))]
    inner = _chain(inner_kernels, [])
    wide = _Kernel(_Source(16, (), index_bits=64))

    def make(k: int) -> Variant:
        if k == 0:
            return Variant("narrow32", inner, None)
        return Variant("wide64", wide, None)

    outer = KernelChoice(["narrow32", "wide64"], make)
    assert outer.pick((2048, 2048), []) is inner_kernels[0]
    assert outer.pick((16, 16), []) is inner_kernels[1]
    assert outer.leading() is inner_kernels[0]


img = np.zeros((6, 8), np.float32)


def stencil(i, j):
    s = np.float32(0.0)
    for k in range(3):
        s += img[min(i + k, 5), j]
    return s


def _optimised(fn, rank):
    return run_pipeline(check_and_lower(fn, rank).ir, CompileOptions())


def _ir_choice(plan, options=CompileOptions()):
    fn = _optimised(stencil, 2)
    made: list[tuple[str, int, bool]] = []

    def make_kernel(ir, index):
        made.append((index.name, index.bits, bool(ir.blocking)))
        return _Kernel(_Source(plan.tile, ir.blocking, index.bits, index.unit_last))

    choice = build_choice(fn, options, plan, make_kernel, min_tiles=lambda: 132)
    return choice, made


def test_build_choice_makes_only_the_leading_variant_first():
    choice, made = _ir_choice(GPU_PLAN)
    assert [v.name for v in choice.variants()] == ["unit32"]
    assert isinstance(choice.first.guard, IndexGuard) and choice.first.guard.unit_last
    # The stencil stages nothing: its mappings are the walking kernel (guarded) and the
    # plain one; neither is compiled before a launch picks it.
    inner = choice.first.kernel
    assert isinstance(inner, KernelChoice) and inner.names[-2:] == ("walk4", "plain")
    assert made == []
    inner.pick((4096, 4096), [])
    assert made == [("unit32", 32, True)]


def test_a_walking_kernel_needs_its_rows_and_fills_the_sms():
    choice, made = _ir_choice(GPU_PLAN)
    inner = choice.first.kernel
    assert isinstance(inner, KernelChoice)
    walk = inner.first.guard
    assert isinstance(walk, WalkGuard) and walk.factor == 4
    assert walk.min_threads == 132 * WALK_THREADS_PER_SM
    assert inner.pick((3, 1 << 20), []).source.blocking == ()  # fewer rows than a group
    assert inner.pick((200, 300), []).source.blocking == ()  # 50 x 300 threads: too few
    assert inner.pick((4096, 4096), []).source.blocking == (4, 1)
    assert [m[2] for m in made] == [False, True]


def test_disabling_narrow_leaves_only_the_64_bit_variant():
    choice, made = _ir_choice(GPU_PLAN, CompileOptions(disabled_passes=frozenset({"narrow"})))
    assert choice.names == ("wide64",) and choice.first.guard is None
    choice.pick((4096, 4096), [])
    assert {m[1] for m in made} == {64}


def test_the_simulator_keeps_its_blocked_kernel_without_a_fill_guard():
    choice, _ = _ir_choice(SIM_PLAN)
    inner = choice.first.kernel
    assert isinstance(inner, KernelChoice)
    # No fill guard: only the rows a group needs (the mapping's own condition).
    assert inner.first.guard == WalkGuard(SIM_PLAN.walk, 0)
    assert inner.pick((3, 2), []).source.blocking == (3, 1)
    assert inner.pick((2, 2), []).source.blocking == ()


def test_disabling_walk_leaves_the_plain_kernel():
    choice, made = _ir_choice(GPU_PLAN, CompileOptions(disabled_passes=frozenset({"walk"})))
    kernel = choice.leading()
    assert isinstance(kernel, _Kernel) and kernel.source.blocking == ()
    assert made == [("unit32", 32, False)]


MA = np.zeros((64, 64), np.float32)
MB = np.zeros((64, 64), np.float32)


def matmul(i, j):
    acc = np.float32(0.0)
    for k in range(64):
        acc += MA[i, k] * MB[k, j]
    return acc


def test_a_blocked_variant_compiles_only_when_a_launch_it_would_fill_picks_it():
    # Issue 20 item 6: matrix-mult at n = 128 compiled the 8x8 and 4x4 blockings (NVVM,
    # seconds each) before the kernel it ran; the fill guard is known from the IR.
    fn = _optimised(matmul, 2)
    made: list[tuple[int, ...]] = []

    def make_kernel(ir, index):
        made.append(tuple(ir.blocking or ()))
        return _Kernel(_Source(GPU_PLAN.tile, ir.blocking, index.bits, index.unit_last))

    choice = build_choice(fn, CompileOptions(), GPU_PLAN, make_kernel, min_tiles=lambda: 132)
    inner = choice.first.kernel
    assert isinstance(inner, KernelChoice) and inner.first.guard is not None
    assert made == []  # the leading blocked variant's IR is made, its kernel is not
    inner.pick((128, 128), [])  # too few tiles for any blocking: the plain tiles kernel
    assert made == [()]
    big = inner.pick((4096, 4096), [])
    assert made == [(), (8, 8)] and big.source.blocking == (8, 8)


def test_a_walk_guards_terms_say_what_it_admits():
    # The fused warm launch checks the terms' text; the general path calls the guard.
    for rank in (2, 3):
        guard = WalkGuard(4, 100)
        for shape in [(3, 50, 2)[:rank], (8, 50, 2)[:rank], (8, 40, 3)[:rank], (400, 1, 1)[:rank]]:
            said = all(eval(t, {"shape": shape}) for t in guard.terms(rank))
            assert said == guard(shape, ())
