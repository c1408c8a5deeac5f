//! Upstreams that break their contract: pointers 16 bytes past a 256-aligned base (as `malloc`
//! gives) and null pointers for non-zero requests. The pool, the arena and the fixed-size resource
//! refuse such memory with `Error::BadUpstream`, give it back, and stay usable; the aligned
//! adaptor keeps every block inside what the upstream gave.

use rmm::adaptor::AlignedResourceAdaptor;
use rmm::resource::{ArenaMemoryResource, FixedSizeMemoryResource, HostMemoryResource, PoolMemoryResource};
use rmm::{CudaStreamView, Error, MemoryResource, Misuse};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

const S: CudaStreamView = CudaStreamView::DEFAULT;
const MIB: usize = 1 << 20;

/// How [`Faulty`] answers an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Mode {
    /// Host memory aligned as asked.
    Good = 0,
    /// Host memory 16 bytes past a 256-aligned base.
    Misaligned = 1,
    /// A null pointer, for any size.
    Null = 2,
}

const MODES: [Mode; 2] = [Mode::Misaligned, Mode::Null];

/// A host upstream whose answers the test switches; it remembers every range it handed out.
#[derive(Default)]
struct Faulty {
    host: HostMemoryResource,
    mode: AtomicU8,
    /// Handed-out pointer -> (bytes asked, host pointer, host bytes).
    live: Mutex<BTreeMap<usize, (usize, usize, usize)>>,
}

impl Faulty {
    fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::Relaxed);
    }

    /// `(count, bytes asked)` of the ranges handed out and not yet given back.
    fn outstanding(&self) -> (usize, usize) {
        let live = self.live.lock().unwrap();
        (live.len(), live.values().map(|&(b, _, _)| b).sum())
    }

    /// True when `ptr..ptr + bytes` lies inside one range handed out.
    fn holds(&self, ptr: *mut u8, bytes: usize) -> bool {
        let p = ptr as usize;
        let live = self.live.lock().unwrap();
        live.range(..=p).next_back().is_some_and(|(&start, &(size, _, _))| p + bytes <= start + size)
    }
}

// SAFETY: on purpose this breaks the contract's first point (null, or 16 bytes past an aligned
// start) to show the checks of the resources above it; every pointer it hands out lies inside host
// memory it owns, and nothing here writes through one beyond what it owns.
unsafe impl MemoryResource for Faulty {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> rmm::Result<*mut u8> {
        let (ptr, host, host_bytes) = match self.mode.load(Ordering::Relaxed) {
            0 => {
                let h = self.host.allocate(bytes, alignment, stream)?;
                (h as usize, h, bytes)
            }
            1 => {
                let h = self.host.allocate(bytes + 256, 256, stream)?;
                (h as usize + 16, h, bytes + 256)
            }
            _ => return Ok(std::ptr::null_mut()),
        };
        self.live.lock().unwrap().insert(ptr, (bytes, host as usize, host_bytes));
        Ok(ptr as *mut u8)
    }

    fn deallocate(&self, ptr: *mut u8, bytes: usize, _alignment: usize, stream: CudaStreamView) -> rmm::Result<()> {
        let mut live = self.live.lock().unwrap();
        let Some(&(asked, host, host_bytes)) = live.get(&(ptr as usize)) else {
            return Err(Misuse::UnknownPointer { ptr: ptr as usize }.into());
        };
        if asked != bytes {
            return Err(Misuse::WrongSize { ptr: ptr as usize, allocated: asked, given: bytes }.into());
        }
        live.remove(&(ptr as usize));
        self.host.deallocate(host as *mut u8, host_bytes, 256, stream)
    }

    fn is_device_accessible(&self) -> bool {
        false
    }

    fn is_host_accessible(&self) -> bool {
        true
    }
}

/// A misaligned chunk is `BadUpstream`; a null one is out of memory (the C way of saying so; a
/// suballocator that backs off reports its own reason, the adaptors the upstream's: see
/// `aligned_adaptor_refuses_a_null_upstream_and_stays_usable`).
fn assert_bad_upstream<T>(r: rmm::Result<T>, mode: Mode) {
    match (mode, r) {
        (Mode::Misaligned, Err(Error::BadUpstream(msg))) => assert!(msg.contains("not so aligned"), "{msg}"),
        (Mode::Null, Err(Error::OutOfMemory { .. })) => {}
        (mode, Err(other)) => panic!("{mode:?}: expected the upstream's fault refused, got {other:?}"),
        (mode, Ok(_)) => panic!("{mode:?}: expected the upstream's fault refused, got success"),
    }
}

#[test]
fn pool_refuses_a_bad_upstream_and_stays_usable() {
    for mode in MODES {
        let up = Faulty::new();
        up.set(mode);
        assert_bad_upstream(PoolMemoryResource::new(up.clone(), MIB, None), mode);
        assert_eq!(up.outstanding(), (0, 0), "{mode:?}: a refused initial chunk was given back");

        up.set(Mode::Good);
        let pool = PoolMemoryResource::new(up.clone(), MIB, None).unwrap();
        let a = pool.allocate(MIB, 256, S).unwrap();
        let (size, before) = (pool.pool_size(), up.outstanding());
        up.set(mode);
        // The pool is full: the next block needs a new chunk.
        assert_bad_upstream(pool.allocate(4 * MIB, 256, S), mode);
        assert_eq!(pool.pool_size(), size, "{mode:?}");
        assert_eq!(up.outstanding(), before, "{mode:?}");
        pool.check_invariants().unwrap();

        up.set(Mode::Good);
        let b = pool.allocate(4 * MIB, 256, S).unwrap();
        assert_eq!(b as usize % 256, 0);
        assert!(up.holds(a, MIB) && up.holds(b, 4 * MIB), "{mode:?}: blocks lie inside the upstream's memory");
        pool.deallocate(a, MIB, 256, S).unwrap();
        pool.deallocate(b, 4 * MIB, 256, S).unwrap();
        pool.check_invariants().unwrap();
        drop(pool);
        assert_eq!(up.outstanding(), (0, 0));
    }
}

#[test]
fn arena_refuses_a_bad_upstream_and_leaves_it_unchanged() {
    for mode in MODES {
        let up = Faulty::new();
        up.set(mode);
        assert_bad_upstream(ArenaMemoryResource::new(up.clone(), Some(4 * MIB), false), mode);
        assert_eq!(up.outstanding(), (0, 0), "{mode:?}: a refused arena was given back");

        up.set(Mode::Good);
        let arena = ArenaMemoryResource::new(up.clone(), Some(4 * MIB), false).unwrap();
        let (base, size) = arena.arena_range();
        let p = arena.allocate(1000, 256, S).unwrap();
        assert_eq!(p as usize % 256, 0);
        assert!((base..base + size).contains(&(p as usize)) && up.holds(p, 1000));
        arena.deallocate(p, 1000, 256, S).unwrap();
        drop(arena);
        assert_eq!(up.outstanding(), (0, 0));
    }
}

#[test]
fn fixed_size_refuses_a_bad_upstream_and_stays_usable() {
    const BLOCK: usize = 4096;
    for mode in MODES {
        let up = Faulty::new();
        up.set(mode);
        assert_bad_upstream(FixedSizeMemoryResource::new(up.clone(), BLOCK, 4), mode);
        assert_eq!(up.outstanding(), (0, 0), "{mode:?}: a refused first chunk was given back");

        up.set(Mode::Good);
        let fixed = FixedSizeMemoryResource::new(up.clone(), BLOCK, 4).unwrap();
        let mut blocks: Vec<*mut u8> = (0..4).map(|_| fixed.allocate(BLOCK, 256, S).unwrap()).collect();
        let (size, before) = (fixed.pool_size(), up.outstanding());
        up.set(mode);
        assert_bad_upstream(fixed.allocate(BLOCK, 256, S), mode);
        assert_eq!((fixed.pool_size(), fixed.free_blocks()), (size, 0), "{mode:?}");
        assert_eq!(up.outstanding(), before, "{mode:?}");
        fixed.check_invariants().unwrap();

        up.set(Mode::Good);
        blocks.push(fixed.allocate(BLOCK, 256, S).unwrap());
        for &b in &blocks {
            assert_eq!(b as usize % 256, 0, "{mode:?}: fixed-size blocks are 256-aligned");
            assert!(up.holds(b, BLOCK), "{mode:?}: blocks lie inside the upstream's memory");
        }
        for b in blocks {
            fixed.deallocate(b, BLOCK, 256, S).unwrap();
        }
        fixed.check_invariants().unwrap();
        drop(fixed);
        assert_eq!(up.outstanding(), (0, 0));
    }
}

#[test]
fn aligned_adaptor_keeps_blocks_inside_a_misaligned_upstream() {
    let up = Faulty::new();
    up.set(Mode::Misaligned);
    let adaptor = AlignedResourceAdaptor::new(up.clone(), 4096, 0).unwrap();
    let sizes = [1, 255, 256, 4096, 4097, 10_000, 65_536, MIB];
    let mut live = Vec::new();
    for &bytes in &sizes {
        for alignment in [256, 4096, 65_536] {
            let p = adaptor.allocate(bytes, alignment, S).unwrap();
            assert_eq!(p as usize % alignment.max(4096), 0, "{bytes} bytes aligned to {alignment}");
            assert!(up.holds(p, bytes), "{bytes} bytes aligned to {alignment}: {p:?} leaves the upstream's memory");
            live.push((p, bytes, alignment));
        }
    }
    assert_eq!(up.outstanding().0, live.len(), "one upstream range per block, the refused ones given back");
    // A wrong size is still refused, by the upstream, and changes nothing.
    let before = up.outstanding();
    for &(p, bytes, alignment) in &live {
        let wrong = adaptor.deallocate(p, bytes + MIB, alignment, S);
        assert!(matches!(wrong, Err(Error::Misuse(Misuse::WrongSize { .. }))), "{bytes} bytes: {wrong:?}");
    }
    assert_eq!(up.outstanding(), before);
    for (p, bytes, alignment) in live {
        adaptor.deallocate(p, bytes, alignment, S).unwrap();
    }
    assert_eq!(up.outstanding(), (0, 0));
}

#[test]
fn aligned_adaptor_refuses_a_null_upstream_and_stays_usable() {
    let up = Faulty::new();
    let adaptor = AlignedResourceAdaptor::new(up.clone(), 4096, 0).unwrap();
    let a = adaptor.allocate(MIB, 256, S).unwrap();
    let before = up.outstanding();
    up.set(Mode::Null);
    match adaptor.allocate(MIB, 256, S) {
        Err(Error::OutOfMemory { pool: None, reason, .. }) => assert!(reason.contains("null pointer"), "{reason}"),
        other => panic!("expected out of memory naming the null pointer, got {other:?}"),
    }
    assert_eq!(up.outstanding(), before);

    up.set(Mode::Good);
    let b = adaptor.allocate(MIB, 256, S).unwrap();
    assert!((b as usize).is_multiple_of(4096) && up.holds(b, MIB));
    adaptor.deallocate(a, MIB, 256, S).unwrap();
    adaptor.deallocate(b, MIB, 256, S).unwrap();
    assert_eq!(up.outstanding(), (0, 0));
}
