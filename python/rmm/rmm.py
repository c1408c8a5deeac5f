"""``rmm.reinitialize`` and its hooks (RMM's ``rmm.rmm``)."""

from collections.abc import Callable
from typing import Any

from rmm import mr
from rmm.pylibrmm.memory_resource._memory_resource import _initialize


class RMMError(Exception):
    """An error with RMM's error code."""

    def __init__(self, errcode: int, msg: str) -> None:
        self.errcode = errcode
        super().__init__(msg)


_reinitialize_hooks: list[tuple[Callable, tuple, dict]] = []


def reinitialize(
    pool_allocator: bool = False,
    managed_memory: bool = False,
    initial_pool_size: int | str | None = None,
    maximum_pool_size: int | str | None = None,
    devices: int | list[int] = 0,
    logging: bool = False,
    log_file_name: str | None = None,
    *,
    virtual_pool_allocator: bool = False,
) -> None:
    """Runs the reinitialize hooks (last registered first), then gives each of ``devices`` a new
    resource: ``cudaMalloc`` memory, or managed memory with ``managed_memory``, under a pool of
    ``initial_pool_size`` (default half the free memory) up to ``maximum_pool_size`` with
    ``pool_allocator``, under a ``LoggingResourceAdaptor`` writing to ``log_file_name`` (or
    ``RMM_LOG_FILE``; ``.dev<id>`` is added before the extension) with ``logging``.

    ``virtual_pool_allocator=True`` (an rmm-rs addition, keyword only) gives each device a
    ``rmm.mr.VirtualPoolMemoryResource`` instead: ``maximum_pool_size`` bytes of addresses
    reserved (default the device's memory), ``initial_pool_size`` of them mapped at once (default
    none), memory mapped as the pool grows and given back by its ``release()``. It is a pool of its
    own, so it cannot be combined with ``pool_allocator`` or ``managed_memory`` (``ValueError``,
    raised before any hook runs).

    Memory from the previous resources must not be used afterwards."""
    # Imported here: the module keeps exactly RMM's module-level names.
    from rmm.pylibrmm.memory_resource._options import refuse_conflicting_allocators

    refuse_conflicting_allocators(pool_allocator, managed_memory, virtual_pool_allocator)
    for func, args, kwargs in reversed(_reinitialize_hooks):
        func(*args, **kwargs)
    _initialize(
        pool_allocator=pool_allocator,
        managed_memory=managed_memory,
        initial_pool_size=initial_pool_size,
        maximum_pool_size=maximum_pool_size,
        devices=devices,
        logging=logging,
        log_file_name=log_file_name,
        virtual_pool_allocator=virtual_pool_allocator,
    )


def is_initialized() -> bool:
    """True if RMM has been initialised."""
    return mr.is_initialized()


def register_reinitialize_hook(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
    """Adds ``func(*args, **kwargs)`` to the calls made before ``reinitialize`` (in the reverse
    order of registration); returns ``func``."""
    _reinitialize_hooks.append((func, args, kwargs))
    return func


def unregister_reinitialize_hook(func: Callable[..., Any]) -> None:
    """Removes every registration of ``func``."""
    global _reinitialize_hooks
    _reinitialize_hooks = [x for x in _reinitialize_hooks if x[0] != func]
