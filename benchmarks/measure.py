"""Measuring one configuration (a compute_* target or a peer) of one benchmark."""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from collections.abc import Callable
from typing import Any

from benchmarks.peers.base import Peer
from benchmarks.suite.common import Benchmark, Check, Outputs, hosts
from benchmarks.targets import Target
from benchmarks.timing import summarise, time_cpu, time_gpu, time_once


def _error(err: BaseException) -> str:
    last = traceback.extract_tb(err.__traceback__)[-1:] if err.__traceback__ else []
    where = f" at {last[0].filename}:{last[0].lineno}" if last else ""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}{where}"[:400]


def _timed(
    record: dict[str, Any], run: Callable[[], Outputs], on_gpu: bool, repeat: int, iters: int
) -> None:
    """Warm-up is done by the caller; record median and spread of ``repeat`` runs."""
    samples = (time_gpu if on_gpu else time_cpu)(run, repeat)
    stats = summarise(samples)
    record["time"] = stats.as_dict()
    record["per_iter_s"] = stats.median / iters


def measure_target(
    bench: Benchmark,
    target: Target,
    inputs: dict[str, Any],
    ref: Outputs,
    repeat: int,
    fresh: tuple[str, int | None] | None = None,
) -> dict[str, Any]:
    """compute_s/p/g: cold and warm first calls, validation, timed region, end-to-end;
    with ``fresh`` (the size and iteration override), also the first call of a fresh
    process that finds the kernels in the disk cache (``benchmarks.fresh_compile``)."""
    rec: dict[str, Any] = {"config": target.label, "kind": "target", "on_gpu": target.on_gpu}
    why = target.available()
    if why is not None:
        return {**rec, "status": "n/a", "detail": why}
    iters = bench.iters(inputs["params"])
    with target.configured():
        rec = _measure_target(bench, target, inputs, ref, repeat, rec, iters)
    if fresh is not None and rec["status"] == "ok":
        rec.update(_fresh_process(bench.name, target.key, *fresh))
    return rec


def _fresh_process(name: str, key: str, size: str, iters: int | None) -> dict[str, Any]:
    """``benchmarks.fresh_compile`` in a subprocess: its first call's compile time."""
    cmd = [sys.executable, "-m", "benchmarks.fresh_compile", name, size, key]
    if iters is not None:
        cmd.append(str(iters))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
        got = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError) as err:
        return {"fresh_compile_error": _error(err)}
    return {
        "fresh_compile_s": got["fresh_compile_s"],
        "fresh_disk_hits": got["disk_hits"],
        "fresh_misses": got["misses"],
    }


def _measure_target(
    bench: Benchmark,
    target: Target,
    inputs: dict[str, Any],
    ref: Outputs,
    repeat: int,
    rec: dict[str, Any],
    iters: int,
) -> dict[str, Any]:
    try:
        compute = target.compute()
        bound = bench.bind(target.resident(inputs))
        first, out = time_once(lambda: bound.run(compute), target.on_gpu)
        check = bench.validate(hosts(out), ref, inputs)
        if check.ok and bound.extra is not None:
            extra = bound.extra(compute)
            check = Check(extra.ok, f"{check.detail}; {extra.detail}")
        rec["detail"] = check.detail
        if not check.ok:
            return {**rec, "status": "FAILED"}
        second, _ = time_once(lambda: bound.run(compute), target.on_gpu)
        rec.update(first_call_s=first, second_call_s=second, compile_s=max(first - second, 0.0))
        _timed(rec, lambda: bound.run(compute), target.on_gpu, repeat, iters)
        if target.on_gpu:  # end to end: plain host inputs, copies in and results out
            host_bound = bench.bind(dict(inputs))
            host_bound.run(compute)
            rec["e2e_s"] = time_once(lambda: hosts(host_bound.run(compute)), True)[0]
    except Exception as err:  # a broken configuration is reported, never fatal to the run
        return {**rec, "status": "error", "detail": _error(err)}
    return {**rec, "status": "ok"}


def measure_peer(
    bench: Benchmark, peer: Peer, inputs: dict[str, Any], ref: Outputs, repeat: int
) -> dict[str, Any]:
    """A peer: prepare (upload) excluded from kernel time, included in end-to-end time."""
    rec: dict[str, Any] = {"config": peer.name, "kind": "peer", "on_gpu": peer.on_gpu}
    why = peer.available()
    if why is not None:
        return {**rec, "status": "n/a", "detail": why}
    iters = bench.iters(inputs["params"])
    try:
        first, run = time_once(lambda: peer.prepare(inputs), peer.on_gpu)
        t_run, out = time_once(run, peer.on_gpu)
        check = bench.validate(hosts(out), ref, inputs)
        rec["detail"] = check.detail
        if not check.ok:
            return {**rec, "status": "FAILED"}
        rec.update(first_call_s=first + t_run)
        _timed(rec, run, peer.on_gpu, repeat, iters)
        if peer.on_gpu:
            rec["e2e_s"] = time_once(lambda: hosts(peer.prepare(inputs)()), True)[0]
    except Exception as err:
        return {**rec, "status": "error", "detail": _error(err)}
    return {**rec, "status": "ok"}
