import assert from "node:assert/strict";
import { join } from "node:path";
import { imageConfigJson, indexJson, MEDIA, writeImageArchive } from "./oci_layout.ts";
import { parseLdd } from "./rootfs.ts";

Deno.test("the index names the image for containerd and tags it for the OCI spec", () => {
  const manifest = { mediaType: MEDIA.manifest, digest: "sha256:ab", size: 3 };
  const index = JSON.parse(indexJson(manifest, "lace.test/agnhost:1"));
  assert.deepEqual(index.manifests[0].annotations, {
    "io.containerd.image.name": "lace.test/agnhost:1",
    "org.opencontainers.image.ref.name": "1",
  });
  assert.deepEqual(index.manifests[0].platform, { architecture: "amd64", os: "linux" });
});

Deno.test("the image config lists the layers' diff ids in order", () => {
  const config = JSON.parse(imageConfigJson({ entrypoint: ["/pause"] }, ["sha256:1", "sha256:2"]));
  assert.deepEqual(config.rootfs, { type: "layers", diff_ids: ["sha256:1", "sha256:2"] });
  assert.deepEqual(config.config.Entrypoint, ["/pause"]);
});

Deno.test("parseLdd lists resolved libraries and the loader, not virtual objects", () => {
  const output = [
    "\tlinux-vdso.so.1 (0x00007ffd)",
    "\tlibssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x00007f1)",
    "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2)",
    "\t/lib64/ld-linux-x86-64.so.2 (0x00007f3)",
  ].join("\n");
  assert.deepEqual(parseLdd(output), [
    "/lib/x86_64-linux-gnu/libssl.so.3",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib64/ld-linux-x86-64.so.2",
  ]);
});

Deno.test("an archive's blobs are named by their sha256 and the same tree gives the same digest", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-oci-test-" });
  try {
    const tree = join(dir, "tree");
    await Deno.mkdir(tree);
    await Deno.writeTextFile(join(tree, "hello"), "hello\n");
    const first = await writeImageArchive(join(dir, "a.tar"), "lace.test/x:1", [tree], {});
    const second = await writeImageArchive(join(dir, "b.tar"), "lace.test/x:1", [tree], {});
    assert.equal(first, second);
    const unpacked = join(dir, "unpacked");
    await Deno.mkdir(unpacked);
    const tar = await new Deno.Command("tar", { args: ["-xf", join(dir, "a.tar"), "-C", unpacked] })
      .output();
    assert.ok(tar.success);
    for await (const blob of Deno.readDir(join(unpacked, "blobs", "sha256"))) {
      const sum = await new Deno.Command("sha256sum", {
        args: [join(unpacked, "blobs", "sha256", blob.name)],
        stdout: "piped",
      }).output();
      assert.equal(new TextDecoder().decode(sum.stdout).split(" ")[0], blob.name);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
