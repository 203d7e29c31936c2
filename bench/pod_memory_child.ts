/**
 * One run of figure 9 (pod memory), in a process of its own so that its heap
 * holds only what it measures: the API source (the agent's, with its
 * options) feeding a PodCache lists the pods of one node from the test API
 * server; the live heap after a full collection, before and after, divided
 * by the number of pods is the heap each pod costs (after one list thrown
 * away, so the client's own warm-up is not counted). Prints one JSON line.
 *
 *   deno run -A --v8-flags=… bench/pod_memory_child.ts KUBECONFIG NODE COUNT
 */
import { ApiPodSource } from "../lib/pods/api_source.ts";
import { PodCache } from "../lib/pods/cache.ts";
import { loadKubeConfig } from "../lib/kube/client.ts";
import { defaultConfig } from "../lib/config.ts";

const [kubeconfig, node, countText] = Deno.args;
const count = Number(countText);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("pod_memory_child.ts needs --expose-gc (Lace's V8 flags)");
const live = () => {
  gc();
  gc();
  return Deno.memoryUsage().heapUsed;
};
const vm = (field: string) =>
  Number(
    new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(
      Deno.readTextFileSync("/proc/self/status"),
    )![1],
  ) *
  1024;

const config = defaultConfig();
const kubeConfig = loadKubeConfig({ kubeconfig });

/** Lists the node's pods into a new cache, as the agent does; resolves when listed. */
async function list(): Promise<{ source: ApiPodSource; cache: PodCache }> {
  const cache = new PodCache({ nodeName: node });
  cache.register("api");
  const source = new ApiPodSource({
    kubeConfig,
    nodeName: node,
    annotations: [config.networkAnnotation, config.networkIdAnnotation],
  });
  await source.start(cache);
  while (source.lists < 1) await new Promise((r) => setTimeout(r, 20));
  return { source, cache };
}

// One list first, thrown away: the client's code and connection cost the same whatever the
// pods, and are not what is measured.
const warm = await list();
await warm.source.stop();
const before = live();
const rssBefore = vm("VmRSS");
const t0 = performance.now();
const { source, cache } = await list();
const listMs = performance.now() - t0;
const known = cache.uids().length;
const after = live();
console.log(JSON.stringify({
  count,
  known,
  heapPerPodBytes: (after - before) / count,
  listMs,
  rssBeforeBytes: rssBefore,
  peakRssBytes: vm("VmHWM"),
}));
await source.stop();
Deno.exit(0);
