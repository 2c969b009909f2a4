//! `hetpilot backup` and `hetpilot restore`: a consistent copy of a manager's database,
//! taken while it runs, and putting one back while it is stopped (see `hetpilot::backup`).

use clap::Args as ClapArgs;
use hetpilot::config::ManagerConfig;
use hetpilot::service::database_path;
use std::path::PathBuf;

/// Which data directory: `--data-dir`, else the configuration's `data_dir`.
#[derive(Debug, ClapArgs)]
pub struct DataDirArgs {
    /// Configuration file (TOML) naming `data_dir`; `HETPILOT_CONFIG` also works.
    #[arg(long, env = "HETPILOT_CONFIG")]
    pub config: Option<PathBuf>,
    /// The manager's data directory (overrides the configuration's `data_dir`).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

impl DataDirArgs {
    fn data_dir(&self) -> anyhow::Result<PathBuf> {
        let mut overrides = Vec::new();
        if let Some(d) = &self.data_dir {
            overrides.push(("data_dir", d.to_string_lossy().into_owned()));
        }
        Ok(ManagerConfig::load(self.config.as_deref(), &overrides)?.data_dir)
    }
}

#[derive(Debug, ClapArgs)]
#[command(after_help = "\
The backup is one SQLite file (mode 0600): every user, application, task, attempt, agent \
and pilot, and the hashes of every token and credential, as of one instant. It does not \
hold admin.token, the TLS certificate and key, files/, outputs/ or pilot-logs/: copy those \
with your usual tools. Run it as the manager's user on the manager's host; the manager \
keeps running.")]
pub struct BackupArgs {
    /// Where to write the backup (must not exist yet).
    pub file: PathBuf,
    #[command(flatten)]
    pub dir: DataDirArgs,
}

#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Stop the manager first: a restore into a directory whose manager runs is refused. The \
backup is checked (SQLite quick_check, the hetpilot tables) before anything is changed; \
the database it replaces is kept as hetpilot.db.before-restore-TIME. Tokens keep working \
(their hashes are in the backup); keep the old admin.token beside the restored database.")]
pub struct RestoreArgs {
    /// The backup to restore (a file written by `hetpilot backup`).
    pub file: PathBuf,
    #[command(flatten)]
    pub dir: DataDirArgs,
}

pub fn backup(args: BackupArgs) -> anyhow::Result<()> {
    let data_dir = args.dir.data_dir()?;
    let bytes = hetpilot::backup::snapshot(&database_path(&data_dir), &args.file)?;
    println!(
        "backed up {} to {} ({bytes} bytes)",
        database_path(&data_dir).display(),
        args.file.display()
    );
    Ok(())
}

pub fn restore(args: RestoreArgs) -> anyhow::Result<()> {
    let data_dir = args.dir.data_dir()?;
    let restored = hetpilot::backup::restore(&args.file, &data_dir)?;
    println!(
        "restored {} as {}",
        args.file.display(),
        restored.database.display()
    );
    if let Some(aside) = restored.kept_aside {
        println!("the database it replaced is kept as {}", aside.display());
    }
    Ok(())
}
