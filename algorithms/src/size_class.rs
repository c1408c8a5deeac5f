//! Two-level segregated size classes with bitmaps (the index of TLSF).
//!
//! Sizes are counted in 256-byte units. The first level is the power of two of the size, the second
//! splits each power into `SL_COUNT` equal classes. `map_floor` gives the class a free block belongs
//! to; `map_ceil` gives the smallest class whose every block fits a request, so one bitmap search
//! finds a fitting block in O(1) without walking lists.

/// log2 of the number of second-level classes per power of two.
pub(crate) const SL_LOG: u32 = 5;
/// Second-level classes per power of two.
pub(crate) const SL_COUNT: usize = 1 << SL_LOG;
/// First-level classes: enough for 2^44 bytes (2^36 units), past the largest block (2^32 units,
/// see `MAX_BLOCK_BYTES`) plus the largest alignment a search adds. 32 rows keep the first-level
/// bitmap one `u32` and let indexing drop its bounds checks.
pub(crate) const FL_COUNT: usize = 32;

/// A size class: first and second level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Class {
    pub fl: usize,
    pub sl: usize,
}

/// The class a block of `units` belongs to (rounds down). `units` must be in `1..=MAX_UNITS`.
///
/// Branch-free: small sizes (row 0, one class per unit) and larger ones alternate at random in
/// real traces, and a mispredicted branch here cost more than the arithmetic of both cases.
#[inline]
pub(crate) fn map_floor(units: usize) -> Class {
    debug_assert!(units < 1 << (FL_COUNT + SL_LOG as usize - 1), "{units} units exceed the size classes");
    // Row 0 is linear: for units < SL_COUNT the shift is 0 and `large` is 0.
    let shift = (units | SL_COUNT).ilog2() - SL_LOG;
    let large = usize::from(units >= SL_COUNT);
    Class { fl: shift as usize + large, sl: (units >> shift) - large * SL_COUNT }
}

/// The smallest class all of whose blocks hold `units` (rounds up).
#[inline]
pub(crate) fn map_ceil(units: usize) -> Class {
    // Adding one class width less one lifts every size but a class's smallest into the next class;
    // in row 0 the width is 1, so nothing is added.
    let shift = (units | SL_COUNT).ilog2() - SL_LOG;
    map_floor(units + (1 << shift) - 1)
}

/// The smallest size (units) of any block in class `c`.
#[cfg(test)]
pub(crate) fn class_min(c: Class) -> usize {
    if c.fl == 0 {
        c.sl
    } else {
        (SL_COUNT + c.sl) << (c.fl - 1)
    }
}

/// Which classes hold at least one block: a first-level word and one second-level word per row.
#[derive(Debug, Clone)]
pub(crate) struct ClassBitmap {
    fl: u32,
    sl: [u32; FL_COUNT],
}

impl Default for ClassBitmap {
    fn default() -> Self {
        ClassBitmap { fl: 0, sl: [0; FL_COUNT] }
    }
}

impl ClassBitmap {
    #[inline]
    pub fn set(&mut self, c: Class) {
        self.sl[c.fl % FL_COUNT] |= 1 << (c.sl % SL_COUNT);
        self.fl |= 1 << (c.fl % FL_COUNT);
    }

    #[inline]
    pub fn clear(&mut self, c: Class) {
        let row = &mut self.sl[c.fl % FL_COUNT];
        *row &= !(1 << (c.sl % SL_COUNT));
        if *row == 0 {
            self.fl &= !(1 << (c.fl % FL_COUNT));
        }
    }

    /// The first non-empty class at or above `c`.
    #[inline]
    pub fn find_at_or_above(&self, c: Class) -> Option<Class> {
        let row = self.sl[c.fl % FL_COUNT] & (u32::MAX << (c.sl % SL_COUNT));
        if row != 0 {
            return Some(Class { fl: c.fl, sl: row.trailing_zeros() as usize });
        }
        let rows = self.fl & (u32::MAX.checked_shl(c.fl as u32 + 1).unwrap_or(0));
        if rows == 0 {
            return None;
        }
        let fl = rows.trailing_zeros() as usize;
        Some(Class { fl, sl: self.sl[fl % FL_COUNT].trailing_zeros() as usize })
    }

    /// The highest non-empty class.
    pub fn highest(&self) -> Option<Class> {
        if self.fl == 0 {
            return None;
        }
        let fl = 31 - self.fl.leading_zeros() as usize;
        Some(Class { fl, sl: 31 - self.sl[fl % FL_COUNT].leading_zeros() as usize })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_and_ceil_bracket_every_size() {
        let mut sizes: Vec<usize> = (1..5000).collect();
        for shift in 12..35 {
            let b = 1usize << shift;
            sizes.extend([b - 1, b, b + 1, b + b / 3]);
        }
        for u in sizes {
            let f = map_floor(u);
            assert!(class_min(f) <= u, "floor({u}) = {f:?} starts above it");
            let c = map_ceil(u);
            assert!(class_min(c) >= u, "ceil({u}) = {c:?} starts below it");
            // ceil never skips more than one class past floor.
            let next_of_floor =
                if f.sl + 1 < SL_COUNT { Class { fl: f.fl, sl: f.sl + 1 } } else { Class { fl: f.fl + 1, sl: 0 } };
            assert!(c == f || c == next_of_floor, "{u}: {f:?} -> {c:?}");
            // floor is the highest class starting at or below u, and ceil the lowest at or above.
            assert!(class_min(next_of_floor) > u, "floor({u}) = {f:?} is not the highest");
            assert!(f.sl < SL_COUNT && c.sl < SL_COUNT && c.fl < FL_COUNT);
            assert_eq!(c == f, class_min(f) == u, "ceil({u}) = {c:?} against floor {f:?}");
        }
    }

    #[test]
    fn bitmap_finds_next_nonempty_class() {
        let mut b = ClassBitmap::default();
        assert_eq!(b.find_at_or_above(Class { fl: 0, sl: 0 }), None);
        b.set(Class { fl: 3, sl: 7 });
        b.set(Class { fl: 10, sl: 0 });
        assert_eq!(b.find_at_or_above(Class { fl: 3, sl: 2 }), Some(Class { fl: 3, sl: 7 }));
        assert_eq!(b.find_at_or_above(Class { fl: 3, sl: 8 }), Some(Class { fl: 10, sl: 0 }));
        assert_eq!(b.find_at_or_above(Class { fl: FL_COUNT - 1, sl: 0 }), None);
        assert_eq!(b.highest(), Some(Class { fl: 10, sl: 0 }));
        b.clear(Class { fl: 10, sl: 0 });
        assert_eq!(b.highest(), Some(Class { fl: 3, sl: 7 }));
        b.clear(Class { fl: 3, sl: 7 });
        assert_eq!(b.highest(), None);
    }
}
