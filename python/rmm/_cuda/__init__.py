"""CUDA helpers (RMM's ``rmm._cuda``)."""
