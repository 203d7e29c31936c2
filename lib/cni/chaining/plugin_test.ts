import assert from "node:assert/strict";
import { join } from "node:path";
import { pluginDir } from "./_world.ts";
import { pluginProblem } from "./plugin.ts";

async function bin() {
  const root = await Deno.makeTempDir({ prefix: "lace-plugin-" });
  await Deno.chmod(root, 0o755);
  const dir = pluginDir(root);
  return {
    root,
    dir,
    plugin: join(dir, "lace"),
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

Deno.test("pluginProblem() accepts an executable lace that is root's alone in a root-only directory", async () => {
  await using b = await bin();
  assert.equal(pluginProblem(b.dir), undefined);
});

Deno.test("pluginProblem() says the plugin is missing, and how to install it", async () => {
  await using b = await bin();
  await Deno.remove(b.plugin);
  assert.match(
    pluginProblem(b.dir) ?? "",
    /^The lace plugin ".*\/bin\/lace" is missing: install it \(the chart's install-cni init container/,
  );
});

Deno.test("pluginProblem() says a CNI bin directory that is not there cannot be read", async () => {
  await using b = await bin();
  assert.match(
    pluginProblem(join(b.root, "nowhere")) ?? "",
    /^The CNI bin directory ".*\/nowhere" cannot be read \(.*\), so the lace plugin cannot be found/,
  );
});

Deno.test("pluginProblem() refuses a plugin that is not executable", async () => {
  await using b = await bin();
  await Deno.chmod(b.plugin, 0o644);
  assert.match(pluginProblem(b.dir) ?? "", /"[^"]*\/lace" is not executable \(mode 0644\)/);
});

Deno.test("pluginProblem() refuses a plugin others may write", async () => {
  await using b = await bin();
  await Deno.chmod(b.plugin, 0o757);
  assert.match(
    pluginProblem(b.dir) ?? "",
    /"[^"]*\/lace" is writable by group or others \(mode 0757\), and the runtime runs it as root/,
  );
});

Deno.test("pluginProblem() refuses a plugin that is a symlink, even to a good file", async () => {
  await using b = await bin();
  await Deno.rename(b.plugin, join(b.dir, "lace.real"));
  await Deno.symlink(join(b.dir, "lace.real"), b.plugin);
  assert.match(pluginProblem(b.dir) ?? "", /"[^"]*\/lace" is a symbolic link/);
});

Deno.test("pluginProblem() refuses a plugin in a directory others may write", async () => {
  await using b = await bin();
  await Deno.chmod(b.dir, 0o777);
  assert.match(
    pluginProblem(b.dir) ?? "",
    /"[^"]*\/lace" is in "[^"]*\/bin", which is writable by group or others \(mode 0777\)/,
  );
});

Deno.test("pluginProblem() refuses a directory that is not a directory", async () => {
  await using b = await bin();
  assert.match(pluginProblem(b.plugin) ?? "", /is in "[^"]*\/bin\/lace", which is not a directory/);
});
