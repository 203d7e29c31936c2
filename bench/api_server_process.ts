/**
 * The test API server in its own process, so that its work (and the
 * benchmark's synchronous polling) never share an event loop with what is
 * measured. Speaks JSON lines:
 *
 *   ready:    {"ready": true, "kubeconfig": "/tmp/lace-kubeconfig-….yaml"}
 *   request:  {"put": [<Pod>, …]}
 *   response: {"count": 1}
 *
 * Run it with `deno run -A bench/api_server_process.ts`; it exits when stdin closes.
 */
import { lines } from "../lib/os/process.ts";
import { type KubeObject, TestApiServer } from "../tests/api_server/mod.ts";

async function main(): Promise<void> {
  const server = await TestApiServer.start();
  try {
    const kubeconfig = await server.writeKubeconfig();
    const out = (o: unknown) =>
      Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify(o) + "\n"));
    out({ ready: true, kubeconfig, url: server.url });
    for await (const line of lines(Deno.stdin.readable)) {
      if (!line.trim()) continue;
      try {
        const { put } = JSON.parse(line) as { put: KubeObject[] };
        for (const object of put) server.put(object);
        out({ count: put.length });
      } catch (e) {
        out({ error: String(e) });
      }
    }
  } finally {
    await server.close();
  }
}

if (import.meta.main) await main();
