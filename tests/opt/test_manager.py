"""The one pass manager: pipeline text (passes, ``{field=value}`` arguments, ``first(...)``
alternatives), disabled passes, verification and printing, over any target's registry."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from offload.ir.core import Function
from offload.ir.ops import Opcode
from offload.ir.printer import print_function
from offload.ir.verifier import IRVerificationError
from offload.lowering import check_and_lower
from offload.opt.base import FunctionPass
from offload.opt.manager import First, Step, UnknownPassError, parse_pipeline, run_pipeline
from offload.opt.registry import COMMON, DEFAULT_PIPELINE
from offload.options import CompileOptions
from offload.ptx.passes import GPU
from offload.ptx.plan import GPU_PLAN, INDEX

pytestmark = pytest.mark.unit

a = np.zeros((8, 8), np.float32)


def matmul(i, j):
    s = np.float32(0.0)
    for k in range(8):
        s += a[i, k] * a[k, j]
    return s


def _optimised() -> Function:
    return run_pipeline(check_and_lower(matmul, 2).ir, CompileOptions())


def test_pipeline_text_reads_passes_arguments_and_alternatives():
    items = parse_pipeline("fold, first(reroll,jam{factors=8x8},stage | stage),dce", GPU)
    assert items[0] == Step("fold") and items[2] == Step("dce")
    alt = items[1]
    assert isinstance(alt, First) and len(alt.alternatives) == 2
    assert alt.alternatives[0][1] == Step("jam", (("factors", "8x8"),))
    assert str(alt) == "first(reroll,jam{factors=8x8},stage | stage)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fold,nosuch", "unknown pass 'nosuch'"),
        ("stage", "unknown pass 'stage'"),  # a GPU pass is not in the common registry
        ("fold{nosuch=1}", "has no option 'nosuch'"),
        ("first(fold", "unclosed 'first('"),
    ],
)
def test_bad_pipeline_text_is_refused_naming_the_problem(text, message):
    with pytest.raises(UnknownPassError, match=re.escape(message)):
        parse_pipeline(text)


def test_step_arguments_set_the_pass_fields():
    seen: list[str] = []
    run_pipeline(
        _optimised(),
        CompileOptions(),
        lambda step, fn: seen.append(step),
        pipeline="reroll,jam{factors=2x4},stage{tile=4}",
        registry=GPU,
    )
    assert seen == ["reroll", "jam{factors=2x4}", "stage{tile=4}"]


def test_gpu_variant_pipeline_traces_every_pass_it_ran():
    seen: list[str] = []
    GPU_PLAN.first_ir(
        _optimised(), CompileOptions(), INDEX["narrow32"], lambda s, f: seen.append(s)
    )
    assert seen == ["narrow", "licm", "reroll", "jam{factors=8x8}", "stage", "const_bank",
                    "early_loads"]  # fmt: skip


def test_disabled_passes_reach_the_gpu_variant_pipeline():
    opts = CompileOptions(disabled_passes=frozenset({"early_loads", "jam"}))
    seen: list[str] = []
    _, ir = GPU_PLAN.first_ir(_optimised(), opts, INDEX["narrow32"], lambda s, f: seen.append(s))
    assert seen == ["narrow", "licm", "stage", "const_bank"]
    assert not ir.blocking


def test_bounds_checks_disable_staging_through_the_pass_not_the_caller():
    seen: list[str] = []
    GPU_PLAN.first_ir(
        _optimised(), CompileOptions(bounds_check=True), INDEX["wide64"],
        lambda s, f: seen.append(s),
    )  # fmt: skip
    assert seen == ["const_bank"]


def test_print_after_prints_a_gpu_pass_like_a_common_one(capsys):
    opts = CompileOptions(print_after=frozenset({"stage", "cse"}))
    run_pipeline(check_and_lower(matmul, 2).ir, opts)
    GPU_PLAN.first_ir(_optimised(), opts, INDEX["narrow32"])
    out = capsys.readouterr().out
    assert "// IR after cse" in out and "// IR after stage" in out
    assert "// IR after narrow" not in out


@dataclasses.dataclass(frozen=True)
class _Breaks(FunctionPass):
    """A faulty pass: makes the first op's operands empty."""

    name = "breaks"

    def rewrite(self, fn: Function) -> Function:
        for op in fn.ops():
            if op.opcode is Opcode.MUL:
                op.operands = op.operands[:1]
                break
        return fn


def test_verify_names_the_pass_that_broke_the_ir_in_any_registry():
    registry = {**GPU, "breaks": _Breaks}
    with pytest.raises(IRVerificationError) as err:
        run_pipeline(
            _optimised(), CompileOptions(verify=True), pipeline="narrow,breaks", registry=registry
        )
    assert any("after pass 'breaks'" in note for note in err.value.__notes__)


def test_a_pass_never_changes_the_function_it_was_handed():
    fn = _optimised()
    before = print_function(fn)
    for name in sorted(GPU):
        GPU[name].from_options(CompileOptions()).run(fn)
        assert print_function(fn) == before, name


def test_the_default_pipeline_names_only_common_passes():
    assert {s.name for s in parse_pipeline(DEFAULT_PIPELINE) if isinstance(s, Step)} <= set(COMMON)


def test_nothing_is_printed_without_print_after(capsys):
    GPU_PLAN.first_ir(_optimised(), CompileOptions(), INDEX["narrow32"])
    run_pipeline(check_and_lower(matmul, 2).ir, CompileOptions())
    assert capsys.readouterr().out == ""
