/**
 * containerd on the real node: started in the node's namespaces with our shim first on its PATH
 * and Debian's runc, the node's images imported, and the containers' v1 cgroups removed on
 * teardown.
 */
import { join } from "node:path";
import { run } from "../../lib/os/process.ts";
import type { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import type { NodeToolPaths } from "../kube/tools.ts";
import { CGROUP_V1, CONTAINER_HIERARCHIES, killCgroups, removeCgroupTree } from "./cgroups.ts";
import { IMAGES } from "./images.ts";
import type { NodeNamespaces } from "./namespaces.ts";
import { containerdConfig } from "./node_config.ts";
import { waitFor } from "../helpers/wait.ts";

export interface ContainerdOptions {
  tools: NodeToolPaths;
  /** The run's directory: containerd's root, state, config and socket go there. */
  dir: string;
  /** The CNI configuration directory (the conflist is written there later). */
  netConf: string;
  /** The CNI plugins' directory inside the node. */
  cniBin: string;
  node: NodeNamespaces;
  cleanup: CleanupStack;
}

export interface Containerd {
  /** containerd's CRI socket, for the kubelet. */
  socket: string;
  /** Runs ctr against this containerd inside the node. */
  ctr(...args: string[]): Promise<string>;
}

/** Writes containerd's config, starts it in the node and waits until it answers. */
export async function startContainerd(o: ContainerdOptions): Promise<Containerd> {
  const { tools, dir, cleanup } = o;
  const containerdDir = join(dir, "containerd");
  const socket = join(dir, "containerd.sock");
  const runc = (await run(["sh", "-c", "command -v runc"])).trim();
  const containerdToml = join(dir, "containerd.toml");
  await Deno.writeTextFile(
    containerdToml,
    containerdConfig({
      root: join(containerdDir, "root"),
      state: join(containerdDir, "state"),
      socket,
      cniConfDir: o.netConf,
      cniBinDir: o.cniBin,
      sandboxImage: IMAGES.pause,
      runc,
    }),
    { mode: 0o644 },
  );
  // Without QoS cgroups the kubelet passes no cgroup parent, so runc puts every container in
  // /k8s.io/<id> of each controller: find this node's ids in containerd's own directories.
  cleanup.push(async () => {
    const ids = new Set<string>();
    for (
      const listing of [
        join(containerdDir, "root", "io.containerd.grpc.v1.cri", "containers"),
        join(containerdDir, "root", "io.containerd.grpc.v1.cri", "sandboxes"),
        join(containerdDir, "state", "io.containerd.runtime.v2.task", "k8s.io"),
      ]
    ) {
      try {
        for await (const entry of Deno.readDir(listing)) ids.add(entry.name);
      } catch {
        // Not created: no container of that kind.
      }
    }
    const dirs = [...ids].flatMap((id) =>
      CONTAINER_HIERARCHIES.map((c) => join(CGROUP_V1, c, "k8s.io", id))
    );
    await killCgroups(dirs);
    for (const cgroup of dirs) await removeCgroupTree(cgroup);
    // The shared parent goes only when no other runtime's container is left in it.
    for (const c of CONTAINER_HIERARCHIES) {
      await Deno.remove(join(CGROUP_V1, c, "k8s.io")).catch(() => {});
    }
  });
  const shimDir = join(tools.containerdShim, "..");
  await o.node.spawn("containerd", [tools.containerd, "--config", containerdToml], undefined, {
    PATH: `${shimDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
  });
  const ctr = (...args: string[]) => o.node.exec([tools.ctr, "--address", socket, ...args]);
  await waitFor(async () => {
    await ctr("version");
    return true;
  }, { timeout: 30_000, interval: 250, message: "containerd" });
  return { socket, ctr };
}

/** Imports each image archive into containerd's k8s.io namespace, unpacked. */
export async function importImages(
  containerd: Containerd,
  archives: readonly string[],
): Promise<void> {
  for (const archive of archives) {
    await containerd.ctr("-n", "k8s.io", "images", "import", "--no-unpack=false", archive);
  }
}
