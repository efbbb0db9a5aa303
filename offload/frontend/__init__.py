"""Python element function (+ closure, globals, helpers) -> typed SSA IR."""
