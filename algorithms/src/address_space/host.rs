//! A host stand-in for the physical side: it reserves nothing and maps nothing, it records which
//! granules would be mapped, so tests can check that every byte a pool hands out is mapped, and
//! it fails on request, so they can check what a failed map or unmap leaves behind.

use super::{Partial, PhysicalMemory};
use crate::error::Error;
use std::sync::{Arc, Mutex, MutexGuard};

/// What [`HostPhysicalMemory`] records, shared with its [`HostMappings`] views.
#[derive(Debug, Default)]
struct Record {
    /// One flag per granule of the reservation.
    mapped: Vec<bool>,
    /// Granules the next map maps before it fails, if set (once).
    fail_map_after: Option<usize>,
    /// Granules the next unmap unmaps before it fails, if set (once).
    fail_unmap_after: Option<usize>,
    /// Map calls that succeeded.
    maps: usize,
}

/// A reservation of `capacity` bytes at a made-up address that only records mappings (see the
/// module documentation). Its addresses must never be read or written.
pub struct HostPhysicalMemory {
    base: usize,
    capacity: usize,
    granule: usize,
    record: Arc<Mutex<Record>>,
}

/// A view of what a [`HostPhysicalMemory`] has mapped, kept by a test after the physical side was
/// handed to an address space.
#[derive(Clone)]
pub struct HostMappings {
    base: usize,
    granule: usize,
    record: Arc<Mutex<Record>>,
}

impl HostPhysicalMemory {
    /// A reservation of `capacity` bytes (whole granules) at `base` (a granule multiple), mapped in
    /// granules of `granule` bytes.
    pub fn new(base: usize, capacity: usize, granule: usize) -> Self {
        let record = Record { mapped: vec![false; capacity / granule.max(1)], ..Record::default() };
        HostPhysicalMemory { base, capacity, granule, record: Arc::new(Mutex::new(record)) }
    }

    /// A view of its mappings, and of the failures to inject.
    pub fn mappings(&self) -> HostMappings {
        HostMappings { base: self.base, granule: self.granule, record: Arc::clone(&self.record) }
    }

    fn record(&self) -> MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl HostMappings {
    fn record(&self) -> MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether every granule that `[addr, addr + len)` touches is mapped.
    pub fn is_mapped(&self, addr: usize, len: usize) -> bool {
        if len == 0 {
            return true;
        }
        let Some(off) = addr.checked_sub(self.base) else { return false };
        let r = self.record();
        let (first, last) = (off / self.granule, (off + len - 1) / self.granule);
        last < r.mapped.len() && r.mapped[first..=last].iter().all(|&m| m)
    }

    /// Bytes mapped.
    pub fn mapped_bytes(&self) -> usize {
        self.record().mapped.iter().filter(|&&m| m).count() * self.granule
    }

    /// Map calls that succeeded so far.
    pub fn maps(&self) -> usize {
        self.record().maps
    }

    /// Makes the next map fail after it mapped `granules` granules.
    pub fn fail_next_map_after(&self, granules: usize) {
        self.record().fail_map_after = Some(granules);
    }

    /// Makes the next unmap fail after it unmapped `granules` granules.
    pub fn fail_next_unmap_after(&self, granules: usize) {
        self.record().fail_unmap_after = Some(granules);
    }

    /// Takes back the failures asked for and not yet met.
    pub fn clear_failures(&self) {
        let mut r = self.record();
        r.fail_map_after = None;
        r.fail_unmap_after = None;
    }
}

impl PhysicalMemory for HostPhysicalMemory {
    fn base(&self) -> usize {
        self.base
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn granularity(&self) -> usize {
        self.granule
    }

    fn map(&mut self, off: usize, len: usize) -> Result<(), Partial> {
        let g = self.granule;
        let mut r = self.record();
        let granules = off / g..(off + len) / g;
        assert!(granules.end <= r.mapped.len(), "a map past the reservation");
        let stop = r.fail_map_after.take();
        for (done, i) in granules.enumerate() {
            if stop == Some(done) {
                let error = Error::out_of_memory(len, "the host stand-in was told to fail this map");
                return Err(Partial { done: done * g, error });
            }
            assert!(!r.mapped[i], "granule {i} mapped twice");
            r.mapped[i] = true;
        }
        r.maps += 1;
        Ok(())
    }

    fn unmap(&mut self, off: usize, len: usize) -> Result<(), Partial> {
        let g = self.granule;
        let mut r = self.record();
        let stop = r.fail_unmap_after.take();
        for (done, i) in (off / g..(off + len) / g).enumerate() {
            if stop == Some(done) {
                let error = Error::InvalidArgument("the host stand-in was told to fail this unmap".into());
                return Err(Partial { done: done * g, error });
            }
            assert!(r.mapped[i], "granule {i} unmapped but not mapped");
            r.mapped[i] = false;
        }
        Ok(())
    }
}
