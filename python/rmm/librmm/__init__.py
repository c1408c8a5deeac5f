"""Declarations of the C++ library (RMM's ``rmm.librmm``)."""
