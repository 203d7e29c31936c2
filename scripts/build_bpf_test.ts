/**
 * `deno task bpf` builds for the machine it runs on: the target architecture
 * and the multiarch include directory follow `uname -m`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SCRIPT = fileURLToPath(new URL("./build_bpf.sh", import.meta.url));

/** The clang command the script would run on a machine whose `uname -m` says `machine`. */
async function commandFor(machine: string): Promise<{ code: number; out: string; err: string }> {
  const bin = await Deno.makeTempDir({ prefix: "lace-fake-uname-" });
  try {
    await Deno.writeTextFile(join(bin, "uname"), `#!/bin/sh\necho ${machine}\n`, { mode: 0o755 });
    const out = await new Deno.Command("bash", {
      args: [SCRIPT],
      env: { PATH: `${bin}:${Deno.env.get("PATH")}`, BUILD_BPF_PRINT: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    return { code: out.code, out: dec.decode(out.stdout).trim(), err: dec.decode(out.stderr) };
  } finally {
    await Deno.remove(bin, { recursive: true });
  }
}

const MACHINES: [string, string, string][] = [
  ["x86_64", "x86", "x86_64-linux-gnu"],
  ["aarch64", "arm64", "aarch64-linux-gnu"],
  ["ppc64le", "powerpc", "powerpc64le-linux-gnu"],
  ["s390x", "s390", "s390x-linux-gnu"],
  ["riscv64", "riscv", "riscv64-linux-gnu"],
];

for (const [machine, arch, multiarch] of MACHINES) {
  Deno.test(`the BPF build on ${machine} targets __TARGET_ARCH_${arch} with ${multiarch} headers`, async () => {
    const r = await commandFor(machine);
    assert.equal(r.code, 0, r.err);
    const args = r.out.split(" ");
    assert.equal(args[0], "clang");
    assert(args.includes(`-D__TARGET_ARCH_${arch}`), r.out);
    assert(args.includes(`-I/usr/include/${multiarch}`), r.out);
    assert.equal(args.filter((a) => a.startsWith("-D__TARGET_ARCH_")).length, 1, r.out);
    assert.deepEqual(args.slice(-4), ["-c", "bpf/lace.bpf.c", "-o", "bpf/lace.bpf.o"]);
  });
}

Deno.test("the BPF build refuses a machine it has no target for, naming it", async () => {
  const r = await commandFor("pdp11");
  assert.equal(r.code, 1);
  assert.match(r.err, /no BPF target known for machine "pdp11"/);
});
