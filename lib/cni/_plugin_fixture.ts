/**
 * What the CNI plugin's tests share: a chained prevResult, the plugin's
 * environment and stdin, a fake agent, and a CNI server for it on a socket in
 * a fresh directory (closed and removed afterwards).
 */
import type { Attachment } from "./protocol.ts";
import { type CniHandler, type CniServer, startCniServer } from "./server.ts";

/** The previous plugin's result the configuration chains after. */
export const prevResult = {
  cniVersion: "1.0.0",
  interfaces: [{ name: "veth1" }, { name: "eth0", sandbox: "/var/run/netns/p" }],
  ips: [{ address: "10.70.0.5/16", gateway: "10.70.0.1", interface: 1 }],
  routes: [{ dst: "0.0.0.0/0" }],
  dns: {},
};

/** The runtime's environment for `command` on the pod ns/web (uid u1), with `extra` over it. */
export function env(command: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    CNI_COMMAND: command,
    CNI_CONTAINERID: "c0ffee",
    CNI_NETNS: "/var/run/netns/p",
    CNI_IFNAME: "eth0",
    CNI_PATH: "/opt/cni/bin",
    CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web;K8S_POD_UID=u1",
    ...extra,
  };
}

/**
 * The network configuration for the agent on `socket` (network blue, id 7), with `extra` over it.
 * Its pin path is none, so an ADD the agent does not answer never touches a map of this machine.
 */
export function stdin(socket: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    cniVersion: "1.0.0",
    name: "blue",
    type: "lace",
    network: "blue",
    networkId: 7,
    socket,
    timeout: "200ms",
    pinPath: "/nonexistent/lace-pins",
    prevResult,
    ...extra,
  });
}

/** An agent that records attachments added and removed, waits on `delay`, fails with `error`. */
export class FakeAgent implements CniHandler {
  added: Attachment[] = [];
  removed: string[] = [];
  problems: string[] = [];
  delay?: Promise<void>;
  error?: Error;
  async registerAttachment(a: Attachment): Promise<void> {
    if (this.delay) await this.delay;
    if (this.error) throw this.error;
    this.added.push(a);
  }
  removeAttachment(uid: string): void {
    this.removed.push(uid);
  }
  check(_a: Attachment): Promise<{ problems: string[] }> {
    if (this.error) return Promise.reject(this.error);
    return Promise.resolve({ problems: this.problems });
  }
}

/** Runs `fn` with the socket of a CNI server for `agent`; the server and its directory go afterwards. */
export async function withAgent(
  fn: (socket: string, agent: FakeAgent) => Promise<void>,
  agent = new FakeAgent(),
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "lace-cni-" });
  let server: CniServer | undefined;
  try {
    server = await startCniServer(`${dir}/cni.sock`, agent);
    await fn(`${dir}/cni.sock`, agent);
  } finally {
    await server?.close();
    await Deno.remove(dir, { recursive: true });
  }
}
