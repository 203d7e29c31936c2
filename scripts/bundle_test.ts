import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL as toFileUrl } from "node:url";
import { CLIENT_NODE_PARTS, CLIENT_NODE_TRUST, loadClientNode } from "../lib/kube/k8s.ts";
import { parseBundleRecord, sha256Hex } from "../lib/kube/bundle_record.ts";
import { buildBundle, CLIENT_NODE_BUNDLE_RECORD, parseBundleArgs } from "./bundle.ts";

const ROOT = new URL("../", import.meta.url);
const COMMITTED_RECORD = new URL(CLIENT_NODE_BUNDLE_RECORD, ROOT);

Deno.test("parseBundleArgs() reads --output and --record and names an unknown argument", () => {
  assert.deepEqual(parseBundleArgs([]), {
    output: "lib/kube/client_node.bundle.js",
    record: "lib/kube/client_node.bundle.json",
  });
  assert.deepEqual(parseBundleArgs(["--output=x.js", "--record", "r.json"]), {
    output: "x.js",
    record: "r.json",
  });
  assert.throws(() => parseBundleArgs(["--force"]), /Unknown argument "--force"/);
  assert.throws(() => parseBundleArgs(["--out", "x"]), /Unknown argument "--out"/);
  assert.throws(() => parseBundleArgs(["--output"]), /Missing value for --output/);
  assert.throws(() => parseBundleArgs(["--record"]), /Missing value for --record/);
});

/** A temporary directory with a copy of the committed record in it, removed afterwards. */
async function withRecordCopy(fn: (dir: string, record: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "lace-bundle-" });
  try {
    const record = join(dir, "record.json");
    await Deno.copyFile(COMMITTED_RECORD, record);
    await fn(dir, record);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The first line the build wrote before the record: a hash of the inputs alone. */
async function markerLine(): Promise<string> {
  const hash = createHash("sha256")
    .update(await Deno.readTextFile(new URL("lib/kube/client_node.ts", ROOT))).update("\0")
    .update(await Deno.readTextFile(new URL("deno.lock", ROOT))).update("\0")
    .update(Deno.version.deno).digest("hex");
  return `// lace client-node bundle ${hash}`;
}

/** Client-node's part names, exported by a module that is not client-node. */
const IMPOSTOR = CLIENT_NODE_PARTS.map((n) => `export function ${n}() { return "impostor"; }`)
  .join("\n");

Deno.test({
  name: "the bundle built from client_node.ts is what the committed record names, and works",
  // deno bundle fetches esbuild from npm on its first run.
  sanitizeResources: false,
  fn: async () => {
    await withRecordCopy(async (dir, record) => {
      const output = join(dir, "bundle.js");
      const first = await buildBundle({ output, record });
      assert.deepEqual([first.built, first.recorded], [true, false]);
      assert.deepEqual(
        parseBundleRecord(JSON.parse(await Deno.readTextFile(COMMITTED_RECORD))),
        first.record,
        "a build of this checkout does not reproduce lib/kube/client_node.bundle.json",
      );
      assert.equal(sha256Hex(await Deno.readFile(output)), first.record.bundle);
      const again = await buildBundle({ output, record });
      assert.deepEqual([again.built, again.recorded], [false, false], "replaced an unchanged one");
      const bundled = await loadClientNode(toFileUrl(output), undefined, {
        ...CLIENT_NODE_TRUST,
        record: toFileUrl(record),
      });
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
      // Much smaller than the library it comes from, whose generated API alone is tens of MB.
      assert.ok((await Deno.stat(output)).size < 6 * 1024 * 1024);
    });
  },
});

Deno.test({
  name: "buildBundle() builds again over a body swapped under its inputs' marker line",
  sanitizeResources: false,
  fn: async () => {
    await withRecordCopy(async (dir, record) => {
      const output = join(dir, "bundle.js");
      await Deno.writeTextFile(output, `${await markerLine()}\n${IMPOSTOR}\n`);
      const outcome = await buildBundle({ output, record });
      assert.equal(outcome.built, true, "kept a bundle for the line it carries");
      assert.equal(sha256Hex(await Deno.readFile(output)), outcome.record.bundle);
      assert.doesNotMatch(await Deno.readTextFile(output), /impostor/);
    });
  },
});

Deno.test({
  name: "buildBundle() refuses a record rewritten to vouch for a swapped body",
  sanitizeResources: false,
  fn: async () => {
    await withRecordCopy(async (dir, record) => {
      const output = join(dir, "bundle.js");
      const swapped = `${await markerLine()}\n${IMPOSTOR}\n`;
      await Deno.writeTextFile(output, swapped);
      // Whoever swapped the bundle also rewrote its hash in the record, inputs left as they are.
      const forged = JSON.parse(await Deno.readTextFile(record));
      forged.bundle = sha256Hex(swapped);
      const forgedText = `${JSON.stringify(forged, null, 2)}\n`;
      await Deno.writeTextFile(record, forgedText);
      await assert.rejects(
        buildBundle({ output, record }),
        /has sha256 [0-9a-f]{64}, the record says [0-9a-f]{64}: the record was changed/,
      );
      // Neither replaced: the evidence stays for git diff, and the loader still refuses it.
      assert.equal(await Deno.readTextFile(record), forgedText);
      assert.equal(await Deno.readTextFile(output), swapped);
    });
  },
});

Deno.test({
  name: "buildBundle() records a new build when the inputs changed since the record",
  sanitizeResources: false,
  fn: async () => {
    await withRecordCopy(async (dir, record) => {
      const output = join(dir, "bundle.js");
      const stale = JSON.parse(await Deno.readTextFile(record));
      stale.lockfile = sha256Hex("last month's lockfile");
      stale.bundle = sha256Hex("last month's bundle");
      await Deno.writeTextFile(record, JSON.stringify(stale));
      const outcome = await buildBundle({ output, record });
      assert.deepEqual([outcome.built, outcome.recorded], [true, true]);
      assert.deepEqual(
        parseBundleRecord(JSON.parse(await Deno.readTextFile(record))),
        parseBundleRecord(JSON.parse(await Deno.readTextFile(COMMITTED_RECORD))),
      );
    });
  },
});

Deno.test("the image's build context leaves the bundle out, so the image build makes its own", async () => {
  const ignore = await Deno.readTextFile(new URL("deploy/Dockerfile.dockerignore", ROOT));
  const patterns = ignore.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  assert.ok(patterns.includes("lib/kube/client_node.bundle.js"), patterns.join(" "));
  // The record is what the image's build is checked against: it must stay in.
  assert.deepEqual(patterns.filter((p) => p.startsWith("lib")), ["lib/kube/client_node.bundle.js"]);
  const dockerfile = await Deno.readTextFile(new URL("deploy/Dockerfile", ROOT));
  assert.match(dockerfile, /deno task compile/);
});
