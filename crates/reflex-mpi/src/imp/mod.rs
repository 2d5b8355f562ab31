//! The implementations behind the generated shims, one module per MPI chapter. Each function takes
//! the state and the arguments already checked and converted by their kinds (`crate::kinds`), and
//! returns `Result<()>`; the shim maps errors to codes and error handlers.

mod coll;
mod comm;
mod env;
mod pt2pt;
mod types;
mod util;
mod wait;

pub use coll::*;
pub use comm::*;
pub use env::*;
pub use pt2pt::*;
pub use types::*;
pub use wait::*;
