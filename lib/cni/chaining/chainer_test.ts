import assert from "node:assert/strict";
import { join } from "node:path";
import { waitFor } from "../../../tests/helpers/wait.ts";
import { BRIDGE_CONF, CALICO, FLANNEL } from "./_fixtures.ts";
import { rewrite, SOCKET, world } from "./_world.ts";

Deno.test("Chainer chains the runtime's file (the first in byte order), keeping its mode", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL, "20-calico.conflist": CALICO });
  const pass = w.make().chainOnce();
  assert.deepStrictEqual(pass.chained, ["10-flannel.conflist"]);
  assert.equal(w.laces("10-flannel.conflist"), 1);
  assert.equal(w.read("20-calico.conflist"), CALICO);
  assert.equal(Deno.statSync(join(w.confDir, "10-flannel.conflist")).mode! & 0o777, 0o640);
  assert.deepStrictEqual(w.names(), ["10-flannel.conflist", "20-calico.conflist"]);
});

Deno.test("Chainer restores every file byte for byte, a .conf turned .conflist included", async () => {
  await using w = await world({ "10-bridge.conf": BRIDGE_CONF });
  const chainer = w.make();
  chainer.chainOnce();
  assert.deepStrictEqual(w.names(), ["10-bridge.conflist"]);
  chainer.chainOnce();
  assert.equal(w.laces("10-bridge.conflist"), 1);
  const restored = chainer.restoreAll();
  assert.deepStrictEqual(restored.chained, []);
  assert.deepStrictEqual(w.names(), ["10-bridge.conf"]);
  assert.equal(w.read("10-bridge.conf"), BRIDGE_CONF);
});

Deno.test("Chainer works through a symlinked directory", async () => {
  await using w = await world({});
  const real = join(w.root, "real-net.d");
  await Deno.mkdir(real);
  await Deno.writeTextFile(join(real, "10-flannel.conflist"), FLANNEL);
  const linked = join(w.root, "linked");
  await Deno.symlink(real, linked);
  const chainer = w.make({ confDir: linked });
  assert.deepStrictEqual(chainer.chainOnce().chained, ["10-flannel.conflist"]);
  assert.match(Deno.readTextFileSync(join(real, "10-flannel.conflist")), /"lace"/);
  chainer.restoreAll();
  assert.equal(Deno.readTextFileSync(join(real, "10-flannel.conflist")), FLANNEL);
});

Deno.test("Chainer reports a symlinked runtime file and writes nothing through it", async () => {
  await using w = await world({});
  const victim = join(w.root, "elsewhere.conflist");
  await Deno.writeTextFile(victim, FLANNEL);
  await Deno.symlink(victim, join(w.confDir, "10-flannel.conflist"));
  const pass = w.make().chainOnce();
  assert.deepStrictEqual(pass.chained, []);
  assert.equal(Deno.readTextFileSync(victim), FLANNEL);
  assert.equal(Deno.lstatSync(join(w.confDir, "10-flannel.conflist")).isSymlink, true);
  const [report] = w.reports;
  assert.equal(report.reason, "unsafe");
  assert.match(report.message, /"10-flannel\.conflist": it is a symbolic link to ".*elsewhere/);
});

Deno.test("Chainer leaves an unparsable file alone and reports it once", async () => {
  await using w = await world({ "10-broken.conflist": '{"plugins": [' });
  const chainer = w.make();
  chainer.chainOnce();
  chainer.chainOnce();
  assert.equal(w.read("10-broken.conflist"), '{"plugins": [');
  const unparsable = w.reports.filter((r) => r.reason === "unparsable");
  assert.equal(unparsable.length, 1);
  assert.match(unparsable[0].message, /10-broken\.conflist.*not valid JSON/);
});

Deno.test("Chainer chains a file the network plugin rewrote again within a second", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  const chainer = w.make();
  chainer.start();
  try {
    assert.equal(w.laces("10-flannel.conflist"), 1);
    const rewritten = FLANNEL.replace("cbr0", "cbr1");
    const t0 = performance.now();
    rewrite(w.confDir, "10-flannel.conflist", rewritten);
    await waitFor(() => w.laces("10-flannel.conflist") === 1, {
      timeout: 1000,
      message: "the rewritten file chained again",
    });
    const ms = performance.now() - t0;
    assert.ok(ms < 1000, `chained again after ${ms} ms`);
    await chainer.stop();
    assert.equal(w.laces("10-flannel.conflist"), 1, "stopping leaves the chain in place");
    chainer.restoreAll();
    assert.equal(w.read("10-flannel.conflist"), rewritten);
  } finally {
    await chainer.stop();
  }
});

Deno.test("Two chainers racing on one node write one lace entry and restore the original", async () => {
  await using w = await world({ "10-calico.conflist": CALICO });
  const a = w.make();
  const b = w.make();
  for (let i = 0; i < 20; i++) {
    a.chainOnce();
    b.chainOnce();
    if (i === 10) rewrite(w.confDir, "10-calico.conflist", CALICO);
  }
  assert.equal(w.laces("10-calico.conflist"), 1);
  b.restoreAll();
  assert.equal(w.read("10-calico.conflist"), CALICO);
});

Deno.test("Chainer with targets chains each matching file with its network", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL, "20-blue.conflist": CALICO });
  w.make({
    targets: [{ pattern: "20-*", network: "blue", networkId: 7 }, { pattern: "10-*" }],
  }).chainOnce();
  const blue = JSON.parse(w.read("20-blue.conflist")).plugins.at(-1);
  assert.deepStrictEqual([blue.network, blue.networkId], ["blue", 7]);
  assert.equal(JSON.parse(w.read("10-flannel.conflist")).plugins.at(-1).network, undefined);
});

Deno.test("Chainer waits for a configuration directory that does not exist yet", async () => {
  await using w = await world({});
  const chainer = w.make({ confDir: join(w.root, "later") });
  const pass = chainer.chainOnce();
  assert.deepStrictEqual(pass.chained, []);
  assert.match(w.reports[0].message, /cannot be read/);
});

Deno.test("Two agent processes chaining one directory at once keep one entry and a byte-exact restore", async () => {
  await using w = await world({ "10-calico.conflist": CALICO });
  const script = `
    import { Chainer } from ${JSON.stringify(new URL("./chainer.ts", import.meta.url).href)};
    const c = new Chainer({ confDir: ${JSON.stringify(w.confDir)}, stateDir: ${
    JSON.stringify(w.stateDir)
  }, socket: "${SOCKET}", targets: [] });
    for (let i = 0; i < 40; i++) c.chainOnce();
  `;
  const run = () =>
    new Deno.Command(Deno.execPath(), { args: ["eval", script], stdout: "null", stderr: "piped" })
      .output();
  const both = Promise.all([run(), run()]);
  for (let i = 0; i < 20; i++) {
    rewrite(w.confDir, "10-calico.conflist", CALICO);
    await new Promise((r) => setTimeout(r, 5));
  }
  for (const out of await both) assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  w.make().chainOnce();
  assert.equal(w.laces("10-calico.conflist"), 1);
  w.make().restoreAll();
  assert.equal(w.read("10-calico.conflist"), CALICO);
});

Deno.test("Chainer reports a pass that fails (its state directory unusable) once, and retries", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  const stateDir = join(w.root, "not-a-dir", "state");
  await Deno.writeTextFile(join(w.root, "not-a-dir"), "");
  const chainer = w.make({ stateDir, resyncMs: 20 });
  try {
    chainer.start();
    await waitFor(() => w.reports.some((r) => r.reason === "failed"), { message: "a report" });
    // About five more passes, each failing the same way: still one report.
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(w.reports.filter((r) => r.reason === "failed").length, 1);
    assert.equal(w.read("10-flannel.conflist"), FLANNEL, "nothing written without the lock");
  } finally {
    await chainer.stop();
  }
});
