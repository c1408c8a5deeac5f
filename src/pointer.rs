//! What an address handed over by a caller is, asked of the driver, so that a copy from or to it
//! is refused with [`Error::BadPointer`] before the driver or the CPU touches memory that is not
//! there (the driver copies from an address it does not know as pageable host memory, on the
//! CPU, and an unmapped address then kills the process).
//!
//! The driver is asked with `cuPointerGetAttributes`, which answers "unknown" for an address it
//! does not know instead of failing, so the check makes no failing driver call. A range of memory
//! the driver knows must lie inside the allocation its first byte lies in (the driver's range start
//! and size for that byte), so that a range across two allocations side by side is refused. An address the
//! driver does not know is host memory to the driver: its first and last bytes are read with
//! `process_vm_readv`, which fails for memory that is not there or not readable (such as the
//! inaccessible address ranges the driver reserves for itself, where freed device memory was)
//! instead of faulting, and `mincore` finds unmapped pages between them; a copy's host
//! destination is also looked up in the process's mappings (`/proc/self/maps`) to be writable.

use crate::driver::{self, DevicePtr, PointerInfo};
use crate::error::{Error, Result};

/// What memory an address lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    /// Device memory (`cuMemAlloc`, a stream-ordered pool, mapped virtual memory).
    Device,
    /// Managed memory (`cuMemAllocManaged`), which host and device both address.
    Managed,
    /// Page-locked host memory the driver knows (`cuMemHostAlloc`, registered memory), which the
    /// device addresses too.
    PinnedHost,
    /// Host memory mapped in this process that the driver does not know (pageable memory, or an
    /// inaccessible reservation); the driver copies from and to it on the CPU.
    PageableHost,
    /// No memory: not mapped in this process and unknown to the driver.
    Unmapped,
}

/// What a caller needs of the memory at an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The source of a copy through the driver (`cuMemcpyAsync`, which infers each side's kind, as
    /// `cudaMemcpyDefault`): device, managed or pinned memory, or readable host memory.
    CopyFrom,
    /// The destination of such a copy: as [`Access::CopyFrom`], but host memory must be writable.
    CopyTo,
    /// The device reads or writes it (a kernel): device, managed or page-locked host memory.
    /// Without a driver every address is host memory, and this is [`Access::CopyTo`].
    Device,
}

const CU_MEMORYTYPE_HOST: u32 = 1;

/// What memory the byte at `addr` lies in.
pub fn memory_kind(addr: usize) -> Result<MemoryKind> {
    Ok(match driver_kind(addr)? {
        Some(kind) => kind,
        None if host_readable(addr, 1) => MemoryKind::PageableHost,
        None => MemoryKind::Unmapped,
    })
}

/// The kind of memory the driver knows at `addr`, None for an address it does not know (or
/// without a driver).
fn driver_kind(addr: usize) -> Result<Option<MemoryKind>> {
    Ok(driver_memory(addr)?.map(|(kind, _)| kind))
}

/// As [`driver_kind`], with what the driver says of the allocation `addr` lies in.
fn driver_memory(addr: usize) -> Result<Option<(MemoryKind, PointerInfo)>> {
    let Some(info) = driver::pointer_memory_type(DevicePtr::new(addr))? else { return Ok(None) };
    let kind = match (info.memory_type, info.managed) {
        (_, true) => MemoryKind::Managed,
        (0, false) => return Ok(None),
        (CU_MEMORYTYPE_HOST, false) => MemoryKind::PinnedHost,
        (_, false) => MemoryKind::Device,
    };
    Ok(Some((kind, info)))
}

/// Whether the `bytes` bytes at `addr` lie inside the allocation of `range_size` bytes at
/// `range_start` (the driver's answer for `addr`). A size of 0 is no answer: the driver gave no
/// range for memory it knows, and the range is not refused for want of one (the check of its last
/// byte still applies).
fn within_allocation(addr: usize, bytes: usize, range_start: usize, range_size: usize) -> bool {
    if range_size == 0 {
        return true;
    }
    match addr.checked_sub(range_start) {
        Some(offset) => offset < range_size && bytes <= range_size - offset,
        None => false,
    }
}

/// Checks that the `bytes` bytes at `addr` can be used for `access`: Ok for 0 bytes; else
/// [`Error::BadPointer`] for a null address, a range past the end of the address space, memory
/// the driver handed out that the range does not lie inside one allocation of, a first or last
/// byte in memory that `access` cannot use, or host memory that is not readable (for
/// [`Access::CopyTo`], writable) from `addr` to the range's end.
pub fn check(addr: usize, bytes: usize, access: Access) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let bad = |what: &'static str| Error::BadPointer { ptr: addr, bytes, what };
    if addr == 0 {
        return Err(bad("a null pointer"));
    }
    let last = addr.checked_add(bytes - 1).ok_or_else(|| bad("the range runs past the end of the address space"))?;
    if let Some((_, first)) = driver_memory(addr)? {
        // Memory the driver handed out: one copy stays inside one allocation. Two allocations
        // side by side are known at both ends, yet a range across them is not one buffer.
        if !within_allocation(addr, bytes, first.range_start, first.range_size) {
            return Err(bad("a range that runs past the end of its allocation"));
        }
        // Mapped virtual memory answers with its whole reserved range, parts of which may be
        // unmapped: the range must end in memory the driver knows too.
        return match driver_kind(last)? {
            Some(_) => Ok(()),
            None => Err(bad("a range that runs past the end of its device memory")),
        };
    }
    if access == Access::Device && driver::ensure_driver().is_ok() {
        return Err(bad(
            "host memory the driver does not know (pageable or unmapped), which the device cannot address",
        ));
    }
    if !host_readable(addr, bytes) {
        return Err(bad("neither device, managed nor readable host memory of this process (unmapped)"));
    }
    if access != Access::CopyFrom && !host_access(addr, bytes, b'w') {
        return Err(bad("host memory that is not writable"));
    }
    Ok(())
}

/// Whether the `bytes` bytes at `addr` are readable host memory: the first and the last byte are
/// read from this process with `process_vm_readv`, which reports an unreadable byte by a short
/// count or EFAULT instead of a fault (where that call is not allowed, by a seccomp filter or an
/// old kernel, the mappings tell), and `mincore` finds any unmapped page between them. (A page
/// between them that is mapped but not readable, which takes two mappings of different kinds side
/// by side inside one buffer, is not looked for: reading every page costs about as much as the
/// copy.)
fn host_readable(addr: usize, bytes: usize) -> bool {
    let Some(last) = bytes.checked_sub(1).and_then(|n| addr.checked_add(n)) else { return false };
    let mut probe = [0u8; 2];
    let remote = [
        libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: 1 },
        libc::iovec { iov_base: last as *mut libc::c_void, iov_len: 1 },
    ];
    let local = libc::iovec { iov_base: probe.as_mut_ptr().cast(), iov_len: 2 };
    // SAFETY: `local` names the 2 writable bytes of `probe`; the remote addresses are only read by
    // the kernel, which reports the ones it cannot read instead of faulting.
    let got = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, remote.as_ptr(), 2, 0) };
    if got < 0 {
        return match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EFAULT) => false,
            _ => host_access(addr, bytes, b'r'),
        };
    }
    got == 2 && all_pages_mapped(addr, bytes)
}

/// Whether every page of the `bytes` bytes at `addr` is mapped (`mincore`, which fails with
/// ENOMEM for a range with an unmapped page; one byte of answer per page, 4096 pages a call).
fn all_pages_mapped(addr: usize, bytes: usize) -> bool {
    let page = page_size();
    let Some(end) = addr.checked_add(bytes) else { return false };
    let mut residency = [0u8; 4096];
    let mut at = addr & !(page - 1);
    while at < end {
        let len = (end - at).min(residency.len() * page);
        // SAFETY: `at` is page-aligned and `residency` has room for one byte per page of `len`
        // bytes; mincore only reads the process's page tables.
        if unsafe { libc::mincore(at as *mut libc::c_void, len, residency.as_mut_ptr()) } != 0 {
            return false;
        }
        at += len;
    }
    true
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 && (n as usize).is_power_of_two() => n as usize,
        _ => 4096,
    }
}

/// Whether every byte of the `bytes` bytes at `addr` lies in a mapping of this process with
/// `permission` (`b'r'` or `b'w'`; `b'-'`: any mapping), from `/proc/self/maps` (one line per
/// mapping, in address order: `start-end perms ...` in hexadecimal). False where it cannot be read.
fn host_access(addr: usize, bytes: usize, permission: u8) -> bool {
    let Some(end) = addr.checked_add(bytes) else { return false };
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return false };
    let mut at = addr;
    for line in maps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else { continue };
        let Some((lo, hi)) = range.split_once('-') else { continue };
        let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) else { continue };
        if hi <= at {
            continue;
        }
        let allowed = match permission {
            b'r' => perms.as_bytes().first() == Some(&b'r'),
            b'w' => perms.as_bytes().get(1) == Some(&b'w'),
            _ => true,
        };
        if lo > at || !allowed {
            return false;
        }
        at = hi;
        if at >= end {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_memory_is_mapped_and_low_addresses_are_not() {
        let v = vec![7u8; 3 * 4096];
        assert!(host_access(v.as_ptr() as usize, v.len(), b'r'));
        assert!(host_access(v.as_ptr() as usize, v.len(), b'w'));
        assert!(!host_access(8, 16, b'-'));
        assert!(!host_access(usize::MAX - 10, 5, b'-'));
        assert!(host_readable(v.as_ptr() as usize, v.len()));
        assert!(host_readable(v.as_ptr() as usize + 5, 1));
        assert!(!host_readable(8, 16));
        assert!(!host_readable(usize::MAX - 10, 5));
        // Code is readable, not writable.
        let code = check_refuses_null_unmapped_and_overflowing_ranges as fn() as usize;
        assert!(host_access(code, 1, b'r') && !host_access(code, 1, b'w'));
    }

    #[test]
    fn a_range_must_lie_inside_the_allocation_of_its_first_byte() {
        // An allocation of 0x100 bytes at 0x1000, with another right after it at 0x1100.
        let (start, size) = (0x1000, 0x100);
        for (addr, bytes) in [(0x1000, 0x100), (0x1080, 0x80), (0x10ff, 1), (0x1000, 1)] {
            assert!(within_allocation(addr, bytes, start, size), "{addr:#x}+{bytes:#x}");
        }
        // Into the next allocation, both whole allocations, and an address before the range.
        for (addr, bytes) in [(0x1080, 0x81), (0x10ff, 2), (0x1000, 0x200), (0xfff, 2)] {
            assert!(!within_allocation(addr, bytes, start, size), "{addr:#x}+{bytes:#x}");
        }
        // Ranges at the top of the address space; no range from the driver decides nothing.
        assert!(within_allocation(0x1000, 1 << 40, 0, 0));
        assert!(!within_allocation(usize::MAX, 1, 0x1000, 0x100));
        assert!(within_allocation(usize::MAX - 0xff, 0x100, usize::MAX - 0xff, 0x100));
        assert!(!within_allocation(usize::MAX - 0xff, usize::MAX, usize::MAX - 0xff, 0x100));
    }

    #[test]
    fn check_refuses_null_unmapped_and_overflowing_ranges() {
        let v = [0u8; 64];
        assert_eq!(check(v.as_ptr() as usize, 64, Access::CopyFrom), Ok(()));
        assert_eq!(check(v.as_ptr() as usize, 64, Access::CopyTo), Ok(()));
        assert_eq!(check(8, 0, Access::CopyFrom), Ok(()));
        for (addr, bytes) in [(0, 16), (8, 16), (usize::MAX - 3, 16), (v.as_ptr() as usize, usize::MAX)] {
            assert!(matches!(check(addr, bytes, Access::CopyFrom), Err(Error::BadPointer { .. })), "{addr:#x}+{bytes}");
        }
        let e = check(8, 16, Access::CopyFrom).unwrap_err().to_string();
        assert!(e.contains("0x8") && e.contains("unmapped"), "{e}");
        let code = host_memory_is_mapped_and_low_addresses_are_not as fn() as usize;
        let e = check(code, 4, Access::CopyTo).unwrap_err().to_string();
        assert!(e.contains("not writable"), "{e}");
    }
}
