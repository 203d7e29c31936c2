/**
 * `lace demo`: the whole product on one machine, with no cluster. Builds a
 * simulated node in network namespaces with overlay networks whose pods share
 * the same IPv4 and IPv6 address, writes their Pod manifests to a directory,
 * runs the real agent on that directory, then probes every pod from a kubelet
 * cgroup the way the kubelet does, shows that a process outside that cgroup
 * reaches none of them, and removes everything it made (also on Ctrl-C).
 * It runs the agent twice: first under the default address policy (one
 * network per address on the node: the oldest pod holds the address, the
 * others' probes are not tagged, and a CNI ADD of another network at it is
 * refused), then under the opt-in `--address-sharing=shared`, where every
 * pod is probed in its own network, with the exposure that sharing brings.
 */
import { join } from "node:path";
import { type CommandSpec, integer, parseCommand, UsageError } from "../flags/parser.ts";
import { outputFlags, type OutputSettings } from "../flags/output.ts";
import { SimCgroups } from "./cgroup.ts";
import { claimSuffix, sweepAbandoned } from "./leftovers.ts";
import { CleanupStack } from "../os/cleanup_stack.ts";
import { POD_IPV4, POD_IPV6, SimNode } from "./netns.ts";
import { PodServer } from "./pod_server.ts";
import { Prober } from "../prober/mod.ts";
import { selfCommand } from "../os/self_command.ts";
import { demoPods } from "./pods.ts";
import { addAtHeldAddress, type RefusalResult, SHARING_EXPOSURE } from "./address_policy.ts";
import { startDemoAgent } from "./agent_run.ts";
import { type DemoRow, demoTable, probeAll } from "./probe_rows.ts";

type DemoOptions = { networks: number } & OutputSettings;

/** The command's flags, for its help and shell completion. */
export const demoCommand: CommandSpec<DemoOptions> = {
  name: "demo",
  summary: [
    "Run Lace end to end on this machine: a simulated node in network namespaces, overlay networks",
    "whose pods share one IPv4 and one IPv6 address, the real agent on a directory of Pod manifests,",
    "and a kubelet-like prober. The agent runs first under the default address policy (one network",
    "per address on a node: the oldest pod holds it, the others are turned away), then with",
    "--address-sharing=shared (each pod probed in its own network, and the exposure that brings).",
    "Needs root. Leaves nothing behind.",
  ].join("\n"),
  usage: "lace demo [--networks N] [-o text|json]",
  flags: [
    {
      name: "networks",
      key: "networks",
      value: integer,
      env: ["LACE_DEMO_NETWORKS"],
      help: "How many overlay networks (1..8)",
    },
    ...outputFlags<DemoOptions>(),
  ],
  defaults: () => ({ networks: 3, output: "text" }),
};

const say = (s: string) => console.error(s);

/**
 * Runs the demo; returns 0 when, under the default, the holder's probes reached it, the later
 * pods' reached no pod and the ADD at the held address was refused; under sharing every kubelet
 * probe reached its own pod; and no other process reached any pod.
 */
export async function runDemo(args: string[]): Promise<number> {
  const options = parseCommand(demoCommand, args);
  if (options === null) return 0;
  const count = options.networks;
  if (count < 1 || count > 8) {
    throw new UsageError(`--networks must be 1..8: "${count}"`);
  }
  if (Deno.uid() !== 0) {
    console.error(
      "lace demo: cannot create network namespaces, cgroups and BPF programs without root: " +
        "run it with sudo",
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
    const cniSocket = join(podsDir, "run", "cni.sock");
    cleanups.push(async () => {
      const uninstall = selfCommand("uninstall", [`--pin-path=${pinPath}`]);
      await new Deno.Command(uninstall[0], { args: uninstall.slice(1), stdout: "null" }).output();
      await Deno.remove(pinPath).catch(() => {});
    });
    const start = async (extra: string[]) => {
      const agent = await startDemoAgent({ podsDir, pinPath, cniSocket, cgroups, extra, cleanups });
      say(
        `Started the agent${
          extra.length ? ` with ${extra.join(" ")}` : ""
        } (pins under ${pinPath}, metrics on 127.0.0.1:${agent.port}, log ${agent.logFile})`,
      );
      await agent.ready();
      say("The agent is ready: programs attached to the kubelet cgroup, pod list applied\n");
      return agent;
    };
    const kubelet = await Prober.start({ netns: node.netns, cgroup: cgroups.kubelet });
    cleanups.push(() => kubelet.dispose());
    const other = await Prober.start({ netns: node.netns, cgroup: cgroups.other });
    cleanups.push(() => other.dispose());
    const probeBoth = async (policy: DemoRow["policy"]) => ({
      fromKubelet: await probeAll(kubelet, pods, "kubelet", policy),
      fromOther: await probeAll(other, pods, "other", policy),
    });

    // The default: one network per address on the node. The oldest pod holds the address.
    const first = await start([]);
    const exclusive = await probeBoth("exclusive");
    const holder = pods[0];
    const refusal: RefusalResult = await addAtHeldAddress(cniSocket, count + 1);
    await first.stop();

    // The opt-in: networks that trust each other share the address.
    const second = await start(["--address-sharing=shared"]);
    const shared = await probeBoth("shared");
    await second.stop();

    const reachedOwn = (r: DemoRow) =>
      r.result.startsWith("reached") && r.answeredBy === r.pod.split("/")[1];
    const ownedByHolder = (r: DemoRow) => r.pod === `demo/${holder.name}`;
    const exclusiveOk = exclusive.fromKubelet.every((r) =>
      ownedByHolder(r) ? reachedOwn(r) : !r.result.startsWith("reached")
    ) && refusal.refused;
    const sharedOk = shared.fromKubelet.every(reachedOwn);
    const otherOk = [...exclusive.fromOther, ...shared.fromOther].every((r) =>
      !r.result.startsWith("reached")
    );
    const rows = [
      ...exclusive.fromKubelet,
      ...exclusive.fromOther,
      ...shared.fromKubelet,
      ...shared.fromOther,
    ];
    const ok = exclusiveOk && sharedOk && otherOk;
    if (options.output === "json") {
      console.log(
        JSON.stringify(
          { ok, holder: `demo/${holder.name}`, refusal, exposure: SHARING_EXPOSURE, rows },
          null,
          2,
        ),
      );
    } else {
      const later = pods.length - 1;
      console.log(demoTable(rows));
      console.log("");
      console.log(
        exclusiveOk
          ? `Default policy (one network per address on the node): demo/${holder.name} (${holder.network}, the oldest pod) holds ${POD_IPV4} and ${POD_IPV6}; ` +
            (later
              ? `the kubelet's probes of the ${later} later pod(s) of other networks there are not tagged and reach no pod; `
              : "") +
            `a CNI ADD bringing those addresses for network net${
              count + 1
            } was turned away: ${refusal.message}`
          : `The default policy did NOT hold: ${
            refusal.refused ? "a later pod was reached" : refusal.message
          }`,
      );
      console.log(
        sharedOk
          ? `With --address-sharing=shared every kubelet probe reached its own pod (${shared.fromKubelet.length}/${shared.fromKubelet.length}), through the network its mark selects.`
          : "With --address-sharing=shared some kubelet probes did NOT reach their pod: see the table above.",
      );
      console.log(`The exposure of sharing: ${SHARING_EXPOSURE}.`);
      console.log(
        otherOk
          ? `No process outside the kubelet cgroup reached any pod (0/${
            exclusive.fromOther.length + shared.fromOther.length
          }): its connects are not tagged.`
          : "A process outside the kubelet cgroup reached a pod: that must never happen.",
      );
    }
    return ok ? 0 : 1;
  } finally {
    await cleanup();
    say("Cleaned up: namespaces, cgroups, pins, processes and files are gone");
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
}
