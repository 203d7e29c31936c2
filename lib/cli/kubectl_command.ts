/**
 * `lace kubectl`, which kubectl runs as its plugin `kubectl lace` (deploy/kubectl/kubectl-lace
 * execs it): finds the agent pod on a node through the API and runs `lace doctor`, `lace doctor
 * pod NS/NAME`, `lace doctor probes` or `lace targets` in its agent container, streaming the
 * output and exiting with the command's code. What an operator otherwise does by hand with
 * `kubectl get pods -o wide` and `kubectl exec`. The Kubernetes client is loaded only once the
 * arguments are good (kubectl_agent.ts).
 */
import { parseKubectlArgs } from "./kubectl_args.ts";

/** `lace kubectl ARGS`: parses, then loads the client and runs the command in the agent pod. */
export async function runKubectlCommand(args: string[]): Promise<number> {
  const request = parseKubectlArgs(args, Deno.env.toObject());
  if (request === null) return 0;
  const { runInAgent } = await import("./kubectl_agent.ts");
  return await runInAgent(request);
}
