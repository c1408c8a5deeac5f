"""How ``librmm.device_array`` lays an array out, checked before anything is allocated: the same
rules as Numba's ``cuda.device_array`` (C or Fortran order when no strides are given), written
with NumPy alone so that bad arguments are refused without Numba or a GPU."""

import operator

import numpy as np


def _ints(value, what):
    """``value`` (an int or a sequence of ints) as a tuple of ints, or a ``TypeError``."""
    if isinstance(value, (int, np.integer)):
        return (operator.index(value),)
    try:
        return tuple(operator.index(v) for v in value)
    except TypeError:
        raise TypeError(f"{what} must be an int or a sequence of ints, not {value!r}") from None


def contiguous_strides(shape, itemsize, order):
    """The strides of a contiguous array of ``shape`` in ``order`` ('C' or 'F')."""
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' or 'F', not {order!r}")
    strides = [0] * len(shape)
    step = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for d in dims:
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def extent(shape, strides, itemsize):
    """Bytes spanned by an array of ``shape`` and ``strides`` (0 when it has no element)."""
    if any(n == 0 for n in shape):
        return 0
    low = high = 0
    for n, s in zip(shape, strides, strict=True):
        reach = s * (n - 1)
        if reach > 0:
            high += reach
        else:
            low += reach
    return high - low + itemsize


def layout(shape, dtype, strides=None, order="C"):
    """``(shape, strides, dtype, nbytes)`` of the array ``device_array`` makes, or the error for
    the argument that is wrong: ``TypeError`` for a shape, stride or dtype of the wrong type,
    ``ValueError`` for a negative dimension, an unknown order, strides of another length than the
    shape, or a dtype of zero bytes."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 0:
        raise ValueError(f"dtype {dtype} has no bytes: nothing can be stored in it")
    shape = _ints(shape, "shape")
    if any(n < 0 for n in shape):
        raise ValueError(f"negative dimensions are not allowed: shape {shape}")
    if strides is None:
        strides = contiguous_strides(shape, dtype.itemsize, order)
    else:
        strides = _ints(strides, "strides")
        if len(strides) != len(shape):
            raise ValueError(f"strides {strides} do not match the {len(shape)} dimensions of shape {shape}")
    return shape, strides, dtype, extent(shape, strides, dtype.itemsize)
