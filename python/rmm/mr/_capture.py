"""Allocation during CUDA graph capture through our pools (an addition of rmm-rs, not in RMM 26.10)."""

from rmm.pylibrmm.stream import Stream


class capture_allocations:
    """Serve a capturing stream's allocations from memory private to its CUDA graph capture.

    ``mr`` is a ``PoolMemoryResource`` or a ``VirtualPoolMemoryResource``; ``stream`` is a
    ``rmm.pylibrmm.stream.Stream`` or anything ``Stream(...)`` accepts (a CuPy, Numba or PyTorch
    stream). Enter the block after the stream's capture began and end the capture inside it:
    entering calls ``mr.begin_capture(stream)``, leaving calls ``mr.end_capture(stream)``. While
    the stream captures, its allocations (``DeviceBuffer``s on it, or any library allocating
    from ``mr`` on it) come from memory that no other stream, no eager work and no other capture
    gets, so every replay of the graph finds its memory as captured. The memory stays with the
    capture until ``release()``, to be called once every graph captured with it, and every
    executable graph made from those, is destroyed::

        stream = cupy.cuda.Stream(non_blocking=True)
        stream.begin_capture()
        with rmm.mr.capture_allocations(pool, stream) as capture:
            buf = rmm.DeviceBuffer(size=n, stream=capture.stream)
            ...                                  # kernels on the stream
            del buf
            graph = stream.end_capture()
        ...                                      # graph.launch(...) as often as needed
        del graph
        capture.release()

    ``capture.id`` is the capture's id (as ``mr.captures()`` lists it) and ``capture.pool_size``
    the bytes of private memory it holds.
    """

    def __init__(self, mr, stream):
        if not hasattr(mr, "begin_capture"):
            raise TypeError(
                "capture_allocations needs a PoolMemoryResource or a VirtualPoolMemoryResource, "
                f"not {type(mr).__name__}"
            )
        self.mr = mr
        self.stream = stream if isinstance(stream, Stream) else Stream(stream)
        self.id = None

    def __enter__(self):
        self.id = self.mr.begin_capture(self.stream)
        return self

    def __exit__(self, *exc):
        self.mr.end_capture(self.stream)
        return False

    @property
    def pool_size(self):
        """Bytes of private memory the pool keeps for this capture (0 once released)."""
        return 0 if self.id is None else self.mr.capture_pool_size(self.id)

    def release(self):
        """Give the capture's private memory back to the pool (see ``release_capture``)."""
        if self.id is None:
            raise ValueError("the capture was never begun: enter the block first")
        self.mr.release_capture(self.id)
