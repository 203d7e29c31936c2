/**
 * Temporary cgroups for the simulated node: one standing in for the
 * kubelet's, one for any other host process, under the cgroup2 mount found
 * in /proc/self/mountinfo.
 */
import { join } from "node:path";
import { cgroup2MountPoints, readMountInfo } from "../os/mountinfo.ts";
import { claimSuffix } from "./leftovers.ts";

export class SimCgroups implements Disposable {
  readonly mount: string;
  readonly root: string;
  readonly kubelet: string;
  readonly other: string;
  /** Further siblings made by child(), removed by dispose() before kubelet and other. */
  readonly #children: string[] = [];

  private constructor(mount: string, root: string) {
    this.mount = mount;
    this.root = root;
    this.kubelet = join(root, "kubelet");
    this.other = join(root, "other");
  }

  /** Creates `<cgroup2>/lace-sim-<rand>/{kubelet,other}`. */
  static create(): SimCgroups {
    const mount = cgroup2MountPoints(readMountInfo())[0];
    if (!mount) throw new Error("No cgroup2 mount in /proc/self/mountinfo: mount cgroup v2 first");
    const cg = new SimCgroups(mount, join(mount, `lace-sim-${claimSuffix()}`));
    Deno.mkdirSync(cg.root);
    try {
      Deno.mkdirSync(cg.kubelet);
      Deno.mkdirSync(cg.other);
    } catch (e) {
      cg.dispose();
      throw e;
    }
    return cg;
  }

  /** Creates one more sibling of kubelet and other, `<root>/<name>`; dispose() removes it. */
  child(name: string): string {
    const dir = join(this.root, name);
    Deno.mkdirSync(dir);
    this.#children.push(dir);
    return dir;
  }

  /** Moves any remaining process to the cgroup2 root, then removes the cgroups. */
  dispose(): void {
    for (const dir of [...this.#children, this.kubelet, this.other, this.root]) {
      try {
        for (const pid of Deno.readTextFileSync(join(dir, "cgroup.procs")).split("\n")) {
          if (!pid) continue;
          try {
            Deno.writeTextFileSync(join(this.mount, "cgroup.procs"), pid);
          } catch {
            // Exited meanwhile.
          }
        }
        Deno.removeSync(dir);
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
    }
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
