//! The virtual-memory pool under threads and streams, with releases among them, checked against
//! a model of the device (`common::clock_order`): no block overlaps a live one, every block lies
//! in mapped memory, a block reaches another stream only once that stream is ordered after its
//! free, and a granule is unmapped only while no block in it is live and every stream is ordered
//! after every free in it (memory queued work may still use is never unmapped).

mod common;

use common::clock_order::ClockOrder;
use common::{seed, Rng};
use rmm::pool::{HostMappings, HostPhysicalMemory, Partial, PhysicalMemory};
use rmm::resource::VirtualPoolMemoryResource;
use rmm::{CudaStreamView, MemoryResource};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

const STREAMS: usize = 3;
const THREADS: usize = 6;
const UNIT: usize = 256;
const MIB: usize = 1 << 20;

/// What the model knows of each 256-byte unit of the reservation.
#[derive(Default)]
struct Units {
    live: HashSet<usize>,
    /// Freed units: the stream and its time at the free.
    freed: HashMap<usize, (usize, u64)>,
    crossings: usize,
    unmapped: usize,
}

#[derive(Clone, Default)]
struct Model {
    order: ClockOrder,
    units: Arc<Mutex<Units>>,
}

fn units(p: usize, bytes: usize) -> impl Iterator<Item = usize> {
    (p..p + bytes.max(1)).step_by(UNIT).map(|a| a / UNIT)
}

fn handle(group: usize) -> usize {
    0x1000 * (group + 1)
}

impl Model {
    fn allocated(&self, p: usize, bytes: usize, stream: usize) {
        let mut u = self.units.lock().unwrap();
        for unit in units(p, bytes) {
            assert!(u.live.insert(unit), "unit {:#x} handed out twice", unit * UNIT);
            if let Some((s, t)) = u.freed.remove(&unit) {
                if s != stream {
                    assert!(
                        self.order.sees(stream, s, t),
                        "unit {:#x} freed on {s:#x} reached {stream:#x}",
                        unit * UNIT
                    );
                    u.crossings += 1;
                }
            }
        }
    }

    fn freeing(&self, p: usize, bytes: usize, stream: usize) {
        let t = self.order.tick(stream);
        let mut u = self.units.lock().unwrap();
        for unit in units(p, bytes) {
            assert!(u.live.remove(&unit));
            u.freed.insert(unit, (stream, t));
        }
    }

    /// `[addr, addr + len)` is about to be unmapped.
    fn unmapping(&self, addr: usize, len: usize) {
        let mut u = self.units.lock().unwrap();
        for unit in units(addr, len) {
            assert!(!u.live.contains(&unit), "unit {:#x} unmapped while handed out", unit * UNIT);
            if let Some((s, t)) = u.freed.remove(&unit) {
                for g in 0..STREAMS {
                    let w = handle(g);
                    assert!(self.order.sees(w, s, t), "unit {:#x} unmapped while {w:#x} may still use it", unit * UNIT);
                }
            }
        }
        u.unmapped += len;
    }
}

/// The host stand-in, telling the model of every unmap first.
struct Checked(HostPhysicalMemory, Model);

impl PhysicalMemory for Checked {
    fn base(&self) -> usize {
        self.0.base()
    }
    fn capacity(&self) -> usize {
        self.0.capacity()
    }
    fn granularity(&self) -> usize {
        self.0.granularity()
    }
    fn map(&mut self, off: usize, len: usize) -> Result<(), Partial> {
        self.0.map(off, len)
    }
    fn unmap(&mut self, off: usize, len: usize) -> Result<(), Partial> {
        self.1.unmapping(self.0.base() + off, len);
        self.0.unmap(off, len)
    }
}

#[test]
fn threads_streams_and_releases_keep_the_stream_order_and_the_mappings() {
    let model = Model::default();
    let base = seed("virtual pool stream order model", 31);
    let phys = HostPhysicalMemory::new(1 << 40, 512 * MIB, 2 * MIB);
    let view: HostMappings = phys.mappings();
    // SAFETY: no code reads or writes the blocks of the stand-in.
    let pool = unsafe {
        VirtualPoolMemoryResource::with_physical(
            Checked(phys, model.clone()),
            8 * MIB,
            Box::new(model.order.clone()),
            8,
        )
    }
    .unwrap();
    let pool = Arc::new(pool);
    // Every stream has a clock before any work, so that every synchronisation orders it (a
    // stream with no clock yet would see nothing of one made before its thread starts).
    for g in 0..STREAMS {
        model.order.tick(handle(g));
    }
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (pool, model, view) = (pool.clone(), model.clone(), view.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(base + t as u64);
                let h = handle(t % STREAMS);
                // SAFETY: a stream name for resources over host memory: no driver call sees it.
                let stream = unsafe { CudaStreamView::from_handle(h) };
                let mut live: Vec<(usize, usize)> = Vec::new();
                for i in 0..6000 {
                    if live.len() < 48 && (live.is_empty() || rng.below(2) == 0) {
                        let bytes = rng.log_uniform(8, 512 << 10);
                        let p = pool.allocate(bytes, 256, stream).unwrap() as usize;
                        assert!(view.is_mapped(p, bytes), "{p:#x}+{bytes} not mapped");
                        model.allocated(p, bytes, h);
                        live.push((p, bytes));
                    } else {
                        let (p, bytes) = live.swap_remove(rng.below(live.len()));
                        model.freeing(p, bytes, h);
                        pool.deallocate(p as *mut u8, bytes, 256, stream).unwrap();
                    }
                    if t == 0 && i % 200 == 0 {
                        pool.release_above(rng.below(64 * MIB)).unwrap();
                    }
                    if i % 100 == 0 {
                        for &(p, bytes) in &live {
                            assert!(view.is_mapped(p, bytes), "live {p:#x}+{bytes} unmapped");
                        }
                    }
                }
                for (p, bytes) in live {
                    model.freeing(p, bytes, h);
                    pool.deallocate(p as *mut u8, bytes, 256, stream).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    pool.check_invariants().unwrap();
    pool.release().unwrap();
    assert_eq!(pool.mapped_bytes(), 0, "everything free goes back");
    assert_eq!(view.mapped_bytes(), 0);
    let u = model.units.lock().unwrap();
    println!("crossings {}, unmapped {} MiB", u.crossings, u.unmapped / MIB);
    assert!(u.unmapped > 0);
}
