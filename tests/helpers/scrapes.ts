/**
 * Real scrapes for the monitoring tests: the /metrics of an agent process running on the
 * simulated node (root), and of `lace netcheck --watch`'s metrics server after a round on the
 * in-memory cluster, with series of every kind in both (histograms observed, labelled counters,
 * per-network and failing-path series).
 */
import { serveMetrics } from "../../lib/netcheck/report/metrics_server.ts";
import { NetcheckMetrics } from "../../lib/netcheck/report/metrics.ts";
import { runChecks } from "../../lib/netcheck/pipeline/run.ts";
import { fakeNodes, MemoryCluster } from "../netcheck/memory_cluster.ts";
import { options, quiet } from "../netcheck/run_fixture.ts";
import { AgentWorld, POD_IPV4 } from "./agent_process.ts";
import { POD_B, startReadyAgent } from "./agent_checks.ts";
import { POD_A } from "./agent_process.ts";

/** An agent's scrape, and the wall clock (seconds) just before it was started and after. */
export interface AgentScrape {
  text: string;
  startedAfter: number;
  scrapedAt: number;
}

/**
 * Starts an agent with two pods of two networks, has the kubelet probe one, and scrapes the
 * node listener's /metrics, the address Prometheus scrapes.
 */
export async function scrapeAgent(): Promise<AgentScrape> {
  await using w = await AgentWorld.create();
  const startedAfter = Date.now() / 1000;
  const agent = await startReadyAgent(w, [POD_A, POD_B]);
  await w.probe(POD_IPV4, 9000);
  const { status, body } = await agent.get("/metrics");
  if (status !== 200) throw new Error(`/metrics answered ${status}: ${body}`);
  return { text: body, startedAfter, scrapedAt: Date.now() / 1000 };
}

/**
 * One `--watch` round on the in-memory cluster (two networks, one leaking into the other, a node
 * nothing reaches, bandwidth measured), then its metrics server's /metrics over HTTP.
 */
export async function scrapeNetcheck(): Promise<string> {
  const nodes = fakeNodes(3);
  nodes[2].unreachable = true;
  const cluster = new MemoryCluster(nodes, { distinctAddresses: true, leaks: [["n0", "n1"]] });
  for (const ns of ["tenant-a", "tenant-b"]) await cluster.ensureNamespace(ns);
  const metrics = new NetcheckMetrics(5);
  const controller = new AbortController();
  await runChecks(
    options({ watch: true, intervalMs: 60_000, networks: ["tenant-a", "tenant-b"] }),
    {
      cluster,
      progress: quiet,
      sinks: [],
      signal: controller.signal,
      runId: "scrape1",
      pollMs: 1,
      retryDelayMs: 1,
      metrics,
      onRound: () => controller.abort(),
    },
  );
  const server = new AbortController();
  const served = serveMetrics(metrics, "127.0.0.1:0", server.signal);
  try {
    const res = await fetch(`http://127.0.0.1:${served.port}/metrics`);
    return await res.text();
  } finally {
    server.abort();
    await served.finished;
  }
}

/**
 * The metric names of an exposition: every sample's name (histograms' _bucket, _sum and _count
 * included) and every family its TYPE lines declare.
 */
export function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) /.exec(line);
    if (type) names.add(type[1]);
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line);
    if (sample) names.add(sample[1]);
  }
  return names;
}
