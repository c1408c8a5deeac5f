//! Not part of the API: the random numbers the tests of this crate, and through `rmm::testing` the
//! replay tool, the benchmarks and the tests of rmm-rs, draw from one generator.

/// SplitMix64 (Steele, Lea and Flood, 2014): small, fast, and the same numbers on every machine
/// from a printed seed. `benches/cpp/alloc_bench.cu` uses the same generator, so the fixed random
/// trace is the same in Rust and in C++.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n > 0`), as the fixed trace draws it: the next value modulo `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Log-uniform in `lo..=hi` (`0 < lo <= hi`).
    pub fn log_uniform(&mut self, lo: usize, hi: usize) -> usize {
        let (a, b) = ((lo as f64).log2(), (hi as f64).log2());
        ((a + (b - a) * self.unit()).exp2() as usize).clamp(lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn the_sequence_is_splitmix64() {
        // The first outputs for seed 0, as published with the algorithm.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn draws_stay_in_range() {
        let mut r = SplitMix64::new(42);
        for _ in 0..10_000 {
            assert!(r.below(7) < 7);
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            let l = r.log_uniform(8, 1 << 20);
            assert!((8..=1 << 20).contains(&l));
        }
    }
}
