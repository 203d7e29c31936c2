/**
 * One read of the addresses of a process's network namespace through /proc/<pid>/net (no setns),
 * safe against the pid changing hands in the middle. A pid of the kubelet cgroup can exit between
 * the cgroup.procs that listed it and the read, and its number go to a tenant container's
 * process: the read would then be the pod's namespace, taken for the node's (and the node's real
 * address no longer held). So the namespace link is read before and after the files and must not
 * change, and the pid must still be listed in its cgroup after them; a read that fails either is
 * discarded. A process whose namespace is not the one the kubelet itself was read in (when known)
 * is not read at all: a helper in the kubelet cgroup may have entered a pod's namespace.
 *
 * Left: the pid exiting, its number reused by a tenant's process, that one exiting and the number
 * reused once more by a process of the kubelet cgroup in the host's namespace, all within one
 * read, a fraction of a millisecond: two wraps of the pid space.
 */
import { hostAddressSet } from "./addresses.ts";
import { parseFibTrieLocal, parseIfInet6 } from "./proc_net_addresses.ts";

/** The reads the host-address reader makes: the host's by default, a fake in unit tests. */
export interface ProcFiles {
  /** A file's text; throws (Deno.errors.NotFound when it is not there). */
  readText(path: string): string;
  /** A symbolic link's target: /proc/<pid>/ns/net reads "net:[<inode>]". */
  readLink(path: string): string;
}

export const HOST_PROC_FILES: ProcFiles = {
  readText: (path) => Deno.readTextFileSync(path),
  readLink: (path) => Deno.readLinkSync(path),
};

export interface PidNetnsRead {
  /** hostAddressSet() of the namespace's local addresses. */
  addresses: Set<string>;
  /** The namespace's link text ("net:[4026531840]"). */
  netns: string;
}

/**
 * Reads the local addresses of `pid`'s network namespace; see the module comment. `listed` tells
 * whether the pid is still in the kubelet cgroup (read again after the files); `netns`, when
 * given, is the only namespace read. Throws, naming the pid, when the read is discarded.
 */
export function readPidNetns(
  files: ProcFiles,
  proc: string,
  pid: number,
  o: { listed: () => boolean; netns?: string | null },
): PidNetnsRead {
  const link = `${proc}/${pid}/ns/net`;
  const before = files.readLink(link);
  if (o.netns && before !== o.netns) {
    throw new Error(
      `process ${pid} of the kubelet cgroup is in network namespace ${before}, not the kubelet's (${o.netns}): not read`,
    );
  }
  const fib = files.readText(`${proc}/${pid}/net/fib_trie`);
  const inet6 = readOptional(files, `${proc}/${pid}/net/if_inet6`);
  const after = files.readLink(link);
  if (after !== before) {
    throw new Error(
      `process ${pid} went from network namespace ${before} to ${after} while its addresses were read: read discarded`,
    );
  }
  if (!o.listed()) {
    throw new Error(
      `process ${pid} left the kubelet cgroup while its addresses were read (it exited, and its number may be another process's now): read discarded`,
    );
  }
  const addresses = hostAddressSet(
    [...parseFibTrieLocal(fib), ...parseIfInet6(inet6)].map((address) => ({ address })),
  );
  return { addresses, netns: before };
}

function readOptional(files: ProcFiles, path: string): string {
  try {
    return files.readText(path);
  } catch (e) {
    // No IPv6 in that namespace (ipv6.disable=1): no if_inet6 at all.
    if (e instanceof Deno.errors.NotFound) return "";
    throw e;
  }
}
