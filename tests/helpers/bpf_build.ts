/**
 * Builds BPF objects for upgrade tests: today's source with extra defines, or
 * another release's source, through the script `deno task bpf` runs
 * (scripts/build_bpf.sh), so the build is defined once.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Today's BPF source directory. */
export const BPF_DIR = join(ROOT, "bpf");

/**
 * Compiles `source` (a .bpf.c beside its lace.h) into `out` as `deno task bpf`
 * does, plus `defines` (e.g. `["LACE_TEST_VARIANT"]`); returns `out`.
 */
export async function buildBpfObject(
  opts: { source?: string; out: string; defines?: string[] },
): Promise<string> {
  const source = opts.source ?? join(BPF_DIR, "lace.bpf.c");
  const args = [
    join(ROOT, "scripts/build_bpf.sh"),
    source,
    opts.out,
    `-I${dirname(source)}`,
    ...(opts.defines ?? []).map((d) => `-D${d}`),
  ];
  const out = await new Deno.Command("bash", { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(
      `Building BPF object "${opts.out}" from "${source}" failed:\n` +
        new TextDecoder().decode(out.stderr),
    );
  }
  return opts.out;
}
