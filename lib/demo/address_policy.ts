/**
 * The demo's look at the address policy: every simulated network gives its pod
 * the same address, so under the default (one network per address on a node)
 * the oldest pod holds it and a CNI ADD bringing it for another network is
 * turned away; under the opt-in `--address-sharing=shared` each network's pod
 * is probed at it, with the exposure that sharing brings.
 */
import { POD_IPV4, POD_IPV6 } from "./netns.ts";
import { selfPluginCommand } from "../os/self_command.ts";

/** What the opt-in exposes, as the demo says it (and docs/threat-model.md). */
export const SHARING_EXPOSURE =
  "under --address-sharing=shared a pod at a shared address can answer the kubelet's probe " +
  "with a redirect to another network's pod at the same address (any port), and the kubelet " +
  "follows it into that network with policy skipped: use it only for networks that trust each " +
  "other";

/** The outcome of the demo's CNI ADD of a pod of another network at the held address. */
export interface RefusalResult {
  refused: boolean;
  /** The plugin's error message (CNI error 101) or what happened instead. */
  message: string;
}

/**
 * Runs Lace's CNI plugin (this program with CNI_COMMAND=ADD) against the
 * agent's socket for a new pod of network `networkId` that got the held
 * addresses from its address manager, as a runtime would after the network
 * plugin before Lace in the chain.
 */
export async function addAtHeldAddress(socket: string, networkId: number): Promise<RefusalResult> {
  const cmd = selfPluginCommand();
  const conf = {
    cniVersion: "1.0.0",
    name: `lace-net${networkId}`,
    type: "lace",
    socket,
    network: `net${networkId}`,
    networkId,
    prevResult: {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", sandbox: "/var/run/netns/demo-late" }],
      ips: [
        { address: `${POD_IPV4}/24`, interface: 0 },
        { address: `${POD_IPV6}/64`, interface: 0 },
      ],
    },
  };
  const child = new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    env: {
      CNI_COMMAND: "ADD",
      CNI_CONTAINERID: "demo-late-sandbox",
      CNI_NETNS: "/var/run/netns/demo-late",
      CNI_IFNAME: "eth0",
      CNI_PATH: "/opt/cni/bin",
      CNI_ARGS:
        `K8S_POD_NAMESPACE=demo;K8S_POD_NAME=web-late;K8S_POD_UID=00000000-0000-4000-8000-00000000ffff`,
    },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(JSON.stringify(conf)));
  await writer.close();
  const out = await child.output();
  const stdout = new TextDecoder().decode(out.stdout);
  let reply: { code?: number; msg?: string } = {};
  try {
    reply = JSON.parse(stdout);
  } catch {
    // Not JSON: reported below with what the plugin printed.
  }
  if (out.code !== 0 && reply.code === 101) return { refused: true, message: reply.msg ?? "" };
  return {
    refused: false,
    message: `the plugin exited ${out.code}: ${
      stdout.trim() || new TextDecoder().decode(out.stderr).trim()
    }`,
  };
}
