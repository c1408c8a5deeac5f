use super::*;

const MIB: usize = 1 << 20;
const G: usize = 2 * MIB;
const BASE: usize = 1 << 40;

/// A pool with nothing free anywhere.
fn no_free(_: usize, _: usize) -> (usize, usize) {
    (0, 0)
}

/// A pool with `free` bytes free just below `at`.
fn tail(at: usize, free: usize) -> impl FnMut(usize, usize) -> (usize, usize) {
    move |start, _| if start == at { (free, 0) } else { (0, 0) }
}

fn space(capacity: usize) -> (AddressSpace<HostPhysicalMemory>, host::HostMappings) {
    let phys = HostPhysicalMemory::new(BASE, capacity, G);
    let view = phys.mappings();
    (AddressSpace::new(phys).unwrap(), view)
}

#[test]
fn growth_maps_whole_granules_at_the_end() {
    let (mut s, view) = space(64 * MIB);
    assert_eq!(s.grow(1, &mut no_free).unwrap(), (BASE, G));
    assert_eq!(s.grow(3 * MIB, &mut no_free).unwrap(), (BASE + G, 4 * MIB));
    assert_eq!(s.mapped_bytes(), 6 * MIB);
    assert_eq!(view.mapped_bytes(), 6 * MIB);
    assert_eq!(s.mapped_runs(), vec![(BASE, 6 * MIB)]);
    assert_eq!(s.mapped_end(), BASE + 6 * MIB);
}

#[test]
fn a_free_tail_at_the_end_is_counted_only_while_it_is_still_the_end() {
    let (mut s, _) = space(64 * MIB);
    s.grow(4 * MIB, &mut no_free).unwrap();
    // 3 MiB free below the end: 5 MiB more are needed for 8, one granule... rounded to 6.
    assert_eq!(s.grow(8 * MIB, &mut tail(BASE + 4 * MIB, 3 * MIB)).unwrap(), (BASE + 4 * MIB, 6 * MIB));
    // A tail below an end that moved counts for nothing.
    assert_eq!(s.grow(4 * MIB, &mut tail(BASE + 4 * MIB, 4 * MIB)).unwrap(), (BASE + 10 * MIB, 4 * MIB));
    // A tail larger than the need still maps a granule.
    assert_eq!(s.grow(MIB, &mut tail(BASE + 14 * MIB, 8 * MIB)).unwrap(), (BASE + 14 * MIB, G));
}

#[test]
fn released_granules_become_holes_that_growth_maps_first() {
    let (mut s, view) = space(64 * MIB);
    s.grow(16 * MIB, &mut no_free).unwrap();
    s.release(BASE + 2 * MIB, 4 * MIB).unwrap();
    s.release(BASE + 8 * MIB, 6 * MIB).unwrap();
    assert_eq!(s.mapped_runs(), vec![(BASE, 2 * MIB), (BASE + 6 * MIB, 2 * MIB), (BASE + 14 * MIB, 2 * MIB)]);
    assert!(!view.is_mapped(BASE + 2 * MIB, 1));
    assert_eq!(s.mapped_end(), BASE + 16 * MIB, "the end stays where it was");
    // 6 MiB fit only the second hole; 2 the first; 4 the rest of the first.
    assert_eq!(s.grow(6 * MIB, &mut no_free).unwrap(), (BASE + 8 * MIB, 6 * MIB));
    assert_eq!(s.grow(2 * MIB, &mut no_free).unwrap(), (BASE + 2 * MIB, 2 * MIB));
    assert_eq!(s.grow(2 * MIB, &mut no_free).unwrap(), (BASE + 4 * MIB, 2 * MIB));
    assert_eq!(s.mapped_runs(), vec![(BASE, 16 * MIB)]);
    assert_eq!(view.mapped_bytes(), 16 * MIB);
}

#[test]
fn a_hole_joined_to_free_blocks_around_it_is_mapped_when_they_make_the_run() {
    let (mut s, _) = space(64 * MIB);
    s.grow(16 * MIB, &mut no_free).unwrap();
    s.release(BASE + 4 * MIB, 4 * MIB).unwrap();
    // 3 MiB free below the hole, 3 above: 9 MiB need the whole hole and both.
    let mut around =
        |start, end| if (start, end) == (BASE + 4 * MIB, BASE + 8 * MIB) { (3 * MIB, 3 * MIB) } else { (0, 0) };
    assert_eq!(s.grow(9 * MIB, &mut around).unwrap(), (BASE + 4 * MIB, 4 * MIB));
    s.release(BASE + 4 * MIB, 4 * MIB).unwrap();
    // 5 MiB: the free bytes below and the front granule of the hole.
    assert_eq!(s.grow(5 * MIB, &mut around).unwrap(), (BASE + 4 * MIB, 2 * MIB));
    // 11 MiB: more than the hole and both sides give; at the end.
    assert_eq!(s.grow(11 * MIB, &mut around).unwrap(), (BASE + 16 * MIB, 12 * MIB));
}

#[test]
fn releasing_the_top_moves_the_end_down() {
    let (mut s, _) = space(64 * MIB);
    s.grow(8 * MIB, &mut no_free).unwrap();
    s.release(BASE + 4 * MIB, 4 * MIB).unwrap();
    assert_eq!(s.mapped_end(), BASE + 4 * MIB);
    assert_eq!(s.grow(MIB, &mut tail(BASE + 4 * MIB, 0)).unwrap(), (BASE + 4 * MIB, G));
}

#[test]
fn an_exhausted_reservation_is_named_and_changes_nothing() {
    let (mut s, view) = space(8 * MIB);
    s.grow(6 * MIB, &mut no_free).unwrap();
    let e = s.grow(4 * MIB, &mut no_free).unwrap_err();
    assert!(e.is_out_of_memory());
    assert!(e.to_string().contains("reserved virtual address range is exhausted"), "{e}");
    assert_eq!(s.mapped_bytes(), 6 * MIB);
    assert_eq!(view.mapped_bytes(), 6 * MIB);
    assert_eq!(s.grow(2 * MIB, &mut no_free).unwrap(), (BASE + 6 * MIB, 2 * MIB));
    assert!(s.grow(1, &mut no_free).is_err());
}

#[test]
fn a_failed_map_leaves_nothing_mapped() {
    let (mut s, view) = space(64 * MIB);
    s.grow(4 * MIB, &mut no_free).unwrap();
    view.fail_next_map_after(2);
    assert!(s.grow(8 * MIB, &mut no_free).is_err());
    assert_eq!(s.mapped_runs(), vec![(BASE, 4 * MIB)]);
    assert_eq!(view.mapped_bytes(), 4 * MIB);
    // The undo itself failing: what stayed mapped is recorded as mapped.
    view.fail_next_map_after(3);
    view.fail_next_unmap_after(1);
    assert!(s.grow(8 * MIB, &mut no_free).is_err());
    assert_eq!(s.mapped_bytes(), view.mapped_bytes());
    assert_eq!(s.mapped_runs(), vec![(BASE, 4 * MIB), (BASE + 6 * MIB, 4 * MIB)]);
    assert_eq!(s.stranded_bytes(), 4 * MIB);
    // The next growth unmaps them first, then fills the hole they leave.
    assert_eq!(s.grow(2 * MIB, &mut no_free).unwrap(), (BASE + 4 * MIB, 2 * MIB));
    assert_eq!(s.stranded_bytes(), 0);
    assert_eq!(s.mapped_runs(), vec![(BASE, 6 * MIB)]);
    assert_eq!(view.mapped_bytes(), 6 * MIB);
}

#[test]
fn a_failed_unmap_records_what_it_did() {
    let (mut s, view) = space(64 * MIB);
    s.grow(8 * MIB, &mut no_free).unwrap();
    view.fail_next_unmap_after(1);
    let p = s.release(BASE, 6 * MIB).unwrap_err();
    assert_eq!(p.done, G);
    assert_eq!(s.mapped_runs(), vec![(BASE + G, 6 * MIB)]);
    assert_eq!(view.mapped_bytes(), 6 * MIB);
}

#[test]
fn bad_releases_and_reservations_are_refused() {
    let (mut s, _) = space(64 * MIB);
    s.grow(4 * MIB, &mut no_free).unwrap();
    for (addr, len) in [(BASE + MIB, G), (BASE, MIB), (BASE + 2 * MIB, 4 * MIB), (BASE - G, G), (BASE, 0)] {
        let p = s.release(addr, len).unwrap_err();
        assert_eq!(p.done, 0);
        assert!(matches!(p.error, Error::InvalidArgument(_)), "{:?}", p.error);
    }
    assert_eq!(s.mapped_bytes(), 4 * MIB);
    assert!(AddressSpace::new(HostPhysicalMemory::new(BASE, 3 * MIB, G)).is_err());
    assert!(AddressSpace::new(HostPhysicalMemory::new(BASE, 4 * MIB, 3 * MIB)).is_err());
}

/// Random growths and releases against a model of the granules: the record, the stand-in and the
/// model agree after every step, and growth takes holes before the end.
#[test]
fn random_growth_and_release_match_a_model() {
    const N: usize = 48;
    for seed in 1..=16 {
        let mut rng = crate::testing::SplitMix64::new(seed);
        let (mut s, view) = space(N * G);
        let mut model = [false; N];
        for step in 0..1000 {
            if rng.below(2) == 0 {
                let needed = 1 + rng.below(6 * G);
                let n = needed.div_ceil(G);
                let hole = (0..N).find(|&i| {
                    let top = model.iter().rposition(|&m| m).map_or(0, |t| t + 1);
                    i + n <= top && model[i..i + n].iter().all(|&m| !m) && (i == 0 || model[i - 1])
                });
                match s.grow(needed, &mut no_free) {
                    Ok((addr, len)) => {
                        let first = (addr - BASE) / G;
                        if let Some(h) = hole {
                            assert_eq!(first, h, "seed {seed} step {step}: the lowest fitting hole first");
                        }
                        assert_eq!(len, n * G);
                        model[first..first + n].iter_mut().for_each(|m| *m = true);
                    }
                    Err(e) => {
                        assert!(hole.is_none() && e.is_out_of_memory(), "seed {seed} step {step}: {e}");
                    }
                }
            } else {
                let i = rng.below(N);
                let n = model[i..].iter().take_while(|&&m| m).count().min(1 + rng.below(4));
                if n > 0 {
                    s.release(BASE + i * G, n * G).unwrap();
                    model[i..i + n].iter_mut().for_each(|m| *m = false);
                }
            }
            for (i, &m) in model.iter().enumerate() {
                assert_eq!(view.is_mapped(BASE + i * G, G), m, "seed {seed} step {step} granule {i}");
                assert_eq!(s.is_mapped(BASE + i * G, G), m, "seed {seed} step {step} granule {i}");
            }
            assert_eq!(s.mapped_bytes(), model.iter().filter(|&&m| m).count() * G);
        }
    }
}
