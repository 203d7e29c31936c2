/**
 * `lace kubectl`'s arguments (kubectl_command.ts runs it): the command the agent runs, the node
 * or the pod that names it, and how to reach the API, as kubectl's plugins take them.
 */
import { outputFlags, type OutputSettings } from "../flags/output.ts";
import { type CommandSpec, helpText, parseFlags, text, UsageError } from "../flags/parser.ts";

/** The chart's release namespace in the install the docs show (deploy/helm/lace/README.md). */
export const CHART_NAMESPACE = "lace-system";
/** The chart's agent pods: lace.selectorLabels' name and lace.labels' component. */
export const AGENT_SELECTOR = "app.kubernetes.io/name=lace,app.kubernetes.io/component=node-agent";

export interface KubectlOptions extends OutputSettings {
  node: string;
  /** Empty: the chart's namespace, else wherever the selector finds the node's agent. */
  namespace: string;
  selector: string;
  context: string;
  kubeconfig: string;
}

export const kubectlCommand: CommandSpec<KubectlOptions> = {
  name: "kubectl",
  summary: "Run lace doctor or lace targets in the agent pod of a node, found through the API " +
    "(kubectl's plugin: kubectl lace ...). The output is the agent's, and so is the exit code.",
  usage: "kubectl lace (doctor [probes | pod NAMESPACE/NAME] | targets) [--node NODE] " +
    "[-n NS] [-o text|json] [--context NAME] [--kubeconfig PATH]",
  subcommands: [
    {
      name: "doctor",
      args: "[probes | pod NAMESPACE/NAME]",
      summary: "lace doctor, doctor probes or doctor pod on the node's agent (doctor pod: on " +
        "the agent of the pod's node, no --node needed)",
    },
    { name: "targets", summary: "lace targets on the node's agent: every registered probe target" },
  ],
  positionals: true,
  flags: [
    {
      name: "node",
      key: "node",
      value: text,
      metavar: "NODE",
      help: "The node whose agent runs the command (doctor pod: the pod's node when not given)",
    },
    {
      name: "namespace",
      short: "n",
      key: "namespace",
      value: text,
      metavar: "NS",
      help: `The agents' namespace (default ${CHART_NAMESPACE}, else found by --selector in ` +
        "every namespace)",
    },
    {
      name: "selector",
      short: "l",
      key: "selector",
      value: text,
      metavar: "LABELS",
      help: "The agent pods' labels (a chart installed with nameOverride has another name)",
    },
    {
      name: "context",
      key: "context",
      value: text,
      metavar: "NAME",
      help: "The kubeconfig context to use (default its current-context)",
    },
    {
      name: "kubeconfig",
      key: "kubeconfig",
      value: text,
      metavar: "PATH",
      help: "The kubeconfig file (default KUBECONFIG's first file, else in-cluster)",
    },
    ...outputFlags<KubectlOptions>(),
  ],
  defaults: () => ({
    node: "",
    namespace: "",
    selector: AGENT_SELECTOR,
    context: "",
    kubeconfig: "",
    output: "text",
  }),
};

/** A pod named NAMESPACE/NAME on the command line. */
export interface PodRef {
  namespace: string;
  name: string;
}

/** What `lace kubectl` was asked: the command to run in the agent, and where. */
export interface KubectlRequest {
  options: KubectlOptions;
  /** `lace`'s arguments in the agent container. */
  remote: string[];
  /** The pod `doctor pod` names: its node is the one asked when --node is not given. */
  pod?: PodRef;
}

// A DNS-1123 label (a namespace) and subdomain (a pod's name), as the API server checks them.
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const POD_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** NAMESPACE/NAME as a PodRef; throws a UsageError saying what is wrong with it. */
export function parsePodRef(ref: string | undefined): PodRef {
  if (ref === undefined) {
    throw new UsageError("doctor pod needs the pod, as NAMESPACE/NAME");
  }
  const [namespace, name, ...more] = ref.split("/");
  if (
    more.length > 0 || name === undefined || !NAMESPACE.test(namespace) || namespace.length > 63 ||
    !POD_NAME.test(name) || name.length > 253
  ) {
    throw new UsageError(
      `${JSON.stringify(ref)} is not a pod: give it as NAMESPACE/NAME`,
    );
  }
  return { namespace, name };
}

/**
 * Parses `lace kubectl`'s arguments into the command the agent runs and where; null when help
 * was asked (printed). Only the commands that read the node are passed on (not `agent`,
 * `uninstall` or anything that changes it): the plugin is for looking.
 */
export function parseKubectlArgs(
  args: string[],
  env: Record<string, string | undefined> = {},
): KubectlRequest | null {
  const { options, positionals, help } = parseFlags(kubectlCommand, args, env);
  if (help) {
    console.log(helpText(kubectlCommand));
    return null;
  }
  // --json, not -o: an agent older than this plugin knows it too.
  const json = options.output === "json" ? ["--json"] : [];
  const [command, sub, ref, ...extra] = positionals;
  const unexpected = (word: string) =>
    new UsageError(`unexpected argument ${JSON.stringify(word)} (see --help)`);
  let request: KubectlRequest;
  if (command === "targets") {
    if (sub !== undefined) throw unexpected(sub);
    request = { options, remote: ["targets", ...json] };
  } else if (command === "doctor" && sub === undefined) {
    request = { options, remote: ["doctor", ...json] };
  } else if (command === "doctor" && sub === "probes") {
    if (ref !== undefined) throw unexpected(ref);
    request = { options, remote: ["doctor", "probes", ...json] };
  } else if (command === "doctor" && sub === "pod") {
    if (extra.length > 0) throw unexpected(extra[0]);
    const pod = parsePodRef(ref);
    request = { options, remote: ["doctor", "pod", `${pod.namespace}/${pod.name}`, ...json], pod };
  } else if (command === "doctor") {
    throw new UsageError(
      `doctor takes probes or pod NAMESPACE/NAME, not ${JSON.stringify(sub)}`,
    );
  } else {
    throw new UsageError(
      command === undefined
        ? "say what to run: doctor, doctor probes, doctor pod NAMESPACE/NAME or targets"
        : `unknown command ${JSON.stringify(command)}: run doctor or targets`,
    );
  }
  if (!options.node && !request.pod) {
    throw new UsageError(
      `${command} runs on one node's agent: give --node NODE (kubectl get nodes)`,
    );
  }
  return request;
}
