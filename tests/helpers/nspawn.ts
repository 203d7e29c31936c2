/**
 * A machine booted by systemd-nspawn with systemd as its PID 1, to run the agent under its real
 * systemd unit (tests/systemd_unit_test.ts). Its root is this machine's own Debian /usr, read-only
 * (as tests/node/rootfs.ts makes images of this machine's binaries instead of downloading a base
 * system), a fresh /etc and /var, and the lace launcher of the real node's image at
 * /usr/local/bin/lace (tests/node/images.ts: the checked-out source on the Deno runtime, since
 * the compiled binary needs denort, which cannot be had here). It has a network namespace of its
 * own (--private-network: no interface but loopback), a cgroup v2 subtree of its own (its
 * /sys/fs/cgroup) and a bpffs directory of its own as its /sys/fs/bpf. Everything goes on
 * dispose, also after a failure; a test process killed outright takes the machine down with it
 * (the parent-death signal) and the next run's sweep removes its cgroup and pins
 * (lib/demo/leftovers.ts).
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cgroup2MountPoints, readMountInfo } from "../../lib/os/mountinfo.ts";
import { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import { lines } from "../../lib/os/process.ts";
import { claimSuffix, removePinDir } from "../../lib/demo/leftovers.ts";
import { isExecutable } from "./executable.ts";
import { waitFor } from "./wait.ts";
import { denoDir, LACE_IMAGE_HOME, laceLauncher } from "../node/images.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** Where Debian's systemd-container package puts systemd-nspawn, when it is installed. */
export const NSPAWN = ["/usr/bin/systemd-nspawn", "/bin/systemd-nspawn"].find(isExecutable);

/** Why this machine cannot boot one, or undefined when it can. */
export function nspawnUnavailableReason(): string | undefined {
  if (Deno.uid() !== 0) return "needs root (systemd-nspawn, cgroups, BPF)";
  if (!NSPAWN) return "systemd-nspawn not installed (systemd-container; scripts/setup.sh --tests)";
  return undefined;
}

/** A file of the machine's root, by its path there. */
export type MachineFiles = Record<string, string | { text: string; mode: number }>;

/** What a command run inside the machine gave. */
export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

const decoder = new TextDecoder();

/** The top-level names this machine's root has as symlinks into /usr (a merged /usr). */
function usrLinks(): Map<string, string> {
  const links = new Map<string, string>();
  for (const name of ["bin", "sbin", "lib", "lib32", "lib64", "libx32"]) {
    try {
      if (Deno.lstatSync(`/${name}`).isSymlink) links.set(name, Deno.readLinkSync(`/${name}`));
    } catch {
      // Not on this machine.
    }
  }
  return links;
}

/** Writes `files` under `root`, making their directories. */
async function writeFiles(root: string, files: MachineFiles): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    const dest = join(root, path);
    await Deno.mkdir(dirname(dest), { recursive: true });
    const { text, mode } = typeof content === "string" ? { text: content, mode: 0o644 } : content;
    await Deno.writeTextFile(dest, text, { mode });
    await Deno.chmod(dest, mode);
  }
}

/** The mount points at or below `dir` in this process's mount table. */
function mountsUnder(dir: string): string[] {
  return readMountInfo().map((m) => m.mountPoint).filter((p) =>
    p === dir || p.startsWith(dir + "/")
  );
}

/** Removes a cgroup v2 tree, deepest first, once the processes in it are gone. */
async function removeCgroupTree(dir: string): Promise<void> {
  const dirs: string[] = [];
  const walk = (d: string) => {
    for (const e of Deno.readDirSync(d)) if (e.isDirectory) walk(join(d, e.name));
    dirs.push(d);
  };
  try {
    walk(dir);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  for (const d of dirs) {
    // A cgroup whose last process just exited stays busy for a moment.
    await waitFor(() => {
      try {
        Deno.removeSync(d);
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
      return true;
    }, { timeout: 10_000, message: `cgroup "${d}" removed` });
  }
}

export class NspawnMachine implements AsyncDisposable {
  readonly #child: Deno.ChildProcess;
  readonly #cleanup: CleanupStack;
  readonly #console: string[] = [];
  readonly #drained: Promise<void>;
  #init = 0;

  private constructor(
    child: Deno.ChildProcess,
    cleanup: CleanupStack,
    /** The machine's root directory on this machine (its /etc, /var). */
    readonly root: string,
    /** The host path of the machine's /sys/fs/cgroup. */
    readonly cgroup: string,
    /** The host path of the machine's /sys/fs/bpf. */
    readonly bpffs: string,
  ) {
    this.#child = child;
    this.#cleanup = cleanup;
    const drain = async (stream: ReadableStream<Uint8Array>) => {
      for await (const line of lines(stream)) {
        this.#console.push(line);
        if (this.#console.length > 400) this.#console.shift();
      }
    };
    this.#drained = Promise.all([drain(child.stdout), drain(child.stderr)]).then(() => {});
  }

  /**
   * Boots a machine whose root holds `files` (path in the machine → text, mode 0644 unless
   * given) and waits until its systemd has finished booting.
   */
  static async boot(files: MachineFiles): Promise<NspawnMachine> {
    const cleanup = new CleanupStack("nspawn machine");
    try {
      const name = `lace-nspawn-${claimSuffix()}`;
      const root = await Deno.makeTempDir({ prefix: `${name}-root-` });
      // The machine's /: its services that are not root (dbus) must get through it.
      await Deno.chmod(root, 0o755);
      const layer = await Deno.makeTempDir({ prefix: `${name}-usr-` });
      cleanup.push(() => removeTree(layer));
      cleanup.push(() => removeTree(root));
      for (const dir of ["etc", "usr", "var", "opt/lace", "run", "tmp", "proc", "sys", "dev"]) {
        await Deno.mkdir(join(root, dir), { recursive: true });
      }
      for (const [link, target] of usrLinks()) await Deno.symlink(target, join(root, link));
      for (const file of ["os-release", "passwd", "group", "ld.so.cache"]) {
        try {
          await Deno.writeFile(join(root, "etc", file), await Deno.readFile(`/etc/${file}`));
        } catch (e) {
          if (!(e instanceof Deno.errors.NotFound) || file !== "ld.so.cache") throw e;
        }
      }
      await writeFiles(root, {
        // Empty: systemd takes the machine's id from nspawn, as on a first boot.
        "/etc/machine-id": "",
        "/etc/hostname": "lace-node\n",
        ...files,
      });
      await writeFiles(layer, {
        "/usr/local/bin/lace": { text: laceLauncher(LACE_IMAGE_HOME), mode: 0o755 },
      });

      const cgroupMount = cgroup2MountPoints(readMountInfo())[0];
      if (!cgroupMount) throw new Error("No cgroup2 mount on this machine: nspawn needs one");
      const cgroup = join(cgroupMount, name);
      await Deno.mkdir(cgroup);
      cleanup.push(() => removeCgroupTree(cgroup));
      const bpffs = join("/sys/fs/bpf", name);
      await Deno.mkdir(bpffs, { mode: 0o700 });
      cleanup.push(() => removePinDir(bpffs));

      const deno = Deno.execPath();
      const nspawn = [
        NSPAWN!,
        "--quiet",
        "--boot",
        `--directory=${root}`,
        `--machine=${name}`,
        // Loopback only, never this machine's network.
        "--private-network",
        // No systemd runs this machine: no machined to register with, no scope to ask for.
        "--register=no",
        "--keep-unit",
        "--console=read-only",
        // nspawn's own bounding set lacks these two; the unit asks for them.
        "--capability=CAP_BPF,CAP_PERFMON",
        // nspawn's own system-call filter allows neither.
        "--system-call-filter=bpf perf_event_open",
        `--overlay-ro=/usr:${join(layer, "usr")}:/usr`,
        `--bind-ro=${deno}:${LACE_IMAGE_HOME}/deno`,
        // The stand-in kubelet is Deno under the kubelet's name, as the agent finds it in /proc.
        `--bind-ro=${deno}:${LACE_IMAGE_HOME}/kubelet`,
        `--bind-ro=${REPO}:${LACE_IMAGE_HOME}/src`,
        `--bind-ro=${denoDir()}:${LACE_IMAGE_HOME}/deno-dir`,
        `--bind=${bpffs}:/sys/fs/bpf`,
      ];
      // The shell joins the machine's cgroup before nspawn runs, so nspawn makes its payload
      // and supervisor cgroups there and not at the top of this machine's hierarchy.
      const child = new Deno.Command("setpriv", {
        args: [
          "--pdeathsig=TERM",
          "--",
          "sh",
          "-c",
          'echo $$ > "$0/cgroup.procs" && exec "$@"',
          cgroup,
          ...nspawn,
        ],
        // cgroup v2 in the machine, as on current nodes, whatever this machine's own layout.
        env: { SYSTEMD_NSPAWN_UNIFIED_HIERARCHY: "1" },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // nspawn's directory for this machine: gone after a halt, left by an nspawn killed.
      cleanup.push(() =>
        Deno.remove(`/run/systemd/nspawn/propagate/${name}`, { recursive: true }).catch((e) => {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
        })
      );
      const machine = new NspawnMachine(child, cleanup, root, join(cgroup, "payload"), bpffs);
      cleanup.push(() => machine.#stop());
      await machine.#waitForBoot();
      return machine;
    } catch (e) {
      const errors = await cleanup.runAll();
      throw errors.length
        ? new AggregateError([e, ...errors], "Booting the machine failed, and so did cleaning up")
        : e;
    }
  }

  /** The host pid of the machine's PID 1 (its systemd). */
  get pid(): number {
    return this.#init;
  }

  /** The host path of a file in the machine (its /run and /tmp included). */
  path(inMachine: string): string {
    return `/proc/${this.#init}/root${inMachine}`;
  }

  /** The last lines nspawn and the machine's console wrote, for a failure message. */
  console(): string {
    return this.#console.join("\n");
  }

  async #waitForBoot(): Promise<void> {
    const nspawnPid = this.#child.pid;
    this.#init = await this.#unlessExited(waitFor(() => {
      for (const task of Deno.readDirSync(`/proc/${nspawnPid}/task`)) {
        const children = Deno.readTextFileSync(`/proc/${nspawnPid}/task/${task.name}/children`);
        for (const pid of children.trim().split(/\s+/).filter(Boolean).map(Number)) {
          if (Deno.readTextFileSync(`/proc/${pid}/comm`).trim() === "systemd") return pid;
        }
      }
      return 0;
    }, { timeout: 30_000, message: "systemd started by nspawn" }));
    // Booted: running, or degraded when a unit of this machine's /usr cannot run in a container.
    await this.#unlessExited(waitFor(async () => {
      const state = (await this.exec(["systemctl", "is-system-running"])).stdout.trim();
      return state === "running" || state === "degraded";
    }, { timeout: 60_000, interval: 100, message: "the machine booted" }));
  }

  /** `waiting`, failed at once with nspawn's output when nspawn exits first or it fails. */
  async #unlessExited<T>(waiting: Promise<T>): Promise<T> {
    const exited = this.#child.status.then((s) =>
      Promise.reject(new Error(`nspawn exited (code ${s.code})`))
    );
    try {
      return await Promise.race([waiting, exited]);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      throw new Error(`${why}; nspawn and the console said:\n${this.console()}`, { cause: e });
    }
  }

  /** Runs a command inside the machine (all its namespaces, its root). */
  async exec(cmd: string[]): Promise<ExecResult> {
    const out = await new Deno.Command("nsenter", {
      args: [
        `--target=${this.#init}`,
        "--mount",
        "--uts",
        "--ipc",
        "--net",
        "--pid",
        "--cgroup",
        "--",
        ...cmd,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: out.code,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
    };
  }

  /** Runs systemctl inside the machine; throws with its output when it fails. */
  async systemctl(...args: string[]): Promise<string> {
    const r = await this.exec(["systemctl", ...args]);
    if (r.code !== 0) {
      throw new Error(
        `systemctl ${args.join(" ")} failed (exit ${r.code}): ${r.stderr}${r.stdout}`,
      );
    }
    return r.stdout;
  }

  /** A unit's properties (`systemctl show -p`), by name. */
  async unitProperties(unit: string, ...names: string[]): Promise<Record<string, string>> {
    const out = await this.systemctl("show", unit, ...names.map((n) => `--property=${n}`));
    return Object.fromEntries(
      out.trim().split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
  }

  /** A unit's journal, for a failure message. */
  async journal(unit: string): Promise<string> {
    const r = await this.exec(["journalctl", "--no-pager", "--output=cat", "-n", "60", "-u", unit]);
    return r.stdout + r.stderr;
  }

  /** Halts the machine through nspawn (SIGTERM), or kills it when it will not halt. */
  async #stop(): Promise<void> {
    try {
      this.#child.kill("SIGTERM");
    } catch {
      // Exited already.
    }
    const halted = await Promise.race([
      this.#child.status.then(() => true),
      new Promise<false>((resolve) => {
        const timer = setTimeout(() => resolve(false), 30_000);
        this.#child.status.finally(() => clearTimeout(timer));
      }),
    ]);
    if (!halted) {
      try {
        this.#child.kill("SIGKILL");
      } catch {
        // Exited meanwhile.
      }
      await this.#child.status;
    }
    await this.#drained;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#cleanup.run();
  }
}

/**
 * Removes a directory of the machine's root or layer, never crossing into a mount: nspawn
 * mounts /usr and the checkout inside its own mount namespace only, but a tree that still had
 * a mount here is left alone rather than emptied through it.
 */
async function removeTree(dir: string): Promise<void> {
  const mounted = mountsUnder(dir);
  if (mounted.length) {
    throw new Error(`Not removing "${dir}": mounts are left under it (${mounted.join(", ")})`);
  }
  await Deno.remove(dir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}
