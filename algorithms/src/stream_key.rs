//! How the pools name a stream: [`StreamKey`], one machine word, and [`StreamKind`], the same
//! identity as an enum to read and to match on.
//!
//! Both the pools (which keep free blocks by key) and the stream registry (which tells them when
//! a stream goes) use it; it uses nothing of the crate.
//!
//! Real stream handles are aligned pointers, so their three low bits are zero. The keys that name
//! no handle put a tag in those bits and a number above them:
//!
//! ```text
//!   bits 63..3       bits 2..0   kind
//!   0                000         LegacyDefault
//!   handle >> 3      000         Stream(handle)       (any other value no tag below claims too)
//!   thread           011         PerThread(thread)
//!   number           101         RetiredAfterCapture(number)
//!   number >= 1      001         RetiredAfterSync(number)   (1 itself is cudaStreamLegacy)
//!   number >= 1      100         Sealed(number)             (4 itself is a handle)
//!   0                111         Fresh
//!   0                110         Unused
//! ```

/// Identifies a stream to the pool. Handles of real streams are used as they are; the legacy
/// default stream is 0; the per-thread default stream of each thread gets a key of its own (see
/// [`StreamKey::per_thread`]) because the same handle names a different stream on every thread.
///
/// A handle names a stream only while that stream lives: the driver gives a destroyed stream's
/// handle to the next stream it creates. The pool therefore never trusts a handle key beyond the
/// stream's life: when a stream is retired or found replaced, its free blocks move to a *retired*
/// key that no live stream has.
///
/// The key is one packed word, private to this module: the pool's hot path compares and hashes
/// it. [`kind`](Self::kind) reads it as a [`StreamKind`], every `StreamKey` is
/// `StreamKey::from(key.kind())`, and [`handle`](Self::handle) gives back the handle of a key that
/// names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamKey(usize);

/// What a [`StreamKey`] names: one variant per kind of key, in the words of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamKind {
    /// The legacy default stream (handle 0, or `cudaStreamLegacy`, which the pools map to 0).
    LegacyDefault,
    /// The per-thread default stream of thread number `.0` (see the pool's
    /// `current_thread_number`): the same handle names another stream on every thread.
    PerThread(usize),
    /// A stream named by its handle, used as it is: a stream made by this library or by the
    /// program. A real handle is an aligned pointer (three low bits zero).
    Stream(usize),
    /// The owner of memory no stream has used yet (fresh chunks): any stream may take it at once.
    Fresh,
    /// A set of free lists no stream owns any more: empty, and free to be reused.
    Unused,
    /// The free blocks of a retired stream whose work up to its retirement was captured: another
    /// stream may take them after waiting for that capture. `.0` tells retirements apart.
    RetiredAfterCapture(usize),
    /// The free blocks of a stream that was destroyed without a capture of its work: they become
    /// usable only after a synchronisation of everything. `.0` (at least 1) tells retirements
    /// apart.
    RetiredAfterSync(usize),
    /// Free blocks sealed for a synchronisation in progress: no stream may take them until it has
    /// finished. `.0` (at least 1) tells synchronisations apart.
    Sealed(usize),
}

impl StreamKey {
    /// Low bits no real stream handle has (handles are aligned pointers), marking per-thread keys.
    const PER_THREAD_TAG: usize = 0b011;
    /// Marks the keys of retired streams whose work a capture covers.
    const RETIRED_AFTER_CAPTURE_TAG: usize = 0b101;
    /// Marks the keys of retired streams whose work only a synchronisation of everything covers.
    const RETIRED_AFTER_SYNC_TAG: usize = 0b001;
    /// Marks the keys of free blocks sealed for a synchronisation in progress.
    const SEALED_TAG: usize = 0b100;
    /// The bits that hold a tag.
    const TAG_MASK: usize = 0b111;
    /// Where the number of a tagged key starts.
    const NUMBER_SHIFT: u32 = 3;

    /// The legacy default stream.
    pub const LEGACY_DEFAULT: StreamKey = StreamKey(0);

    /// The owner of memory no stream has used yet (fresh chunks): any stream may take it at once.
    pub const FRESH: StreamKey = StreamKey(0b111);

    /// The key of a set of free lists no stream owns any more: empty, and free to be reused.
    pub const UNUSED: StreamKey = StreamKey(0b110);

    /// The key of the stream whose handle is `handle` (0 is the legacy default stream).
    #[inline]
    pub const fn of_handle(handle: usize) -> Self {
        StreamKey(handle)
    }

    /// The packed word, for the shard map's tables of tags (a table entry is one word).
    #[inline]
    pub(crate) const fn shard_word(self) -> usize {
        self.0
    }

    /// The handle the key was made from: 0 for the legacy default stream, the handle of a
    /// [`StreamKind::Stream`]; `None` for every key that names no handle (a per-thread default
    /// stream, which the same handle names on every thread, and the keys no stream has).
    #[inline]
    pub const fn handle(self) -> Option<usize> {
        match self.kind() {
            StreamKind::LegacyDefault => Some(0),
            StreamKind::Stream(handle) => Some(handle),
            _ => None,
        }
    }

    /// A key no stream has, for the free blocks of a retired stream whose work up to its
    /// retirement was captured: another stream may take them after waiting for that capture.
    /// `number` tells retirements apart (at least 1).
    pub const fn retired_after_capture(number: usize) -> Self {
        StreamKey((number << Self::NUMBER_SHIFT) | Self::RETIRED_AFTER_CAPTURE_TAG)
    }

    /// A key no stream has, for the free blocks of a stream that was destroyed without a capture
    /// of its work: they become usable only after a synchronisation of everything. `number` tells
    /// retirements apart (0 is taken as 1).
    pub const fn retired_after_sync(number: usize) -> Self {
        let number = if number == 0 { 1 } else { number };
        StreamKey((number << Self::NUMBER_SHIFT) | Self::RETIRED_AFTER_SYNC_TAG)
    }

    /// The key of the free blocks a synchronisation in progress will cover: no stream may take
    /// them until it has finished. `number` tells synchronisations apart (0 is taken as 1).
    pub const fn sealed(number: usize) -> Self {
        let number = if number == 0 { 1 } else { number };
        StreamKey((number << Self::NUMBER_SHIFT) | Self::SEALED_TAG)
    }

    /// The key of the per-thread default stream of thread number `thread`.
    #[inline]
    pub const fn per_thread(thread: usize) -> Self {
        StreamKey((thread << Self::NUMBER_SHIFT) | Self::PER_THREAD_TAG)
    }

    /// The tag bits.
    #[inline]
    const fn tag(self) -> usize {
        self.0 & Self::TAG_MASK
    }

    /// The number above the tag bits.
    #[inline]
    const fn number(self) -> usize {
        self.0 >> Self::NUMBER_SHIFT
    }

    /// True when the tag is `tag` and a number of at least 1 sits above it: the tagged keys whose
    /// number 0 is a handle of the CUDA API instead (1 is `cudaStreamLegacy`).
    #[inline]
    const fn is_numbered(self, tag: usize) -> bool {
        self.tag() == tag && self.number() != 0
    }

    /// True for the key of blocks sealed for a synchronisation in progress.
    #[inline]
    pub const fn is_sealed(self) -> bool {
        self.is_numbered(Self::SEALED_TAG)
    }

    /// True for the keys of retired streams (both kinds).
    #[inline]
    pub const fn is_retired(self) -> bool {
        self.tag() == Self::RETIRED_AFTER_CAPTURE_TAG || self.waits_for_sync()
    }

    /// True for the key of a retired stream whose blocks wait for a synchronisation of everything.
    #[inline]
    pub const fn waits_for_sync(self) -> bool {
        self.is_numbered(Self::RETIRED_AFTER_SYNC_TAG)
    }

    /// True for the key of a live stream that may be named in a call (not fresh memory, not a
    /// retired stream, not an unused set): the legacy default stream, a per-thread default stream
    /// or a handle.
    #[inline]
    pub const fn is_stream(self) -> bool {
        !self.is_retired() && !self.is_sealed() && self.0 != Self::FRESH.0 && self.0 != Self::UNUSED.0
    }

    /// True for a key whose handle may be given to another stream after this one is destroyed:
    /// a real stream's handle (not a default stream, not a synthetic key).
    #[inline]
    pub const fn is_reusable_handle(self) -> bool {
        self.0 != 0 && self.tag() == 0
    }

    /// The thread number if this is a per-thread default stream key.
    #[inline]
    pub const fn per_thread_owner(self) -> Option<usize> {
        if self.tag() == Self::PER_THREAD_TAG {
            Some(self.number())
        } else {
            None
        }
    }

    /// What the key names. Decided by the predicates above, so the two always agree.
    pub const fn kind(self) -> StreamKind {
        if self.0 == Self::LEGACY_DEFAULT.0 {
            StreamKind::LegacyDefault
        } else if self.0 == Self::FRESH.0 {
            StreamKind::Fresh
        } else if self.0 == Self::UNUSED.0 {
            StreamKind::Unused
        } else if self.is_sealed() {
            StreamKind::Sealed(self.number())
        } else if self.waits_for_sync() {
            StreamKind::RetiredAfterSync(self.number())
        } else if self.tag() == Self::RETIRED_AFTER_CAPTURE_TAG {
            StreamKind::RetiredAfterCapture(self.number())
        } else if let Some(thread) = self.per_thread_owner() {
            StreamKind::PerThread(thread)
        } else {
            StreamKind::Stream(self.0)
        }
    }
}

impl std::fmt::LowerHex for StreamKey {
    /// The packed word: how messages name a key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

impl From<StreamKind> for StreamKey {
    /// The packed key of `kind`. A `Stream` handle that carries a tag, or a number of 0 where
    /// the kind needs at least 1, packs to the key [`StreamKey::kind`] reads back as it says.
    fn from(kind: StreamKind) -> Self {
        match kind {
            StreamKind::LegacyDefault => StreamKey::LEGACY_DEFAULT,
            StreamKind::PerThread(thread) => StreamKey::per_thread(thread),
            StreamKind::Stream(handle) => StreamKey::of_handle(handle),
            StreamKind::Fresh => StreamKey::FRESH,
            StreamKind::Unused => StreamKey::UNUSED,
            StreamKind::RetiredAfterCapture(number) => StreamKey::retired_after_capture(number),
            StreamKind::RetiredAfterSync(number) => StreamKey::retired_after_sync(number),
            StreamKind::Sealed(number) => StreamKey::sealed(number),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One or more values of every kind, as the pools make them.
    fn every_kind() -> Vec<StreamKind> {
        let mut kinds = vec![StreamKind::LegacyDefault, StreamKind::Fresh, StreamKind::Unused];
        for n in [1, 2, 7, 1 << 20, usize::MAX >> 3] {
            kinds.push(StreamKind::PerThread(n));
            kinds.push(StreamKind::RetiredAfterCapture(n));
            kinds.push(StreamKind::RetiredAfterSync(n));
            kinds.push(StreamKind::Sealed(n));
            kinds.push(StreamKind::Stream(n << 3));
        }
        kinds.push(StreamKind::PerThread(0));
        kinds.push(StreamKind::RetiredAfterCapture(0));
        kinds.push(StreamKind::Stream(0x7f3a_2c00_1200));
        kinds
    }

    #[test]
    fn every_kind_survives_packing_and_unpacking() {
        for kind in every_kind() {
            let key = StreamKey::from(kind);
            assert_eq!(key.kind(), kind, "{kind:?} packed as {:#x}", key.0);
        }
    }

    #[test]
    fn every_packed_word_survives_unpacking_and_packing() {
        let words = (0..256).chain([usize::MAX, usize::MAX - 1, 1 << 40, (1 << 40) | 0b101, 0x7f3a_2c00_1200]);
        for word in words {
            let key = StreamKey(word);
            assert_eq!(StreamKey::from(key.kind()), key, "{word:#x} read as {:?}", key.kind());
        }
    }

    #[test]
    fn the_predicates_agree_with_the_kind() {
        for word in (0..256).chain([usize::MAX, 1 << 40, 0x7f3a_2c00_1200]) {
            let key = StreamKey(word);
            let kind = key.kind();
            let stream = matches!(kind, StreamKind::LegacyDefault | StreamKind::PerThread(_) | StreamKind::Stream(_));
            assert_eq!(key.is_stream(), stream, "{word:#x}");
            assert_eq!(key.is_sealed(), matches!(kind, StreamKind::Sealed(_)), "{word:#x}");
            let retired = matches!(kind, StreamKind::RetiredAfterCapture(_) | StreamKind::RetiredAfterSync(_));
            assert_eq!(key.is_retired(), retired, "{word:#x}");
            assert_eq!(key.waits_for_sync(), matches!(kind, StreamKind::RetiredAfterSync(_)), "{word:#x}");
            let thread = match kind {
                StreamKind::PerThread(t) => Some(t),
                _ => None,
            };
            assert_eq!(key.per_thread_owner(), thread, "{word:#x}");
        }
    }

    #[test]
    fn the_handles_of_the_cuda_api_are_streams() {
        // 0: the legacy default stream; 1 (`cudaStreamLegacy`), 2 (`cudaStreamPerThread`) and a
        // bare sealed or retired tag with number 0 name no synthetic key.
        assert_eq!(StreamKey(0).kind(), StreamKind::LegacyDefault);
        assert_eq!(StreamKey(1).kind(), StreamKind::Stream(1));
        assert_eq!(StreamKey(2).kind(), StreamKind::Stream(2));
        assert_eq!(StreamKey(4).kind(), StreamKind::Stream(4));
        assert!(StreamKey(0x1000).is_reusable_handle());
        assert!(!StreamKey(0).is_reusable_handle() && !StreamKey(1).is_reusable_handle());
    }

    #[test]
    fn only_keys_made_from_handles_give_one_back() {
        assert_eq!(StreamKey::LEGACY_DEFAULT.handle(), Some(0));
        assert_eq!(StreamKey::of_handle(0x1000).handle(), Some(0x1000));
        assert_eq!(StreamKey::of_handle(1).handle(), Some(1));
        for key in [StreamKey::per_thread(3), StreamKey::FRESH, StreamKey::UNUSED, StreamKey::sealed(2)] {
            assert_eq!(key.handle(), None, "{key:#x}");
        }
        assert_eq!(format!("{:#x}", StreamKey::of_handle(0x1000)), "0x1000");
    }

    #[test]
    fn number_zero_is_taken_as_one_where_a_kind_needs_one() {
        assert_eq!(StreamKey::sealed(0), StreamKey::sealed(1));
        assert_eq!(StreamKey::retired_after_sync(0), StreamKey::retired_after_sync(1));
        assert_eq!(StreamKey::from(StreamKind::Sealed(0)).kind(), StreamKind::Sealed(1));
    }
}
