/**
 * A CNI configuration directory and a state directory in a temporary
 * directory, with a Chainer over them, for the chaining tests.
 */
import { join } from "node:path";
import { Chainer, type ChainerOptions, type FileReport } from "./chainer.ts";

export const SOCKET = "/run/lace/cni.sock";

/** The world: `files` written 0640 into the configuration directory. */
export async function world(files: Record<string, string>) {
  const root = await Deno.makeTempDir({ prefix: "lace-chain-" });
  const confDir = join(root, "net.d");
  const stateDir = join(root, "state");
  await Deno.mkdir(confDir);
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(join(confDir, name), text, { mode: 0o640 });
    await Deno.chmod(join(confDir, name), 0o640);
  }
  const reports: FileReport[] = [];
  const make = (o: Partial<ChainerOptions> = {}) =>
    new Chainer({
      confDir,
      stateDir,
      socket: SOCKET,
      targets: [],
      onReport: (r) => reports.push(r),
      ...o,
    });
  return {
    root,
    confDir,
    stateDir,
    reports,
    make,
    read: (name: string) => Deno.readTextFileSync(join(confDir, name)),
    names: () => [...Deno.readDirSync(confDir)].map((e) => e.name).sort(),
    laces: (name: string) =>
      JSON.parse(Deno.readTextFileSync(join(confDir, name))).plugins.filter((
        p: { type: string },
      ) => p.type === "lace").length,
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

/** Rewrites a file the way a network plugin's installer does: a new file renamed over it. */
export function rewrite(dir: string, name: string, text: string) {
  Deno.writeTextFileSync(join(dir, `.${name}.new`), text);
  Deno.renameSync(join(dir, `.${name}.new`), join(dir, name));
}

/** A CNI bin directory under `root` holding an executable `lace`, as the init container leaves it. */
export function pluginDir(root: string): string {
  const bin = join(root, "bin");
  Deno.mkdirSync(bin, { mode: 0o755 });
  Deno.chmodSync(bin, 0o755);
  Deno.writeTextFileSync(join(bin, "lace"), "#!/bin/sh\n", { mode: 0o755 });
  Deno.chmodSync(join(bin, "lace"), 0o755);
  return bin;
}
