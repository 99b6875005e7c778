// Preloaded into every child of the local run (`node --import ./src/local/exit-with-parent.ts <entry>`):
// when the parent disappears (killed with SIGKILL, so its own shutdown never ran), the child sends itself
// SIGTERM, so its own graceful stop runs (the node kills its containers, the handlers finish their steps)
// and no orphan outlives the local run. Node has no parent-death signal, hence the poll.

/** How often the parent is checked, ms. */
const PARENT_POLL_MS = 1000;

const parentPid = process.ppid;
const watch = setInterval(() => {
  // An orphan is re-parented (to init or a subreaper), so its ppid changes.
  if (process.ppid !== parentPid) {
    clearInterval(watch);
    process.kill(process.pid, 'SIGTERM');
  }
}, PARENT_POLL_MS);
// Never keeps a child alive on its own.
watch.unref();
