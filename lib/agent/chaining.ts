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
import { Chainer, type FileReport } from "../cni/chaining/chainer.ts";
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
}

/** What `startChaining` started: stop it at shutdown (it decides whether to undo). */
export interface RunningChaining {
  stop(): Promise<void>;
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
};

/** Starts chaining as `config.cniChaining` says; see the module comment. */
export function startChaining(
  config: Pick<
    Config,
    "cniChaining" | "cniConfDir" | "cniStateDir" | "cniSocket" | "cniChainFiles"
  >,
  parts: ChainingParts,
): RunningChaining {
  const chainer = new Chainer({
    confDir: config.cniConfDir,
    stateDir: config.cniStateDir,
    socket: config.cniSocket,
    targets: config.cniChainFiles,
    onReport: (r) => {
      parts.metrics?.cniChaining.inc({ outcome: r.reason });
      const reason = EVENT_REASONS[r.reason];
      if (r.level === "warning") parts.events.warn(parts.node, reason, r.message);
      else parts.events.normal(parts.node, reason, r.message);
    },
  });
  const count = (chained: string[]) => parts.metrics?.cniChainedFiles.set(chained.length);
  if (config.cniChaining === "manual") {
    // Turning chaining off: what the agent chained before goes back as it was.
    try {
      count(chainer.restoreAll().chained);
    } catch (error) {
      log.warning("Restoring the CNI files chained before failed: {error}", {
        error: String(error),
      });
    }
    return { stop: () => Promise.resolve() };
  }
  const first = chainer.chainOnce();
  count(first.chained);
  chainer.start();
  log.info("Keeping the lace plugin chained into {dir} ({files})", {
    dir: config.cniConfDir,
    files: config.cniChainFiles.length ? "the configured files" : "the file the runtime uses",
  });
  return {
    async stop() {
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
        const left = chainer.restoreAll().chained;
        count(left);
        if (left.length > 0) {
          log.warning("These files still name the lace plugin: {files}", { files: left });
        }
      } catch (error) {
        log.warning("Restoring the CNI configuration failed: {error}", { error: String(error) });
      }
    },
  };
}
