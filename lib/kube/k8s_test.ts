import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL as toFileUrl } from "node:url";
import { createHash } from "node:crypto";
import { type BundleTrust, CLIENT_NODE_PARTS, loadClientNode } from "./k8s.ts";
import { bundleInputs, formatBundleRecord, sha256Hex } from "./bundle_record.ts";

const MODULES = new URL("./client_node.ts", import.meta.url);

/**
 * A record vouching for `bundleText` as built from an entry and lockfile written in `dir`, and the
 * trust that checks against them; `tamper` changes the record before it is written.
 */
async function trustFor(
  dir: string,
  bundleText: string,
  tamper: (record: Record<string, string>) => void = () => {},
): Promise<BundleTrust> {
  const entry = join(dir, "entry.ts");
  const lockfile = join(dir, "deno.lock");
  await Deno.writeTextFile(entry, "export {};\n");
  await Deno.writeTextFile(lockfile, '{ "version": "5" }\n');
  const record = {
    ...bundleInputs("export {};\n", '{ "version": "5" }\n', Deno.version.deno),
    bundle: sha256Hex(bundleText),
  };
  tamper(record);
  const path = join(dir, "record.json");
  await Deno.writeTextFile(path, formatBundleRecord(record));
  return {
    record: toFileUrl(path),
    deno: Deno.version.deno,
    entry: toFileUrl(entry),
    lockfile: toFileUrl(lockfile),
  };
}

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
    const trust = await trustFor(dir, fakeBundle(CLIENT_NODE_PARTS));
    const loaded = await loadClientNode(toFileUrl(bundle), MODULES, trust);
    assert.equal(loaded.from, "bundle");
    assert.equal(loaded.bundleProblem, undefined);
    const kubeConfig = loaded.parts.KubeConfig as unknown as () => string;
    assert.equal(kubeConfig(), "KubeConfig from the fake bundle");
  });
});

Deno.test("loadClientNode() loads client-node's modules when no bundle is built", async () => {
  await withDir(async (dir) => {
    const trust = await trustFor(dir, "");
    const loaded = await loadClientNode(toFileUrl(join(dir, "absent.js")), MODULES, trust);
    assert.equal(loaded.from, "modules");
    assert.match(loaded.bundleProblem ?? "", /absent\.js is not built \(deno task bundle/);
    assert.equal(loaded.bundleRefused, undefined, "an absent bundle is not a refusal");
    const kc = new loaded.parts.KubeConfig();
    assert.equal(typeof kc.loadFromString, "function");
  });
});

Deno.test("loadClientNode() names the parts a stale bundle lacks and uses the modules", async () => {
  await withDir(async (dir) => {
    const bundle = join(dir, "bundle.js");
    const text = fakeBundle(CLIENT_NODE_PARTS.filter((n) => n !== "Exec" && n !== "VersionApi"));
    await Deno.writeTextFile(bundle, text);
    const loaded = await loadClientNode(toFileUrl(bundle), MODULES, await trustFor(dir, text));
    assert.equal(loaded.from, "modules");
    assert.match(loaded.bundleProblem ?? "", /lacks Exec, VersionApi .*deno task bundle/);
  });
});

Deno.test("loadClientNode() says why a bundle that fails to load was not used", async () => {
  await withDir(async (dir) => {
    const bundle = join(dir, "bundle.js");
    const text = `throw new Error("broken on purpose");`;
    await Deno.writeTextFile(bundle, text);
    const loaded = await loadClientNode(toFileUrl(bundle), MODULES, await trustFor(dir, text));
    assert.equal(loaded.from, "modules");
    assert.match(loaded.bundleProblem ?? "", /cannot be loaded: broken on purpose/);
  });
});

Deno.test("loadClientNode() throws naming both failures when neither can be loaded", async () => {
  await withDir(async (dir) => {
    await assert.rejects(
      loadClientNode(
        toFileUrl(join(dir, "absent.js")),
        toFileUrl(join(dir, "gone.ts")),
        await trustFor(dir, ""),
      ),
      /absent\.js is not built .*client-node's modules failed too/,
    );
  });
});

// The bundle is git-ignored, so nobody reviews it: whatever sits there must not be imported just
// because it exports the right names. Each test below plays whoever swapped it.

Deno.test("loadClientNode() refuses a bundle whose body is not the one its record names", async () => {
  await withDir(async (dir) => {
    const bundle = join(dir, "bundle.js");
    const built = fakeBundle(CLIENT_NODE_PARTS);
    const trust = await trustFor(dir, built);
    // Same exports, one body changed: a credential-stealing KubeConfig would look like this.
    await Deno.writeTextFile(bundle, built.replace("from the fake bundle", "from the attacker"));
    const loaded = await loadClientNode(toFileUrl(bundle), MODULES, trust);
    assert.equal(loaded.from, "modules");
    assert.equal(loaded.bundleRefused, true);
    assert.match(
      loaded.bundleProblem ?? "",
      /bundle\.js is refused: its sha256 is [0-9a-f]{64}, the record's/,
    );
    assert.equal(typeof new loaded.parts.KubeConfig().loadFromString, "function");
  });
});

/** The first line the build wrote before the record: a hash of the inputs alone. */
function markerLine(entry: string, lockfile: string): string {
  const hash = createHash("sha256").update(entry).update("\0").update(lockfile).update("\0")
    .update(Deno.version.deno).digest("hex");
  return `// lace client-node bundle ${hash}`;
}

Deno.test("loadClientNode() refuses a bundle that carries its inputs' marker line over another body", async () => {
  await withDir(async (dir) => {
    const bundle = join(dir, "bundle.js");
    const trust = await trustFor(dir, fakeBundle(CLIENT_NODE_PARTS));
    const forged = `${markerLine("export {};\n", '{ "version": "5" }\n')}\n` +
      fakeBundle(CLIENT_NODE_PARTS).replaceAll("fake bundle", "forged bundle");
    await Deno.writeTextFile(bundle, forged);
    const loaded = await loadClientNode(toFileUrl(bundle), MODULES, trust);
    assert.equal(loaded.from, "modules");
    assert.match(loaded.bundleProblem ?? "", /is refused: its sha256/);
  });
});

Deno.test("loadClientNode() refuses a bundle whose record was made from another lockfile, entry or Deno", async () => {
  await withDir(async (dir) => {
    const bundle = join(dir, "bundle.js");
    const text = fakeBundle(CLIENT_NODE_PARTS);
    await Deno.writeTextFile(bundle, text);
    const cases: [string, (r: Record<string, string>) => void, RegExp][] = [
      [
        "lockfile",
        (r) => r.lockfile = sha256Hex("another lockfile"),
        /other inputs \(the lockfile\)/,
      ],
      ["entry", (r) => r.entry = sha256Hex("another entry"), /other inputs \(the entry\)/],
      ["deno", (r) => r.deno = "1.0.0", /other inputs \(Deno \S+, not 1\.0\.0\)/],
    ];
    for (const [name, tamper, problem] of cases) {
      // The record vouches for this very body: only its inputs are not today's.
      const trust = await trustFor(dir, text, tamper);
      const loaded = await loadClientNode(toFileUrl(bundle), MODULES, trust);
      assert.equal(loaded.from, "modules", name);
      assert.match(loaded.bundleProblem ?? "", problem, name);
    }
  });
});

Deno.test("loadClientNode() refuses a bundle with no record or a record that is not one", async () => {
  await withDir(async (dir) => {
    const bundle = join(dir, "bundle.js");
    const text = fakeBundle(CLIENT_NODE_PARTS);
    await Deno.writeTextFile(bundle, text);
    const trust = await trustFor(dir, text);
    await Deno.writeTextFile(trust.record, '{ "bundle": "not a hash" }');
    let loaded = await loadClientNode(toFileUrl(bundle), MODULES, trust);
    assert.equal(loaded.from, "modules");
    assert.match(loaded.bundleProblem ?? "", /record .*record\.json is not valid: .*"deno"/);
    await Deno.remove(trust.record);
    loaded = await loadClientNode(toFileUrl(bundle), MODULES, trust);
    assert.equal(loaded.from, "modules");
    assert.match(loaded.bundleProblem ?? "", /record .*record\.json cannot be read/);
  });
});

Deno.test("the loader's own record vouches for the inputs in this checkout", async () => {
  const { CLIENT_NODE_TRUST } = await import("./k8s.ts");
  const { parseBundleRecord, recordInputsProblem } = await import("./bundle_record.ts");
  const record = parseBundleRecord(JSON.parse(await Deno.readTextFile(CLIENT_NODE_TRUST.record)));
  const inputs = bundleInputs(
    await Deno.readFile(CLIENT_NODE_TRUST.entry!),
    await Deno.readFile(CLIENT_NODE_TRUST.lockfile!),
    Deno.version.deno,
  );
  assert.equal(
    recordInputsProblem(record, inputs),
    undefined,
    "lib/kube/client_node.bundle.json is stale: run deno task bundle and commit it",
  );
});
