/**
 * The demo's probe results: every probe of every pod at both addresses sent through a prober (the
 * kubelet's cgroup or another), one row each, and the rows as the table the demo prints.
 */
import type { Prober, ProbeResponse } from "../prober/mod.ts";
import { safeTable } from "../text/safe.ts";
import { POD_IPV4, POD_IPV6 } from "./netns.ts";
import type { DemoPod } from "./pods.ts";

export interface DemoRow {
  /** The agent's --address-sharing when the row was probed. */
  policy: "exclusive" | "shared";
  pod: string;
  network: string;
  address: string;
  probe: string;
  from: "kubelet" | "other";
  result: string;
  answeredBy?: string;
  mark?: string;
}

export async function probeAll(
  prober: Prober,
  pods: DemoPod[],
  from: "kubelet" | "other",
  policy: DemoRow["policy"],
) {
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
          policy,
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

export function demoTable(rows: DemoRow[]): string {
  const header = [
    "POLICY",
    "FROM",
    "POD",
    "NETWORK",
    "ADDRESS",
    "PROBE",
    "RESULT",
    "ANSWERED BY",
    "MARK",
  ];
  const cells = rows.map((r) => [
    r.policy,
    r.from,
    r.pod,
    r.network,
    r.address,
    r.probe,
    r.result,
    r.answeredBy ?? "-",
    r.mark ?? "-",
  ]);
  return safeTable(header, cells);
}
