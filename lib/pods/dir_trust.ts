/**
 * Whether the pods directory (--pods-dir) may be trusted: its files are pods with the network,
 * addresses and age their writer chose, and a file's view of a pod outranks the CNI path's
 * addresses, so only root may write there. A directory on a read-only mount passes whatever
 * its mode (a Kubernetes ConfigMap volume: a 0777 tmpfs, but mounted read-only, written by
 * the kubelet alone); anywhere else it must be root's and writable by no one else, and each
 * parent safe from someone else renaming it aside (os/root_dir.ts's rule). A file inside owned by
 * another non-root user, or one others may write outside a read-only mount, is skipped alone.
 * The judgements are pure; podsDirProblem() does the I/O.
 */
import { judgeParent } from "../os/root_dir.ts";
import { type Mount, mountOf, readMountInfo } from "../os/mountinfo.ts";
import { dirname } from "node:path";

const GROUP_OTHER_WRITE = 0o022;

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;
}

/** What the judgements need of stat(2). */
export interface OwnerMode {
  uid: number | null;
  mode: number | null;
}

/**
 * Why the resolved pods directory may not be read as it is, or undefined. `owner` is root's
 * uid (this process's); `readOnly` whether the mount holding it is read-only.
 */
export function judgePodsDir(
  stat: OwnerMode,
  owner: number,
  readOnly: boolean,
): string | undefined {
  if (readOnly) return undefined;
  if (stat.uid !== owner && stat.uid !== 0) {
    return `is owned by uid ${stat.uid}, not root, on a writable mount: that user can plant pods ` +
      "there (any network, address and age)";
  }
  const mode = (stat.mode ?? 0) & 0o7777;
  if (mode & GROUP_OTHER_WRITE) {
    return `is writable by group or others (mode ${octal(mode)}) on a writable mount: anyone ` +
      "may plant pods there (any network, address and age)";
  }
  return undefined;
}

/**
 * Why one manifest file is skipped for its owner or mode, or undefined: another non-root user's
 * file is theirs to rewrite whatever the mount, and one others may write is anyone's outside a
 * read-only mount.
 */
export function judgeManifestFile(
  stat: OwnerMode,
  owner: number,
  readOnly: boolean,
): string | undefined {
  if (stat.uid !== owner && stat.uid !== 0) {
    return `it is owned by uid ${stat.uid}, not root, who may write any pod into it`;
  }
  const mode = (stat.mode ?? 0) & 0o7777;
  if (!readOnly && mode & GROUP_OTHER_WRITE) {
    return `it is writable by group or others (mode ${octal(mode)}), who may write any pod into it`;
  }
  return undefined;
}

/** Whether the mount holding the resolved path `real` is read-only. */
export function onReadOnlyMount(mounts: readonly Mount[], real: string): boolean {
  return mountOf(mounts, real)?.options.includes("ro") ?? false;
}

/** The pods directory's trust, as the source needs it for its files. */
export interface PodsDirTrust {
  /** The directory, resolved. */
  real: string;
  readOnly: boolean;
}

/** The fix, said with every refusal. */
function fixFor(dir: string): string {
  return `Only root may write the pods directory: make it root's and writable by no one else ` +
    `(\`chown root "${dir}" && chmod go-w "${dir}"\`, the same for a parent named), or mount it ` +
    `read-only (a ConfigMap volume is), or fix --pods-dir`;
}

/**
 * Checks the existing pods directory `dir` (resolved through symlinks) and its parents; throws
 * an Error saying what is wrong and what to do, else returns its resolved path and whether it
 * sits on a read-only mount. Read-only: for the agent's start and `lace doctor`.
 */
export function checkPodsDir(
  dir: string,
  owner: number = Deno.uid() ?? 0,
  mounts: readonly Mount[] = readMountInfo(),
): PodsDirTrust {
  const real = Deno.realPathSync(dir);
  const readOnly = onReadOnlyMount(mounts, real);
  const why = judgePodsDir(Deno.statSync(real), owner, readOnly);
  if (why) throw new Error(`Pods directory "${dir}" ${why}. ${fixFor(dir)}`);
  for (let p = dirname(real);; p = dirname(p)) {
    const parent = judgeParent(Deno.lstatSync(p), owner);
    if (parent) {
      throw new Error(
        `Pods directory "${dir}": its parent "${p}" ${parent}, so the directory can be swapped ` +
          `for another user's. ${fixFor(dir)}`,
      );
    }
    if (p === "/") break;
  }
  return { real, readOnly };
}

/** Why the pods directory `dir` may not be used, or undefined (lace doctor; never throws). */
export function podsDirProblem(
  dir: string,
  owner?: number,
  mounts?: readonly Mount[],
): string | undefined {
  try {
    checkPodsDir(dir, owner, mounts);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}
