import assert from "node:assert/strict";
import { PURGE_MODULE } from "./plugin.ts";

/** Modules reachable from `root`, following dynamic imports only when `dynamic`. */
async function moduleGraph(root: string, dynamic: boolean): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(root, import.meta.url).pathname],
    stdout: "piped",
  }).output();
  assert.equal(out.code, 0, "deno info");
  const graph: {
    roots: string[];
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
    }[];
  } = JSON.parse(new TextDecoder().decode(out.stdout));
  const bySpecifier = new Map(graph.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const visit = (specifier: string) => {
    if (seen.has(specifier)) return;
    seen.add(specifier);
    for (const d of bySpecifier.get(specifier)?.dependencies ?? []) {
      if (d.code && (dynamic || !d.isDynamic)) visit(d.code.specifier);
    }
  };
  visit(graph.roots[0]);
  return [...seen];
}

Deno.test("the CNI plugin's path (main.ts's static imports and the plugin) loads no Kubernetes client", async () => {
  // client-node costs about 0.5 s per plugin call; this is what keeps VERSION and ADD quick.
  const reached = [
    ...(await moduleGraph("../../main.ts", false)),
    ...(await moduleGraph("./plugin.ts", true)),
  ];
  assert.ok(reached.some((s) => s.endsWith("/lib/cni/plugin.ts")), "the graph was read");
  assert.deepEqual(reached.filter((s) => s.includes("client-node")), []);
});

Deno.test("the plugin itself reaches only the CNI folder and the small shared helpers", async () => {
  // Config, rules and the datapath stay off this path: each plugin call loads it anew.
  const reached = (await moduleGraph("./plugin.ts", true)).map((s) => s.replace(/^.*\/lib\//, ""));
  assert.deepEqual(reached.filter((s) => !s.startsWith("cni/")).sort(), [
    "os/write_text.ts",
    "probe/network_name.ts",
    "text/json.ts",
    "time/duration.ts",
  ]);
});

Deno.test("an ADD the agent does not answer loads the purge by its path, and it loads no Kubernetes client", async () => {
  const purge = new URL(PURGE_MODULE, new URL("./plugin.ts", import.meta.url));
  assert.ok(Deno.statSync(purge).isFile, `${purge} is not there`);
  const reached = await moduleGraph(purge.pathname, true);
  assert.ok(reached.some((s) => s.endsWith("/lib/libbpf/map.ts")), "the graph was read");
  assert.deepEqual(reached.filter((s) => s.includes("client-node")), []);
});
