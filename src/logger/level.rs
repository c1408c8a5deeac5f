//! The log levels, with the values of rapids-logger's `level_enum` (and spdlog's).

/// How severe a message is; a logger drops messages below its level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i32)]
pub enum Level {
    /// Finest detail.
    Trace = 0,
    /// Debugging detail.
    Debug = 1,
    /// Normal events (the default level).
    Info = 2,
    /// Something unexpected that the library handled.
    Warn = 3,
    /// An operation failed.
    Error = 4,
    /// The process may not continue.
    Critical = 5,
    /// As a level: log nothing.
    Off = 6,
}

impl Level {
    /// The level of a rapids-logger value; anything above `Off` (as `n_levels`) is `Off`,
    /// anything below `Trace` is `Trace`.
    pub fn from_i32(value: i32) -> Level {
        match value {
            i32::MIN..=0 => Level::Trace,
            1 => Level::Debug,
            2 => Level::Info,
            3 => Level::Warn,
            4 => Level::Error,
            5 => Level::Critical,
            _ => Level::Off,
        }
    }

    /// spdlog's name of the level, as lines show it.
    pub fn name(self) -> &'static str {
        match self {
            Level::Trace => "trace",
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warning",
            Level::Error => "error",
            Level::Critical => "critical",
            Level::Off => "off",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Level;

    #[test]
    fn values_round_trip_and_clamp() {
        for l in [Level::Trace, Level::Debug, Level::Info, Level::Warn, Level::Error, Level::Critical, Level::Off] {
            assert_eq!(Level::from_i32(l as i32), l);
        }
        assert_eq!(Level::from_i32(7), Level::Off);
        assert_eq!(Level::from_i32(-1), Level::Trace);
        assert!(Level::Warn > Level::Info);
    }
}
