//! Whether the process has begun to exit, so that destructors and frees leave the CUDA driver alone.
//!
//! Objects destroyed during `exit()` (C++ statics, the C++ per-device table, the calling thread's
//! thread-locals) may run after the CUDA runtime has shut down and released the context they
//! belong to; a driver call then may crash inside the driver (RMM had this bug: a pool in its
//! per-device table, destroyed at exit). Once [`mark_process_exiting`] has run, the resources of
//! this crate neither synchronise nor free anything on the device: the memory goes with the
//! process. The C++ face calls it from an `atexit` hook registered right after its per-device
//! table is made, so it runs before that table (and every static made before it) is destroyed.

use std::sync::atomic::{AtomicBool, Ordering};

static EXITING: AtomicBool = AtomicBool::new(false);

/// True once [`mark_process_exiting`] has been called.
pub fn process_is_exiting() -> bool {
    EXITING.load(Ordering::Acquire)
}

/// Records that the process is exiting. Irreversible: call it only from an exit hook.
pub fn mark_process_exiting() {
    EXITING.store(true, Ordering::Release);
    // Logging never panics nor fails (write errors are dropped), so this stays safe in an exit hook.
    crate::log_debug!("process is exiting: resources leave the CUDA driver alone from now on");
}
