//! A log of one Dask worker (three threads on the legacy default stream) replayed with each logged
//! thread on a thread of its own, every thread on a shard of its own (as contention on one shard
//! spreads them on a GPU), operations in file order: the virtual pool maps at most 1.05 × the
//! peak of live bytes, as on one thread.

use super::*;
use rmm_algorithms::HostPhysicalMemory;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex};

const LOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/threaded_logs/dask_worker_threads.csv");

/// One row of the log: thread (numbered from 0 in order of appearance), allocation or free,
/// logged pointer, bytes.
type Op = (usize, bool, usize, usize);

fn read_log() -> (Vec<Op>, usize) {
    let text = std::fs::read_to_string(LOG).unwrap();
    let mut threads: Vec<&str> = Vec::new();
    let mut ops = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let t = threads.iter().position(|&x| x == f[0]).unwrap_or_else(|| {
            threads.push(f[0]);
            threads.len() - 1
        });
        let ptr = usize::from_str_radix(f[3].trim_start_matches("0x"), 16).unwrap();
        ops.push((t, f[2] == "allocate", ptr, f[4].parse().unwrap()));
    }
    (ops, threads.len())
}

/// Replays the log; returns (peak bytes mapped, peak bytes live).
fn replay(spread: bool) -> (usize, usize) {
    let (ops, threads) = read_log();
    let phys = HostPhysicalMemory::new(1 << 40, 64 << 30, 2 << 20);
    // SAFETY: no test reads or writes the blocks of the stand-in.
    let p = unsafe {
        VirtualPoolMemoryResource::with_physical(phys, 256 << 20, Box::new(rmm_algorithms::SimulatedDeviceOrder), 32)
    }
    .unwrap();
    let s = CudaStreamView::DEFAULT;
    let next = Mutex::new(0usize);
    let turn = Condvar::new();
    let blocks = Mutex::new(HashMap::new());
    // Bytes live, the peak of live bytes, the peak of mapped bytes.
    let peaks = Mutex::new((0usize, 0usize, 0usize));
    std::thread::scope(|scope| {
        for me in 0..threads {
            let (p, next, turn, blocks, ops, peaks) = (&p, &next, &turn, &blocks, &ops, &peaks);
            scope.spawn(move || {
                if spread {
                    p.pool.spread_calling_thread(s);
                }
                loop {
                    let mut i = next.lock().unwrap();
                    while *i < ops.len() && ops[*i].0 != me {
                        i = turn.wait(i).unwrap();
                    }
                    let Some(&(_, allocate, ptr, bytes)) = ops.get(*i) else { return };
                    let mut peaks = peaks.lock().unwrap();
                    if allocate {
                        let at = p.allocate(bytes, 256, s).unwrap() as usize;
                        blocks.lock().unwrap().insert(ptr, at);
                        peaks.0 += bytes;
                        peaks.1 = peaks.1.max(peaks.0);
                        peaks.2 = peaks.2.max(p.mapped_bytes());
                    } else if let Some(at) = blocks.lock().unwrap().remove(&ptr) {
                        p.deallocate(at as *mut u8, bytes, 256, s).unwrap();
                        peaks.0 -= bytes;
                    }
                    *i += 1;
                    turn.notify_all();
                }
            });
        }
    });
    p.check_invariants().unwrap();
    let (_, peak_live, peak_mapped) = peaks.into_inner().unwrap();
    (peak_mapped, peak_live)
}

#[test]
fn a_dask_workers_threads_on_shards_of_their_own_map_little_more_than_is_live() {
    for spread in [false, true] {
        let (mapped, live) = replay(spread);
        let ratio = mapped as f64 / live as f64;
        eprintln!("threads on shards of their own: {spread}: mapped {mapped}, live {live}, {ratio:.3}");
        assert!(ratio <= 1.05, "mapped {mapped} for {live} live ({ratio:.3})");
    }
}
