"""The CUDA major the extension was built for (the crate feature cuda-12 or cuda-13)."""

import rmm._native as native


def test_build_cuda_major_is_12_or_13():
    assert native.build_cuda_major() in (12, 13)
