/**
 * A stand-in for the compiled `lace` where one is needed as a file: a small native executable for
 * this machine that prints "stand-in" and its arguments. The compiled binary cannot be built here
 * (deno compile needs denort), so tests of packaging use this and say so.
 */
import { join } from "node:path";

/** Compiles the stand-in into `dir` with cc; returns its path. Throws with cc's output on failure. */
export async function elfStandIn(dir: string): Promise<string> {
  const source = join(dir, "stand-in.c");
  const binary = join(dir, "lace");
  await Deno.writeTextFile(
    source,
    '#include <stdio.h>\nint main(int c, char **v) { printf("stand-in"); ' +
      'for (int i = 1; i < c; i++) printf(" %s", v[i]); printf("\\n"); return 0; }\n',
  );
  const out = await new Deno.Command("cc", { args: ["-o", binary, source] }).output();
  if (!out.success) {
    throw new Error(`cc could not build the stand-in: ${new TextDecoder().decode(out.stderr)}`);
  }
  return binary;
}
