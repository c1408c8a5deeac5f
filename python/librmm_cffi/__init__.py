"""``librmm_cffi``: the Python module of the original RMM (before 0.15), over rmm-rs.

Code written for it runs unchanged::

    from librmm_cffi import librmm as rmm
    from librmm_cffi import librmm_config as rmm_cfg

    rmm_cfg.use_pool_allocator = True
    rmm.initialize()
    a = rmm.device_array(1000, dtype="float32")    # a Numba device array from the pool

As in the original, importing the package initialises it with the settings of ``librmm_config``
(quietly leaving it uninitialised where there is no device) and finalises it at exit. Its memory
is that of ``import rmm``: both allocate from the current device resource.
"""

import atexit

from librmm_cffi import librmm, librmm_config
from librmm_cffi.librmm import RMMError

__all__ = ["RMMError", "librmm", "librmm_config"]

librmm._initialize_quietly()
atexit.register(librmm._finalize_at_exit)
