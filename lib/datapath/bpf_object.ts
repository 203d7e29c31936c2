/**
 * The compiled BPF object the agent loads: `bpf/lace.bpf.o`, embedded in the
 * compiled binary with `deno compile --include bpf/lace.bpf.o`, or a file
 * named by `LACE_BPF_OBJECT` (for development and upgrade tests).
 */
import { createHash } from "node:crypto";

/** Where the object is read from: `LACE_BPF_OBJECT`, else the embedded file. */
export function bpfObjectLocation(): string | URL {
  return Deno.env.get("LACE_BPF_OBJECT") || new URL("../../bpf/lace.bpf.o", import.meta.url);
}

/** Returns the compiled object's bytes, or an error saying how to build it. */
export function bpfObjectBytes(): Uint8Array {
  const where = bpfObjectLocation();
  try {
    return Deno.readFileSync(where);
  } catch (cause) {
    const path = where instanceof URL ? where.pathname : where;
    if (cause instanceof Deno.errors.NotFound) {
      throw new Error(
        `BPF object "${path}" not found: build it with \`deno task bpf\` (or set LACE_BPF_OBJECT)`,
        { cause },
      );
    }
    throw new Error(`Cannot read BPF object "${path}"`, { cause });
  }
}

/** The object's sha256 in hex: how `lace doctor` tells which program is pinned. */
export function objectSha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
