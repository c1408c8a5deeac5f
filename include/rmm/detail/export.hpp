/*
 * rmm-rs: visibility and namespace macros of RMM, for code that spells them.
 */
#pragma once

#define RMM_EXPORT __attribute__((visibility("default")))
#define RMM_HIDDEN __attribute__((visibility("hidden")))
#define RMM_NAMESPACE rmm
#define RMM_NAMESPACE_BEGIN namespace rmm {
#define RMM_NAMESPACE_END }
