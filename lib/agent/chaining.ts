/**
 * The agent's part in CNI chaining: with `--cni-chaining=auto` it keeps the
 * `lace` plugin chained into the node's configuration while it runs and
 * leaves it there when it stops (a restart, a crash or an upgrade: the
 * plugin fails open meanwhile, so there is no window); with `manual` it
 * restores the files it chained before. At shutdown it undoes the chain only
 * when Lace is being removed from the cluster: its DaemonSet is gone or being
 * deleted (`helm uninstall`, `kubectl delete`), which the API says and no
 * signal does. Every outcome is a log line, a metric and a Node Event.
 */
import { getLogger } from "@logtape/logtape";
import type { Config } from "../config.ts";
import { Chainer, type FileReport, type PassResult } from "../cni/chaining/chainer.ts";
import { realTimers, type Timers, within } from "../time/timers.ts";
import { NodeRuntime } from "./container_runtime.ts";
import type { ChainingView } from "../agent_api/views.ts";
import { DEFAULT_PIN_PATH } from "../cni/protocol.ts";
import { pluginProblem } from "../cni/chaining/plugin.ts";
import type { EventSink, ObjectRef } from "../kube/event_sink.ts";
import type { Metrics } from "./metrics.ts";

const log = getLogger(["lace", "cni", "chaining"]);

export interface ChainingParts {
  metrics?: Pick<Metrics, "cniChaining" | "cniChainedFiles">;
  events: EventSink;
  node: ObjectRef;
  /**
   * Whether the agent is being uninstalled (its DaemonSet gone or being
   * deleted); asked once at shutdown. Absent or failing: not, and the chain stays.
   */
  uninstalling?: () => Promise<boolean>;
  /** The chaining's retries and resyncs; the process's own by default. */
  timers?: Timers;
  /** Reads the Node's status.nodeInfo.containerRuntimeVersion (for --container-runtime=auto). */
  readRuntimeVersion?: () => Promise<string>;
}

/** How long the first pass waits for the Node's runtime before it goes by CRI-O's rule. */
const RUNTIME_WAIT_MS = 5000;

/** What `startChaining` started: stop it at shutdown (it decides whether to undo). */
export interface RunningChaining {
  stop(): Promise<void>;
  view(): ChainingView;
}

const EVENT_REASONS: Record<FileReport["reason"], string> = {
  chained: "CniChained",
  restored: "CniChainRestored",
  unparsable: "CniConfigUnparsable",
  refused: "CniChainRefused",
  conflict: "CniChainConflict",
  "hand-chained": "CniHandChained",
  failed: "CniChainFailed",
  unsafe: "CniFileUnsafe",
  "bad-record": "CniStateRecordRefused",
  raced: "CniChainRaced",
  "no-runtime-file": "CniNoRuntimeConfig",
  "no-plugin": "CniPluginMissing",
};

/** Starts chaining as `config.cniChaining` says; see the module comment. */
export function startChaining(
  config:
    & Pick<
      Config,
      "cniChaining" | "cniConfDir" | "cniStateDir" | "cniSocket" | "cniChainFiles" | "cniBinDir"
    >
    & Partial<Pick<Config, "containerRuntime" | "pinPath" | "addressSharing">>,
  parts: ChainingParts,
): RunningChaining {
  const timers = parts.timers ?? realTimers;
  const nodeRuntime = new NodeRuntime({
    mode: config.containerRuntime ?? "auto",
    ...(parts.readRuntimeVersion ? { readVersion: parts.readRuntimeVersion } : {}),
    timers,
    onUnknown: (message) => parts.events.warn(parts.node, "CniRuntimeUnknown", message),
  });
  let view: Omit<ChainingView, "runtime"> = {
    mode: config.cniChaining,
    dir: config.cniConfDir,
    chained: [],
    problems: [],
  };
  const fullView = (): ChainingView => ({ ...view, runtime: nodeRuntime.view() });
  const passed = (result: PassResult, completed = true) => {
    if (completed) parts.metrics?.cniChainedFiles.set(result.chained.length);
    view = {
      ...view,
      ...(completed ? { chained: result.chained } : {}),
      problems: result.reports.filter((r) => r.level === "warning").map((r) => ({
        file: r.file,
        reason: r.reason,
        message: r.message,
      })),
    };
  };
  const chainer = new Chainer({
    confDir: config.cniConfDir,
    stateDir: config.cniStateDir,
    socket: config.cniSocket,
    // The plugin's default is the agent's: a default install's entries stay as they were.
    ...(config.pinPath !== undefined && config.pinPath !== DEFAULT_PIN_PATH
      ? { pinPath: config.pinPath }
      : {}),
    ...(config.addressSharing === "shared" ? { addressSharing: "shared" as const } : {}),
    targets: config.cniChainFiles,
    pluginProblem: () => pluginProblem(config.cniBinDir),
    onReport: (r) => {
      parts.metrics?.cniChaining.inc({ outcome: r.reason });
      const reason = EVENT_REASONS[r.reason];
      if (r.level === "warning") parts.events.warn(parts.node, reason, r.message);
      else parts.events.normal(parts.node, reason, r.message);
    },
    onPass: passed,
    runtime: () => nodeRuntime.current(),
    timers,
  });
  if (config.cniChaining === "manual") {
    // Turning chaining off: what the agent chained before goes back as it was.
    try {
      passed(chainer.restoreAll());
    } catch (error) {
      log.warning("Restoring the CNI files chained before failed: {error}", {
        error: String(error),
      });
    }
    return { stop: () => Promise.resolve(), view: fullView };
  }
  // Every pass, the first included, reports and retries what fails: the agent starts and
  // serves whatever the directory holds. The first waits a little for the Node's runtime.
  let stopping = false;
  const reading = nodeRuntime.reading;
  const first = nodeRuntime.start();
  if (reading) {
    void within(timers, first, RUNTIME_WAIT_MS, "Reading the Node's container runtime")
      .catch(() => {})
      .then(() => {
        if (!stopping) chainer.start();
      });
  } else chainer.start();
  log.info("Keeping the lace plugin chained into {dir} ({files})", {
    dir: config.cniConfDir,
    files: config.cniChainFiles.length ? "the configured files" : "the file the runtime uses",
  });
  return {
    view: fullView,
    async stop() {
      stopping = true;
      nodeRuntime.stop();
      await chainer.stop();
      let removing = false;
      try {
        removing = await (parts.uninstalling?.() ?? Promise.resolve(false));
      } catch (error) {
        log.warning(
          "Cannot tell whether Lace is being uninstalled ({error}): the CNI chain stays",
          { error: String(error) },
        );
      }
      if (!removing) {
        log.info("Stopping; the lace plugin stays chained (it fails open until the next agent)");
        return;
      }
      log.info("Lace's DaemonSet is being removed: restoring the CNI configuration");
      try {
        const restored = chainer.restoreAll();
        passed(restored);
        const left = restored.chained;
        if (left.length > 0) {
          log.warning("These files still name the lace plugin: {files}", { files: left });
        }
      } catch (error) {
        log.warning("Restoring the CNI configuration failed: {error}", { error: String(error) });
      }
    },
  };
}
