import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL as toFileUrl } from "node:url";
import { CLIENT_NODE_PARTS, loadClientNode } from "../lib/kube/k8s.ts";
import { buildBundle, bundleHeader, parseBundleArgs } from "./bundle.ts";

Deno.test("parseBundleArgs() reads --output and --force and names an unknown argument", () => {
  assert.deepEqual(parseBundleArgs([]), {
    output: "lib/kube/client_node.bundle.js",
    force: false,
  });
  assert.deepEqual(parseBundleArgs(["--output=x.js", "--force"]), { output: "x.js", force: true });
  assert.throws(() => parseBundleArgs(["--out", "x"]), /Unknown argument "--out"/);
  assert.throws(() => parseBundleArgs(["--output"]), /Missing value for --output/);
});

Deno.test("bundleHeader() changes with the entry, the lockfile and the Deno version", () => {
  const base = bundleHeader("entry", "lock", "2.9.6");
  assert.equal(base, bundleHeader("entry", "lock", "2.9.6"));
  assert.notEqual(base, bundleHeader("entry2", "lock", "2.9.6"));
  assert.notEqual(base, bundleHeader("entry", "lock2", "2.9.6"));
  assert.notEqual(base, bundleHeader("entry", "lock", "2.9.7"));
});

Deno.test({
  name: "the bundle built from client_node.ts has every part, of the same kind as client-node's",
  // deno bundle fetches esbuild from npm on its first run.
  sanitizeResources: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "lace-bundle-" });
    try {
      const output = join(dir, "bundle.js");
      assert.equal(await buildBundle({ output, force: false }), true);
      assert.equal(await buildBundle({ output, force: false }), false, "rebuilt an unchanged one");
      const bundled = await loadClientNode(toFileUrl(output));
      assert.equal(bundled.from, "bundle", bundled.bundleProblem ?? "");
      const modules = await loadClientNode(toFileUrl(join(dir, "absent.js")));
      for (const name of CLIENT_NODE_PARTS) {
        assert.equal(typeof bundled.parts[name], typeof modules.parts[name], name);
      }
      // The bundle's client works: a kubeconfig read, an API client made from it.
      const kc = new bundled.parts.KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "c", server: "https://127.0.0.1:6443", skipTLSVerify: true }],
        users: [{ name: "u", token: "t" }],
        contexts: [{ name: "x", cluster: "c", user: "u" }],
        currentContext: "x",
      });
      assert.equal(kc.getCurrentCluster()?.server, "https://127.0.0.1:6443");
      const api = kc.makeApiClient(bundled.parts.CoreV1Api);
      assert.equal(typeof api.listNamespacedPod, "function");
      // Much smaller than the library it comes from (~25 MB of JavaScript).
      assert.ok((await Deno.stat(output)).size < 6 * 1024 * 1024);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
