"""Hooks that make CuPy, Numba and PyTorch allocate through RMM (RMM's ``rmm.allocators``).

Each submodule imports its library lazily: ``rmm.allocators.cupy``, ``rmm.allocators.numba`` and
``rmm.allocators.torch``.
"""
