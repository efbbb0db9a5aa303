"""Skeletons: kernel source templates instantiated with a user's compiled scalar functions.

One template text serves every target: the body of a skeleton is written once over
"work items" (a chunk of a scan, a source element of a permute) and ``build.loop``
wraps it in the target's loop: a plain ``range`` (``cpu-seq``), ``prange``
(``cpu-par``) or a grid-stride loop of a ``numba.cuda`` kernel (``gpu``, ``gpu-sim``).
Because the body is the same text, the same inputs give the same bits on every target
whenever the work decomposition (the chunk tree) is the same.
"""
