/**
 * Synthetic pods for the benchmark: each on its own address (no conflicts),
 * in Lace network `net<id>`, with a fixed set of probes, so the number of
 * targets per pod is known in advance and can be checked against the map.
 */
import { join } from "node:path";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import type { Pod } from "../lib/pods/pod.ts";
import { canonicalAddress } from "../lib/net/address.ts";
import type { ProbeKey } from "../lib/probe/key.ts";

export const NODE_NAME = "bench-node";

export interface BenchPodOptions {
  /** Also give the pod an IPv6 address (each probe then has two targets). */
  dualStack?: boolean;
  /** Number of probes: liveness httpGet 8080, readiness tcpSocket 9000, startup tcpSocket 9001. */
  probes?: 1 | 2 | 3;
  networkId?: number;
}

const PROBE_PORTS = [8080, 9000, 9001];

/** The addresses of pod number `i` (0 ≤ i < 2^24). */
export function podAddresses(i: number, dualStack: boolean): string[] {
  const v4 = `10.${100 + ((i >> 16) & 127)}.${(i >> 8) & 255}.${i & 255}`;
  return dualStack ? [v4, `fd00:be::${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}`] : [v4];
}

/** Pod number `i`, as a source or the API server would hand it over (with status). */
export function benchPod(
  i: number,
  opts: BenchPodOptions = {},
): Pod & { apiVersion: string; kind: string } {
  const probes = opts.probes ?? 3;
  const networkId = opts.networkId ?? 1;
  const ips = podAddresses(i, opts.dualStack ?? false);
  const container: Record<string, unknown> = {
    name: "app",
    image: "registry.example/app:1",
    ports: [{ name: "http", containerPort: 8080 }],
    livenessProbe: { httpGet: { path: "/healthz", port: "http" } },
  };
  if (probes >= 2) container.readinessProbe = { tcpSocket: { port: 9000 } };
  if (probes >= 3) container.startupProbe = { tcpSocket: { port: 9001 } };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `bench-${i}`,
      namespace: "bench",
      uid: `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`,
      creationTimestamp: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
      annotations: {
        "lace.io/network": `net${networkId}`,
        "lace.io/network-id": String(networkId),
      },
    },
    spec: {
      nodeName: NODE_NAME,
      containers: [container as unknown as Pod["spec"]["containers"][0]],
    },
    status: { phase: "Running", podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) },
  };
}

/** The map keys pod number `i` must get: every address × every probe port. */
export function benchPodKeys(i: number, opts: BenchPodOptions = {}): ProbeKey[] {
  const ports = PROBE_PORTS.slice(0, opts.probes ?? 3);
  return podAddresses(i, opts.dualStack ?? false).flatMap((ip) => {
    const { family, address } = canonicalAddress(ip);
    return ports.map((port) => ({ family, address, port }));
  });
}

/**
 * A temporary pods directory holding pods 0 … `count` - 1 as JSON files (the directory source's
 * input), removed by `cleanups`.
 */
export async function benchPodsDir(
  cleanups: CleanupStack,
  count = 0,
  opts: BenchPodOptions = {},
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "lace-bench-pods-" });
  cleanups.push(() => Deno.remove(dir, { recursive: true }));
  for (let i = 0; i < count; i++) {
    Deno.writeTextFileSync(join(dir, `pod-${i}.json`), JSON.stringify(benchPod(i, opts)));
  }
  return dir;
}
