//! The pool family ([`PoolResource`]): `pool_memory_resource` and `virtual_pool_memory_resource`,
//! which C++ reaches without dynamic dispatch; the classic pool's constructor, size and release.
//! The virtual pool's constructor and queries are in `virtual_pool.rs`, the capture calls of both
//! in `capture.rs`.

use super::ffi::Outcome;
use super::outcome::{answer, Context};
use super::resource::{wrong_kind, AnyResource};
use rmm::error::Result;
use rmm::resource::{PoolMemoryResource, SharedResource, VirtualPoolMemoryResource};
use std::sync::Arc;

/// The pool as the bridge makes it: over a resource of either side.
pub(super) type Pool = PoolMemoryResource<SharedResource>;

/// RMM's class name of the classic pool, which a query of it asked of a virtual pool names.
const CLASSIC: &str = "pool_memory_resource";

/// A handle of the pool family.
pub struct PoolResource {
    pub(super) any: AnyResource,
    /// The same resource as `any`, typed, which the fast path reaches without dynamic dispatch.
    pub(super) pool: Direct,
}

/// The pool of a handle (the fast path tests for the classic pool first).
pub(super) enum Direct {
    /// It could not be made, or was moved from.
    NotMade,
    Classic(Arc<Pool>),
    Virtual(Arc<VirtualPoolMemoryResource>),
}

/// The pool of a handle that has one, for its queries.
pub(super) enum Pools<'a> {
    Classic(&'a Pool),
    Virtual(&'a VirtualPoolMemoryResource),
}

impl PoolResource {
    /// The handle of the pool `f` makes, named `name`.
    pub(super) fn make(name: &'static str, f: impl FnOnce() -> Result<Direct>) -> Box<PoolResource> {
        let mut pool = Direct::NotMade;
        let any = AnyResource::make(name, || {
            let made = f()?;
            let shared = match &made {
                Direct::Classic(p) => Arc::clone(p) as SharedResource,
                Direct::Virtual(v) => Arc::clone(v) as SharedResource,
                Direct::NotMade => return Err(no_pool_made(name)),
            };
            pool = made;
            Ok(shared)
        });
        Box::new(PoolResource { any, pool })
    }

    pub(crate) fn resource(&self) -> &AnyResource {
        &self.any
    }

    /// The pool, or the error of its construction.
    pub(super) fn pools(&self) -> Result<Pools<'_>> {
        match &self.pool {
            Direct::Classic(p) => Ok(Pools::Classic(p)),
            Direct::Virtual(v) => Ok(Pools::Virtual(v)),
            Direct::NotMade => Err(self.any.not_made()),
        }
    }

    /// The classic pool that `query` is asked of.
    fn classic(&self, query: &str) -> Result<&Pool> {
        match self.pools()? {
            Pools::Classic(p) => Ok(p),
            Pools::Virtual(_) => Err(wrong_kind(query, CLASSIC, self.any.name())),
        }
    }

    /// Bytes the pool holds (handed out and free): for the classic pool those it took from its
    /// upstream.
    pub(crate) fn pool_size(&self) -> Outcome {
        answer("pool_size", Context::Construct, || {
            Ok(match self.pools()? {
                Pools::Classic(p) => p.pool_size(),
                Pools::Virtual(v) => v.pool_size(),
            })
        })
    }

    /// Gives the classic pool's wholly free chunks back to its upstream, after synchronising
    /// every stream (see `PoolMemoryResource::release`); the bytes given back.
    pub(crate) fn release(&self) -> Outcome {
        answer("release", Context::Construct, || Ok(self.classic("release")?.release()?))
    }
}

/// A pool over `upstream` of `initial_size` bytes, growing up to `maximum_size` when `has_maximum`.
pub(crate) fn new_pool_memory_resource(
    upstream: &AnyResource,
    initial_size: usize,
    maximum_size: usize,
    has_maximum: bool,
) -> Box<PoolResource> {
    PoolResource::make(CLASSIC, || {
        let pool = Pool::new(upstream.shared()?.clone(), initial_size, has_maximum.then_some(maximum_size))?;
        Ok(Direct::Classic(Arc::new(pool)))
    })
}

/// The handle a moved-from pool calls.
pub(crate) fn new_moved_from_pool_resource() -> Box<PoolResource> {
    Box::new(PoolResource { any: AnyResource::moved_from(), pool: Direct::NotMade })
}

/// A constructor that returned no pool.
#[cold]
fn no_pool_made(name: &str) -> rmm::Error {
    rmm::Error::InvalidArgument(format!("the {name} constructor made no pool"))
}
