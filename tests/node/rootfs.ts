/**
 * Minimal root filesystems made from this machine's own Debian binaries: each program with the
 * shared libraries `ldd` says it loads, at the same paths. Used for the node's images where a
 * static binary is not to be had (Debian's iperf3, /bin/sh for the chart's init container, the
 * Deno runtime and libbpf for the agent).
 */
import { dirname, join } from "node:path";
import { run } from "../../lib/os/process.ts";

/** The absolute paths of the shared objects in `ldd` output (the loader included). */
export function parseLdd(output: string): string[] {
  const paths: string[] = [];
  for (const line of output.split("\n")) {
    const arrow = line.match(/=>\s+(\/\S+)\s+\(/);
    const bare = line.match(/^\s*(\/\S+)\s+\(/);
    const path = arrow?.[1] ?? bare?.[1];
    if (path && !paths.includes(path)) paths.push(path);
  }
  return paths;
}

/** Copies `source` to the same path under root (following symlinks), creating directories. */
async function copyInto(root: string, source: string, target = source): Promise<void> {
  const dest = join(root, target);
  await Deno.mkdir(dirname(dest), { recursive: true });
  await run(["cp", "--dereference", "--preserve=mode", source, dest]);
}

/**
 * Copies each program and every library it loads into root, at the paths they have here, and
 * `renames` (source → path in root) where the image wants another path.
 */
export async function copyPrograms(
  root: string,
  programs: string[],
  renames: Record<string, string> = {},
): Promise<void> {
  const libraries = new Set<string>();
  for (const program of [...programs, ...Object.keys(renames)]) {
    const ldd = await new Deno.Command("ldd", { args: [program], stdout: "piped", stderr: "null" })
      .output();
    // A static binary: ldd exits non-zero ("not a dynamic executable"), nothing to add.
    if (ldd.success) {
      for (const lib of parseLdd(new TextDecoder().decode(ldd.stdout))) libraries.add(lib);
    }
  }
  for (const program of programs) await copyInto(root, program);
  for (const [source, target] of Object.entries(renames)) await copyInto(root, source, target);
  for (const lib of libraries) await copyInto(root, lib);
}
