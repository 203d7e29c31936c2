/**
 * `lace demo`: the whole product on one machine, with no cluster. Builds a
 * simulated node in network namespaces with overlay networks whose pods share
 * the same IPv4 and IPv6 address, writes their Pod manifests to a directory,
 * runs the real agent on that directory, then probes every pod from a kubelet
 * cgroup the way the kubelet does, shows that a process outside that cgroup
 * reaches none of them, and removes everything it made (also on Ctrl-C).
 */
import { join } from "node:path";
import { boolean, type CommandSpec, integer, parseCommand, UsageError } from "../cli/flags.ts";
import { SimCgroups } from "./cgroup.ts";
import { claimSuffix, sweepAbandoned } from "./leftovers.ts";
import { CleanupStack } from "../cleanup_stack.ts";
import { POD_IPV4, POD_IPV6, SimNode } from "./netns.ts";
import { PodServer } from "./pod_server.ts";
import { Prober, type ProbeResponse } from "../doctor/prober.ts";
import { selfCommand } from "../cli/self_command.ts";
import { type DemoPod, demoPods } from "./pods.ts";

const spec: CommandSpec<{ networks: number; json: boolean }> = {
  name: "demo",
  summary: [
    "Run Lace end to end on this machine: a simulated node in network namespaces, overlay networks",
    "whose pods share one IPv4 and one IPv6 address, the real agent on a directory of Pod manifests,",
    "and a kubelet-like prober. Needs root. Leaves nothing behind.",
  ].join("\n"),
  usage: "lace demo [--networks N] [--json]",
  flags: [
    {
      name: "networks",
      key: "networks",
      value: integer,
      env: ["LACE_DEMO_NETWORKS"],
      help: "How many overlay networks (1..8)",
    },
    { name: "json", key: "json", value: boolean, help: "Print the results as JSON" },
  ],
  defaults: () => ({ networks: 3, json: false }),
};

export interface DemoRow {
  pod: string;
  network: string;
  address: string;
  probe: string;
  from: "kubelet" | "other";
  result: string;
  answeredBy?: string;
  mark?: string;
}

const say = (s: string) => console.error(s);

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

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

function table(rows: DemoRow[]): string {
  const header = ["FROM", "POD", "NETWORK", "ADDRESS", "PROBE", "RESULT", "ANSWERED BY", "MARK"];
  const cells = rows.map((r) => [
    r.from,
    r.pod,
    r.network,
    r.address,
    r.probe,
    r.result,
    r.answeredBy ?? "-",
    r.mark ?? "-",
  ]);
  const w = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  return [header, ...cells].map((c) => c.map((x, i) => x.padEnd(w[i])).join("  ").trimEnd())
    .join("\n");
}

async function probeAll(prober: Prober, pods: DemoPod[], from: "kubelet" | "other") {
  const rows: DemoRow[] = [];
  for (const pod of pods) {
    for (const address of [POD_IPV4, POD_IPV6]) {
      for (const p of pod.probes) {
        const res: ProbeResponse = await prober.probe({
          host: address,
          port: p.port,
          timeoutMs: 1000,
          ...(p.kind === "httpGet" ? { http: p.path } : {}),
        });
        rows.push({
          pod: `demo/${pod.name}`,
          network: `${pod.network} (${pod.networkId})`,
          address: address.includes(":") ? `[${address}]:${p.port}` : `${address}:${p.port}`,
          probe: `${p.probe} ${p.kind}`,
          from,
          result: res.result === "reached" && res.httpStatus
            ? `reached ${res.httpStatus}`
            : res.result,
          answeredBy: res.body?.trim() || undefined,
          mark: res.mark ? `0x${res.mark.toString(16)}` : undefined,
        });
      }
    }
  }
  return rows;
}

/** Runs the demo; returns 0 when every kubelet probe reached its own pod and no other process reached any. */
export async function runDemo(args: string[]): Promise<number> {
  const options = parseCommand(spec, args);
  if (options === null) return 0;
  const count = options.networks;
  if (count < 1 || count > 8) {
    throw new UsageError(`--networks must be 1..8: ${count}`);
  }
  if (Deno.uid() !== 0) {
    console.error(
      "lace demo needs root: it creates network namespaces, cgroups and BPF programs (run it with sudo)",
    );
    return 1;
  }

  const cleanups = new CleanupStack("demo");
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    cleaning ??= cleanups.runAll().then((errors) => {
      for (const e of errors) say(`cleanup: ${e instanceof Error ? e.message : e}`);
    });
  const onSignal = () => {
    say("\nInterrupted: cleaning up");
    cleanup().finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    // What an earlier demo or test run left when it was killed (SIGKILL runs no clean-up).
    for (const what of await sweepAbandoned()) say(`Removed ${what}, left by a killed run`);
    const sfx = claimSuffix();
    const networks = Array.from({ length: count }, (_, i) => i + 1);
    say(
      `Building a simulated node with ${count} overlay networks (pods at ${POD_IPV4} and ${POD_IPV6} in each)`,
    );
    const node = await SimNode.create({ networks });
    cleanups.push(() => node.dispose());
    const cgroups = SimCgroups.create();
    cleanups.push(() => cgroups.dispose());
    say(
      `Built namespaces ${
        [node.netns, ...node.networks.map((n) => n.podNetns)].join(", ")
      } and cgroup ${cgroups.root}`,
    );

    const pods = demoPods(node.networks);
    for (const pod of pods) {
      const server = await PodServer.start({
        netns: node.network(pod.networkId).podNetns,
        name: pod.name,
        addresses: [POD_IPV4, POD_IPV6],
        httpPorts: pod.probes.filter((p) => p.kind === "httpGet").map((p) => p.port),
        tcpPorts: pod.probes.filter((p) => p.kind === "tcpSocket").map((p) => p.port),
      });
      cleanups.push(() => server.dispose());
    }

    const podsDir = await Deno.makeTempDir({ prefix: "lace-demo-pods-" });
    cleanups.push(() => Deno.remove(podsDir, { recursive: true }));
    for (const pod of pods) {
      await Deno.writeTextFile(
        join(podsDir, `${pod.name}.json`),
        JSON.stringify(pod.manifest, null, 2),
      );
    }
    say(`Wrote ${pods.length} Pod manifests to ${podsDir}`);

    const pinPath = `/sys/fs/bpf/lace-demo-${sfx}`;
    const port = freePort();
    const logFile = await Deno.makeTempFile({ prefix: "lace-demo-agent-", suffix: ".log" });
    cleanups.push(() => Deno.remove(logFile));
    const cmd = selfCommand("agent", [
      "--no-kube-api",
      "--node-name=demo-node",
      `--pods-dir=${podsDir}`,
      `--pin-path=${pinPath}`,
      `--kubelet-cgroup=${cgroups.kubelet}`,
      `--metrics-addr=127.0.0.1:${port}`,
      // The demo must not take a real agent's socket on this machine.
      "--agent-socket=",
      "--cni-socket=",
      "--log-format=json",
    ]);
    const agent = new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const agentErr = agent.stderr.pipeTo((await Deno.open(logFile, { write: true })).writable)
      .catch(() => {});
    cleanups.push(async () => {
      const uninstall = selfCommand("uninstall", [`--pin-path=${pinPath}`]);
      await new Deno.Command(uninstall[0], { args: uninstall.slice(1), stdout: "null" }).output();
      await Deno.remove(pinPath).catch(() => {});
    });
    cleanups.push(async () => {
      try {
        agent.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      await agent.status;
      await agentErr;
    });
    say(`Started the agent (pins under ${pinPath}, metrics on 127.0.0.1:${port}, log ${logFile})`);
    try {
      await waitReady(`http://127.0.0.1:${port}/readyz`, agent, 30_000);
    } catch (e) {
      say(await Deno.readTextFile(logFile));
      throw e;
    }
    say("The agent is ready: programs attached to the kubelet cgroup, pod list applied\n");

    const kubelet = await Prober.start({ netns: node.netns, cgroup: cgroups.kubelet });
    cleanups.push(() => kubelet.dispose());
    const other = await Prober.start({ netns: node.netns, cgroup: cgroups.other });
    cleanups.push(() => other.dispose());

    const fromKubelet = await probeAll(kubelet, pods, "kubelet");
    const fromOther = await probeAll(other, pods, "other");
    const rows = [...fromKubelet, ...fromOther];
    const kubeletOk = fromKubelet.every((r) =>
      r.result.startsWith("reached") && r.answeredBy === r.pod.split("/")[1]
    );
    const otherOk = fromOther.every((r) => !r.result.startsWith("reached"));
    if (options.json) {
      console.log(JSON.stringify({ ok: kubeletOk && otherOk, rows }, null, 2));
    } else {
      console.log(table(rows));
      console.log("");
      console.log(
        kubeletOk
          ? `Every kubelet probe reached its own pod (${fromKubelet.length}/${fromKubelet.length}), through the network its mark selects.`
          : "Some kubelet probes did NOT reach their pod: see the table above.",
      );
      console.log(
        otherOk
          ? `No process outside the kubelet cgroup reached any pod (0/${fromOther.length}): its connects are not tagged.`
          : "A process outside the kubelet cgroup reached a pod: that must never happen.",
      );
    }
    return kubeletOk && otherOk ? 0 : 1;
  } finally {
    await cleanup();
    say("Cleaned up: namespaces, cgroups, pins, processes and files are gone");
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
}
