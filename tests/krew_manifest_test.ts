/**
 * The kubectl plugin as krew installs it: deploy/krew/lace.yaml in krew's manifest format, and
 * deploy/kubectl/kubectl-lace, which krew links into its bin directory, running the `lace`
 * installed beside it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import denoJson from "../deno.json" with { type: "json" };

const root = new URL("../", import.meta.url).pathname;
const MANIFEST = join(root, "deploy/krew/lace.yaml");
const WRAPPER = join(root, "deploy/kubectl/kubectl-lace");

interface Platform {
  selector: { matchLabels: Record<string, string> };
  uri: string;
  sha256: string;
  files: { from: string; to: string }[];
  bin: string;
}

Deno.test("the krew manifest is a v1alpha2 Plugin named as its file, at lace's version", async () => {
  const manifest = parse(await Deno.readTextFile(MANIFEST));
  assert.equal(manifest.apiVersion, "krew.googlecontainertools.github.com/v1alpha2");
  assert.equal(manifest.kind, "Plugin");
  assert.equal(`${manifest.metadata.name}.yaml`, "lace.yaml");
  assert.equal(manifest.spec.version, `v${denoJson.version}`);
  assert.ok(manifest.spec.shortDescription.length <= 50, manifest.spec.shortDescription);
  const platforms = manifest.spec.platforms as Platform[];
  assert.deepEqual(
    platforms.map((p) => `${p.selector.matchLabels.os}/${p.selector.matchLabels.arch}`),
    ["linux/amd64", "linux/arm64"],
  );
  for (const p of platforms) {
    // The plugin is the wrapper, which needs the lace beside it.
    assert.equal(p.bin, "kubectl-lace");
    assert.deepEqual(p.files.map((f) => f.from).sort(), ["kubectl-lace", "lace"]);
    assert.match(p.sha256, /^[0-9a-f]{64}$/);
    assert.ok(p.uri.includes(manifest.spec.version), p.uri);
  }
});

Deno.test("kubectl-lace runs the lace beside it, through krew's symlink, as lace kubectl", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-krew-" });
  try {
    const installed = join(dir, "store");
    const bin = join(dir, "bin");
    await Deno.mkdir(installed);
    await Deno.mkdir(bin);
    await Deno.copyFile(WRAPPER, join(installed, "kubectl-lace"));
    await Deno.chmod(join(installed, "kubectl-lace"), 0o755);
    const fake = (said: string) => `#!/bin/sh\necho ${said} "$@"\n`;
    await Deno.writeTextFile(join(installed, "lace"), fake("beside"), { mode: 0o755 });
    await Deno.writeTextFile(join(bin, "lace"), fake("on-path"), { mode: 0o755 });
    await Deno.symlink(join(installed, "kubectl-lace"), join(bin, "kubectl-lace"));
    const run = async () => {
      const out = await new Deno.Command(join(bin, "kubectl-lace"), {
        args: ["targets", "--node", "a b"],
        env: { PATH: `${bin}:/usr/bin:/bin` },
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      return new TextDecoder().decode(out.stdout);
    };
    assert.equal(await run(), "beside kubectl targets --node a b\n");
    // Without one beside it (the plugin put on PATH by hand), the lace on PATH.
    await Deno.remove(join(installed, "lace"));
    assert.equal(await run(), "on-path kubectl targets --node a b\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
