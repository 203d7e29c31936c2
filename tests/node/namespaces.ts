/**
 * The real node's mount and PID namespaces, held by one process (pid 1 of the node) in the node's
 * cgroup: its own bpffs on /sys/fs/bpf, tmpfs on /run and /opt, so the chart's host paths
 * (/sys/fs/bpf, /run/lace, /opt/cni/bin) are this node's; and how the node's processes are run
 * and stopped inside them.
 */
import { join } from "node:path";
import { run } from "../../lib/os/process.ts";
import type { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import { ManagedProcess, tail } from "../kube/_process.ts";
import { cgroupPids, killCgroups } from "./cgroups.ts";
import { LACE_IMAGE_HOME } from "./images.ts";
import { waitFor } from "../helpers/wait.ts";

export interface NodeNamespacesOptions {
  /** The node's network namespace (under /run/netns). */
  netns: string;
  /** The run's directory: processes' logs go there. */
  dir: string;
  /** The node's pids cgroup; every node process goes in a cgroup under `${pidsRoot}/node`. */
  pidsRoot: string;
  /** The lace image's tree, mounted at LACE_IMAGE_HOME in the node. */
  laceTree: string;
  /** Made in the node's /opt. */
  cniBin: string;
  cleanup: CleanupStack;
  /** The node's log files, for a failure message; each process's is added. */
  logFiles: string[];
}

/** A process of the node, stopped through its own cgroup. */
export interface NodeProcess {
  stop(): Promise<void>;
}

export interface NodeNamespaces {
  /** The node's pid 1 as the machine sees it: `nsenter --target` enters the node through it. */
  initPid: number;
  /** Runs a command inside the node's network, mount and PID namespaces; returns its stdout. */
  exec(cmd: string[]): Promise<string>;
  /** The same, but returns the whole result without throwing. */
  execResult(cmd: string[]): Promise<Deno.CommandOutput>;
  /** Spawns a node process in the node cgroup (and `extraCgroup` if given); stopped on cleanup. */
  spawn(
    label: string,
    cmd: string[],
    extraCgroup?: string,
    env?: Record<string, string>,
  ): Promise<NodeProcess>;
}

/** Makes the node's mount and PID namespaces; killing its pid 1 on cleanup goes on `cleanup`. */
export async function enterNodeNamespaces(o: NodeNamespacesOptions): Promise<NodeNamespaces> {
  const { netns, dir, pidsRoot, cleanup, logFiles } = o;
  // Its own PID namespace keeps the machine's other processes out of the hostPID agent's
  // sight (another test's fake kubelet), and takes every node process down with pid 1.
  const holderScript = [
    "set -e",
    // Shared inside this namespace only (it starts private): containerd wants host-to-container
    // mounts on shared or slave mounts.
    "mount --make-rshared /",
    "mount -t bpf bpf /sys/fs/bpf",
    "mount -t tmpfs -o mode=755 lace-node-run /run",
    "mount -t tmpfs -o mode=755 lace-node-opt /opt",
    `mkdir -p ${o.cniBin} ${LACE_IMAGE_HOME}`,
    `mount --bind ${o.laceTree}${LACE_IMAGE_HOME} ${LACE_IMAGE_HOME}`,
    // pid 1 of the node: reaps the runtime's orphans (shims, containers) as init does.
    "exec bash -c 'while :; do sleep 3600 & wait; done'",
  ].join("\n");
  const holderLog = join(dir, "holder.log");
  logFiles.push(holderLog);
  const holder = await ManagedProcess.spawn(
    "sh",
    [
      "-c",
      `echo $$ > ${pidsRoot}/node/cgroup.procs && exec "$@"`,
      "sh",
      "nsenter",
      `--net=/run/netns/${netns}`,
      "--",
      "unshare",
      "--mount",
      "--propagation",
      "private",
      "--pid",
      "--fork",
      // The node's pid 1 dies with unshare, so a test killed outright (setpriv's pdeathsig reaches
      // unshare) takes every process of the node, containers included, with it.
      "--kill-child",
      "--mount-proc",
      "--",
      "sh",
      "-c",
      holderScript,
    ],
    holderLog,
  );
  let nodeInit = 0;
  // Killing the node's pid 1 kills every process in its PID namespace.
  cleanup.push(async () => {
    if (nodeInit) {
      try {
        Deno.kill(nodeInit, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await holder.stop(1000);
  });
  // unshare forks the node's pid 1; ready once its last mount is there.
  await waitFor(async () => {
    if (holder.exited) throw new Error(`holder exited: ${await tail(holderLog)}`);
    const children = await Deno.readTextFile(`/proc/${holder.pid}/task/${holder.pid}/children`);
    nodeInit = Number(children.trim().split(" ")[0]);
    if (!nodeInit) return false;
    const mounts = await Deno.readTextFile(`/proc/${nodeInit}/mountinfo`);
    return mounts.includes(` ${LACE_IMAGE_HOME} `);
  }, { timeout: 10_000, interval: 250, message: "the node's namespaces" });
  const nsArgs = [`--target=${nodeInit}`, "--mount", "--net", "--pid"];
  const inNode = (cmd: string[]) => ["nsenter", ...nsArgs, "--", ...cmd];
  const execResult = (cmd: string[]) =>
    new Deno.Command(inNode(cmd)[0], {
      args: inNode(cmd).slice(1),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
  const exec = (cmd: string[]) => run(inNode(cmd));
  const spawn = async (
    label: string,
    cmd: string[],
    extraCgroup?: string,
    env: Record<string, string> = {},
  ) => {
    const log = join(dir, `${label}.log`);
    if (!logFiles.includes(log)) logFiles.push(log);
    // nsenter forks into the PID namespace and does not pass signals on: each process gets a
    // cgroup of its own, through which it is stopped.
    const own = join(pidsRoot, "node", label);
    await Deno.mkdir(own, { recursive: true });
    const joins = [`echo $$ > ${own}/cgroup.procs`];
    if (extraCgroup) joins.push(`echo $$ > ${extraCgroup}/cgroup.procs`);
    const envArgs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    const process = await ManagedProcess.spawn(
      "sh",
      ["-c", `${joins.join(" && ")} && exec "$@"`, "sh", ...inNode(["env", ...envArgs, ...cmd])],
      log,
    );
    const stop = async () => {
      for (const pid of await cgroupPids(own)) {
        try {
          Deno.kill(pid, "SIGTERM");
        } catch {
          // Exited meanwhile.
        }
      }
      await waitFor(async () => (await cgroupPids(own)).length === 0, {
        timeout: 10_000,
        interval: 250,
        message: `${label} to stop`,
      })
        .catch(() => killCgroups([own]));
      await process.stop(1000);
    };
    cleanup.push(stop);
    return { stop };
  };
  return { initPid: nodeInit, exec, execResult, spawn };
}
