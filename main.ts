/**
 * The one entry point of `lace`: the node agent, its operator commands, and
 * the chained CNI plugin (when the container runtime runs it with
 * CNI_COMMAND set). Commands are imported lazily so that the CNI path and
 * the small commands never load the Kubernetes client.
 */
import { errorChain } from "./lib/text/error_chain.ts";

/**
 * The commands' module, named in a variable: `deno run` reads the module graph
 * of every import it can see before main.ts starts, and the plugin's start
 * should not pay for the commands' graph. scripts/compile.ts includes it.
 */
export const COMMANDS_MODULE = "./lib/cli/commands.ts";

async function main(args: string[]): Promise<number> {
  if (Deno.env.get("CNI_COMMAND")) {
    const { runCniPlugin } = await import("./lib/cni/plugin.ts");
    return await runCniPlugin();
  }
  const { runCommand } = await import(COMMANDS_MODULE) as typeof import("./lib/cli/commands.ts");
  return await runCommand(args);
}

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (e) {
    // The commands print their own errors (lib/cli/commands.ts): this is the plugin's, or a
    // command module that failed to load.
    console.error(`lace: ${errorChain(e)}`);
    if (Deno.env.get("LACE_DEBUG")) console.error((e as Error)?.stack);
    code = 1;
  }
  Deno.exit(code);
}
