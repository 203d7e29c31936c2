/**
 * Whether a program a test runs is there: a tool built into the cache (helm, etcd), an optional
 * host program (bpftool, setpriv, systemd-analyze). Tests without it skip with a stated reason.
 */

/** Whether `path` is a file with an execute bit; false when there is nothing there. */
export function isExecutable(path: string): boolean {
  try {
    const info = Deno.statSync(path);
    return info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}
