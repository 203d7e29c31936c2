import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { waitFor } from "../../../tests/helpers/wait.ts";
import { fakeTime } from "../../../tests/helpers/fake_time.ts";
import { BRIDGE_CONF, CALICO, FLANNEL } from "./_fixtures.ts";
import { rewrite, SOCKET, world } from "./_world.ts";
import { loadRecords } from "./state.ts";
import { originalBytes } from "./plan.ts";

const dec = (b: Uint8Array) => new TextDecoder().decode(b);

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
  assert.match(unparsable[0].message, /skips "10-broken\.conflist" \(not JSON: /);
  const none = w.reports.filter((r) => r.reason === "no-runtime-file");
  assert.equal(none.length, 1);
  assert.match(none[0].message, /^Nothing to chain: .* can load none of the 1 configuration files/);
});

/** A directory whose first file the network plugin was cutting off mid-write. */
const FIRST_INVALID = { "05-cilium.conflist": CALICO.slice(0, 80), "10-flannel.conflist": FLANNEL };

Deno.test("Chainer under containerd's rule chains nothing when the first file is invalid, and says why", async () => {
  await using w = await world(FIRST_INVALID);
  const pass = w.make({ runtime: () => "containerd" }).chainOnce();
  assert.deepStrictEqual(pass.chained, []);
  assert.equal(w.read("10-flannel.conflist"), FLANNEL, "containerd does not use it");
  assert.equal(w.read("05-cilium.conflist"), FIRST_INVALID["05-cilium.conflist"]);
  assert.deepStrictEqual(w.reports.map((r) => [r.level, r.reason]), [[
    "warning",
    "no-runtime-file",
  ]]);
  assert.match(
    w.reports[0].message,
    /containerd loads only the first file, "05-cilium\.conflist", and fails on it .* no new pod gets a network/,
  );
});

Deno.test("Chainer under CRI-O's rule chains the next file it loads when the first is invalid", async () => {
  await using w = await world(FIRST_INVALID);
  const pass = w.make({ runtime: () => "crio" }).chainOnce();
  assert.deepStrictEqual(pass.chained, ["10-flannel.conflist"]);
  assert.equal(w.laces("10-flannel.conflist"), 1);
  assert.deepStrictEqual(w.reports.map((r) => [r.file, r.reason]), [
    ["05-cilium.conflist", "unparsable"],
    ["10-flannel.conflist", "chained"],
  ]);
  assert.match(
    w.reports[0].message,
    /^CRI-O skips "05-cilium\.conflist" \(not JSON: .*\) and uses "10-flannel\.conflist"/,
  );
});

Deno.test("Chainer reports the runtime's file it cannot chain, and chains no other in its place", async () => {
  // CRI-O loads a list without cniVersion (0.1.0 to libcni); Lace's plugin cannot be chained there.
  await using w = await world({
    "10-old.conflist": `{"name":"old","plugins":[{"type":"bridge"}]}`,
    "20-calico.conflist": CALICO,
  });
  const pass = w.make({ runtime: () => "crio" }).chainOnce();
  assert.deepStrictEqual(pass.chained, []);
  assert.equal(w.read("20-calico.conflist"), CALICO);
  assert.deepStrictEqual(w.reports.map((r) => [r.file, r.level, r.reason]), [
    ["10-old.conflist", "warning", "unparsable"],
  ]);
  assert.match(
    w.reports[0].message,
    /"10-old\.conflist" has no cniVersion string; .*CRI-O uses this file, so new pods register only once the API shows their IP$/,
  );
});

Deno.test("Chainer chains a file the network plugin rewrote again on the directory's event, not at the resync", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  const { clock, timers } = fakeTime();
  const chainer = w.make({ timers, debounceMs: 20, resyncMs: 10_000 });
  chainer.start();
  try {
    assert.equal(w.laces("10-flannel.conflist"), 1);
    assert.equal(clock.countTimers(), 1, "only the resync is pending");
    const rewritten = FLANNEL.replace("cbr0", "cbr1");
    rewrite(w.confDir, "10-flannel.conflist", rewritten);
    // The watch's event schedules the debounced pass; fake time has not moved.
    await waitFor(() => clock.countTimers() === 2, { message: "the directory's event" });
    assert.equal(w.laces("10-flannel.conflist"), 0);
    clock.tick(20);
    assert.equal(w.laces("10-flannel.conflist"), 1, "chained again 20 ms after the event");
    await chainer.stop();
    assert.equal(w.laces("10-flannel.conflist"), 1, "stopping leaves the chain in place");
    chainer.restoreAll();
    assert.equal(w.read("10-flannel.conflist"), rewritten);
  } finally {
    await chainer.stop();
  }
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

/** A chainer in a process of its own: one pass per line on stdin, a "." on stdout after each. */
const CHILD = `
import { Chainer } from ${JSON.stringify(new URL("./chainer.ts", import.meta.url).href)};
const [confDir, stateDir] = Deno.args;
const c = new Chainer({ confDir, stateDir, socket: "${SOCKET}", targets: [] });
const out = new TextEncoder().encode(".");
for await (const line of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  for (const _ of line.split("\\n").slice(0, -1)) {
    c.chainOnce();
    Deno.stdout.writeSync(out);
  }
}
`;

/** The repository's deno.json: the child's script lives in a temporary directory. */
const CONFIG = fromFileUrl(new URL("../../../deno.json", import.meta.url));

class ChainerProcess {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  /** Passes reported done and not yet awaited. */
  #done = 0;
  constructor(script: string, confDir: string, stateDir: string) {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `--config=${CONFIG}`, script, confDir, stateDir],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.#reader = this.#child.stdout.getReader();
  }
  /** Asks for one pass; `passed` resolves once it is done. */
  pass(): Promise<void> {
    return this.#writer.write(new TextEncoder().encode("pass\n"));
  }
  async passed(): Promise<void> {
    while (this.#done === 0) {
      const { value, done } = await this.#reader.read();
      assert.ok(!done, "the chainer process exited");
      this.#done += value.filter((b) => b === 0x2e).length;
    }
    this.#done--;
  }
  async close(): Promise<number> {
    await this.#writer.close().catch(() => {});
    this.#reader.releaseLock();
    await this.#child.stdout.cancel();
    return (await this.#child.status).code;
  }
}

Deno.test("Four agent processes chaining one directory at once keep one entry and a byte-exact record, counted before any repair", async () => {
  await using w = await world({ "10-calico.conflist": CALICO });
  const script = join(w.root, "chainer_child.ts");
  await Deno.writeTextFile(script, CHILD);
  const children = Array.from(
    { length: 4 },
    () => new ChainerProcess(script, w.confDir, w.stateDir),
  );
  try {
    for (let round = 0; round < 40; round++) {
      // The network plugin writes its file anew (another MTU, its own formatting); then every
      // process starts a pass at once.
      const plugins = CALICO.replace('"mtu": 0', `"mtu": ${1400 + round}`);
      rewrite(w.confDir, "10-calico.conflist", plugins);
      await Promise.all(children.map((c) => c.pass()));
      await Promise.all(children.map((c) => c.passed()));
      // As the processes left it: one entry, and a record that restores the plugin's bytes.
      assert.equal(w.laces("10-calico.conflist"), 1, `round ${round}`);
      const record = loadRecords(w.stateDir, w.confDir).records.get("10-calico.conflist");
      assert.ok(record, `round ${round}: no record`);
      assert.equal(dec(originalBytes(record)), plugins, `round ${round}: the record's original`);
    }
  } finally {
    for (const c of children) assert.equal(await c.close(), 0);
  }
  w.make().restoreAll();
  assert.equal(w.read("10-calico.conflist"), CALICO.replace('"mtu": 0', '"mtu": 1439'));
});

Deno.test("Chainer reports a failing pass once, retries it after 1, 2 and 4 s, and resyncs every 10 s once it works", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  const stateDir = join(w.root, "not-a-dir", "state");
  await Deno.writeTextFile(join(w.root, "not-a-dir"), "");
  const { clock, timers } = fakeTime();
  const passes: [number, boolean][] = [];
  const chainer = w.make({
    stateDir,
    timers,
    resyncMs: 10_000,
    onPass: (r) => passes.push([clock.now, r.reports.some((x) => x.reason === "failed")]),
  });
  try {
    chainer.start();
    clock.tick(7000);
    assert.deepStrictEqual(passes, [[0, true], [1000, true], [3000, true], [7000, true]]);
    assert.equal(w.reports.filter((r) => r.reason === "failed").length, 1, "reported once");
    assert.match(w.reports[0].message, /Chaining the lace plugin into .* failed: .*; retrying/);
    assert.equal(w.read("10-flannel.conflist"), FLANNEL, "nothing written without the lock");
    await Deno.remove(join(w.root, "not-a-dir"));
    clock.tick(8000 + 10_000);
    assert.deepStrictEqual(passes.slice(4), [[15_000, false], [25_000, false]]);
    assert.equal(w.laces("10-flannel.conflist"), 1);
  } finally {
    await chainer.stop();
  }
});

/** A chainer that kills itself with SIGKILL at its `crashAt`-th commit, as a kill -9 would. */
const CRASHING_CHILD = `
import { Chainer } from ${JSON.stringify(new URL("./chainer.ts", import.meta.url).href)};
const [confDir, stateDir, crashAt] = Deno.args;
let commits = 0;
const c = new Chainer({
  confDir, stateDir, socket: "${SOCKET}", targets: [{ pattern: "*" }],
  beforeCommit: () => { if (++commits === Number(crashAt)) Deno.kill(Deno.pid, "SIGKILL"); },
});
c.chainOnce();
`;

/** Runs CRASHING_CHILD's pass over `w`; the signal that ended it. */
async function crashingPass(
  w: { root: string; confDir: string; stateDir: string },
  crashAt: number,
): Promise<Deno.Signal | null> {
  const script = join(w.root, "crashing_child.ts");
  await Deno.writeTextFile(script, CRASHING_CHILD);
  const status = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `--config=${CONFIG}`, script, w.confDir, w.stateDir, String(crashAt)],
    stdout: "null",
    stderr: "inherit",
  }).output();
  return status.signal;
}

Deno.test("A chainer killed -9 at any commit of a pass leaves files that restore byte for byte, and the next pass chains them", async () => {
  const originals = { "10-bridge.conf": BRIDGE_CONF, "20-flannel.conflist": FLANNEL };
  // The pass commits three times: the .conflist made of the .conf, the .conf's removal, flannel.
  for (let crashAt = 1; crashAt <= 4; crashAt++) {
    await using w = await world(originals);
    const signal = await crashingPass(w, crashAt);
    assert.equal(signal, crashAt <= 3 ? "SIGKILL" : null, `crash at commit ${crashAt}`);
    const after = w.make({ targets: [{ pattern: "*" }] });
    after.restoreAll();
    assert.deepStrictEqual(w.names(), Object.keys(originals), `crash at commit ${crashAt}`);
    for (const [name, text] of Object.entries(originals)) {
      assert.equal(w.read(name), text, `crash at commit ${crashAt}: ${name} restored`);
    }
    // A record left by the crash does not stop the next pass, and restores as well.
    assert.deepStrictEqual(after.chainOnce().chained, [
      "10-bridge.conflist",
      "20-flannel.conflist",
    ]);
    after.restoreAll();
    for (const [name, text] of Object.entries(originals)) {
      assert.equal(w.read(name), text, `crash at commit ${crashAt}: ${name} chained again`);
    }
  }
});

Deno.test("A record left by a chainer killed before its write claims no file another writer makes at that name", async () => {
  await using w = await world({ "10-bridge.conf": BRIDGE_CONF });
  assert.equal(await crashingPass(w, 1), "SIGKILL");
  assert.ok(loadRecords(w.stateDir, w.confDir).records.has("10-bridge.conflist"), "written ahead");
  rewrite(w.confDir, "10-bridge.conflist", CALICO);
  const pass = w.make({ targets: [{ pattern: "10-bridge.conf" }] }).chainOnce();
  assert.equal(w.read("10-bridge.conflist"), CALICO);
  assert.equal(w.read("10-bridge.conf"), BRIDGE_CONF);
  assert.deepStrictEqual(pass.chained, []);
  const [conflict] = w.reports.filter((r) => r.reason === "conflict");
  assert.match(conflict.message, /would become "10-bridge\.conflist", which another writer owns/);
});

Deno.test("Chainer chains nothing while the lace plugin is unusable, says so once, and chains at the first pass after it is there", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  let problem: string | undefined = 'The lace plugin "/opt/cni/bin/lace" is missing: install it';
  const chainer = w.make({ pluginProblem: () => problem });
  assert.deepStrictEqual(chainer.chainOnce().chained, []);
  assert.deepStrictEqual(chainer.chainOnce().chained, []);
  assert.equal(w.read("10-flannel.conflist"), FLANNEL);
  assert.deepStrictEqual(w.reports.map((r) => [r.reason, r.level]), [["no-plugin", "warning"]]);
  assert.match(
    w.reports[0].message,
    /^The lace plugin "\/opt\/cni\/bin\/lace" is missing: install it\. Nothing is chained until it is; the agent checks again at every pass$/,
  );
  problem = undefined;
  assert.deepStrictEqual(chainer.chainOnce().chained, ["10-flannel.conflist"]);
  assert.equal(w.laces("10-flannel.conflist"), 1);
});

Deno.test("Chainer leaves a chained file chained when the lace plugin goes, and names it in its warning", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  const plugin: { problem?: string } = {};
  const chainer = w.make({ pluginProblem: () => plugin.problem });
  chainer.chainOnce();
  const chained = w.read("10-flannel.conflist");
  plugin.problem = 'The lace plugin "/opt/cni/bin/lace" is missing: install it';
  assert.deepStrictEqual(chainer.chainOnce().chained, ["10-flannel.conflist"]);
  assert.equal(w.read("10-flannel.conflist"), chained);
  const [missing] = w.reports.filter((r) => r.reason === "no-plugin");
  assert.match(
    missing.message,
    /is missing: install it\. "10-flannel\.conflist" still name the lace plugin: every new pod's network setup on this node fails until it is back/,
  );
  chainer.restoreAll();
  assert.equal(w.read("10-flannel.conflist"), FLANNEL, "restoring needs no plugin");
});
