/**
 * The real node's cgroups: the v1 controllers the kubelet's pods use, the unified (v2) hierarchy
 * the kubelet's own directory lives in, and the teardown that empties and removes them.
 */
import { join } from "node:path";
import type { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import { delay } from "./wait.ts";

/** The cgroup v1 controllers the node's pods get a directory in. */
export const V1_CONTROLLERS = [
  "cpu",
  "cpuacct",
  "cpuset",
  "memory",
  "devices",
  "freezer",
  "blkio",
  "pids",
];
export const CGROUP_V1 = "/sys/fs/cgroup";
/**
 * Every hierarchy runc makes a container's cgroup in: the v1 controllers, the named `systemd`
 * one and the unified tree, each a directory under CGROUP_V1.
 */
export const CONTAINER_HIERARCHIES = [...V1_CONTROLLERS, "systemd", "unified"];
export const CGROUP_V2 = "/sys/fs/cgroup/unified";

/** Pids in a cgroup directory and every cgroup below it. */
export async function cgroupPids(dir: string): Promise<number[]> {
  const pids: number[] = [];
  const walk = async (path: string) => {
    try {
      const text = await Deno.readTextFile(join(path, "cgroup.procs"));
      for (const line of text.split("\n")) if (line) pids.push(Number(line));
      for await (const entry of Deno.readDir(path)) {
        if (entry.isDirectory) await walk(join(path, entry.name));
      }
    } catch {
      // Gone meanwhile.
    }
  };
  await walk(dir);
  return pids;
}

/** Removes a cgroup directory tree, deepest first; cgroupfs refuses rm -r. */
export async function removeCgroupTree(dir: string): Promise<void> {
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isDirectory) await removeCgroupTree(join(dir, entry.name));
    }
    await Deno.remove(dir);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** SIGKILLs every process in the cgroups until none is left (or throws after 20 s). */
export async function killCgroups(dirs: string[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (true) {
    const pids = (await Promise.all(dirs.map(cgroupPids))).flat();
    if (pids.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`Processes ${pids.join(", ")} of the node survived SIGKILL for 20 s`);
    }
    for (const pid of pids) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // Exited meanwhile.
      }
    }
    await delay(100);
  }
}

/** The cgroups of one node (see makeNodeCgroups). */
export interface NodeCgroups {
  /** The node's pids cgroup; every node process goes in a cgroup under `${pidsRoot}/node`. */
  pidsRoot: string;
  /** The kubelet's own cgroup v2 directory (the chart's node.kubeletCgroupPath). */
  kubeletCgroup: string;
}

/**
 * Makes the node `name`'s cgroups: its processes' pids cgroup and the kubelet's own v2
 * directory (the pods' `/name` in the v1 controllers is the kubelet's to make). Killing every
 * process in them, then removing them all, goes on `cleanup`.
 */
export async function makeNodeCgroups(
  name: string,
  cleanup: CleanupStack,
): Promise<NodeCgroups> {
  const pidsRoot = join(CGROUP_V1, "pids", name);
  const v2Root = join(CGROUP_V2, name);
  const kubeletCgroup = join(v2Root, "kubelet");
  await Deno.mkdir(join(pidsRoot, "node"), { recursive: true });
  await Deno.mkdir(kubeletCgroup, { recursive: true });
  cleanup.push(async () => {
    for (const controller of V1_CONTROLLERS) {
      await removeCgroupTree(join(CGROUP_V1, controller, name));
    }
    await removeCgroupTree(v2Root);
  });
  const allCgroups = [...V1_CONTROLLERS.map((c) => join(CGROUP_V1, c, name)), v2Root];
  cleanup.push(() => killCgroups(allCgroups));
  return { pidsRoot, kubeletCgroup };
}
