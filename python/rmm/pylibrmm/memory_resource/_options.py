"""Checks of ``rmm.reinitialize``'s options shared by ``rmm.reinitialize`` (before its hooks run)
and ``_initialize``."""


def refuse_conflicting_allocators(pool_allocator, managed_memory, virtual_pool_allocator):
    """Refuses combinations of ``rmm.reinitialize``'s options that make no resource, before any
    hook runs or any device is touched (``ValueError``)."""
    if pool_allocator and virtual_pool_allocator:
        raise ValueError(
            "pool_allocator and virtual_pool_allocator are mutually exclusive: "
            "pass one of them (virtual_pool_allocator is a pool of its own)"
        )
    if managed_memory and virtual_pool_allocator:
        raise ValueError(
            "virtual_pool_allocator maps device memory and cannot use managed_memory: "
            "pass one of them (pool_allocator=True pools managed memory)"
        )
