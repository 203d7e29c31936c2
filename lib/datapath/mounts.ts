/**
 * Checks that the datapath's paths lie on the right filesystems before the
 * kernel is asked anything: the pin path on bpffs, the kubelet cgroup on
 * cgroup2; and that the pin directories are root's alone. Each failure says
 * which mount the path is really on, or who else may write there, and what to do.
 */
import { getLogger } from "@logtape/logtape";
import { dirname, join } from "node:path";
import { cgroup2MountPoints, mountOf, readMountInfo } from "../os/mountinfo.ts";
import { statCgroupId } from "../os/cgroupfs.ts";
import { ensureRootDir } from "../os/root_dir.ts";

const log = getLogger(["lace", "datapath"]);

/**
 * Makes a pin directory root's alone (0700, see os/root_dir.ts): on a bpffs any
 * local user may write to (mounted without a mode, it is 1777), a directory
 * someone else made or can write would let them remove or rename Lace's
 * pins, or hold its locks. Throws, saying what to do, when it cannot be made so.
 */
export function ensurePinDir(path: string, what: string): void {
  if (ensureRootDir(path, what) === "tightened") {
    log.warn("Tightened {what} {path} to mode 0700 (an older release made it readable by all)", {
      what,
      path,
    });
  }
}

/** Throws unless `pinPath` is absolute and lies (or would lie, once created) on bpffs. */
export function assertOnBpffs(pinPath: string): void {
  if (!pinPath.startsWith("/")) throw new Error(`Pin path must be absolute: "${pinPath}"`);
  const mount = mountOf(readMountInfo(), resolveExisting(pinPath));
  if (mount?.fsType !== "bpf") {
    throw new Error(
      `Pin path "${pinPath}" is not on a BPF filesystem (it is on ${
        mount?.fsType ?? "nothing"
      } at "${
        mount?.mountPoint ?? "?"
      }"): mount bpffs with \`mount -t bpf -o mode=0700 bpf /sys/fs/bpf\` ` +
        "or choose a --pin-path under a bpffs mount",
    );
  }
}

/** Checks that a path is a cgroup v2 directory and returns its cgroup id. */
export function assertCgroup2(path: string): bigint {
  let stat: Deno.FileInfo;
  try {
    stat = Deno.statSync(path);
  } catch (cause) {
    if (cause instanceof Deno.errors.NotFound) {
      throw new Error(`Cgroup "${path}" does not exist: check the kubelet cgroup path`, { cause });
    }
    throw cause;
  }
  const mounts = readMountInfo();
  const mount = stat.isDirectory ? mountOf(mounts, Deno.realPathSync(path)) : undefined;
  if (mount?.fsType !== "cgroup2") {
    const v2 = cgroup2MountPoints(mounts);
    throw new Error(
      `"${path}" is not a cgroup v2 directory${
        mount ? ` (it is on ${mount.fsType} at "${mount.mountPoint}")` : ""
      }: give a directory under the cgroup2 mount (${
        v2.length ? v2.map((m) => `"${m}"`).join(", ") : "none mounted"
      })`,
    );
  }
  const id = statCgroupId(path);
  if (id === null) throw new Error(`Cannot read the inode of cgroup "${path}"`);
  return id;
}

/** The realpath of a path, or of its nearest existing ancestor with the rest appended. */
function resolveExisting(path: string): string {
  let rest = "";
  for (let p = path;; p = dirname(p)) {
    try {
      return join(Deno.realPathSync(p), rest);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound) || p === "/") throw e;
      rest = join(p.slice(dirname(p).length + 1), rest);
    }
  }
}
