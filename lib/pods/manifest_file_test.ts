import assert from "node:assert/strict";
import { readManifestFile, UnusableManifestError } from "./manifest_file.ts";

Deno.test("readManifestFile() reads a regular file of exactly the cap, and refuses a directory", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "lace-pods-" }));
  try {
    await Deno.writeTextFile(`${dir}/a.yaml`, "x".repeat(16));
    assert.equal(readManifestFile(dir, "a.yaml", 16), "x".repeat(16));
    assert.throws(() => readManifestFile(dir, "a.yaml", 15), UnusableManifestError);
    await Deno.mkdir(`${dir}/d.yaml`);
    assert.throws(() => readManifestFile(dir, "d.yaml"), /directory, not a regular file/);
    assert.equal(readManifestFile(dir, "gone.yaml"), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
