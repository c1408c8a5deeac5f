//! Driver entry points newer than the oldest driver a build supports, and the older ones that do
//! the same work.
//!
//! cudarc resolves each symbol of `libcuda` at its first call and panics when the loaded library
//! lacks it. A CUDA 12 build runs on every CUDA 12 driver (525.60.13 on), yet three of its calls
//! have versions that only later drivers export: `cuMemAdvise_v2` and `cuMemPrefetchAsync_v2`
//! (12.2, driver 535) and `cuStreamGetCaptureInfo_v3` (12.3, driver 545). So before the first such
//! call, [`entry_point`] asks once whether the newer symbol is exported (a symbol lookup in the
//! loaded library, which runs no driver code and so makes no call fail) and whether the driver
//! reports the version that introduced it, and picks the older entry point otherwise. cudarc's
//! CUDA 13 bindings have no older entry points (a CUDA 13 driver exports every newer one): there a
//! driver without the newer symbol gets [`Error::Unsupported`] naming it instead of a panic.

use super::ensure_driver;
use crate::error::{Error, Result};
use cudarc::driver::sys;
use std::sync::OnceLock;

/// A driver entry point with a newer version than the oldest supported driver exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Versioned {
    /// `cuStreamGetCaptureInfo_v3`, else `cuStreamGetCaptureInfo_v2`.
    CaptureInfo,
    /// `cuMemPrefetchAsync_v2` (a `CUmemLocation`), else `cuMemPrefetchAsync` (a device ordinal).
    Prefetch,
    /// `cuMemAdvise_v2` (a `CUmemLocation`), else `cuMemAdvise` (a device ordinal).
    Advise,
}

impl Versioned {
    const ALL: [Versioned; 3] = [Versioned::CaptureInfo, Versioned::Prefetch, Versioned::Advise];

    /// The newer symbol.
    pub(crate) const fn newer(self) -> &'static str {
        match self {
            Versioned::CaptureInfo => "cuStreamGetCaptureInfo_v3",
            Versioned::Prefetch => "cuMemPrefetchAsync_v2",
            Versioned::Advise => "cuMemAdvise_v2",
        }
    }

    /// The older symbol, which every CUDA 12 driver exports.
    pub(crate) const fn older(self) -> &'static str {
        match self {
            Versioned::CaptureInfo => "cuStreamGetCaptureInfo_v2",
            Versioned::Prefetch => "cuMemPrefetchAsync",
            Versioned::Advise => "cuMemAdvise",
        }
    }

    /// The driver version (`1000 * major + 10 * minor`) that introduced [`newer`](Self::newer).
    pub(crate) const fn since(self) -> i32 {
        match self {
            Versioned::CaptureInfo => 12030,
            Versioned::Prefetch | Versioned::Advise => 12020,
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// Which version of a [`Versioned`] entry point to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryPoint {
    /// The newer one.
    Newer,
    /// The older one (CUDA 12 builds only).
    Older,
    /// Neither: the driver lacks the newer one and the build has no older one.
    Missing,
}

/// What the driver offers for `entry`: its version, whether the library exports the newer symbol,
/// and whether the build can call an older one that the library exports. Only a present symbol is
/// ever chosen; the newer one also needs the version that introduced it, so a driver that exports
/// a name early is not trusted with it.
pub(crate) fn choose(entry: Versioned, driver_version: i32, newer_present: bool, older_callable: bool) -> EntryPoint {
    if newer_present && driver_version >= entry.since() {
        EntryPoint::Newer
    } else if older_callable {
        EntryPoint::Older
    } else {
        EntryPoint::Missing
    }
}

/// Whether this build's bindings have the older entry points (cudarc's CUDA 13 ones do not).
const OLDER_IN_BINDINGS: bool = cfg!(feature = "cuda-12");

/// The version of `entry` to call on the loaded driver, chosen at the first call and kept.
pub(crate) fn entry_point(entry: Versioned) -> Result<EntryPoint> {
    static CHOICES: [OnceLock<EntryPoint>; Versioned::ALL.len()] = [const { OnceLock::new() }; Versioned::ALL.len()];
    if let Some(choice) = CHOICES[entry.index()].get() {
        return Ok(*choice);
    }
    ensure_driver()?;
    let version = super::driver_version()?;
    let older = OLDER_IN_BINDINGS && exported(entry.older());
    Ok(*CHOICES[entry.index()].get_or_init(|| choose(entry, version, exported(entry.newer()), older)))
}

/// The error for an entry point the driver lacks in a build without its older version.
pub(crate) fn missing(entry: Versioned) -> Error {
    missing_with_version(entry, super::driver_version().ok())
}

fn missing_with_version(entry: Versioned, version: Option<i32>) -> Error {
    let version =
        version.map_or_else(|| "this driver".to_string(), |v| format!("driver {}.{}", v / 1000, v % 1000 / 10));
    Error::Unsupported(format!(
        "{} (CUDA {}.{}) is missing from {version}; a CUDA {} build needs a newer driver",
        entry.newer(),
        entry.since() / 1000,
        entry.since() % 1000 / 10,
        if OLDER_IN_BINDINGS { 12 } else { 13 }
    ))
}

/// Whether the loaded driver library exports `symbol`. The driver must be loaded.
fn exported(symbol: &str) -> bool {
    // SAFETY: ensure_driver found the library, so culib loads it without panicking; the lookup
    // runs no code of the library and the symbol is only tested, never called through this type.
    unsafe { sys::culib().get::<unsafe extern "C" fn()>(symbol.as_bytes()).is_ok() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERSIONS: [i32; 4] = [12000, 12020, 12030, 13000];

    /// What a driver of `version` exports: every entry point from the version that added it.
    fn exports_newer(entry: Versioned, version: i32) -> bool {
        version >= entry.since()
    }

    #[test]
    fn each_driver_version_gets_the_newest_entry_point_it_exports() {
        use EntryPoint::{Newer, Older};
        // [capture info, prefetch, advise] for a CUDA 12 build.
        let expected = [
            (12000, [Older, Older, Older]),
            (12020, [Older, Newer, Newer]),
            (12030, [Newer, Newer, Newer]),
            (13000, [Newer, Newer, Newer]),
        ];
        for (version, choices) in expected {
            for (entry, want) in Versioned::ALL.into_iter().zip(choices) {
                assert_eq!(choose(entry, version, exports_newer(entry, version), true), want, "{entry:?} on {version}");
            }
        }
    }

    #[test]
    fn without_older_bindings_an_old_driver_is_missing_the_entry_point() {
        // A CUDA 13 build (no older bindings) on drivers that lack the newer symbol.
        for (version, entry) in [(12000, Versioned::Advise), (12020, Versioned::CaptureInfo)] {
            assert_eq!(choose(entry, version, exports_newer(entry, version), false), EntryPoint::Missing);
        }
        for entry in Versioned::ALL {
            assert_eq!(choose(entry, 13000, true, false), EntryPoint::Newer);
        }
        let message = missing_with_version(Versioned::CaptureInfo, Some(12020)).to_string();
        assert!(message.contains("cuStreamGetCaptureInfo_v3") && message.contains("driver 12.2"), "{message}");
    }

    #[test]
    fn a_chosen_entry_point_is_always_exported() {
        for entry in Versioned::ALL {
            for version in VERSIONS {
                for newer_present in [false, true] {
                    for older_callable in [false, true] {
                        let choice = choose(entry, version, newer_present, older_callable);
                        let callable = match choice {
                            EntryPoint::Newer => newer_present,
                            EntryPoint::Older => older_callable,
                            EntryPoint::Missing => !older_callable,
                        };
                        assert!(callable, "{entry:?} {version} {newer_present} {older_callable}: {choice:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn newer_entry_points_are_called_only_where_their_version_is_chosen() {
        // A direct call of a newer symbol anywhere else in the driver module would panic on a
        // driver without it, before any check could run.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/driver");
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for entry in Versioned::ALL {
                if text.contains(&format!("sys::{}(", entry.newer())) {
                    assert!(
                        text.contains(&format!("entry_point(Versioned::{entry:?})")),
                        "{} calls {} without asking entry_point",
                        path.display(),
                        entry.newer()
                    );
                }
            }
        }
    }
}
