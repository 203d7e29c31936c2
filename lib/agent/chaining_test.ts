import assert from "node:assert/strict";
import { join } from "node:path";
import { FLANNEL } from "../cni/chaining/_fixtures.ts";
import { type ChainingParts, startChaining } from "./chaining.ts";
import type { Config } from "../config.ts";
import { nodeObjectRef } from "../kube/event_sink.ts";

async function world() {
  const root = await Deno.makeTempDir({ prefix: "lace-agent-chain-" });
  const confDir = join(root, "net.d");
  await Deno.mkdir(confDir);
  await Deno.writeTextFile(join(confDir, "10-flannel.conflist"), FLANNEL);
  const config = (mode: Config["cniChaining"]) => ({
    cniChaining: mode,
    cniConfDir: confDir,
    cniStateDir: join(root, "state"),
    cniSocket: "/run/lace/cni.sock",
    cniChainFiles: [],
  });
  const events: string[] = [];
  const parts = (uninstalling?: () => Promise<boolean>): ChainingParts => ({
    events: {
      warn: (_o, reason) => events.push(`Warning ${reason}`),
      normal: (_o, reason) => events.push(`Normal ${reason}`),
    },
    node: nodeObjectRef("n1"),
    uninstalling,
  });
  return {
    config,
    parts,
    events,
    file: () => Deno.readTextFileSync(join(confDir, "10-flannel.conflist")),
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

Deno.test("startChaining in auto mode chains at start and records a Normal Event on the node", async () => {
  await using w = await world();
  const running = startChaining(w.config("auto"), w.parts(() => Promise.resolve(false)));
  await running.stop();
  assert.match(w.file(), /"lace"/);
  assert.deepStrictEqual(w.events, ["Normal CniChained"]);
});

Deno.test("A stop while the DaemonSet stays (restart, upgrade) leaves the chain in place", async () => {
  await using w = await world();
  await startChaining(w.config("auto"), w.parts(() => Promise.resolve(false))).stop();
  assert.match(w.file(), /"lace"/);
});

Deno.test("A stop that cannot tell whether Lace is uninstalled leaves the chain in place", async () => {
  await using w = await world();
  await startChaining(w.config("auto"), w.parts(() => Promise.reject(new Error("no API")))).stop();
  assert.match(w.file(), /"lace"/);
});

Deno.test("A stop while the DaemonSet is being deleted restores the file byte for byte", async () => {
  await using w = await world();
  await startChaining(w.config("auto"), w.parts(() => Promise.resolve(true))).stop();
  assert.equal(w.file(), FLANNEL);
  assert.deepStrictEqual(w.events, ["Normal CniChained", "Normal CniChainRestored"]);
});

Deno.test("Turning chaining to manual restores what the agent chained before", async () => {
  await using w = await world();
  await startChaining(w.config("auto"), w.parts()).stop();
  assert.match(w.file(), /"lace"/);
  await startChaining(w.config("manual"), w.parts()).stop();
  assert.equal(w.file(), FLANNEL);
});
