"""The graph scheduler: fusion (no intermediate array for fold_all over zip_with; a map
after a fold in the fold's kernel), sharing by identity (a shared producer is computed
once unless trivial), dtype=/out= on the final node, determinism (same bits whatever the
input's offset in memory and from run to run; cross_target equals compute_s)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import offload as ol
from offload.acc.plan import CPU_CHUNK
from tests.acc.fold_reference import interpret, same_bits

pytestmark = pytest.mark.cpu


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def kernels(node, target="cpu"):
    text = ol.explain(node, target=target, file=io.StringIO())
    return [line for line in text.splitlines() if line.startswith("== kernel")]


@pytest.fixture
def mode():
    saved = ol.config.determinism
    yield
    ol.config.determinism = saved


def test_fold_all_of_zip_with_has_no_intermediate_array():
    x, y = np.random.rand(1000), np.random.rand(1000)
    short = kernels(ol.fold_all(add, 0.0, ol.zip_with(mul, x, y)))
    assert short == ["== kernel 1/1: result, shape ()"]
    n = 4 * CPU_CHUNK
    x, y = np.random.rand(n), np.random.rand(n)
    long = kernels(ol.fold_all(add, 0.0, ol.zip_with(mul, x, y)))
    # stage 1 reads x and y inside its fold loop (partials only), stage 2 the partials
    assert long == [
        "== kernel 1/2: fold stage: 1 row(s) x 4 partials of 8192 (4 lanes), shape (4,)",
        "== kernel 2/2: result, shape ()",
    ]


def test_a_map_after_a_fold_fuses_into_the_fold_kernel():
    m = np.random.rand(50, 30)
    node = ol.map(lambda s: s * 0.5, ol.fold(add, 0.0, m))
    assert kernels(node) == ["== kernel 1/1: result, shape (50,)"]
    assert np.allclose(ol.compute_p(node), m.sum(-1) * 0.5)


def test_a_shared_producer_is_computed_once_unless_trivial():
    calls = np.arange(6.0)

    def expensive(v):
        return v * v + 1.0

    d = ol.map(expensive, calls)
    both = ol.fold_all(add, 0.0, ol.zip_with(add, d, d))
    ks = kernels(both)
    assert ks == ["== kernel 1/2: shared Map, shape (6,)", "== kernel 2/2: result, shape ()"]
    assert ol.compute_s(both) == 2 * (calls * calls + 1).sum()
    r = ol.reverse(calls)  # trivial: read twice, not materialised
    assert kernels(ol.fold_all(add, 0.0, ol.zip_with(mul, r, r))) == [
        "== kernel 1/1: result, shape ()"
    ]
    f = ol.fold(add, 0.0, np.ones((4, 3)))
    assert kernels(ol.zip_with(add, f, f)) == [
        "== kernel 1/2: shared Fold, shape (4,)",
        "== kernel 2/2: result, shape (4,)",
    ]


def test_stencil_of_a_computed_source_computes_it_first():
    x = np.arange(8.0)
    node = ol.stencil(lambda get: get(-1) + get(1), ol.map(lambda v: v * 3.0, x), "clamp")
    assert kernels(node) == [
        "== kernel 1/2: source a of Stencil, shape (8,)",
        "== kernel 2/2: result, shape (8,)",
    ]
    assert kernels(ol.stencil(lambda get: get(-1) + get(1), ol.reverse(x), "clamp")) == [
        "== kernel 1/1: result, shape (8,)"
    ]


def test_dtype_and_out_apply_to_the_final_node():
    x = np.arange(3 * CPU_CHUNK, dtype=np.float64).reshape(1, -1)
    node = ol.fold(add, 0.0, x)
    got = ol.compute_p(node, dtype=np.float32)
    assert got.dtype == np.float32 and got[0] == np.float32(x.sum())
    out = np.zeros(1)
    assert ol.compute_s(node, out=out) is out and out[0] == x.sum()
    pair = ol.fold(lambda p, q: (p[0] + q[0], p[1] + q[1]), (0.0, 0), (x, x.astype(np.int64)))
    o1, o2 = np.zeros(1), np.zeros(1, np.int64)
    res = ol.compute_s(pair, out=(o1, o2))
    assert res == (o1, o2) and o2[0] == int(x.sum())


def test_fold_results_do_not_depend_on_the_input_address_or_the_run(mode):
    rng = np.random.default_rng(1)
    n = 5 * CPU_CHUNK + 3
    base = rng.standard_normal(n + 8).astype(np.float32)
    for determinism in ("deterministic", "cross_target", "fast"):
        ol.config.determinism = determinism
        results = set()
        for offset in (0, 1, 3, 8):
            buf = np.empty(n + 16, np.float32)
            buf[offset : offset + n] = base[:n]
            x = buf[offset : offset + n]
            for compute in (ol.compute_s, ol.compute_p):
                for _ in range(2):
                    results.add(compute(ol.fold_all(add, 0.0, x)).tobytes())
        assert len(results) == 1, determinism


def test_cross_target_equals_compute_s_and_the_interpreter_bit_for_bit(mode):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 300)).astype(np.float32)
    node = ol.fold(add, 0.0, ol.map(lambda v: v * 1.1, x))
    ol.config.determinism = "cross_target"
    s, p = ol.compute_s(node), ol.compute_p(node)
    assert same_bits(s, p) and same_bits(s, interpret(node, "cross_target"))
    ol.config.determinism = "deterministic"
    assert same_bits(ol.compute_s(node), interpret(node))


def test_determinism_is_validated(mode):
    with pytest.raises(ValueError, match="'deterministic' or 'cross_target' or 'fast'"):
        ol.config.determinism = "random"
    from offload.config import Config

    with pytest.raises(ValueError, match="OFFLOAD_DETERMINISM"):
        Config.from_env({"OFFLOAD_DETERMINISM": "sloppy"})
    assert Config.from_env({"OFFLOAD_DETERMINISM": "Cross_Target"}).determinism == "cross_target"


def test_the_sharing_rule_holds_in_trees_without_collectives():
    x = np.arange(5.0)
    d = ol.map(lambda v: v * 2.0 + 1.0, x)
    node = ol.zip_with(lambda a, b: a * b, d, d)
    assert kernels(node) == [
        "== kernel 1/2: shared Map, shape (5,)",
        "== kernel 2/2: result, shape (5,)",
    ]
    assert (ol.compute_p(node) == (x * 2 + 1) ** 2).all()
    r = ol.transpose(x.reshape(1, 5))  # trivial: read twice in one kernel
    text = ol.explain(ol.zip_with(lambda a, b: a + b, r, r), target="cpu", file=io.StringIO())
    assert "== collective graph" not in text and "== IR after lowering" in text
