/**
 * A private cgroup tree for one test, and processes placed in it: a fake
 * "kubelet" (a symlink to sleep named kubelet, so its comm and argv[0] say
 * kubelet) and any other command. Dispose kills what it started and removes
 * every cgroup it made, deepest first.
 */
import { join } from "node:path";
import { cgroup2MountPoints, readMountInfo } from "../../lib/os/mountinfo.ts";
import { claimSuffix } from "../../lib/demo/leftovers.ts";
import { waitFor } from "./wait.ts";

export class CgroupTree implements AsyncDisposable {
  readonly mount: string;
  readonly root: string;
  readonly #bin: string;
  readonly #procs: Deno.ChildProcess[] = [];

  private constructor(mount: string, root: string, bin: string) {
    this.mount = mount;
    this.root = root;
    this.#bin = bin;
  }

  /** Creates `<cgroup2>/lace-cgtest-<rand>` and a temp dir holding the fake kubelet. */
  static create(): CgroupTree {
    const mount = cgroup2MountPoints(readMountInfo())[0];
    if (!mount) throw new Error("No cgroup2 mount in /proc/self/mountinfo");
    const root = join(mount, `lace-cgtest-${claimSuffix()}`);
    Deno.mkdirSync(root);
    const bin = Deno.makeTempDirSync({ prefix: "lace-fake-kubelet-" });
    // Searchable by everyone: a fake kubelet may run as another user.
    Deno.chmodSync(bin, 0o755);
    return new CgroupTree(mount, root, bin);
  }

  /** The absolute path of a cgroup in this tree. */
  path(rel: string): string {
    return join(this.root, rel);
  }

  /** Creates a cgroup (and its parents) in this tree. */
  mkdir(rel: string): string {
    const dir = this.path(rel);
    Deno.mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** Starts `argv` inside the cgroup `rel`: it joins the cgroup before it execs. */
  async spawn(rel: string, argv: string[], comm: string): Promise<number> {
    const child = new Deno.Command("sh", {
      args: ["-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', this.path(rel), ...argv],
      stdin: "null",
      stdout: "null",
      stderr: "inherit",
    }).spawn();
    this.#procs.push(child);
    const readComm = () => {
      try {
        return Deno.readTextFileSync(`/proc/${child.pid}/comm`).trim();
      } catch {
        return "";
      }
    };
    await waitFor(() => readComm() === comm, {
      timeout: 5000,
      message: `process ${argv[0]} to start as ${comm}`,
    });
    return child.pid;
  }

  /**
   * Starts a fake kubelet in the cgroup `rel`; returns its pid. `wrapper` runs first and execs
   * it, e.g. `["unshare", "-m"]` for another mount namespace or `setpriv` for another user.
   */
  fakeKubelet(rel: string, wrapper: string[] = []): Promise<number> {
    return this.fakeProcess(rel, "kubelet", wrapper);
  }

  /**
   * Starts a fake kubelet whose command line names `kubeconfig` (`--kubeconfig <path>`), as a
   * real one's does: tail following /dev/null under the name kubelet (sleep takes no such flag),
   * which takes the flag and the path for files to follow and runs on; returns its pid.
   */
  fakeKubeletWithKubeconfig(
    rel: string,
    kubeconfig: string,
    wrapper: string[] = [],
  ): Promise<number> {
    const dir = join(this.#bin, "tail");
    Deno.mkdirSync(dir, { recursive: true, mode: 0o755 });
    const path = join(dir, "kubelet");
    try {
      Deno.symlinkSync(Deno.statSync("/usr/bin/tail").isFile ? "/usr/bin/tail" : "/bin/tail", path);
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
    const argv = [path, "-q", "-f", "/dev/null", "--", "--kubeconfig", kubeconfig];
    return this.spawn(rel, [...wrapper, ...argv], "kubelet");
  }

  /** Starts a process named `name` (comm and argv[0]; it sleeps) in the cgroup `rel`. */
  fakeProcess(rel: string, name: string, wrapper: string[] = []): Promise<number> {
    const path = join(this.#bin, name);
    try {
      Deno.symlinkSync("/bin/sleep", path);
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
    return this.spawn(rel, [...wrapper, path, "600"], name.slice(0, 15));
  }

  /** Kills one process started here and waits for it. */
  async kill(pid: number): Promise<void> {
    const child = this.#procs.find((p) => p.pid === pid);
    if (!child) return;
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await child.status;
  }

  /** Removes one cgroup; it must be empty. */
  rmdir(rel: string): void {
    Deno.removeSync(this.path(rel));
  }

  async dispose(): Promise<void> {
    for (const p of this.#procs) await this.kill(p.pid);
    const dirs: string[] = [];
    const walk = (d: string) => {
      dirs.push(d);
      try {
        for (const e of Deno.readDirSync(d)) if (e.isDirectory) walk(join(d, e.name));
      } catch {
        // Gone already.
      }
    };
    walk(this.root);
    for (const d of dirs.reverse()) {
      try {
        Deno.writeTextFileSync(join(d, "cgroup.kill"), "1");
      } catch {
        // Gone, or a kernel without cgroup.kill.
      }
      await waitFor(() => {
        try {
          Deno.removeSync(d);
          return true;
        } catch (e) {
          return e instanceof Deno.errors.NotFound;
        }
      }, { timeout: 3000, message: `cgroup "${d}" to be removable` }).catch(() => {});
    }
    Deno.removeSync(this.#bin, { recursive: true });
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}
