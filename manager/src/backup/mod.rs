//! Backup and restore of a manager's database.
//!
//! A backup is one SQLite file: a consistent snapshot of `DATA_DIR/hetpilot.db` taken with
//! `VACUUM INTO` by the `hetpilot backup` process itself, reading the data directory
//! beside the running manager. The database is in WAL mode, so this reader sees the last
//! committed state as of its one read transaction while the manager keeps committing; no
//! API call, no pause. `VACUUM INTO` was chosen over the online backup API because it is
//! one statement in one read transaction (the backup API, copying in steps, starts over
//! whenever another connection writes the source, which a busy manager always does), needs
//! no extra rusqlite feature, and writes a compact file. The CLI reads the directory rather
//! than asking the manager over HTTP because only someone who may read the data directory
//! (the manager's own account) should get a copy of everything in it.
//!
//! The snapshot holds every user, application, task, attempt, agent, pilot and the
//! *hashes* of every token and credential. It does not hold the files beside the database:
//! the admin token's plain text (`admin.token`; its hash is in the snapshot, so the token
//! keeps working after a restore), the TLS certificate and key, the file service's files
//! (`files/`), fetched task outputs (`outputs/`) and pilot logs (`pilot-logs/`). Those are
//! ordinary files that the site copies with its usual tools; the secrets among them are
//! better kept out of a file that travels to backup storage. The snapshot still holds
//! users' commands and environments, so it is created mode 0600.
//!
//! A restore refuses a directory whose manager runs (it holds `manager.lock`, see
//! [`crate::data_dir_lock`]) and a file that is not a sound hetpilot database
//! (`PRAGMA quick_check`, the expected tables), before changing anything; the database it
//! replaces is kept aside as `hetpilot.db.before-restore-TIME`.

mod check;
mod restore;
mod snapshot;

pub use check::{check_database, CheckError};
pub use restore::{restore, RestoreError, Restored};
pub use snapshot::{snapshot, SnapshotError};
