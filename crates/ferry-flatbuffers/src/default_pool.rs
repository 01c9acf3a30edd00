//! The process-wide pool that the stock-shaped constructors ([`FlatBufferBuilder::new`],
//! [`with_capacity`](crate::FlatBufferBuilder::with_capacity), `Default`) take their blocks
//! from: created on first use, or set once beforehand with [`set_default_pool`].
//!
//! Its size: [`PoolConfig::default`]'s 8 MiB regions (so the largest block is 8 MiB) and at
//! most [`DEFAULT_POOL_MAX_BYTES`] (1 GiB) of them, reserved as address space and committed
//! only as blocks are used; not `mlock`ed (a library default should not pin memory). The
//! environment variable [`MAX_BYTES_ENV`] (`FERRY_FLATBUFFERS_POOL_MAX_BYTES`, a byte count,
//! a multiple of 8 MiB) changes the limit; [`set_default_pool`] replaces the whole pool, e.g.
//! with the registered pool a transport sends from.
//!
//! [`FlatBufferBuilder::new`]: crate::FlatBufferBuilder::new

use std::sync::OnceLock;

use ferry_buf::{Pool, PoolConfig, PoolError};

/// The default pool's limit in bytes unless [`MAX_BYTES_ENV`] says otherwise: 1 GiB.
pub const DEFAULT_POOL_MAX_BYTES: usize = 1 << 30;

/// The environment variable read, on first use, for the default pool's limit in bytes.
pub const MAX_BYTES_ENV: &str = "FERRY_FLATBUFFERS_POOL_MAX_BYTES";

static DEFAULT_POOL: OnceLock<Pool> = OnceLock::new();

/// Why the default pool could not be set or made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DefaultPoolError {
    /// [`set_default_pool`] after the default pool was already made or set.
    #[error("the default FlatBuffers pool is already in use: set it before the first builder")]
    AlreadySet,
    /// [`MAX_BYTES_ENV`] is not a byte count.
    #[error("{MAX_BYTES_ENV}={value:?} is not a byte count")]
    BadEnv {
        /// The variable's value.
        value: String,
    },
    /// The pool refused the configuration (or could not reserve its memory).
    #[error("the default FlatBuffers pool: {0}")]
    Pool(#[from] PoolError),
}

/// Makes `pool` the default pool. Refused once a builder has used the default pool (or it
/// was set before): builders and messages already made hold the first one.
pub fn set_default_pool(pool: Pool) -> Result<(), DefaultPoolError> {
    DEFAULT_POOL.set(pool).map_err(|_| DefaultPoolError::AlreadySet)
}

/// The default pool, made on first use.
///
/// # Panics
/// If it cannot be made: [`MAX_BYTES_ENV`] is not a valid limit, or the address space cannot
/// be reserved. (The stock constructors it serves cannot return an error; use
/// [`try_default_pool`] to get one.)
pub fn default_pool() -> &'static Pool {
    match try_default_pool() {
        Ok(pool) => pool,
        Err(e) => panic!("{e}"),
    }
}

/// [`default_pool`], the failure returned.
pub fn try_default_pool() -> Result<&'static Pool, DefaultPoolError> {
    if let Some(pool) = DEFAULT_POOL.get() {
        return Ok(pool);
    }
    let pool = Pool::new(default_config()?)?;
    // Another thread may have won the race: its pool is the one kept.
    Ok(DEFAULT_POOL.get_or_init(|| pool))
}

fn default_config() -> Result<PoolConfig, DefaultPoolError> {
    let max_bytes = match std::env::var(MAX_BYTES_ENV) {
        Ok(value) => value
            .trim()
            .parse()
            .map_err(|_| DefaultPoolError::BadEnv { value })?,
        Err(std::env::VarError::NotPresent) => DEFAULT_POOL_MAX_BYTES,
        Err(std::env::VarError::NotUnicode(value)) => {
            return Err(DefaultPoolError::BadEnv {
                value: value.to_string_lossy().into_owned(),
            });
        }
    };
    Ok(PoolConfig {
        max_bytes,
        mlock: false,
        ..PoolConfig::default()
    })
}
