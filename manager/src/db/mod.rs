//! SQLite persistence (WAL): the schema and its versioned migrations (`migrations`), the
//! fixed codes of task states (`task_states`), the write vocabulary (`write_ops`: every
//! change as a [`Write`] and its SQL), the group-commit writer thread (`group_commit`) that
//! turns them into batched transactions (and keeps what a full data directory refused,
//! `disk_full`), recovery of the live state at start, forgetting ended applications
//! (`forget`), the order tasks ended in (`task_ends`, the event stream's cursor), the check
//! that the file is whole (`integrity`), and queries.

mod disk_full;
mod forget;
mod group_commit;
mod integrity;
mod load;
mod measured;
mod migrations;
mod pilots;
mod read;
mod schema;
mod skip;
mod staging;
mod task_ends;
mod task_states;
mod write_ops;

pub use group_commit::{Queued, StoreError, Writer};
pub use integrity::{is_damage, problems, Depth};
pub use load::{load, Loaded, StoredAgent, StoredAgentToken, StoredUser};
pub use measured::measured;
pub use migrations::{SchemaError, NEWEST as SCHEMA_VERSION};
pub use pilots::{PilotCredential, StoredPilot};
pub use read::{token_id, Reader};
pub use schema::{open, openable_version};
pub use skip::SkippedRow;
pub use task_ends::EndSequences;
pub use write_ops::Write;
