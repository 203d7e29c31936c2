import assert from "node:assert/strict";
import { join } from "node:path";
import { runUninstallCommand } from "./uninstall_command.ts";
import { Chainer } from "../cni/chaining/chainer.ts";

const BRIDGE = '{"cniVersion":"0.3.1","name":"x","type":"bridge"}\n';

async function node() {
  const root = await Deno.makeTempDir({ prefix: "lace-uninstall-" });
  for (const d of ["net.d", "bin"]) await Deno.mkdir(join(root, d));
  await Deno.writeTextFile(join(root, "net.d", "10-x.conf"), BRIDGE);
  await Deno.writeTextFile(join(root, "bin", "lace"), "");
  const args = [
    "--cni-conf-dir",
    join(root, "net.d"),
    "--cni-state-dir",
    join(root, "state"),
    "--cni-bin-dir",
    join(root, "bin"),
    "--pin-path",
    join(root, "pins"),
  ];
  new Chainer({
    confDir: join(root, "net.d"),
    stateDir: join(root, "state"),
    socket: "/run/lace/cni.sock",
    targets: [],
  }).chainOnce();
  return { root, args, [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }) };
}

function quietly<T>(fn: () => Promise<T>): Promise<T> {
  const { log, error } = console;
  console.log = console.error = () => {};
  return fn().finally(() => Object.assign(console, { log, error }));
}

Deno.test("lace uninstall restores the chained file byte for byte and removes the binary no file names", async () => {
  await using n = await node();
  assert.equal(await quietly(() => runUninstallCommand(n.args)), 0);
  assert.deepEqual([...Deno.readDirSync(join(n.root, "net.d"))].map((e) => e.name), ["10-x.conf"]);
  assert.equal(Deno.readTextFileSync(join(n.root, "net.d", "10-x.conf")), BRIDGE);
  assert.deepEqual([...Deno.readDirSync(join(n.root, "bin"))], []);
});

Deno.test("lace uninstall keeps the binary while a configuration still names lace (hand-chained)", async () => {
  await using n = await node();
  const hand = { cniVersion: "0.3.1", name: "y", plugins: [{ type: "bridge" }, { type: "lace" }] };
  await Deno.writeTextFile(join(n.root, "net.d", "20-y.conflist"), JSON.stringify(hand));
  assert.equal(await quietly(() => runUninstallCommand(n.args)), 1);
  assert.equal(Deno.statSync(join(n.root, "bin", "lace")).isFile, true);
  assert.equal(Deno.readTextFileSync(join(n.root, "net.d", "10-x.conf")), BRIDGE);
});

Deno.test("lace uninstall keeps a binary it cannot remove, says why and exits 1, the files restored", async () => {
  await using n = await node();
  // Not removable without -r: as a read-only mount refuses the unlink, whoever runs it.
  await Deno.remove(join(n.root, "bin", "lace"));
  await Deno.mkdir(join(n.root, "bin", "lace", "sub"), { recursive: true });
  const errors: string[] = [];
  const { log, error } = console;
  console.log = () => {};
  console.error = (m: string) => errors.push(m);
  const code = await runUninstallCommand(n.args).finally(() => {
    Object.assign(console, { log, error });
  });
  assert.equal(code, 1);
  assert.match(
    errors.join("\n"),
    /^lace uninstall: kept .*\/bin\/lace: .*; remove it on the host/m,
  );
  assert.equal(Deno.readTextFileSync(join(n.root, "net.d", "10-x.conf")), BRIDGE);
});
