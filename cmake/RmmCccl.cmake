# rmm_check_cccl(<target>)
#
# The headers need CCCL 3.5 (cuda::mr::resource_ref, any_resource, synchronous_resource_ref).
# Reads the version of the CCCL that will be found first and stops with a clear message when it
# is older, instead of letting the compiler fail deep inside the headers.
function(rmm_check_cccl target)
  set(candidates "${RMM_CCCL_INCLUDE_DIR}")
  foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
    list(APPEND candidates "${dir}/cccl" "${dir}")
  endforeach()
  foreach(dir IN LISTS candidates)
    set(header "${dir}/cuda/std/__cccl/version.h")
    if(dir AND EXISTS "${header}")
      file(STRINGS "${header}" line REGEX "#define CCCL_VERSION [0-9]+")
      string(REGEX MATCH "[0-9]+" version "${line}")
      if(version LESS 3005000)
        message(FATAL_ERROR
          "rmm-rs needs CCCL 3.5 or newer; ${dir} has ${version}. Set RMM_CCCL_INCLUDE_DIR to the "
          "include directory of CCCL 3.5 (for example the nvidia-cuda-cccl wheel's include/cccl).")
      endif()
      message(STATUS "rmm-rs: CCCL ${version} from ${dir}")
      return()
    endif()
  endforeach()
  message(WARNING "rmm-rs: could not find the CCCL headers to check their version")
endfunction()
