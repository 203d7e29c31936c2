/**
 * `lace netcheck` entry: flags → options, the client-node cluster, signals,
 * the run, the report. Returns the exit code: 0 every path passed, 1 a path
 * failed (or was slower than --min-bandwidth), 2 bad flags, 3 setup error
 * (cluster unreachable, pods not ready, another run holds the lease),
 * 130 interrupted; a --watch stopped by SIGTERM that removed everything it
 * made exits 0.
 */
import { helpText, UsageError } from "../flags/parser.ts";
import { setupLogging } from "../log/setup.ts";
import type { NetcheckCluster } from "./cluster/netcheck_cluster.ts";
import { netcheckCommand, parseNetcheckArgs } from "./flags.ts";
import type { NetcheckOptions } from "./options.ts";
import { NetcheckMetrics } from "./report/metrics.ts";
import { serveMetrics } from "./report/metrics_server.ts";
import {
  JsonReport,
  JunitReport,
  type PathSink,
  summaryData,
  textReport,
} from "./report/formats.ts";
import { EXIT_ERROR, EXIT_USAGE, newRunId, runChecks, STOP_REQUESTED } from "./pipeline/run.ts";
import { writeTextSync } from "../os/write_text.ts";

const writeOut = (text: string) => writeTextSync(Deno.stdout, text);
const writeErr = (text: string) => writeTextSync(Deno.stderr, text);

function holderIdentity(runId: string): string {
  let where = "";
  try {
    where = ` by ${Deno.env.get("USER") ?? "unknown"}@${Deno.hostname()}`;
  } catch {
    // Without permission to read them, the run id alone names the run.
  }
  return `${runId}${where}`;
}

/** Parses `args` and runs netcheck against the kubeconfig's cluster; returns the exit code. */
export async function runNetcheck(args: string[]): Promise<number> {
  let options: NetcheckOptions | null;
  try {
    options = parseNetcheckArgs(args, Deno.env.toObject());
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    for (const line of e.message.split("\n")) writeErr(`lace netcheck: ${line}\n`);
    return EXIT_USAGE;
  }
  if (options === null) {
    writeOut(helpText(netcheckCommand) + "\n");
    return 0;
  }
  // Without it every warning of the run (a DaemonSet it could not delete, a Lease it could not
  // release, the switch to sampled connectivity) would be dropped, in a runner pod's log too.
  setupLogging(options.logLevel, options.logFormat);
  let cluster: NetcheckCluster;
  try {
    const { connectCluster } = await import("./cluster/kube_adapter.ts");
    cluster = await connectCluster(options.kubeconfig);
  } catch (e) {
    writeErr(
      `lace netcheck: cannot load the kubeconfig: ${(e as Error).message}: ` +
        "name one with --kubeconfig or KUBECONFIG\n",
    );
    return EXIT_ERROR;
  }
  return await runWithCluster(options, cluster);
}

/**
 * Runs netcheck against `cluster` with the process's signals and streams:
 * the first Ctrl-C (or SIGTERM) stops the run and cleans up, a second one
 * exits at once.
 */
async function runWithCluster(
  options: NetcheckOptions,
  cluster: NetcheckCluster,
): Promise<number> {
  const controller = new AbortController();
  const listeners = (["SIGINT", "SIGTERM"] as const).map((name) => {
    const listener = () => {
      if (controller.signal.aborted) Deno.exit(130);
      writeErr(
        `\n${name === "SIGTERM" ? "Stopping" : "Interrupted"}: deleting the probe DaemonSet ` +
          "(Ctrl-C again to exit at once)\n",
      );
      // A service manager's stop ends a watch normally (exit 0 once everything is removed).
      controller.abort(name === "SIGTERM" ? STOP_REQUESTED : "SIGINT");
    };
    Deno.addSignalListener(name, listener);
    return { name, listener };
  });
  try {
    const sinks: PathSink[] = [];
    // A watch prints each round as it ends; one document of every path would never end.
    if (options.output === "json" && !options.watch) sinks.push(new JsonReport(writeOut));
    if (options.junit) sinks.push(new JunitReport(options.junit));
    const runId = newRunId();
    const metrics = options.watch ? new NetcheckMetrics(options.metricsFailingPaths) : undefined;
    if (metrics && options.metricsAddress) {
      try {
        const server = serveMetrics(metrics, options.metricsAddress, controller.signal);
        writeErr(
          `Serving metrics at http://${options.metricsAddress}/metrics (port ${server.port})\n`,
        );
      } catch (e) {
        writeErr(`lace netcheck: cannot serve metrics: ${(e as Error).message}\n`);
        return EXIT_ERROR;
      }
    }
    const { exitCode, summary, outcome } = await runChecks(options, {
      cluster,
      progress: {
        write: writeErr,
        isTerminal: options.progress && Deno.stderr.isTerminal(),
      },
      sinks,
      signal: controller.signal,
      runId,
      holder: holderIdentity(runId),
      metrics,
      onRound: (summary, outcome, info) => {
        const when = new Date().toISOString();
        if (options.output === "json") {
          writeOut(
            JSON.stringify({ time: when, ...info, ...summaryData(summary, outcome) }) + "\n",
          );
        } else {
          writeOut(
            `--- round ${info.round} at ${when}, ${(info.elapsedMs / 1000).toFixed(1)} s` +
              (info.overran ? " (longer than --interval)" : "") + "\n" +
              textReport(summary, outcome),
          );
        }
      },
    });
    if (options.watch) {
      if (outcome.error && outcome.status !== "interrupted") {
        writeErr(`lace netcheck: ${outcome.error}\n`);
      }
      return exitCode;
    }
    if (options.output === "text") writeOut(textReport(summary, outcome));
    else if (outcome.error) writeErr(`lace netcheck: ${outcome.error}\n`);
    return exitCode;
  } finally {
    for (const { name, listener } of listeners) Deno.removeSignalListener(name, listener);
  }
}
