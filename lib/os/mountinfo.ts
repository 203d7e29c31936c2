/**
 * Reads the mount table (/proc/self/mountinfo): where cgroup v2 and bpffs are
 * mounted, and which mount holds a given path. The parser is pure; only
 * readMountInfo() touches the filesystem.
 */

/** One line of mountinfo (see proc(5)). */
export interface Mount {
  id: number;
  parentId: number;
  /** The path inside the filesystem that is mounted here (e.g. "/" or a cgroup path). */
  root: string;
  mountPoint: string;
  fsType: string;
  source: string;
  options: string[];
}

/** Undoes mountinfo's octal escapes (`\040` for a space, `\011`, `\012`, `\134`). */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Parses the text of a mountinfo file; malformed lines are skipped. */
export function parseMountInfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split("\n")) {
    const fields = line.trim().split(" ");
    const dash = fields.indexOf("-");
    if (dash < 6 || fields.length < dash + 3) continue;
    const id = Number(fields[0]), parentId = Number(fields[1]);
    if (!Number.isInteger(id) || !Number.isInteger(parentId)) continue;
    mounts.push({
      id,
      parentId,
      root: unescape(fields[3]),
      mountPoint: unescape(fields[4]),
      options: fields[5].split(","),
      fsType: fields[dash + 1],
      source: unescape(fields[dash + 2]),
    });
  }
  return mounts;
}

/** Mount points of cgroup v2 (`cgroup2`), in table order. */
export function cgroup2MountPoints(mounts: Mount[]): string[] {
  return mounts.filter((m) => m.fsType === "cgroup2").map((m) => m.mountPoint);
}

/** Mount points of the BPF filesystem (`bpf`), in table order. */
export function bpffsMountPoints(mounts: Mount[]): string[] {
  return mounts.filter((m) => m.fsType === "bpf").map((m) => m.mountPoint);
}

/**
 * The mount that holds an absolute, already resolved path: the longest mount
 * point that is a prefix of it, the later line winning when one mount hides
 * another at the same point.
 */
export function mountOf<M extends Pick<Mount, "mountPoint">>(
  mounts: readonly M[],
  path: string,
): M | undefined {
  let best: M | undefined;
  for (const m of mounts) {
    const mp = m.mountPoint;
    const inside = path === mp || mp === "/" || path.startsWith(mp.endsWith("/") ? mp : mp + "/");
    if (inside && (!best || mp.length >= best.mountPoint.length)) best = m;
  }
  return best;
}

/** Reads and parses the calling process's mount table. */
export function readMountInfo(path = "/proc/self/mountinfo"): Mount[] {
  return parseMountInfo(Deno.readTextFileSync(path));
}
