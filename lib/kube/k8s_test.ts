import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL as toFileUrl } from "node:url";
import { CLIENT_NODE_PARTS, loadClientNode } from "./k8s.ts";

const MODULES = new URL("./client_node.ts", import.meta.url);

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "lace-k8s-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A module that exports `names`, each as a function that names itself. */
function fakeBundle(names: readonly string[]): string {
  return names.map((n) => `export function ${n}() { return "${n} from the fake bundle"; }`)
    .join("\n");
}

Deno.test("loadClientNode() takes every part from the bundle when it has them all", async () => {
  await withDir(async (dir) => {
    const bundle = join(dir, "bundle.js");
    await Deno.writeTextFile(bundle, fakeBundle(CLIENT_NODE_PARTS));
    const loaded = await loadClientNode(toFileUrl(bundle), MODULES);
    assert.equal(loaded.from, "bundle");
    assert.equal(loaded.bundleProblem, undefined);
    const kubeConfig = loaded.parts.KubeConfig as unknown as () => string;
    assert.equal(kubeConfig(), "KubeConfig from the fake bundle");
  });
});

Deno.test("loadClientNode() loads client-node's modules when no bundle is built", async () => {
  await withDir(async (dir) => {
    const loaded = await loadClientNode(toFileUrl(join(dir, "absent.js")), MODULES);
    assert.equal(loaded.from, "modules");
    assert.match(loaded.bundleProblem ?? "", /absent\.js is not built \(deno task bundle/);
    const kc = new loaded.parts.KubeConfig();
    assert.equal(typeof kc.loadFromString, "function");
  });
});

Deno.test("loadClientNode() names the parts a stale bundle lacks and uses the modules", async () => {
  await withDir(async (dir) => {
    const bundle = join(dir, "bundle.js");
    await Deno.writeTextFile(
      bundle,
      fakeBundle(CLIENT_NODE_PARTS.filter((n) => n !== "Exec" && n !== "VersionApi")),
    );
    const loaded = await loadClientNode(toFileUrl(bundle), MODULES);
    assert.equal(loaded.from, "modules");
    assert.match(loaded.bundleProblem ?? "", /lacks Exec, VersionApi .*deno task bundle/);
  });
});

Deno.test("loadClientNode() says why a bundle that fails to load was not used", async () => {
  await withDir(async (dir) => {
    const bundle = join(dir, "bundle.js");
    await Deno.writeTextFile(bundle, `throw new Error("broken on purpose");`);
    const loaded = await loadClientNode(toFileUrl(bundle), MODULES);
    assert.equal(loaded.from, "modules");
    assert.match(loaded.bundleProblem ?? "", /cannot be loaded: broken on purpose/);
  });
});

Deno.test("loadClientNode() throws naming both failures when neither can be loaded", async () => {
  await withDir(async (dir) => {
    await assert.rejects(
      loadClientNode(toFileUrl(join(dir, "absent.js")), toFileUrl(join(dir, "gone.ts"))),
      /absent\.js is not built .*client-node's modules failed too/,
    );
  });
});
