/**
 * One run of the real agent on the demo's pods (its pods directory, the simulated kubelet
 * cgroup, a pin path and CNI socket of the demo's own, metrics on a free loopback port), and
 * its wait for /readyz.
 */
import type { CleanupStack } from "../os/cleanup_stack.ts";
import { freeLoopbackPort } from "../os/process.ts";
import { selfCommand } from "../os/self_command.ts";
import type { SimCgroups } from "./cgroup.ts";

/** Polls `url` until it answers 200, giving up at once when the agent has exited. */
async function waitReady(url: string, agent: Deno.ChildProcess, deadlineMs: number) {
  const end = Date.now() + deadlineMs;
  let exited = false;
  agent.status.then(() => exited = true);
  let last = "";
  while (Date.now() < end && !exited) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(500) });
      last = await res.text();
      if (res.ok) return;
    } catch (e) {
      last = String(e);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    exited ? "The agent exited before it was ready" : `The agent was not ready in time: ${last}`,
  );
}

/** One run of the agent on the demo's pods; stop() ends it (the pins stay for the next). */
export async function startDemoAgent(o: {
  podsDir: string;
  pinPath: string;
  cniSocket: string;
  cgroups: SimCgroups;
  extra: string[];
  cleanups: CleanupStack;
}) {
  // A port of its own: the demo must not take a real agent's metrics port.
  const port = freeLoopbackPort();
  const logFile = await Deno.makeTempFile({ prefix: "lace-demo-agent-", suffix: ".log" });
  o.cleanups.push(() => Deno.remove(logFile));
  const cmd = selfCommand("agent", [
    "--no-kube-api",
    "--node-name=demo-node",
    `--pods-dir=${o.podsDir}`,
    `--pin-path=${o.pinPath}`,
    `--kubelet-cgroup=${o.cgroups.kubelet}`,
    `--metrics-addr=127.0.0.1:${port}`,
    // The demo must not take a real agent's sockets on this machine.
    "--agent-socket=",
    `--cni-socket=${o.cniSocket}`,
    "--log-format=json",
    ...o.extra,
  ]);
  const agent = new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const agentErr = agent.stderr.pipeTo((await Deno.open(logFile, { write: true })).writable)
    .catch(() => {});
  let stopped: Promise<void> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      try {
        agent.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      await agent.status;
      await agentErr;
    })();
  o.cleanups.push(stop);
  return {
    port,
    logFile,
    stop,
    async ready() {
      try {
        await waitReady(`http://127.0.0.1:${port}/readyz`, agent, 30_000);
      } catch (e) {
        console.error(await Deno.readTextFile(logFile));
        throw e;
      }
    },
  };
}
