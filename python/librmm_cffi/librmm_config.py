"""Settings of the original RMM's Python module, read by ``librmm.initialize()``.

Set them, then (re)initialise::

    from librmm_cffi import librmm as rmm
    from librmm_cffi import librmm_config as rmm_cfg

    rmm_cfg.use_pool_allocator = True
    rmm_cfg.initial_pool_size = 2**30   # 1 GiB
    rmm.initialize()                     # the pool is now the current device resource
"""

#: Suballocate from a pool (``PoolAllocation``); False allocates each block from the driver.
use_pool_allocator = False

#: Take memory as managed memory (``CudaManagedMemory``); with ``use_pool_allocator`` the pool's
#: chunks are managed memory.
use_managed_memory = False

#: The pool's initial size in bytes when ``use_pool_allocator`` is set (rounded up to a multiple
#: of 256); 0 means half of the device's total memory.
initial_pool_size = 0

#: Record every allocation, reallocation and free for ``librmm.csv_log()``.
enable_logging = False
