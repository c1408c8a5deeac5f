/*
 * rmm-rs: the legacy C API of the original RMM (rmm_api.h) and its allocation macros, which pass
 * the calling file and line to the event log. Valid C (C11) and C++.
 *
 *   float* p;
 *   RMM_ALLOC(&p, n * sizeof(float), stream);
 *   RMM_REALLOC(&p, 2 * n * sizeof(float), stream);
 *   RMM_FREE(p, stream);
 */
#ifndef RMM_RMM_H
#define RMM_RMM_H

#include <rmm/rmm_api.h>

/** rmmAlloc with the caller's file and line; `ptr` is the address of a pointer of any type. */
#define RMM_ALLOC(ptr, sz, stream) rmmAlloc((void**)(ptr), (sz), (stream), __FILE__, __LINE__)

/** rmmRealloc with the caller's file and line; `ptr` is the address of a pointer of any type. */
#define RMM_REALLOC(ptr, new_sz, stream) \
  rmmRealloc((void**)(ptr), (new_sz), (stream), __FILE__, __LINE__)

/** rmmFree with the caller's file and line. */
#define RMM_FREE(ptr, stream) rmmFree((void*)(ptr), (stream), __FILE__, __LINE__)

#endif /* RMM_RMM_H */
