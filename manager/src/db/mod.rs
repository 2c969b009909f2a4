//! SQLite persistence (WAL): the schema, a group-commit writer that turns the queues'
//! changes into batched transactions, recovery of the live state at start, and queries.

mod load;
mod measured;
mod pilots;
mod read;
mod schema;
mod skip;
mod staging;
mod write;
mod writer;

pub use load::{load, Loaded, StoredAgent, StoredAgentToken};
pub use measured::measured;
pub use pilots::{PilotCredential, StoredPilot};
pub use read::Reader;
pub use schema::open;
pub use skip::SkippedRow;
pub use write::Write;
pub use writer::{StoreError, Writer};
