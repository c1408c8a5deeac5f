//! Which stream a key names: [`StreamIdentity`], what a stream order answers when a pool asks
//! (see `StreamOrder::identity`).
//!
//! A handle may name several streams over time (the driver gives a destroyed stream's handle to
//! the next stream it creates), so a pool keeps, beside each stream's free blocks, the identity of
//! the stream that filled them, and compares it with the stream's identity now before it takes
//! them without waiting.

/// The incarnation of a stream behind a key: two answers name the same stream only when they are
/// equal, and only [`Driver`](Self::Driver) answers are ever equal across calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamIdentity {
    /// Not established yet: the identity of a set of free lists before the first call on its
    /// stream asked, or of a capture whose record has not succeeded. Never an answer of the
    /// order.
    Unknown,
    /// The key cannot name another stream without the pool being told first (a default stream, a
    /// stream whose destruction is announced, a retired key): the pool never asks again.
    Trusted,
    /// The stream was destroyed without its work being waited for: the next call synchronises
    /// everything before it uses the blocks. Never an answer of the order, so never equal to one.
    Stale,
    /// The driver's unique id of the stream (`cuStreamGetId`).
    Driver(u64),
    /// An identity no other answer equals (`.0` is a number used once, from
    /// `next_retirement_number`): for a stream the driver cannot be asked about now (one capturing
    /// into a graph, a handle it does not know), so that its blocks are never taken on trust.
    Unrepeatable(u64),
}

impl StreamIdentity {
    /// True for [`Trusted`](Self::Trusted): the fast paths' one comparison.
    #[inline(always)]
    pub const fn is_trusted(self) -> bool {
        matches!(self, StreamIdentity::Trusted)
    }

    /// True for [`Unknown`](Self::Unknown).
    #[inline(always)]
    pub const fn is_unknown(self) -> bool {
        matches!(self, StreamIdentity::Unknown)
    }
}

/// A [`StreamIdentity`] in one word, as the pool keeps it beside each set of free lists and in
/// its header's cache of the last set: the fast path reads it with the set and tests it for
/// [`Trusted`](StreamIdentity::Trusted) with one comparison.
///
/// ```text
///   0                    Trusted
///   u64::MAX             Unknown
///   u64::MAX - 1         Stale
///   id | 1 << 63         Driver(id)         (id below 2^63 - 2: the driver counts from 1)
///   n | 1 << 62          Unrepeatable(n)    (n below 2^62: a count of calls)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackedIdentity(u64);

impl PackedIdentity {
    /// Marks a driver id.
    const DRIVER: u64 = 1 << 63;
    /// Marks an unrepeatable number.
    const UNREPEATABLE: u64 = 1 << 62;

    /// [`StreamIdentity::Unknown`], packed.
    pub(crate) const UNKNOWN: PackedIdentity = PackedIdentity(u64::MAX);

    /// `identity` in one word.
    #[inline(always)]
    pub(crate) const fn pack(identity: StreamIdentity) -> Self {
        PackedIdentity(match identity {
            StreamIdentity::Trusted => 0,
            StreamIdentity::Unknown => u64::MAX,
            StreamIdentity::Stale => u64::MAX - 1,
            StreamIdentity::Driver(id) => id | Self::DRIVER,
            StreamIdentity::Unrepeatable(n) => n | Self::UNREPEATABLE,
        })
    }

    /// The identity this word holds.
    #[inline(always)]
    pub(crate) const fn unpack(self) -> StreamIdentity {
        match self.0 {
            0 => StreamIdentity::Trusted,
            u64::MAX => StreamIdentity::Unknown,
            w if w == u64::MAX - 1 => StreamIdentity::Stale,
            w if w & Self::DRIVER != 0 => StreamIdentity::Driver(w & !Self::DRIVER),
            w => StreamIdentity::Unrepeatable(w & !Self::UNREPEATABLE),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_equal_identities_name_one_stream() {
        assert_ne!(StreamIdentity::Unrepeatable(1), StreamIdentity::Unrepeatable(2));
        assert!(!StreamIdentity::Driver(1).is_trusted() && !StreamIdentity::Driver(1).is_unknown());
        assert!(StreamIdentity::Trusted.is_trusted() && StreamIdentity::Unknown.is_unknown());
        assert_ne!(StreamIdentity::Driver(7), StreamIdentity::Unrepeatable(7));
    }

    #[test]
    fn every_identity_survives_packing() {
        let identities = [
            StreamIdentity::Trusted,
            StreamIdentity::Unknown,
            StreamIdentity::Stale,
            StreamIdentity::Driver(0),
            StreamIdentity::Driver(1),
            StreamIdentity::Driver((1 << 63) - 3),
            StreamIdentity::Unrepeatable(0),
            StreamIdentity::Unrepeatable(5),
            StreamIdentity::Unrepeatable((1 << 62) - 1),
        ];
        for identity in identities {
            assert_eq!(PackedIdentity::pack(identity).unpack(), identity);
        }
        assert_eq!(PackedIdentity::UNKNOWN.unpack(), StreamIdentity::Unknown);
    }
}
