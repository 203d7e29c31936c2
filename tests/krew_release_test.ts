/**
 * A release as krew installs it: `deno task release` packs a stand-in lace (a native executable:
 * the compiled lace cannot be built here) with deploy/kubectl/kubectl-lace, the real krew (the
 * version tests/krew/go.mod pins) installs it from the written manifest and archive, and the real
 * kubectl finds the plugin on krew's PATH, which runs the lace from the archive. Nothing leaves
 * the machine: the release's URL is under .test, krew's index update and upgrade check are off,
 * and any HTTP it tried would go to a closed loopback port.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { elfStandIn } from "./helpers/elf_stand_in.ts";
import { isExecutable } from "./helpers/executable.ts";
import { skipIf, skipName } from "./helpers/skip.ts";
import { krewPath, kubeToolPath } from "./kube/tools.ts";

const repo = new URL("../", import.meta.url).pathname;
const KREW = await krewPath();
const KUBECTL = await kubeToolPath("kubectl");
const MISSING = [KREW, KUBECTL].filter((p) => !isExecutable(p))
  .map((p) => `"${p}" is not built; run scripts/build_k8s_tools.sh krew kubectl`)[0];
const ARCH = Deno.build.arch === "x86_64" ? "amd64" : "arm64";
const ARCHIVE = `lace-linux-${ARCH}.tar.gz`;

interface Run {
  code: number;
  out: string;
}

async function run(program: string, args: string[], env: Record<string, string>): Promise<Run> {
  const o = await new Deno.Command(program, { args, env, clearEnv: true, stdin: "null" }).output();
  const text = new TextDecoder();
  return { code: o.code, out: text.decode(o.stdout) + text.decode(o.stderr) };
}

/** A krew of its own under `dir`: its root, HOME and PATH (krew's bin first, then kubectl's). */
function krewEnv(dir: string): Record<string, string> {
  const root = join(dir, "krew");
  return {
    KREW_ROOT: root,
    HOME: dir,
    PATH: `${join(root, "bin")}:${join(KUBECTL, "..")}:/usr/bin:/bin`,
    KREW_NO_UPGRADE_CHECK: "1",
    HTTP_PROXY: "http://127.0.0.1:9",
    HTTPS_PROXY: "http://127.0.0.1:9",
    NO_COLOR: "1",
  };
}

/** Runs deno task release on a stand-in lace in `dir`; returns the release's directory. */
async function release(dir: string): Promise<string> {
  const lace = await elfStandIn(dir);
  const out = join(dir, "release");
  const released = await run(Deno.execPath(), [
    "run",
    "--allow-all",
    join(repo, "scripts/release.ts"),
    "--base-url=https://releases.test/lace/v0.1.0",
    `--binary=${ARCH}=${lace}`,
    `--out=${out}`,
  ], Deno.env.toObject());
  assert.equal(released.code, 0, released.out);
  // Only the archive's copy may answer kubectl lace.
  await Deno.remove(lace);
  return out;
}

function install(env: Record<string, string>, manifest: string, archive: string) {
  return run(KREW, [
    "install",
    "--no-update-index",
    `--manifest=${manifest}`,
    `--archive=${archive}`,
  ], env);
}

/** A test given a fresh release of a stand-in lace (`out`) and a krew of its own (`env`). */
function releaseTest(
  name: string,
  fn: (out: string, env: Record<string, string>, dir: string) => Promise<void>,
) {
  Deno.test({
    name: skipName(name, MISSING),
    ignore: skipIf(MISSING),
    async fn() {
      const dir = await Deno.makeTempDir({ prefix: "lace-krew-release-" });
      try {
        await fn(await release(dir), krewEnv(dir), dir);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

releaseTest(
  "krew installs a release's archive and kubectl lace runs the lace in it",
  async (out, env) => {
    // An empty local index, as an offline machine keeps it, so krew list and uninstall run.
    const index = join(env.KREW_ROOT, "index/default");
    await Deno.mkdir(index, { recursive: true });
    assert.equal((await run("git", ["init", "--quiet", index], env)).code, 0);
    const installed = await install(env, join(out, "lace.yaml"), join(out, ARCHIVE));
    assert.equal(installed.code, 0, installed.out);
    assert.match(installed.out, /Installed plugin: lace/);
    // krew's receipt of the install: from no index, the manifest given.
    const receipt = parse(await Deno.readTextFile(join(env.KREW_ROOT, "receipts/lace.yaml")));
    assert.equal(receipt.spec.version, "v0.1.0");
    assert.equal(receipt.status.source.name, "detached");
    const listed = await run(KREW, ["list"], env);
    assert.match(listed.out, /^detached\/lace$/m, listed.out);

    const plugin = await run(KUBECTL, ["lace", "targets", "--node", "node-a"], env);
    assert.equal(plugin.code, 0, plugin.out);
    assert.equal(plugin.out, "stand-in kubectl targets --node node-a\n");

    const removed = await run(KREW, ["uninstall", "lace"], env);
    assert.equal(removed.code, 0, removed.out);
    const gone = await run(KUBECTL, ["lace", "targets"], env);
    assert.notEqual(gone.code, 0);
    assert.match(gone.out, /unknown command "lace"/);
  },
);

releaseTest(
  "krew refuses an archive the manifest's sha256 does not name",
  async (out, env, dir) => {
    // An archive changed after the release (one byte of its gzip trailer).
    const tampered = join(dir, "tampered.tar.gz");
    const bytes = await Deno.readFile(join(out, ARCHIVE));
    bytes[bytes.length - 5] ^= 0xff;
    await Deno.writeFile(tampered, bytes);
    // The checked-in template, whose sha256 names no archive.
    for (
      const [manifest, archive] of [
        [join(out, "lace.yaml"), tampered],
        [join(repo, "deploy/krew/lace.yaml"), join(out, ARCHIVE)],
      ]
    ) {
      const refused = await install(env, manifest, archive);
      assert.notEqual(refused.code, 0, refused.out);
      assert.match(
        refused.out,
        /checksum does not match, want: [0-9a-f]{64}, got [0-9a-f]{64}/,
        refused.out,
      );
      const kubectl = await run(KUBECTL, ["lace", "targets"], env);
      assert.match(kubectl.out, /unknown command "lace"/);
    }
  },
);
