/**
 * The netcheck runner pod's metrics as the Deployment steps read them: `kubectl port-forward` (the
 * API server, then the kubelet, into the pod's own loopback) on the test's loopback only.
 */
import assert from "node:assert/strict";
import { ManagedProcess } from "../kube/_process.ts";
import { kubeToolPath } from "../kube/tools.ts";
import { waitFor } from "../helpers/wait.ts";
import type { Node } from "./node.ts";
import { RELEASE_NAMESPACE } from "./netcheck_runner.ts";

const METRICS_PORT = 9469;

/** One Prometheus sample line's value by `name{labels}` as exposed, label order included. */
export function parseSamples(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

let forwards = 0;

/** `kubectl port-forward` to the runner pod's metrics port, on a free port of the test's loopback. */
async function forwardMetrics(
  first: Node,
  pod: string,
): Promise<ManagedProcess & { port: number; log: string }> {
  const kubectl = await kubeToolPath("kubectl");
  const log = `${first.dir}/port-forward-${pod}-${++forwards}.log`;
  const forward = await ManagedProcess.spawn(kubectl, [
    `--kubeconfig=${first.controlPlane.kubeconfigPath}`,
    "--namespace",
    RELEASE_NAMESPACE,
    "port-forward",
    "--address=127.0.0.1",
    `pod/${pod}`,
    `:${METRICS_PORT}`,
  ], log);
  try {
    const port = await waitFor(async () => {
      const text = await Deno.readTextFile(log);
      return Number(text.match(/Forwarding from 127\.0\.0\.1:(\d+)/)?.[1] ?? 0);
    }, { timeout: 20_000, interval: 100, message: `kubectl port-forward to ${pod}` });
    return Object.assign(forward, { port, log });
  } catch (error) {
    await forward.stop(1000);
    throw error;
  }
}

/** The runner pod's metrics, read through a port-forward opened for the read. */
export async function scrape(first: Node, pod: string): Promise<Map<string, number>> {
  const forward = await forwardMetrics(first, pod);
  try {
    const response = await fetch(`http://127.0.0.1:${forward.port}/metrics`).catch(async (e) => {
      const log = await Deno.readTextFile(forward.log);
      throw new Error(`${e.message}: ${e.cause ?? ""}\n--- kubectl port-forward ---\n${log}`);
    });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    return parseSamples(text);
  } finally {
    await forward.stop(1000);
  }
}
