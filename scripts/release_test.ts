import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import denoJson from "../deno.json" with { type: "json" };
import { elfStandIn } from "../tests/helpers/elf_stand_in.ts";
import {
  archiveName,
  elfProblem,
  KREW_TEMPLATE,
  parseReleaseArgs,
  releaseManifest,
} from "./release.ts";

const SUM_A = "a".repeat(64);
const SUM_B = "b".repeat(64);

Deno.test("parseReleaseArgs() takes the base URL, binaries by arch, out and version", () => {
  assert.deepEqual(
    parseReleaseArgs([
      "--base-url",
      "https://example.com/lace/v1.2.3/",
      "--binary",
      "amd64=dist/a",
      "--binary=arm64=dist/b=c",
      "--out=o",
      "--version",
      "v1.2.3",
    ]),
    {
      baseUrl: "https://example.com/lace/v1.2.3",
      binaries: { amd64: "dist/a", arm64: "dist/b=c" },
      out: "o",
      version: "v1.2.3",
    },
  );
  const defaults = parseReleaseArgs(["--base-url=https://x.test", "--binary=amd64=l"]);
  assert.equal(defaults.out, "dist/release");
  assert.equal(defaults.version, `v${denoJson.version}`);
});

Deno.test("parseReleaseArgs() refuses what would make a broken release, saying why", () => {
  const refused: [string[], RegExp][] = [
    [["--binary=amd64=l"], /Missing --base-url/],
    [["--base-url=http://x.test", "--binary=amd64=l"], /must be https/],
    [["--base-url=nonsense", "--binary=amd64=l"], /is not a URL/],
    [["--base-url=https://x.test"], /Missing --binary.*--target x86_64-unknown-linux-gnu/],
    [["--base-url=https://x.test", "--binary=riscv64=l"], /ARCH one of amd64, arm64/],
    [["--base-url=https://x.test", "--binary=amd64"], /must be ARCH=PATH/],
    [["--base-url=https://x.test", "--binary=amd64=a", "--binary=amd64=b"], /amd64 given twice/],
    [["--base-url=https://x.test", "--binary=amd64=l", "--version=1.0"], /vX\.Y\.Z/],
    [["--base-url=https://x.test", "--binary=amd64=l", "--sign"], /Unknown argument "--sign"/],
    [["--base-url"], /Missing value for --base-url/],
  ];
  for (const [args, reason] of refused) {
    assert.throws(() => parseReleaseArgs(args), reason, args.join(" "));
  }
});

/** The first 20 bytes of an ELF header: class, data order and e_machine as given. */
function elfHead(machine: number, elfClass = 2, data = 1): Uint8Array {
  const head = new Uint8Array(20);
  head.set([0x7f, 0x45, 0x4c, 0x46, elfClass, data]);
  head[18] = machine & 0xff;
  head[19] = machine >> 8;
  return head;
}

Deno.test("elfProblem() passes a 64-bit ELF of the arch and names what else it found", () => {
  assert.equal(elfProblem(elfHead(62), "amd64"), undefined);
  assert.equal(elfProblem(elfHead(183), "arm64"), undefined);
  assert.match(
    elfProblem(elfHead(62), "arm64")!,
    /is an x86-64 ELF, not AArch64: compile it with .*--target aarch64-unknown-linux-gnu/,
  );
  assert.match(elfProblem(elfHead(183), "amd64")!, /is an AArch64 ELF, not x86-64/);
  assert.match(elfProblem(elfHead(243), "amd64")!, /is a machine 243 ELF/);
  assert.match(elfProblem(elfHead(62, 1), "amd64")!, /not a 64-bit little-endian/);
  assert.match(elfProblem(elfHead(62, 2, 2), "amd64")!, /not a 64-bit little-endian/);
  const script = new TextEncoder().encode("#!/bin/sh\nexec deno run main.ts\n");
  assert.match(elfProblem(script, "amd64")!, /is not an ELF executable/);
  assert.match(elfProblem(elfHead(62).subarray(0, 10), "amd64")!, /is not an ELF executable/);
});

Deno.test("releaseManifest() fills each released platform's uri and sha256, drops the rest", async () => {
  const template = await Deno.readTextFile(KREW_TEMPLATE);
  const both = parse(releaseManifest(template, "v9.8.7", "https://r.test/v9.8.7", {
    amd64: SUM_A,
    arm64: SUM_B,
  }));
  assert.equal(both.spec.version, "v9.8.7");
  assert.deepEqual(
    both.spec.platforms.map((p: { uri: string; sha256: string }) => [p.uri, p.sha256]),
    [
      [`https://r.test/v9.8.7/${archiveName("amd64")}`, SUM_A],
      [`https://r.test/v9.8.7/${archiveName("arm64")}`, SUM_B],
    ],
  );
  // Everything else is the template's: the files, the bin, the selector, the descriptions.
  const original = parse(template);
  assert.deepEqual(both.spec.platforms[1].files, original.spec.platforms[1].files);
  assert.equal(both.spec.platforms[0].bin, "kubectl-lace");
  assert.equal(both.spec.description, original.spec.description);
  assert.equal(both.metadata.name, "lace");

  const one = parse(releaseManifest(template, "v1.0.0", "https://r.test", { arm64: SUM_B }));
  assert.deepEqual(
    one.spec.platforms.map((p: { selector: { matchLabels: { arch: string } } }) =>
      p.selector.matchLabels.arch
    ),
    ["arm64"],
  );
  const amd64Only = template.replace(
    /- selector:\n\s+matchLabels:\n\s+os: linux\n\s+arch: arm64[^]*$/,
    "",
  );
  assert.throws(
    () => releaseManifest(amd64Only, "v1.0.0", "https://r.test", { arm64: SUM_B }),
    /has no linux\/arm64 platform/,
  );
});

async function release(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL("./release.ts", import.meta.url).pathname, ...args],
    env,
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

Deno.test("deno task release packs lace and kubectl-lace the same way twice, and sums them", async () => {
  const arch = Deno.build.arch === "x86_64" ? "amd64" : "arm64";
  const dir = await Deno.makeTempDir({ prefix: "lace-release-test-" });
  try {
    const lace = await elfStandIn(dir);
    const args = (out: string) => [
      "--base-url=https://r.test/v1.0.0",
      `--binary=${arch}=${lace}`,
      `--out=${out}`,
      "--version=v1.0.0",
    ];
    const first = await release(args(join(dir, "one")), { SOURCE_DATE_EPOCH: "1700000000" });
    assert.equal(first.code, 0, first.stderr);
    // A later run at another time gives the same bytes.
    await Deno.utime(lace, new Date(), new Date());
    const second = await release(args(join(dir, "two")), { SOURCE_DATE_EPOCH: "1700000000" });
    assert.equal(second.code, 0, second.stderr);
    const archive = join(dir, "one", archiveName(arch));
    assert.deepEqual(
      await Deno.readFile(archive),
      await Deno.readFile(join(dir, "two", archiveName(arch))),
    );

    const listing = await new Deno.Command("tar", {
      args: ["--list", "--verbose", "--file", archive],
    })
      .output();
    const entries = new TextDecoder().decode(listing.stdout).trim().split("\n");
    assert.deepEqual(entries.map((l) => l.split(/\s+/).slice(0, 2).join(" ")), [
      "-rwxr-xr-x 0/0",
      "-rwxr-xr-x 0/0",
    ]);
    assert.deepEqual(entries.map((l) => l.split(/\s+/).at(-1)), ["kubectl-lace", "lace"]);
    assert.ok(entries.every((l) => l.includes("2023-11-14")), entries.join("\n"));

    // SHA256SUMS is what sha256sum -c checks, and the manifest carries the same sum.
    const check = await new Deno.Command("sha256sum", {
      args: ["-c", "SHA256SUMS"],
      cwd: join(dir, "one"),
    })
      .output();
    assert.ok(check.success, new TextDecoder().decode(check.stdout));
    const sum = (await Deno.readTextFile(join(dir, "one", "SHA256SUMS"))).split(" ")[0];
    const manifest = parse(await Deno.readTextFile(join(dir, "one", "lace.yaml")));
    assert.deepEqual(manifest.spec.platforms.map((p: { sha256: string }) => p.sha256), [sum]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task release refuses a script or another arch's binary by its reason, writing nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-release-test-" });
  try {
    const script = join(dir, "lace.sh");
    await Deno.writeTextFile(script, '#!/bin/sh\nexec deno run -A main.ts "$@"\n');
    const other = Deno.build.arch === "x86_64" ? "arm64" : "amd64";
    const lace = await elfStandIn(dir);
    for (
      const [binary, reason] of [[`amd64=${script}`, /is not an ELF executable/], [
        `${other}=${lace}`,
        /ELF, not/,
      ]] as const
    ) {
      const out = join(dir, "out");
      const run = await release([
        "--base-url=https://r.test",
        `--binary=${binary}`,
        `--out=${out}`,
      ]);
      assert.equal(run.code, 1);
      assert.match(run.stderr, /^release: --binary /);
      assert.match(run.stderr, reason);
      // Not even the output directory: the refusal comes before any write.
      await assert.rejects(() => Deno.stat(out), Deno.errors.NotFound);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
