"""``python -m offload``: bench, explain, cache info|clear."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

# One line, exit status 2: what ``bench`` says where the suite is not installed.
NO_SUITE = (
    "offload bench: the benchmark suite is not part of the installed package; it runs from "
    'a source checkout: git clone <offload repository> && cd offload && pip install -e ".[bench]" '
    "&& python -m offload bench"
)


def _cache(args: argparse.Namespace) -> int:
    """``cache info|clear``; a directory that exists but cannot be read is one line on
    stderr and exit status 1 (not a silent 0)."""
    from offload.config import config
    from offload.cpu.diskcache import cpu_cache_clear, cpu_cache_info
    from offload.ptx.cache import cache_clear, cache_info

    try:
        if args.action == "info":
            info = {**cache_info(config.cache_dir), **cpu_cache_info(config.cache_dir)}
            for key, value in info.items():
                print(f"{key:12s} {value}")
        else:
            removed = cache_clear(config.cache_dir) + cpu_cache_clear(config.cache_dir)
            print(f"removed {removed} cached kernel(s) and leftover(s) from {config.cache_dir}")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print(
            f"offload cache {args.action}: cannot read {config.cache_dir}: {reason}",
            file=sys.stderr,
        )
        return 1
    return 0


def _explain(args: argparse.Namespace) -> int:
    """``python -m offload explain module:function 100,200 --target cpu``; a missing module
    or function, or a malformed shape, is one line on stderr and exit status 2."""
    from offload.explain import explain

    module_name, _, attr = args.function.partition(":")
    if not module_name or not attr:
        return _fail(f"explain: expected module:function, got {args.function!r}")
    try:
        shape = tuple(int(n) for n in args.shape.split(",") if n)
    except ValueError:
        return _fail(f"explain: the shape must be comma-separated integers, got {args.shape!r}")
    sys.path.insert(0, ".")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is None or not module_name.startswith(err.name):
            raise  # the module exists but one of its own imports is missing: its traceback
        return _fail(f"explain: no module named {module_name!r} (looked in . and sys.path)")
    fn = getattr(module, attr, None)
    if fn is None:
        return _fail(f"explain: module {module_name!r} has no attribute {attr!r}")
    explain(fn, shape, target=args.target)
    return 0


def _fail(message: str) -> int:
    print(f"python -m offload {message}", file=sys.stderr)
    return 2


def _bench(argv: list[str]) -> int:
    """``python -m offload bench``: the suite in a source checkout's ``benchmarks/``.

    The wheel ships only ``offload``. In a checkout (an editable install included) the
    checkout's root is put on the path, so the command works from any directory there;
    anywhere else it prints :data:`NO_SUITE` and returns 2.
    """
    root = Path(__file__).resolve().parent.parent
    if (root / "benchmarks" / "runner.py").is_file() and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        from benchmarks.runner import main as bench_main
    except ModuleNotFoundError as err:
        if err.name not in ("benchmarks", "benchmarks.runner"):
            raise
        print(NO_SUITE, file=sys.stderr)
        return 2
    return bench_main(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m offload`` and the ``offload`` script."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "bench":
        return _bench(argv[1:])
    from offload import __version__

    parser = argparse.ArgumentParser(
        prog="python -m offload",
        description="offload: native offload of Python element functions (CPU and GPU).",
    )
    parser.add_argument("--version", action="version", version=f"offload {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "bench", help="run the benchmark suite, from a source checkout (see benchmarks/README.md)"
    )
    ex = sub.add_parser("explain", help="print IR, passes and kernel source of a function")
    ex.add_argument("function", help="module:function")
    ex.add_argument("shape", help="comma-separated extents, e.g. 100,200")
    ex.add_argument("--target", default="cpu", choices=["cpu", "gpu"])
    cache = sub.add_parser("cache", help="inspect or clear the on-disk kernel cache")
    cache.add_argument("action", choices=["info", "clear"])
    if not argv:
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    if args.command == "cache":
        return _cache(args)
    return _explain(args)


if __name__ == "__main__":
    sys.exit(main())
