//! A slow disk for one process: a block-I/O cgroup that limits the write operations per
//! second on the device holding a directory (cgroup v1's `blkio.throttle`, else cgroup v2's
//! `io.max`). Only root can make one, and only where the kernel throttles block I/O; where
//! it cannot, [`SlowDisk::apply`] says why, and the caller reports that instead of a figure.

use std::path::{Path, PathBuf};

/// A throttle in force; dropping it moves the process back and removes the cgroup.
pub struct SlowDisk {
    cgroup: PathBuf,
    /// Where the process goes back to: the root's `cgroup.procs`.
    root_procs: PathBuf,
    pid: u32,
    /// `MAJOR:MINOR` of the throttled disk, as the cgroup files write it.
    pub device: String,
    /// cgroup v1 (`blkio.throttle.*`), else v2 (`io.*`).
    v1: bool,
}

impl SlowDisk {
    /// Limits `pid`'s writes to the disk holding `dir` to `write_iops` per second.
    pub fn apply(pid: u32, dir: &Path, write_iops: u32) -> Result<SlowDisk, String> {
        let device = disk_of(dir)?;
        let name = format!("hetpilot-chaos-{pid}");
        let v1 = Path::new("/sys/fs/cgroup/blkio");
        let v2 = Path::new("/sys/fs/cgroup");
        let (root, limit_file, limit) = if v1.join("blkio.throttle.write_iops_device").exists() {
            (
                v1,
                "blkio.throttle.write_iops_device",
                format!("{device} {write_iops}"),
            )
        } else if std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "io"))
        {
            (v2, "io.max", format!("{device} wiops={write_iops}"))
        } else {
            return Err(
                "no block-I/O cgroup controller here (neither cgroup v1 blkio nor \
                        cgroup v2 io enabled in the root's subtree_control)"
                    .into(),
            );
        };
        let cgroup = root.join(name);
        std::fs::create_dir_all(&cgroup)
            .map_err(|e| format!("cannot make the cgroup {}: {e}", cgroup.display()))?;
        let slow = SlowDisk {
            cgroup: cgroup.clone(),
            root_procs: root.join("cgroup.procs"),
            pid,
            device,
            v1: limit_file.starts_with("blkio"),
        };
        std::fs::write(cgroup.join(limit_file), &limit)
            .map_err(|e| format!("cannot write `{limit}` to {limit_file}: {e}"))?;
        std::fs::write(cgroup.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cannot move pid {pid} into {}: {e}", cgroup.display()))?;
        Ok(slow)
    }
}

impl SlowDisk {
    /// Write operations the process made on the disk since it was throttled (they all went
    /// through the limit): `None` where the counters cannot be read.
    pub fn writes(&self) -> Option<u64> {
        if self.v1 {
            // Lines `MAJOR:MINOR Write N`.
            let stats =
                std::fs::read_to_string(self.cgroup.join("blkio.throttle.io_serviced")).ok()?;
            stats.lines().find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some(self.device.as_str()) && w.next() == Some("Write"))
                    .then(|| w.next()?.parse().ok())
                    .flatten()
            })
        } else {
            // Lines `MAJOR:MINOR rbytes=… wbytes=… rios=… wios=N …`.
            let stats = std::fs::read_to_string(self.cgroup.join("io.stat")).ok()?;
            let line = stats.lines().find(|l| l.starts_with(&self.device))?;
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix("wios=")?.parse().ok())
        }
    }
}

impl Drop for SlowDisk {
    fn drop(&mut self) {
        // A process that has ended has left the cgroup already.
        let _ = std::fs::write(&self.root_procs, self.pid.to_string());
        let _ = std::fs::remove_dir(&self.cgroup);
    }
}

/// `MAJOR:MINOR` of the whole disk holding `dir` (a partition's parent: throttles apply to
/// disks).
fn disk_of(dir: &Path) -> Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.exists() {
        return Err(format!(
            "{} is on no block device ({major}:{minor}: a tmpfs or an overlay?)",
            dir.display()
        ));
    }
    if sys.join("partition").exists() {
        let parent = std::fs::read_to_string(sys.join("../dev"))
            .map_err(|e| format!("the disk of partition {major}:{minor}: {e}"))?;
        return Ok(parent.trim().to_string());
    }
    Ok(format!("{major}:{minor}"))
}
