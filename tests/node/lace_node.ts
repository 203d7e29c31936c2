/**
 * What every step of the real-node test works with: the node Lace runs on, its API clients, the
 * failure handler that attaches the node's logs, and the chart upgrade with the test's values.
 */
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import { upgradeLace } from "./chart.ts";
import type { Node } from "./node.ts";
import { failWithLogs } from "./pod_checks.ts";

export interface LaceNode {
  node: Node;
  core: CoreV1Api;
  apps: AppsV1Api;
  /** Rethrows a failed wait with the agent's and the kubelet's logs. */
  onFailure: (error: unknown) => Promise<never>;
  /** helm upgrade with the values Lace was installed with, then `extra`. */
  upgrade: (...extra: string[]) => Promise<string>;
}

/** The clients and helpers of the steps on `node`, whose chart is installed with `values`. */
export function laceNode(node: Node, values: string[]): LaceNode {
  const config = node.controlPlane.adminConfig();
  return {
    node,
    core: config.makeApiClient(CoreV1Api),
    apps: config.makeApiClient(AppsV1Api),
    onFailure: failWithLogs(node),
    upgrade: (...extra: string[]) => upgradeLace(node, ...values, ...extra),
  };
}
