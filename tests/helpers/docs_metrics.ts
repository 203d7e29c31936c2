/** The metrics the pages may name: those the agent and `lace netcheck` register, with labels. */
import { join } from "node:path";
import { Metrics } from "../../lib/agent/metrics.ts";
import { NetcheckMetrics } from "../../lib/netcheck/report/metrics.ts";
import { REPO } from "./docs_pages.ts";

/** The metrics the agent and `lace netcheck` register, with their label names. */
function registeredMetrics(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const registries = [new Metrics(() => undefined).registry, new NetcheckMetrics().registry];
  for (const registry of registries) {
    for (const metric of registry.getMetricsAsArray()) {
      const m = metric as unknown as { name: string; labelNames?: string[] };
      out.set(m.name, new Set(m.labelNames ?? []));
    }
  }
  return out;
}

export const METRICS = registeredMetrics();

/** The BPF program's source: its section and symbol names (`lace_connect4`) are no metrics. */
export const BPF_SOURCE = Deno.readTextFileSync(join(REPO, "bpf/lace.bpf.c")) +
  Deno.readTextFileSync(join(REPO, "lib/datapath/pins.ts"));

/** A metric span's problem (`lace_x`, `lace_x{label="v"}`, `lace_x 1`), or undefined. */
export function metricProblem(
  span: string,
  metrics: Map<string, Set<string>>,
): string | undefined {
  const m = /^(lace_[a-z0-9_]+)(\{([^}]*)\})?/.exec(span);
  if (!m) return undefined;
  const base = m[1].replace(/_(bucket|sum|count)$/, "");
  const name = metrics.has(m[1]) ? m[1] : base;
  const labels = metrics.get(name);
  if (!labels) return `${m[1]} is no metric the agent or lace netcheck registers`;
  const named = (m[3] ?? "").split(",").map((l) => l.split("=")[0].trim()).filter(Boolean);
  const unknown = named.filter((l) => !labels.has(l));
  return unknown.length ? `${name} has no label ${unknown.join(", ")}` : undefined;
}
