//! A stdio server's process and everything it starts, ended together: on Unix the
//! server leads a process group of its own (`npx` and the `node` it starts are in it),
//! killed by its recorded id — so what the server started goes even after the server
//! itself was reaped; on Windows the server runs in a Job Object, terminated whole.

use std::process::ExitStatus;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

/// The server's process tree.
#[derive(Debug)]
pub(super) struct Tree {
    child: Box<dyn ChildWrapper>,
    /// The process group (Unix), kept apart from the child: once the child is reaped
    /// its id is gone, but what it started may still run in the group.
    #[cfg(unix)]
    group: Option<nix::unistd::Pid>,
}

impl Tree {
    /// Start `command` as the leader of a tree of its own.
    pub(super) fn spawn(command: Command) -> std::io::Result<Self> {
        let mut wrap = CommandWrap::from(command);
        #[cfg(unix)]
        wrap.command_mut().process_group(0);
        #[cfg(windows)]
        wrap.wrap(process_wrap::tokio::JobObject);
        wrap.wrap(KillOnDrop);
        let child = wrap.spawn()?;
        #[cfg(unix)]
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(nix::unistd::Pid::from_raw);
        Ok(Self {
            child,
            #[cfg(unix)]
            group,
        })
    }

    /// The server's stdout, stdin and stderr (once; `None` if not piped).
    pub(super) fn pipes(&mut self) -> Option<(ChildStdout, ChildStdin, ChildStderr)> {
        Some((
            self.child.stdout().take()?,
            self.child.stdin().take()?,
            self.child.stderr().take()?,
        ))
    }

    /// The process group the server leads (Unix).
    pub(super) fn group(&self) -> Option<i32> {
        #[cfg(unix)]
        return self.group.map(nix::unistd::Pid::as_raw);
        #[cfg(not(unix))]
        None
    }

    /// Whether the server has exited.
    pub(super) fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// The server's exit status if it ends within `limit`.
    pub(super) async fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(limit, self.child.wait())
            .await
            .ok()?
            .ok()
    }

    /// End the server and everything it started, at once. A tree already gone is not
    /// an error.
    pub(super) fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(group) = self.group {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        }
        #[cfg(windows)]
        let _ = self.child.start_kill();
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.kill();
    }
}
