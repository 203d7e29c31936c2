import assert from "node:assert/strict";
import { join } from "node:path";
import { CALICO, FLANNEL } from "./_fixtures.ts";
import { chooseRuntimeFile, runtimeFileIn } from "./runtime_file.ts";
import { runtimeOfVersion } from "./runtimes.ts";

/** A directory as a runtime lists it: the first file cut off mid-write, then two good ones. */
const FIRST_INVALID = {
  "05-cilium.conflist": CALICO.slice(0, 80),
  "10-flannel.conflist": FLANNEL,
  "20-calico.conflist": CALICO,
  "notes.txt": "not listed",
};

async function dir(files: Record<string, string>) {
  const path = await Deno.makeTempDir({ prefix: "lace-runtime-file-" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(join(path, name), text);
  }
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

Deno.test("runtimeOfVersion reads the Node's containerRuntimeVersion", () => {
  assert.equal(runtimeOfVersion("containerd://2.1.4"), "containerd");
  assert.equal(runtimeOfVersion("containerd://1.7.27"), "containerd");
  assert.equal(runtimeOfVersion("cri-o://1.33.2"), "crio");
  assert.equal(runtimeOfVersion("docker://28.1.1"), undefined);
  assert.equal(runtimeOfVersion(""), undefined);
});

Deno.test("containerd's rule on a directory whose first file is invalid: no file, said why", async () => {
  await using d = await dir(FIRST_INVALID);
  const choice = runtimeFileIn(d.path, "containerd");
  assert.equal(choice.file, undefined);
  assert.match(
    choice.none!,
    /^containerd loads only the first file, "05-cilium\.conflist", and fails on it \(not JSON: .*\): it uses no CNI configuration/,
  );
});

Deno.test("CRI-O's rule on a directory whose first file is invalid: the next it can load", async () => {
  await using d = await dir(FIRST_INVALID);
  const choice = runtimeFileIn(d.path, "crio");
  assert.equal(choice.file, "10-flannel.conflist");
  assert.deepStrictEqual(choice.skipped.map((s) => s.name), ["05-cilium.conflist"]);
  assert.match(choice.skipped[0].error, /not JSON/);
});

Deno.test("An unknown runtime is read by CRI-O's rule", async () => {
  await using d = await dir(FIRST_INVALID);
  assert.equal(runtimeFileIn(d.path, undefined).file, "10-flannel.conflist");
});

Deno.test("Both rules take the first file when it loads, in byte order", async () => {
  await using d = await dir({ "20-calico.conflist": CALICO, "10-flannel.conflist": FLANNEL });
  assert.equal(runtimeFileIn(d.path, "containerd").file, "10-flannel.conflist");
  assert.equal(runtimeFileIn(d.path, "crio").file, "10-flannel.conflist");
});

Deno.test("A dangling link, a link to a directory and a FIFO are listed and fail to load", async () => {
  await using d = await dir({ "90-good.conflist": FLANNEL });
  await Deno.symlink(join(d.path, "absent"), join(d.path, "10-dangling.conflist"));
  await Deno.mkdir(join(d.path, "sub"));
  await Deno.symlink(join(d.path, "sub"), join(d.path, "20-dir.conf"));
  const mkfifo = await new Deno.Command("mkfifo", { args: [join(d.path, "30-fifo.json")] })
    .output();
  assert.ok(mkfifo.success);
  const crio = runtimeFileIn(d.path, "crio");
  assert.equal(crio.file, "90-good.conflist");
  assert.deepStrictEqual(crio.skipped.map((s) => [s.name, s.error.split(":")[0]]), [
    ["10-dangling.conflist", "cannot be read"],
    ["20-dir.conf", "not a regular file"],
    ["30-fifo.json", "not a regular file"],
  ]);
  assert.match(runtimeFileIn(d.path, "containerd").none!, /"10-dangling\.conflist"/);
});

Deno.test("A list whose network has a plugin directory says so", async () => {
  await using d = await dir({
    "10-net.conflist": `{"cniVersion":"1.0.0","name":"net","plugins":[{"type":"bridge"}]}`,
  });
  await Deno.mkdir(join(d.path, "net"));
  await Deno.writeTextFile(join(d.path, "net", "50-tuning.conf"), `{"type":"tuning"}`);
  const choice = runtimeFileIn(d.path, "containerd");
  assert.deepStrictEqual([choice.file, choice.pluginDir], ["10-net.conflist", true]);
});

Deno.test("CRI-O's rule with no file it can load says which and why", () => {
  const choice = chooseRuntimeFile("crio", [
    { name: "a.conflist", load: () => ({ ok: false, error: "no name" }) },
    { name: "b.conf", load: () => ({ ok: false, error: "missing 'type'" }) },
  ]);
  assert.equal(choice.file, undefined);
  assert.match(
    choice.none!,
    /CRI-O can load none of the 2 configuration files \("a\.conflist": no name; "b\.conf": missing 'type'\)/,
  );
});

Deno.test("containerd's rule reads no file past the first", () => {
  const read: string[] = [];
  const candidate = (name: string) => ({
    name,
    load: () => (read.push(name), { ok: false as const, error: "x" }),
  });
  chooseRuntimeFile("containerd", [candidate("b.conf"), candidate("a.conf")]);
  assert.deepStrictEqual(read, ["a.conf"]);
});

Deno.test("An empty directory has no file and no complaint", () => {
  assert.deepStrictEqual(chooseRuntimeFile("containerd", []), { skipped: [] });
});
