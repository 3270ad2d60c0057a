//! A real resource protected by a [`Fence`]: a file that takes appends only with a fencing token
//! at least the highest it has taken.
//!
//! The file's side keeps the fence beside the data (`<file>.fence`, JSON) and checks it under an
//! exclusive file lock (`<file>.lock`) for each append: read the fence, check the token, append
//! and sync the data, write the fence (a temporary file renamed over it). The lock plays the part
//! of a storage service that checks tokens: the check and the write are one step, so a holder
//! whose lease ended while it was paused is refused however late it comes back.
//!
//! ```no_run
//! use leasehold_examples::fenced::FencedFile;
//!
//! let file = FencedFile::new("/var/lib/report/out.log");
//! // The token of the lock the writer holds (`Lock::token` of leasehold-client's recipes).
//! let token: u64 = 7;
//! match file.append(token, "a line only the lock holder writes\n")? {
//!     Ok(()) => {}
//!     Err(fenced) => eprintln!("not ours any more: {fenced}"),
//! }
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use leasehold::coord::{Fence, Fenced};

/// A file that accepts appends only with a token at least the highest it has accepted.
#[derive(Debug, Clone)]
pub struct FencedFile {
    path: PathBuf,
}

fn with_ext(p: &Path, ext: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(ext);
    PathBuf::from(s)
}

impl FencedFile {
    /// The fenced file at `path` (made on the first append).
    pub fn new(path: impl Into<PathBuf>) -> FencedFile {
        FencedFile { path: path.into() }
    }

    /// The fence as the file keeps it (the highest token accepted; 0 before any).
    pub fn fence(&self) -> io::Result<Fence> {
        match std::fs::read(with_ext(&self.path, ".fence")) {
            Ok(b) => serde_json::from_slice(&b)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Fence::new()),
            Err(e) => Err(e),
        }
    }

    /// Appends `data` if `token` is at least the highest token the file has accepted (and makes
    /// it the highest); `Ok(Err(fenced))` if it is older, and nothing is written.
    pub fn append(&self, token: u64, data: &str) -> io::Result<Result<(), Fenced>> {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(with_ext(&self.path, ".lock"))?;
        lock.lock()?;
        let mut fence = self.fence()?;
        if let Err(f) = fence.check(token) {
            return Ok(Err(f));
        }
        let mut out = OpenOptions::new().create(true).append(true).open(&self.path)?;
        out.write_all(data.as_bytes())?;
        out.sync_all()?;
        let tmp = with_ext(&self.path, ".fence.tmp");
        let mut f = File::create(&tmp)?;
        f.write_all(&serde_json::to_vec(&fence).expect("a fence serializes"))?;
        f.sync_all()?;
        std::fs::rename(&tmp, with_ext(&self.path, ".fence"))?;
        Ok(Ok(()))
    }
}
