"""A ``distributed.WorkerPlugin`` that puts every Dask worker on an RMM pool (for users not on Dask-CUDA).

Dask-CUDA's ``LocalCUDACluster(rmm_pool_size=...)`` configures RMM on its own workers. On any other
cluster, register this plugin once; the scheduler runs its ``setup`` on every worker connected now
and on every worker that joins later::

    from distributed import Client
    from rmm_worker_plugin import RMMWorkerPlugin

    client = Client(scheduler_address)
    client.register_plugin(RMMWorkerPlugin(initial_pool_size="20GiB", track_allocations=True))

On each worker ``setup`` builds, from the bottom up:

* the base resource: ``CudaMemoryResource``, ``ManagedMemoryResource`` (``managed_memory``),
  ``CudaAsyncMemoryResource`` (``async_alloc``, with ``initial_pool_size`` and
  ``release_threshold`` handed to the driver pool), or ``upstream()`` when given;
* a ``PoolMemoryResource`` of ``initial_pool_size`` growing up to ``maximum_pool_size`` (not with
  ``async_alloc``, whose pool is the driver's; there ``maximum_pool_size`` becomes a
  ``LimitingResourceAdaptor``);
* a ``LoggingResourceAdaptor`` writing ``<log_directory>/rmm_log_<worker name>.txt``;
* a ``TrackingResourceAdaptor`` (``track_allocations``) and a ``StatisticsResourceAdaptor``
  (``statistics``), which distributed's RMM diagnostics and ``rmm.statistics`` read;

makes it the current device's resource (or device ``device``'s), and points CuPy's and PyTorch's
allocators at RMM for each library of ``external_libs`` that the worker can import. Sizes are bytes
or strings such as ``"20GiB"``, rounded up to 256 bytes as RMM's pool requires.

This file is an example, not part of the ``rmm`` package (RMM 26.10 has no such module): copy it
next to your code. It is the same as Dask-CUDA's ``RMMSetup`` in what it builds, so a worker set
up by either reports the same through ``distributed.diagnostics.rmm``.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from distributed import WorkerPlugin

_ALIGNMENT = 256
_LOG = logging.getLogger("distributed.worker")


def _size(value: int | str | None) -> int | None:
    """Bytes of ``value`` (an int or a string like ``"4GiB"``) rounded up to 256; None and 0 are None."""
    if value is None:
        return None
    if isinstance(value, str):
        from dask.utils import parse_bytes

        value = parse_bytes(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"a size must be a non-negative int or a byte string, not {value!r}")
    if value == 0:
        return None
    return -(-value // _ALIGNMENT) * _ALIGNMENT


def _log_file_name(worker: Any, log_directory: str) -> str:
    """``<log_directory>/rmm_log_<name>.txt``, the name Dask-CUDA gives its workers' logs."""
    name = getattr(worker, "name", "scheduler")
    if isinstance(name, str):
        name = name.split("/")[-1]
    return os.path.join(log_directory, f"rmm_log_{name}.txt")


def _use_rmm_in(lib: str) -> None:
    """Points ``lib``'s allocator (``"cupy"`` or ``"torch"``) at RMM's current device resource."""
    if lib == "cupy":
        import cupy

        from rmm.allocators.cupy import rmm_cupy_allocator

        cupy.cuda.set_allocator(rmm_cupy_allocator)
    elif lib == "torch":
        import torch

        from rmm.allocators.torch import rmm_torch_allocator

        torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
    else:
        raise ValueError(f"no RMM allocator for {lib!r}: the choices are 'cupy' and 'torch'")


class RMMWorkerPlugin(WorkerPlugin):
    """Sets an RMM resource stack and the CuPy/PyTorch allocators on every worker (see the module
    docstring). ``upstream`` (a picklable callable returning a resource) replaces the CUDA base
    resource, and ``device`` picks the device whose resource is set (default: the current one);
    both exist so that the setup can run against a host resource on a machine without a GPU."""

    name = "rmm-worker-setup"

    def __init__(
        self,
        initial_pool_size: int | str | None = None,
        maximum_pool_size: int | str | None = None,
        *,
        managed_memory: bool = False,
        async_alloc: bool = False,
        release_threshold: int | str | None = None,
        log_directory: str | None = None,
        track_allocations: bool = False,
        statistics: bool = False,
        external_libs: Sequence[str] = ("cupy", "torch"),
        device: int | None = None,
        upstream: Callable[[], Any] | None = None,
    ) -> None:
        if async_alloc and managed_memory:
            raise ValueError("managed_memory is incompatible with async_alloc")
        if release_threshold is not None and not async_alloc:
            raise ValueError("release_threshold requires async_alloc")
        if upstream is not None and (async_alloc or managed_memory):
            raise ValueError("upstream replaces the CUDA resource: not with async_alloc or managed_memory")
        if maximum_pool_size is not None and initial_pool_size is None and not async_alloc:
            raise ValueError("maximum_pool_size requires initial_pool_size (or async_alloc)")
        for lib in external_libs:
            if lib not in ("cupy", "torch"):
                raise ValueError(f"no RMM allocator for {lib!r}: the choices are 'cupy' and 'torch'")
        # Checked here, on the client, so that a bad size fails registration rather than each worker.
        self.initial_pool_size = _size(initial_pool_size)
        self.maximum_pool_size = _size(maximum_pool_size)
        self.release_threshold = _size(release_threshold)
        self.managed_memory = managed_memory
        self.async_alloc = async_alloc
        self.log_directory = log_directory
        self.track_allocations = track_allocations
        self.statistics = statistics
        self.external_libs = tuple(external_libs)
        self.device = device
        self.upstream = upstream
        self.resource = None  # this worker's resource, once set up

    def build_resource(self, worker: Any = None) -> Any:
        """The resource stack for ``worker`` (not yet made current)."""
        import rmm

        if self.async_alloc:
            mr = rmm.mr.CudaAsyncMemoryResource(
                initial_pool_size=self.initial_pool_size, release_threshold=self.release_threshold
            )
            if self.maximum_pool_size is not None:
                mr = rmm.mr.LimitingResourceAdaptor(mr, allocation_limit=self.maximum_pool_size)
        else:
            if self.upstream is not None:
                mr = self.upstream()
            elif self.managed_memory:
                mr = rmm.mr.ManagedMemoryResource()
            else:
                mr = rmm.mr.CudaMemoryResource()
            if self.initial_pool_size is not None:
                mr = rmm.mr.PoolMemoryResource(
                    mr,
                    initial_pool_size=self.initial_pool_size,
                    maximum_pool_size=self.maximum_pool_size,
                )
        if self.log_directory is not None:
            mr = rmm.mr.LoggingResourceAdaptor(mr, log_file_name=_log_file_name(worker, self.log_directory))
        if self.track_allocations:
            mr = rmm.mr.TrackingResourceAdaptor(mr)
        if self.statistics:
            mr = rmm.mr.StatisticsResourceAdaptor(mr)
        return mr

    def setup(self, worker: Any = None) -> None:
        """Builds the stack, makes it the device's resource, and hooks CuPy and PyTorch."""
        import rmm

        mr = self.build_resource(worker)
        if self.device is None:
            rmm.mr.set_current_device_resource(mr)
        else:
            rmm.mr.set_per_device_resource(self.device, mr)
        self.resource = mr
        for lib in self.external_libs:
            try:
                __import__(lib)
            except ImportError:
                _LOG.info("RMMWorkerPlugin: %s is not importable; its allocator is left alone", lib)
                continue
            try:
                _use_rmm_in(lib)
            except Exception as e:  # e.g. PyTorch's allocator already in use: RMM still serves Dask
                warnings.warn(f"RMMWorkerPlugin: could not point {lib} at RMM: {e}", RuntimeWarning)
