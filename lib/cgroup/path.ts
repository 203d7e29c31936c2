/**
 * Where a cgroup lives on this machine's filesystem: the mapping from a
 * configured kubelet cgroup path, or from a process's `0::/…` line, onto the
 * cgroup2 mount this process can see. Pure: the mounts come in as data (from
 * /proc/self/mountinfo), so every layout is testable without root.
 *
 * The rule for a configured path:
 * 1. With a host root prefix (`--host-cgroup-root /host`), the host path
 *    `/sys/fs/cgroup/x` is looked up as `/host/sys/fs/cgroup/x`.
 * 2. A path that already lies on a cgroup2 mount is used as it is.
 * 3. A path under the conventional `/sys/fs/cgroup` that is not on cgroup2
 *    (hybrid hosts mount cgroup2 at `/sys/fs/cgroup/unified`) is moved onto the
 *    cgroup2 mount: `/sys/fs/cgroup/system.slice/kubelet.service` becomes
 *    `/sys/fs/cgroup/unified/system.slice/kubelet.service`.
 * 4. Anything else is an error that names the cgroup2 mounts that exist.
 */
import { mountOf } from "../os/mountinfo.ts";

/** The fields of a mountinfo line this module needs (lib/os/mountinfo.ts's Mount has them). */
export interface MountPoint {
  /** Where the filesystem is mounted (field 5). */
  mountPoint: string;
  /** The directory of the filesystem shown at the mount point (field 4). */
  root: string;
  /** Filesystem type, e.g. "cgroup2", "bpf" (after the " - " separator). */
  fsType: string;
}

/** Where cgroup2 lives on a unified host; configured paths are written against it. */
const CONVENTIONAL_CGROUP_ROOT = "/sys/fs/cgroup";

/** A cgroup path that cannot be placed on a cgroup2 mount. */
export class CgroupPathError extends Error {
  override name = "CgroupPathError";
}

/** Joins and normalises absolute paths: no double or trailing slashes, no "." parts. */
export function joinPath(...parts: string[]): string {
  const out: string[] = [];
  for (const part of parts.join("/").split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return "/" + out.join("/");
}

/** True when `path` is `dir` or lies below it. */
export function isWithin(path: string, dir: string): boolean {
  if (dir === "/") return path.startsWith("/");
  return path === dir || path.startsWith(dir + "/");
}

/**
 * The cgroup2 mounts, best first: under the host root prefix when one is
 * given, then showing the whole hierarchy (root "/"), then at the
 * conventional places. The first is the one Lace works on.
 */
export function cgroup2Mounts(mounts: readonly MountPoint[], hostRoot = ""): MountPoint[] {
  const prefix = hostRoot ? joinPath(hostRoot) : "";
  const score = (m: MountPoint) => {
    let s = 0;
    if (prefix && isWithin(m.mountPoint, prefix)) s += 8;
    if (m.root === "/") s += 4;
    const local = withoutPrefix(m.mountPoint, prefix);
    if (local === CONVENTIONAL_CGROUP_ROOT) s += 2;
    else if (local === `${CONVENTIONAL_CGROUP_ROOT}/unified`) s += 1;
    return s;
  };
  return mounts.filter((m) => m.fsType === "cgroup2").sort((a, b) => score(b) - score(a));
}

/** cgroup2Mounts(), or a CgroupPathError saying how to mount cgroup2 when there is none. */
function requireCgroup2Mounts(mounts: readonly MountPoint[], hostRoot: string): MountPoint[] {
  const v2 = cgroup2Mounts(mounts, hostRoot);
  if (v2.length === 0) {
    throw new CgroupPathError(
      "No cgroup2 filesystem is mounted (none in /proc/self/mountinfo): mount it with " +
        "`mount -t cgroup2 none /sys/fs/cgroup` or, in a container, mount the host's cgroup2",
    );
  }
  return v2;
}

/** `path` as seen without the host root prefix (unchanged when it is not below the prefix). */
function withoutPrefix(path: string, prefix: string): string {
  return prefix && isWithin(path, prefix) ? joinPath(path.slice(prefix.length)) : path;
}

/**
 * Maps a configured kubelet cgroup directory onto the cgroup2 mount this
 * process sees (the rule in this module's comment). Throws CgroupPathError
 * when there is no cgroup2 mount or the path cannot lie on one.
 */
export function mapConfiguredCgroup(
  configured: string,
  mounts: readonly MountPoint[],
  hostRoot = "",
): string {
  const v2 = requireCgroup2Mounts(mounts, hostRoot);
  const wanted = joinPath(configured);
  const prefix = hostRoot ? joinPath(hostRoot) : "";
  const candidate = prefix && !isWithin(wanted, prefix) ? joinPath(prefix, wanted) : wanted;
  if (mountOf(mounts, candidate)?.fsType === "cgroup2") return candidate;

  const local = withoutPrefix(candidate, prefix);
  if (isWithin(local, CONVENTIONAL_CGROUP_ROOT)) {
    const rel = joinPath(local.slice(CONVENTIONAL_CGROUP_ROOT.length));
    for (const m of v2) {
      if (isWithin(rel, m.root)) return joinPath(m.mountPoint, rel.slice(m.root.length));
    }
    throw new CgroupPathError(
      `Kubelet cgroup "${configured}" is outside what the cgroup2 mount at "${
        v2[0].mountPoint
      }" shows (its root is "${v2[0].root}"): run in the host's cgroup namespace or mount ` +
        "the host's cgroup2 and set --host-cgroup-root",
    );
  }
  throw new CgroupPathError(
    `Kubelet cgroup "${configured}" is not on a cgroup2 filesystem (cgroup2 is mounted at ${
      v2.map((m) => `"${m.mountPoint}"`).join(", ")
    }): give a directory under it, or "auto"`,
  );
}

/**
 * Maps a process's cgroup (the path of its `0::` line in /proc/PID/cgroup)
 * onto a directory of the cgroup2 mount. Both are seen from this process's
 * cgroup namespace, so the mount's root is cut off the front.
 */
export function mapProcessCgroup(
  cgroup: string,
  mounts: readonly MountPoint[],
  hostRoot = "",
): string {
  const v2 = requireCgroup2Mounts(mounts, hostRoot);
  if (!cgroup.startsWith("/")) {
    throw new CgroupPathError(`Cgroup "${cgroup}" from /proc is not an absolute path`);
  }
  // Inside a pod's own cgroup namespace the kernel shows the kubelet's cgroup
  // as "/../../system.slice/kubelet.service", and the host's cgroup2 mount
  // with the root "/../..": both in the same coordinates, so a component-wise
  // prefix match finds the directory, as long as no ".." remains below it.
  const parts = cgroup.split("/").filter(Boolean);
  for (const m of v2) {
    const root = m.root.split("/").filter(Boolean);
    if (root.length > parts.length || root.some((c, i) => parts[i] !== c)) continue;
    const rest = parts.slice(root.length);
    if (rest.includes("..")) continue;
    return joinPath(m.mountPoint, rest.length ? "/" + rest.join("/") : "");
  }
  if (parts.includes("..")) {
    throw new CgroupPathError(
      `Cgroup "${cgroup}" lies outside this process's cgroup namespace and no cgroup2 mount ` +
        "reaches it: mount the host's cgroup2 hierarchy (e.g. at /host/sys/fs/cgroup with " +
        "--host-cgroup-root=/host) or run Lace in the host's cgroup namespace",
    );
  }
  throw new CgroupPathError(
    `Cgroup "${cgroup}" is not visible under the cgroup2 mount at "${v2[0].mountPoint}" ` +
      `(its root is "${v2[0].root}"): mount the host's whole cgroup2 hierarchy`,
  );
}
