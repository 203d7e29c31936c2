/**
 * The filesystem side of following a cgroup: inotify on the directory that
 * will hold it, so the follower hears about a recreated kubelet cgroup at once
 * instead of at its next timer tick (its id: os/cgroupfs.ts).
 */
import { dirname } from "node:path";

/** Watches one directory with inotify (Deno.watchFs) and calls back on any change. */
export function watchDirectory(dir: string, onChange: () => void): { close(): void } {
  const watcher = Deno.watchFs(dir, { recursive: false });
  (async () => {
    try {
      for await (const _ of watcher) onChange();
    } catch {
      // The watched directory went away; the periodic check carries on.
    }
  })();
  return {
    close: () => {
      try {
        watcher.close();
      } catch {
        // Already closed.
      }
    },
  };
}

/** The nearest existing directory at or above `dir` (for watching what is not there yet). */
export function nearestExisting(dir: string, exists: (dir: string) => boolean): string {
  let d = dir;
  while (d !== "/" && !exists(d)) d = dirname(d);
  return d;
}
