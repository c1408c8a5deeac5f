//! One reserved range of addresses whose pages are mapped and unmapped in place: what a pool over
//! virtual memory grows into and gives memory back from, without ever moving an address.
//!
//! ```text
//!  base                                    mapped end                         base + capacity
//!   |                                           |                                    |
//!   [ mapped ][ hole ][ mapped ][  hole  ][mapped]  .  .  .  never mapped  .  .  .  .]
//!              ^                 ^                ^
//!              released granules, re-mapped       growth at the end: right after
//!              first where one run fits           the pool's free tail, so they coalesce
//! ```
//!
//! The range is cut into granules (the physical side's granularity); every map and unmap covers
//! whole granules. [`AddressSpace`] decides where a growth goes and keeps the record of what is
//! mapped; the [`PhysicalMemory`] seam does the mapping. Nothing here knows about CUDA: the real
//! physical side creates and maps device memory through the driver, the host stand-in
//! [`HostPhysicalMemory`] only records granules, so the logic is tested on any machine.

use crate::error::{format_bytes, Error, Result};
use std::collections::BTreeMap;

mod host;

pub use host::{HostMappings, HostPhysicalMemory};

/// An operation of [`PhysicalMemory`] that stopped part-way: the first `done` bytes of the range
/// (whole granules) were mapped (or unmapped), the rest were not, and `error` says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partial {
    /// Bytes at the start of the range for which the operation took effect.
    pub done: usize,
    /// Why it stopped.
    pub error: Error,
}

/// The physical side of an [`AddressSpace`]: one reserved range of addresses, whose granules it
/// backs with memory (maps) and gives that memory back (unmaps).
///
/// Offsets are from [`base`](Self::base), lengths whole granules; the address space never maps a
/// granule that is mapped nor unmaps one that is not. An implementation gives the reservation and
/// every granule still mapped back when dropped.
pub trait PhysicalMemory: Send {
    /// The first address of the reserved range.
    fn base(&self) -> usize;

    /// Bytes reserved (a multiple of the granularity).
    fn capacity(&self) -> usize;

    /// Bytes of one granule: a power of two of at least 256.
    fn granularity(&self) -> usize;

    /// Backs `[off, off + len)` with memory the device may use. On failure the first
    /// [`Partial::done`] bytes may be mapped; the caller unmaps them.
    fn map(&mut self, off: usize, len: usize) -> std::result::Result<(), Partial>;

    /// Gives the memory behind `[off, off + len)` back; the addresses stay reserved. On failure the
    /// first [`Partial::done`] bytes were unmapped, the rest stays mapped.
    fn unmap(&mut self, off: usize, len: usize) -> std::result::Result<(), Partial>;

    /// Whether the device can use the memory (false for a host stand-in).
    fn is_device_memory(&self) -> bool {
        false
    }
}

/// A reserved range over a [`PhysicalMemory`], with the record of which granules are mapped.
///
/// Growth ([`grow`](Self::grow)) maps the lowest hole left by a release that holds the whole
/// request, else maps at the end of what is mapped, counting a free tail the pool has there; a
/// release ([`release`](Self::release)) unmaps whole granules and keeps their addresses as holes.
/// After every call, failed or not, the record is what is mapped.
pub struct AddressSpace<P: PhysicalMemory> {
    phys: P,
    base: usize,
    capacity: usize,
    granule: usize,
    /// Mapped runs, as offsets: start → end, disjoint, never touching (touching runs are one).
    mapped: BTreeMap<usize, usize>,
    mapped_bytes: usize,
    /// Runs left mapped by a failed map whose undo failed too, as offsets `(start, len)`: mapped
    /// but never handed out; each later growth or release tries to unmap them again.
    stranded: Vec<(usize, usize)>,
}

impl<P: PhysicalMemory> AddressSpace<P> {
    /// The address space of `phys`, nothing mapped yet. Refuses a granularity that is not a power
    /// of two of at least 256 bytes, and a reservation not made of whole granules.
    pub fn new(phys: P) -> Result<Self> {
        let (base, capacity, granule) = (phys.base(), phys.capacity(), phys.granularity());
        if !granule.is_power_of_two() || granule < 256 {
            return Err(Error::InvalidArgument(format!(
                "a granularity of {granule} bytes: mapping needs a power of two of at least 256"
            )));
        }
        if capacity % granule != 0 || base % granule != 0 || capacity == 0 {
            return Err(Error::InvalidArgument(format!(
                "a reservation of {capacity} bytes at {base:#x} is not made of whole granules of {granule} bytes"
            )));
        }
        Ok(AddressSpace {
            phys,
            base,
            capacity,
            granule,
            mapped: BTreeMap::new(),
            mapped_bytes: 0,
            stranded: Vec::new(),
        })
    }

    /// The physical side.
    pub fn physical(&self) -> &P {
        &self.phys
    }

    /// The first address of the reservation.
    pub fn base(&self) -> usize {
        self.base
    }

    /// Bytes reserved.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of one granule.
    pub fn granularity(&self) -> usize {
        self.granule
    }

    /// Bytes mapped now, [stranded](Self::stranded_bytes) ones included.
    pub fn mapped_bytes(&self) -> usize {
        self.mapped_bytes
    }

    /// Bytes left mapped by a failed map whose undo failed too: mapped, never handed out, and
    /// unmapped again by a later growth or release where the physical side lets it.
    pub fn stranded_bytes(&self) -> usize {
        self.stranded.iter().map(|&(_, len)| len).sum()
    }

    /// The address just past the highest mapped granule (the base while nothing is mapped): where
    /// growth at the end maps.
    pub fn mapped_end(&self) -> usize {
        self.base + self.mapped.last_key_value().map_or(0, |(_, &end)| end)
    }

    /// The mapped runs, as addresses `(start, len)`, lowest first.
    pub fn mapped_runs(&self) -> Vec<(usize, usize)> {
        self.mapped.iter().map(|(&s, &e)| (self.base + s, e - s)).collect()
    }

    /// Whether every byte of `[addr, addr + len)` is mapped.
    pub fn is_mapped(&self, addr: usize, len: usize) -> bool {
        if addr < self.base || len == 0 {
            return len == 0;
        }
        let off = addr - self.base;
        self.mapped.range(..=off).next_back().is_some_and(|(_, &end)| off.saturating_add(len) <= end)
    }

    /// `n` rounded up to whole granules.
    pub fn granule_ceil(&self, n: usize) -> usize {
        n.saturating_add(self.granule - 1) & !(self.granule - 1)
    }

    /// What a [`Partial`] operation over `len` bytes that reports `done` took effect on: whole
    /// granules, never more than `len`.
    fn whole_done(&self, done: usize, len: usize) -> usize {
        done.min(len) & !(self.granule - 1)
    }

    /// Maps at least `needed` bytes in one run and returns it as `(addr, len)`, whole granules,
    /// where `free_around(start, end)` says how many bytes the pool has free, in blocks that would
    /// join a range mapped at `[start, end)`, just below `start` and from `end` on:
    /// - the lowest hole (addresses released earlier) where mapping gives a free run of `needed`
    ///   bytes: its front alone, joined to the free bytes below it (at least one granule), else the
    ///   whole hole, joined to the free bytes on both sides; else
    /// - at the end of what is mapped, only what the free bytes below it lack (at least one
    ///   granule), so that the pool joins the two.
    ///
    /// Out of memory, naming the reservation, when nothing fits; an error of the physical side
    /// leaves nothing of the attempt mapped (what was mapped is unmapped again).
    pub fn grow(
        &mut self,
        needed: usize,
        free_around: &mut dyn FnMut(usize, usize) -> (usize, usize),
    ) -> Result<(usize, usize)> {
        self.unmap_stranded();
        let needed = needed.max(1);
        for (start, end) in self.holes() {
            let (below, above) = free_around(self.base + start, self.base + end);
            let front = self.granule_ceil(needed.saturating_sub(below)).max(self.granule);
            let len = if front <= end - start {
                front
            } else if below + (end - start) + above >= needed {
                end - start
            } else {
                continue;
            };
            return self.map_run(start, len).map(|()| (self.base + start, len));
        }
        let end = self.mapped_end() - self.base;
        let (below, _) = free_around(self.base + end, self.base + end);
        let n = self.granule_ceil(needed.saturating_sub(below)).max(self.granule);
        if n > self.capacity - end {
            return Err(self.exhausted(needed, n));
        }
        self.map_run(end, n).map(|()| (self.base + end, n))
    }

    /// Unmaps `[addr, addr + len)`, whole mapped granules; the addresses stay reserved and become a
    /// hole that a later [`grow`](Self::grow) maps again. On a failure of the physical side the
    /// granules it did unmap are recorded as unmapped ([`Partial::done`]).
    pub fn release(&mut self, addr: usize, len: usize) -> std::result::Result<(), Partial> {
        let aligned = addr.is_multiple_of(self.granule) && len.is_multiple_of(self.granule);
        if !aligned || len == 0 || !self.is_mapped(addr, len) {
            let error = Error::InvalidArgument(format!(
                "cannot unmap {len} bytes at {addr:#x}: not whole mapped granules of {} bytes of this reservation",
                self.granule
            ));
            return Err(Partial { done: 0, error });
        }
        self.unmap_stranded();
        let off = addr - self.base;
        match self.phys.unmap(off, len) {
            Ok(()) => {
                self.record_unmapped(off, len);
                Ok(())
            }
            Err(p) => {
                let done = self.whole_done(p.done, len);
                if done > 0 {
                    self.record_unmapped(off, done);
                }
                Err(Partial { done, error: p.error })
            }
        }
    }

    /// The holes below the mapped end, as offsets `(start, end)`, lowest first.
    fn holes(&self) -> Vec<(usize, usize)> {
        let mut at = 0;
        let mut holes = Vec::new();
        for (&start, &end) in &self.mapped {
            if start > at {
                holes.push((at, start));
            }
            at = end;
        }
        holes
    }

    /// Maps `[off, off + n)`, all or nothing: what a failed map did map is unmapped again. Should
    /// that undo fail too, those granules stay recorded as mapped (they are) and stranded: never
    /// handed out, unmapped again later.
    fn map_run(&mut self, off: usize, n: usize) -> Result<()> {
        match self.phys.map(off, n) {
            Ok(()) => {
                self.record_mapped(off, n);
                Ok(())
            }
            Err(Partial { done, error }) => {
                let done = self.whole_done(done, n);
                if done > 0 {
                    match self.phys.unmap(off, done) {
                        Ok(()) => {}
                        Err(p) => {
                            let undone = self.whole_done(p.done, done);
                            self.record_mapped(off + undone, done - undone);
                            self.stranded.push((off + undone, done - undone));
                        }
                    }
                }
                Err(error)
            }
        }
    }

    /// Tries again to unmap the stranded runs; what the physical side unmaps is recorded, the rest
    /// stays stranded.
    fn unmap_stranded(&mut self) {
        for (off, len) in std::mem::take(&mut self.stranded) {
            let done = match self.phys.unmap(off, len) {
                Ok(()) => len,
                Err(p) => self.whole_done(p.done, len),
            };
            if done > 0 {
                self.record_unmapped(off, done);
            }
            if done < len {
                self.stranded.push((off + done, len - done));
            }
        }
    }

    fn record_mapped(&mut self, off: usize, len: usize) {
        let (mut start, mut end) = (off, off + len);
        if let Some((&s, &e)) = self.mapped.range(..=off).next_back() {
            debug_assert!(e <= off, "granules mapped twice");
            if e == off {
                start = s;
                self.mapped.remove(&s);
            }
        }
        if let Some(e) = self.mapped.remove(&end) {
            end = e;
        }
        self.mapped.insert(start, end);
        self.mapped_bytes += len;
    }

    fn record_unmapped(&mut self, off: usize, len: usize) {
        let end = off + len;
        let (&s, &e) = self.mapped.range(..=off).next_back().expect("a mapped run holds the range");
        debug_assert!(end <= e);
        self.mapped.remove(&s);
        if s < off {
            self.mapped.insert(s, off);
        }
        if end < e {
            self.mapped.insert(end, e);
        }
        self.mapped_bytes -= len;
    }

    #[cold]
    fn exhausted(&self, needed: usize, n: usize) -> Error {
        Error::out_of_memory(
            needed,
            format!(
                "the reserved virtual address range is exhausted: {} reserved, {} mapped, and no unmapped run \
                 of {} left at its end or in its holes; reserve a larger range",
                format_bytes(self.capacity),
                format_bytes(self.mapped_bytes),
                format_bytes(n)
            ),
        )
    }
}

#[cfg(test)]
mod tests;
