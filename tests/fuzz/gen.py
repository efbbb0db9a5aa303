"""Random element functions as Python source files, for the differential fuzzer.

``generate(seed)`` writes nothing: it returns a ``Program`` (the module's source text, the
shape, which features it uses). The text is a whole module: captured arrays and scalars
built at import (int64 near overflow, uint64, int8/uint8, float32/float64 special values:
-0.0, NaN, inf, subnormals), helper functions, and ``f`` (one int parameter per axis,
rank 1 to 8). Bodies mix straight-line code (sometimes hundreds of lines), deep
``if``/``elif`` chains, ``for`` loops with ``break``/``continue``, bounded ``while`` loops
and early returns. Each variable keeps one NumPy type on every path (offload types
statically), and expressions are typed as NumPy 2 types them (NEP 50), so most programs
are valid; the runner skips those CPython itself rejects or raises on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

KINDS = ("int", "i64", "u64", "i8", "u8", "f64", "f32", "bool")
"""Value kinds: a Python int (from the indices), NumPy int64/uint64/int8/uint8 scalars,
float64 (Python float or NumPy), float32, bool."""

INTS = ("int", "i64", "u64", "i8", "u8")
FLOATS = ("f64", "f32")

_I64_EDGE = [2**63 - 1, 2**63 - 2, -(2**63), -(2**63) + 1, 2**62, -(2**62), 0, 1, -1, 7]
_U64_EDGE = [2**64 - 1, 2**64 - 2, 2**63, 2**63 - 1, 0, 1, 255, 2**32]
_I8_EDGE = [127, -128, 100, -100, 0, 1, -1, 64]
_U8_EDGE = [255, 0, 1, 128, 200, 127]
_F_EDGE = [
    "0.0",
    "-0.0",
    "1.0",
    "-1.5",
    "np.nan",
    "np.inf",
    "-np.inf",
    "5e-324",
    "-5e-324",
    "2.2250738585072014e-308",
    "1.7976931348623157e308",
    "0.1",
    "3.5",
    "-7.25",
    "1e-300",
    "65504.0",
    "1e38",
    "1e-45",
    "-2.5e-40",
]
_NP = {
    "i64": "np.int64",
    "u64": "np.uint64",
    "i8": "np.int8",
    "u8": "np.uint8",
    "f64": "np.float64",
    "f32": "np.float32",
    "bool": "np.bool_",
}


@dataclass
class Program:
    """One generated module."""

    seed: int
    source: str
    shape: tuple[int, ...]
    features: set[str] = field(default_factory=set[str])


@dataclass
class _Var:
    name: str
    kind: str
    readonly: bool = False
    """A loop counter: read in the loop's body, never assigned."""


class _Gen:
    def __init__(self, seed: int, size: str, library: bool = False) -> None:
        self.r = random.Random(seed)
        self.lib = random.Random(seed * 7919 + 17) if library else None
        """``library``: its own draws add NumPy library calls (``library_expr``); ``None``
        leaves every earlier seed's program as it was."""
        self.seed = seed
        self.size = size
        self.features: set[str] = set()
        self.arrays: dict[str, list[str]] = {k: [] for k in KINDS if k != "int"}
        self.array_len: dict[str, int] = {}
        self.scalars: dict[str, list[str]] = {k: [] for k in KINDS}
        self.header: list[str] = []
        self.helpers: list[tuple[str, list[str], str]] = []  # name, param kinds, result kind
        self.counter = 0

    # -- names -----------------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # -- captures ----------------------------------------------------------------------------

    def _edge_values(self, kind: str) -> list[str]:
        r = self.r
        if kind == "i64":
            return [str(r.choice(_I64_EDGE + [r.randint(-1000, 1000)])) for _ in range(6)]
        if kind == "u64":
            return [str(r.choice(_U64_EDGE + [r.randint(0, 1000)])) for _ in range(6)]
        if kind == "i8":
            return [str(r.choice(_I8_EDGE)) for _ in range(6)]
        if kind == "u8":
            return [str(r.choice(_U8_EDGE)) for _ in range(6)]
        if kind == "bool":
            return [r.choice(["True", "False"]) for _ in range(6)]
        return [r.choice(_F_EDGE) for _ in range(6)]

    def make_captures(self) -> None:
        r = self.r
        n_arrays = r.randint(2, 6)
        for _ in range(n_arrays):
            kind = r.choice([k for k in KINDS if k != "int"])
            name = self.fresh("A")
            vals = self._edge_values(kind)
            self.header.append(f"{name} = np.array([{', '.join(vals)}], dtype={_NP[kind]})")
            self.arrays[kind].append(name)
            self.array_len[name] = len(vals)
        n_scalars = r.randint(0, 4) if r.random() < 0.7 else r.randint(10, 30)
        if n_scalars >= 10:
            self.features.add("many-captures")
        for _ in range(n_scalars):
            kind = r.choice(KINDS)
            name = self.fresh("S")
            v = self._edge_values(kind)[0]
            if kind == "int":
                self.header.append(f"{name} = {r.randint(-20, 20)}")
            elif kind == "bool":
                self.header.append(f"{name} = {v}")
            else:
                self.header.append(f"{name} = {_NP[kind]}({v})")
            self.scalars[kind].append(name)

    # -- expressions --------------------------------------------------------------------

    def const(self, kind: str) -> str:
        r = self.r
        if kind == "int":
            return str(r.choice([0, 1, 2, 3, 5, 7, 10, -1, -3, 100]))
        if kind == "bool":
            return r.choice(["True", "False"])
        if kind == "f64":
            return r.choice(["0.5", "1.0", "-2.0", "3.25", "-0.0", "0.0", "1e-310", "1e300"])
        v = self._edge_values(kind)[0]
        if kind in ("i64", "u64") and not -(2**63) < int(v) < 2**63 and r.random() < 0.8:
            v = str(r.randint(-5, 5) if kind == "i64" else r.randint(0, 9))
        return f"{_NP[kind]}({v})"

    def index_expr(self, env: list[_Var], n: int) -> str:
        e = self.expr(env, "int", 1)
        if self.r.random() < 0.3:
            self.features.add("negative-index")
            return f"-1 - ({e}) % {n}"
        return f"({e}) % {n}"

    def leaf(self, env: list[_Var], kind: str) -> str:
        r = self.r
        options: list[str] = [v.name for v in env if v.kind == kind]
        options += self.scalars[kind]
        if kind != "int" and self.arrays.get(kind) and r.random() < 0.6:
            a = r.choice(self.arrays[kind])
            return f"{a}[{self.index_expr(env, self.array_len[a])}]"
        if options and r.random() < 0.8:
            return r.choice(options)
        return self.const(kind)

    def expr(self, env: list[_Var], kind: str, depth: int) -> str:
        r = self.r
        if depth <= 0 or r.random() < 0.3:
            return self.leaf(env, kind)
        d = depth - 1
        roll = r.random()
        if kind == "bool":
            if roll < 0.55:
                k = r.choice(KINDS)
                op = r.choice(["<", "<=", ">", ">=", "==", "!="])
                return f"({self.expr(env, k, d)} {op} {self.expr(env, k, d)})"
            if roll < 0.7:
                return f"(not {self.expr(env, 'bool', d)})"
            if roll < 0.85:
                op = r.choice(["and", "or", "&", "|", "^"])
                return f"({self.expr(env, 'bool', d)} {op} {self.expr(env, 'bool', d)})"
            return f"bool({self.expr(env, r.choice(KINDS), d)})"
        if roll < 0.1:
            c = self.expr(env, "bool", d)
            return f"({self.expr(env, kind, d)} if {c} else {self.expr(env, kind, d)})"
        if roll < 0.2 and self.helpers:
            cands = [h for h in self.helpers if h[2] == kind]
            if cands:
                name, params, _ = r.choice(cands)
                self.features.add("helper")
                args = ", ".join(self.expr(env, p, d) for p in params)
                return f"{name}({args})"
        if roll < 0.3:
            return self.conversion(env, kind, d)
        if kind in INTS:
            return self.int_expr(env, kind, d)
        return self.float_expr(env, kind, d)

    def conversion(self, env: list[_Var], kind: str, d: int) -> str:
        r = self.r
        if kind == "int":
            src = r.choice(["int", "bool", "i8", "u8"])
            return f"int({self.expr(env, src, d)})"
        if kind == "f64" and r.random() < 0.5:
            return f"float({self.expr(env, r.choice(KINDS), d)})"
        src = r.choice(KINDS)
        if kind in INTS and src in FLOATS:
            src = "int"  # float -> int out of range is a documented limit
        return f"{_NP[kind]}({self.expr(env, src, d)})"

    def int_expr(self, env: list[_Var], kind: str, d: int) -> str:
        r = self.r
        roll = r.random()
        a = self.expr(env, kind, d)
        if roll < 0.45:
            op = r.choice(["+", "-", "*", "&", "|", "^"])
            other = "int" if kind != "int" and r.random() < 0.3 else kind
            b = self.expr(env, other, d) if other == kind else self.const("int")
            if kind in ("u64", "u8", "i8") and other == "int":
                b = str(r.randint(0, 9))  # a Python int the type holds
            return f"({a} {op} {b})"
        if roll < 0.65:
            op = r.choice(["//", "%"])
            if kind == "int" or r.random() < 0.6:
                c = r.choice(
                    [2, 3, 7, 10, 16, -3, -7] if kind in ("int", "i64", "i8") else [2, 3, 7, 10, 16]
                )
                self.features.add("divmod-const")
                return f"({a} {op} {c})"
            return f"({a} {op} {self.expr(env, kind, d)})"
        if roll < 0.75:
            return f"{r.choice(['min', 'max'])}({a}, {self.expr(env, kind, d)})"
        if roll < 0.82:
            return f"abs({a})"
        if roll < 0.9:
            return f"({a} {r.choice(['<<', '>>'])} {r.randint(0, 5)})"
        if roll < 0.95 and kind in ("int", "i64", "i8"):
            return f"(-{a})"
        return f"({a} ** {r.randint(0, 3)})"

    def float_expr(self, env: list[_Var], kind: str, d: int) -> str:
        r = self.r
        roll = r.random()
        a = self.expr(env, kind, d)
        if self.lib is not None and self.lib.random() < 0.3:
            return self.library_expr(env, kind, d, a)
        if roll < 0.45:
            op = r.choice(["+", "-", "*", "/"])
            b = self.expr(env, kind, d)
            return f"({a} {op} {b})"
        if roll < 0.55:
            return f"{r.choice(['min', 'max'])}({a}, {self.expr(env, kind, d)})"
        if roll < 0.62:
            return f"abs({a})"
        if roll < 0.8:
            fn = r.choice(["np.sign", "np.floor", "np.ceil", "np.trunc", "np.sqrt", "np.abs"])
            self.features.add("ufunc")
            return f"{fn}({a})"
        if roll < 0.88:
            return f"(-{a})"
        if roll < 0.94:
            return f"({a} // {self.expr(env, kind, d)})"
        return f"({a} ** 2)"

    def library_expr(self, env: list[_Var], kind: str, d: int, a: str) -> str:
        """A NumPy library call of a float of ``kind``: rounding to decimals, ``isclose``,
        a type's limits, a variance of a captured array's slice, a tuple indexed at run
        time."""
        lib = self.lib
        assert lib is not None
        roll = lib.random()
        if roll < 0.25:
            self.features.add("round-decimals")
            return f"np.round({a}, {lib.randint(-3, 9)})"
        if roll < 0.45:
            self.features.add("isclose")
            b = self.expr(env, kind, d)
            kw = lib.choice(["", ", rtol=1e-3", ", atol=0.5", ", equal_nan=True", ", 0.1, 0.0"])
            return f"({a} if np.isclose({a}, {b}{kw}) else {b})"
        if roll < 0.6 and kind == "f32":
            self.features.add("finfo")
            attr = lib.choice(["eps", "tiny", "max", "resolution"])
            return f"({a} * np.finfo(np.float32).{attr})"
        if roll < 0.8 and self.arrays.get(kind):
            self.features.add("variance")
            arr = lib.choice(self.arrays[kind])
            n = self.array_len[arr]
            lo = lib.randint(0, n - 1)
            hi = lib.randint(lo + 1, n)
            if lib.random() < 0.5:
                return f"np.{lib.choice(['var', 'std'])}({arr}[{lo}:{hi}])"
            return f"{arr}[{lo}:{hi}].{lib.choice(['var', 'std'])}(ddof={lib.randint(0, 2)})"
        self.features.add("tuple-index")
        items = ", ".join(self.const(kind) for _ in range(lib.randint(2, 5)))
        return f"({items},)[{self.expr(env, 'int', 1)} % {items.count(',') + 1}]"

    # -- statements ---------------------------------------------------------------------

    def assign(self, env: list[_Var], out: list[str], pad: str, depth: int) -> None:
        r = self.r
        existing = [v for v in env if not v.readonly]
        if existing and r.random() < 0.5:
            v = r.choice(existing)
            out.append(f"{pad}{v.name} = {self.expr(env, v.kind, depth)}")
            return
        kind = r.choice(KINDS)
        name = self.fresh("v")
        out.append(f"{pad}{name} = {self.expr(env, kind, depth)}")
        env.append(_Var(name, kind))

    def block(
        self,
        env: list[_Var],
        out: list[str],
        pad: str,
        n: int,
        nest: int,
        result: str,
        in_loop: bool,
    ) -> None:
        r = self.r
        for _ in range(n):
            roll = r.random()
            if nest > 0 and roll < 0.15:
                self.if_chain(env, out, pad, nest, result, in_loop)
            elif nest > 0 and roll < 0.25:
                self.for_loop(env, out, pad, nest, result)
            elif nest > 0 and roll < 0.28:
                self.while_loop(env, out, pad, nest, result)
            elif roll < 0.32:
                self.features.add("early-return")
                out.append(f"{pad}if {self.expr(env, 'bool', 2)}:")
                out.append(f"{pad}    return {self.expr(env, result, 2)}")
            elif in_loop and roll < 0.38:
                self.features.add("break-continue")
                out.append(f"{pad}if {self.expr(env, 'bool', 1)}:")
                out.append(f"{pad}    {r.choice(['break', 'continue'])}")
            else:
                self.assign(env, out, pad, 3)

    def if_chain(
        self, env: list[_Var], out: list[str], pad: str, nest: int, result: str, in_loop: bool
    ) -> None:
        r = self.r
        arms = r.randint(1, 4)
        for k in range(arms):
            kw = "if" if k == 0 else "elif"
            out.append(f"{pad}{kw} {self.expr(env, 'bool', 2)}:")
            inner = list(env)
            self.block(inner, out, pad + "    ", r.randint(1, 3), nest - 1, result, in_loop)
            # variables first bound in an arm are not visible after it
        if r.random() < 0.5:
            out.append(f"{pad}else:")
            inner = list(env)
            self.block(inner, out, pad + "    ", r.randint(1, 2), nest - 1, result, in_loop)

    def ladder(self, env: list[_Var], out: list[str], pad: str, result: str) -> None:
        """A deep ``if``/``elif`` chain on one int (issue 19: 100 arms overflowed the
        emitter's indentation)."""
        r = self.r
        self.features.add("deep-elif")
        ints = [v for v in env if v.kind == "int"] or [_Var("i0", "int")]
        x = r.choice(ints).name
        target = [v for v in env if v.kind == result and not v.readonly]
        arms = r.randint(10, 60)
        m = arms + r.randint(0, 5)
        for k in range(arms):
            kw = "if" if k == 0 else "elif"
            out.append(f"{pad}{kw} {x} % {m} == {k}:")
            if target:
                out.append(f"{pad}    {target[0].name} = {self.expr(env, result, 1)}")
            else:
                out.append(f"{pad}    return {self.expr(env, result, 1)}")

    def for_loop(self, env: list[_Var], out: list[str], pad: str, nest: int, result: str) -> None:
        r = self.r
        self.features.add("loop")
        k = self.fresh("k")
        ints = [v.name for v in env if v.kind == "int"]
        bound = str(r.randint(0, 6))
        if ints and r.random() < 0.5:
            bound = f"{r.choice(ints)} % {r.randint(2, 5)}"
        out.append(f"{pad}for {k} in range({bound}):")
        inner = [*env, _Var(k, "int", readonly=True)]
        self.block(inner, out, pad + "    ", r.randint(1, 3), nest - 1, result, True)

    def while_loop(self, env: list[_Var], out: list[str], pad: str, nest: int, result: str) -> None:
        r = self.r
        self.features.add("while")
        w = self.fresh("w")
        out.append(f"{pad}{w} = 0")
        out.append(f"{pad}while {w} < {r.randint(1, 5)}:")
        out.append(f"{pad}    {w} = {w} + 1")
        inner = [*env, _Var(w, "int", readonly=True)]
        self.block(inner, out, pad + "    ", r.randint(1, 2), nest - 1, result, True)
        env.append(_Var(w, "int"))

    def make_helper(self) -> None:
        r = self.r
        name = self.fresh("h")
        params = [r.choice(KINDS) for _ in range(r.randint(1, 3))]
        result = r.choice(KINDS)
        env = [_Var(f"p{k}", kind) for k, kind in enumerate(params)]
        body: list[str] = []
        self.block(env, body, "    ", r.randint(1, 4), 1, result, False)
        body.append(f"    return {self.expr(env, result, 2)}")
        sig = ", ".join(f"p{k}" for k in range(len(params)))
        self.header.append("")
        self.header.append("")
        self.header.append(f"def {name}({sig}):")
        self.header.extend(body)
        self.helpers.append((name, params, result))

    def program(self) -> Program:
        r = self.r
        rank = r.choice([1, 1, 1, 2, 2, 3, 4, 8]) if r.random() < 0.9 else r.randint(5, 8)
        if rank >= 5:
            self.features.add("high-rank")
        budget = 48
        shape: list[int] = []
        for _ in range(rank):
            e = r.randint(1, max(1, min(6, budget)))
            shape.append(e)
            budget = max(1, budget // e)
        self.make_captures()
        for _ in range(r.randint(0, 2)):
            self.make_helper()
        params = [f"i{k}" for k in range(rank)]
        env = [_Var(p, "int") for p in params]
        result = r.choice(KINDS)
        body: list[str] = []
        style = r.random()
        if style < 0.1:
            self.features.add("long-straight-line")
            self.block(env, body, "    ", r.randint(60, 250), 0, result, False)
        elif style < 0.2:
            self.block(env, body, "    ", r.randint(1, 4), 0, result, False)
            self.ladder(env, body, "    ", result)
        else:
            self.block(env, body, "    ", r.randint(2, 12), 3, result, False)
        body.append(f"    return {self.expr(env, result, 3)}")
        lines = [
            "import math",
            "",
            "import numpy as np",
            "",
            *self.header,
            "",
            "",
            f"def f({', '.join(params)}):",
            *body,
            "",
        ]
        return Program(self.seed, "\n".join(lines), tuple(shape), self.features)


def generate(seed: int, size: str = "normal", library: bool = False) -> Program:
    """The program of ``seed`` (the same text for the same seed, on every machine);
    ``library``: with NumPy library calls as well (``_Gen.library_expr``)."""
    return _Gen(seed, size, library).program()
