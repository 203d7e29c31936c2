/**
 * The namespaces and links of the netns-simulated cluster (netns_cluster.ts):
 * a hub namespace holding a bridge, a namespace per node plugged into it
 * with its pod addresses, the node's faults made in the kernel (a bridge
 * filter for MTU black holes, an input drop for an unreachable node, a rate
 * limit for slow egress), and a link between two hubs' bridges (broken
 * isolation). Nothing here touches the machine's own namespace.
 */
import { waitFor } from "../helpers/wait.ts";

export interface SimNode {
  name: string;
  /** Drop everything arriving at the node: its paths time out. */
  unreachable?: boolean;
  /** Its pod waits with this reason (e.g. ImagePullBackOff) and runs nothing. */
  waitingReason?: string;
  /** Its pod stays Pending, unschedulable. */
  cordoned?: boolean;
  /** The first bandwidth test against it finds its iperf3 server busy. */
  busyOnce?: boolean;
  /** Egress rate limit, Mbit/s. */
  slowMbit?: number;
  /**
   * The bridge drops its frames (either way) longer than this many bytes, silently, while the
   * pod's eth0 keeps MTU 1500: no ICMP comes back (an MTU black hole).
   */
  blackHoleMtu?: number;
  /** With blackHoleMtu: only TCP frames to or from this port are dropped (other traffic passes). */
  blackHolePort?: number;
  /** With blackHolePort: the protocol whose frames are dropped (default tcp). */
  blackHoleProto?: "tcp" | "udp";
  /** Its agnhost answers /hostname this much later (a slow request round trip). */
  answerDelayMs?: number;
  /** Its agnhost answers /hostname without end (a hostile pod). */
  endlessHostname?: boolean;
}

export async function run(
  args: string[],
  check = true,
): Promise<{ code: number; out: string; err: string }> {
  const out = await new Deno.Command(args[0], {
    args: args.slice(1),
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const result = {
    code: out.code,
    out: new TextDecoder().decode(out.stdout),
    err: new TextDecoder().decode(out.stderr),
  };
  if (check && out.code !== 0) {
    throw new Error(`Command failed (${out.code}): ${args.join(" ")}: ${result.err.trim()}`);
  }
  return result;
}

/** Makes the namespace `netns` and plugs its eth0 into the bridge of `hub` as port `v<i>`. */
async function plugIntoHub(hub: string, i: number, netns: string): Promise<void> {
  await run(["ip", "netns", "add", netns]);
  await run([
    "ip",
    "-n",
    hub,
    "link",
    "add",
    `v${i}`,
    "type",
    "veth",
    "peer",
    "name",
    "eth0",
    "netns",
    netns,
  ]);
  await run(["ip", "-n", hub, "link", "set", `v${i}`, "master", "br0", "up"]);
}

/** Makes the hub namespace `hub` with its bridge br0 up. */
export async function addHub(hub: string): Promise<void> {
  await run(["ip", "netns", "add", hub]);
  await run(["ip", "-n", hub, "link", "add", "br0", "type", "bridge"]);
  await run(["ip", "-n", hub, "link", "set", "br0", "up"]);
}

/** Makes the namespace `netns` on the bridge of `hub` with its pod addresses on eth0, no faults. */
export async function addPlainNode(
  hub: string,
  i: number,
  netns: string,
  address: { ipv4: string; ipv6: string },
): Promise<void> {
  await plugIntoHub(hub, i, netns);
  await run(["ip", "-n", netns, "link", "set", "lo", "up"]);
  await run(["ip", "-n", netns, "link", "set", "eth0", "up"]);
  await run(["ip", "-n", netns, "addr", "add", `${address.ipv4}/24`, "dev", "eth0"]);
  await run(["ip", "-n", netns, "addr", "add", `${address.ipv6}/64`, "dev", "eth0", "nodad"]);
}

/**
 * Makes node `i`'s namespace `netns` on the bridge of `hub`, with its pod
 * addresses on eth0 (MTU 1500) and the faults `spec` asks for.
 */
export async function addNode(
  hub: string,
  i: number,
  netns: string,
  address: { ipv4: string; ipv6: string },
  spec: SimNode,
): Promise<void> {
  await addPlainNode(hub, i, netns, address);
  if (spec.blackHoleMtu) {
    // A bridge filter, not a lower MTU on the veth: GSO packets bypass a veth's MTU check.
    const port = spec.blackHolePort;
    const proto = spec.blackHoleProto ?? "tcp";
    const matches = port ? [`${proto} dport ${port} `, `${proto} sport ${port} `] : [""];
    const rules = matches.flatMap((match) =>
      ["iifname", "oifname"].map((dir) =>
        `add rule bridge sim${i} big ${dir} "v${i}" ${match}` +
        `meta length > ${spec.blackHoleMtu} drop`
      )
    );
    await run([
      "ip",
      "netns",
      "exec",
      hub,
      "nft",
      `add table bridge sim${i}; ` +
      `add chain bridge sim${i} big { type filter hook forward priority 0; policy accept; }; ` +
      rules.join("; "),
    ]);
  }
  if (spec.unreachable) {
    await run([
      "ip",
      "netns",
      "exec",
      netns,
      "nft",
      "add table inet sim; add chain inet sim in { type filter hook input priority 0; policy drop; }; " +
      "add rule inet sim in iif lo accept",
    ]);
  }
  if (spec.slowMbit) {
    await run([
      "ip",
      "netns",
      "exec",
      netns,
      "tc",
      "qdisc",
      "add",
      "dev",
      "eth0",
      "root",
      "tbf",
      "rate",
      `${spec.slowMbit}mbit`,
      "burst",
      "32kbit",
      "latency",
      "100ms",
    ]);
  }
}

/**
 * Links the bridges of hubs `a` and `b` with a veth `<name>a`/`<name>b` and waits until both
 * ports forward. Returns the undo.
 */
export async function linkHubs(a: string, b: string, name: string): Promise<() => Promise<void>> {
  await run([
    "ip",
    "-n",
    a,
    "link",
    "add",
    `${name}a`,
    "type",
    "veth",
    "peer",
    "name",
    `${name}b`,
    "netns",
    b,
  ]);
  await run(["ip", "-n", a, "link", "set", `${name}a`, "master", "br0", "up"]);
  await run(["ip", "-n", b, "link", "set", `${name}b`, "master", "br0", "up"]);
  // A new bridge port forwards only once its carrier is up (about a second here).
  for (const [hub, dev] of [[a, `${name}a`], [b, `${name}b`]]) {
    await waitFor(async () => {
      const { out } = await run(["bridge", "-n", hub, "link", "show", "dev", dev], false);
      return /state forwarding/.test(out) && !/NO-CARRIER/.test(out);
    }, { timeout: 10_000, message: `bridge port ${dev} forwarding` });
  }
  return () => run(["ip", "-n", a, "link", "del", `${name}a`], false).then(() => {});
}
