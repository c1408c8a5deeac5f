# The PyPI toolkit (nvidia-cuda-runtime wheel) ships libcudart.so.13 without the libcudart.so link
# FindCUDAToolkit looks for; point it at the versioned file (rmm links cudart statically).
if(NOT CUDA_CUDART AND CUDAToolkit_ROOT AND NOT EXISTS "${CUDAToolkit_ROOT}/lib/libcudart.so")
  file(GLOB _rmm_cudart "${CUDAToolkit_ROOT}/lib/libcudart.so.*")
  if(_rmm_cudart)
    list(GET _rmm_cudart 0 _rmm_cudart)
    set(CUDA_CUDART "${_rmm_cudart}" CACHE FILEPATH "cudart (PyPI layout)")
  endif()
  unset(_rmm_cudart)
endif()
