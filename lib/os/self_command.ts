/**
 * How to re-run this program with a hidden subcommand (the simulated pods'
 * servers, the prober): the compiled binary runs itself; under `deno` the
 * entry point is run again.
 */
import { fileURLToPath } from "node:url";

/** True when running as `deno …` rather than as the compiled binary. */
export function underDeno(): boolean {
  const exe = Deno.execPath();
  return exe.slice(exe.lastIndexOf("/") + 1) === "deno";
}

/** The command line that runs `main.ts <sub> <args…>` (or the binary with them). */
export function selfCommand(sub: string, args: string[]): string[] {
  if (!underDeno()) return [Deno.execPath(), sub, ...args];
  const main = fileURLToPath(new URL("../../main.ts", import.meta.url));
  return [Deno.execPath(), "run", "-A", main, sub, ...args];
}

/**
 * The command line for a sim module that runs itself when it is the main
 * module: under `deno` the module file directly (no dependency on main.ts),
 * in the compiled binary the hidden subcommand.
 */
export function moduleCommand(moduleUrl: string, sub: string, args: string[]): string[] {
  if (!underDeno()) return [Deno.execPath(), sub, ...args];
  return [Deno.execPath(), "run", "-A", fileURLToPath(moduleUrl), ...args];
}

/**
 * The command line that runs this program as the CNI plugin (the caller sets
 * CNI_COMMAND and the other CNI variables): main.ts, or the binary, with no
 * subcommand.
 */
export function selfPluginCommand(): string[] {
  if (!underDeno()) return [Deno.execPath()];
  const main = fileURLToPath(new URL("../../main.ts", import.meta.url));
  return [Deno.execPath(), "run", "-A", "--quiet", main];
}
