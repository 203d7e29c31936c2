/**
 * The chart's monitoring (`metrics.*`): the headless metrics Service, the ServiceMonitor and
 * PodMonitor, the scrape annotations, the PrometheusRule unit-tested with the real promtool
 * (tests/alerts/), and the Grafana dashboard, whose queries and the alerts' name only metrics a
 * running agent (or lace netcheck) exports.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import {
  agent,
  HELM,
  HELM_MISSING,
  helmTest,
  type Manifest,
  only,
  podSpec,
  refusal,
  render,
  REPO,
} from "./helpers/helm.ts";
import { needsRoot, skipIf, skipName } from "./helpers/skip.ts";
import { promtool, promtoolMissing } from "./helpers/promtool.ts";
import { promqlMetricNames, withoutGrafanaVariables } from "./helpers/promql_names.ts";
import { exposedNames, scrapeAgent, scrapeNetcheck } from "./helpers/scrapes.ts";
import { headingAnchors } from "./helpers/docs_markup.ts";

const EVERYTHING = [
  "metrics.serviceMonitor.enabled=true",
  "metrics.prometheusRule.enabled=true",
  "metrics.dashboard.enabled=true",
];
const OPERATOR_KINDS = ["ServiceMonitor", "PodMonitor", "PrometheusRule"];

/** Whether `labels` has every label of `selector`. */
function selects(selector: Record<string, string>, labels: Record<string, string> = {}): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** The value a relabeling sets on `label` without source labels (a constant), if any. */
function relabeled(endpoint: Manifest, label: string): string | undefined {
  return endpoint.relabelings?.find((r: Manifest) => r.targetLabel === label && !r.sourceLabels)
    ?.replacement;
}

/** The job the rules select the agents by (every `job="…"` matcher of the agents' group). */
function ruleJobs(rule: Manifest): Set<string> {
  const group = rule.spec.groups.find((g: Manifest) => g.name === "lace-agent");
  const jobs = new Set<string>();
  for (const r of group.rules) {
    for (const m of String(r.expr).matchAll(/job="([^"]*)"/g)) jobs.add(m[1]);
  }
  return jobs;
}

/** The chart's dashboard, parsed from its ConfigMap. */
function dashboardOf(manifests: Manifest[]): Manifest {
  const map = manifests.find((m) =>
    m.kind === "ConfigMap" && m.metadata.labels?.grafana_dashboard === "1"
  );
  assert.ok(map, "a ConfigMap labelled grafana_dashboard=1");
  return JSON.parse(map.data["lace-agents.json"]);
}

/** Every PromQL query of a dashboard: its panels' targets and its query variables. */
function dashboardQueries(dashboard: Manifest): string[] {
  const panels: Manifest[] = dashboard.panels.flatMap((p: Manifest) => [p, ...(p.panels ?? [])]);
  const queries = panels.flatMap((p) => (p.targets ?? []).map((t: Manifest) => t.expr as string));
  for (const v of dashboard.templating.list) {
    if (v.type === "query") queries.push(typeof v.query === "string" ? v.query : v.query.query);
  }
  return queries;
}

helmTest(
  "by default the chart renders a headless metrics Service over every agent, ready or not, and no Prometheus Operator object",
  async (h) => {
    const manifests = await render(h);
    const service = only(manifests, "Service");
    assert.equal(service.metadata.name, "lace-metrics");
    assert.equal(service.spec.clusterIP, "None");
    assert.equal(service.spec.publishNotReadyAddresses, true);
    const daemonSet = only(manifests, "DaemonSet");
    assert.deepEqual(service.spec.selector, daemonSet.spec.selector.matchLabels);
    assert.equal(service.metadata.namespace, daemonSet.metadata.namespace);
    const [port] = service.spec.ports;
    const containerPort = agent(manifests).ports.find((p: Manifest) => p.name === port.targetPort);
    assert.ok(containerPort, `the agent has a port named ${port.targetPort}`);
    assert.equal(port.port, containerPort.containerPort);
    assert.equal(port.port, 9808);
    for (const kind of OPERATOR_KINDS) {
      assert.equal(manifests.filter((m) => m.kind === kind).length, 0, kind);
    }
    assert.equal(manifests.filter((m) => m.metadata.labels?.grafana_dashboard).length, 0);
    const annotations = daemonSet.spec.template.metadata.annotations ?? {};
    assert.equal(annotations["prometheus.io/scrape"], undefined);
    assert.equal(
      (await render(h, ["metrics.service.enabled=false"])).filter((m) => m.kind === "Service")
        .length,
      0,
    );
  },
);

helmTest(
  "the ServiceMonitor selects the metrics Service alone and labels each scrape with the job the alerts select and its node",
  async (h) => {
    const manifests = await render(h, [
      ...EVERYTHING,
      "metrics.serviceMonitor.interval=15s",
      "metrics.serviceMonitor.labels.release=kube-prometheus-stack",
      "netcheck.enabled=true",
      "namespaceOverride=lace-agents",
    ]);
    const monitor = only(manifests, "ServiceMonitor");
    assert.equal(monitor.apiVersion, "monitoring.coreos.com/v1");
    assert.equal(monitor.metadata.labels.release, "kube-prometheus-stack");
    const services = manifests.filter((m) => m.kind === "Service");
    const selected = services.filter((s) =>
      selects(monitor.spec.selector.matchLabels, s.metadata.labels) &&
      monitor.spec.namespaceSelector.matchNames.includes(s.metadata.namespace)
    );
    assert.deepEqual(selected.map((s) => s.metadata.name), ["lace-metrics"]);
    assert.equal(selected[0].metadata.namespace, "lace-agents");
    const [endpoint] = monitor.spec.endpoints;
    assert.equal(endpoint.port, selected[0].spec.ports[0].name);
    assert.equal(endpoint.interval, "15s");
    assert.deepEqual(
      endpoint.relabelings.find((r: Manifest) => r.targetLabel === "node").sourceLabels,
      ["__meta_kubernetes_pod_node_name"],
    );
    const rule = only(manifests, "PrometheusRule");
    assert.deepEqual([...ruleJobs(rule)], [relabeled(endpoint, "job")]);
  },
);

helmTest(
  "the PodMonitor selects the agents' pods and not the netcheck runner's, with the same job",
  async (h) => {
    const manifests = await render(h, [
      "metrics.podMonitor.enabled=true",
      "metrics.prometheusRule.enabled=true",
      "netcheck.enabled=true",
      "fullnameOverride=probes",
    ]);
    const monitor = only(manifests, "PodMonitor");
    const selector = monitor.spec.selector.matchLabels;
    const daemonSet = only(manifests, "DaemonSet");
    assert.ok(selects(selector, daemonSet.spec.template.metadata.labels));
    const runner = only(manifests, "Deployment");
    assert.ok(!selects(selector, runner.spec.template.metadata.labels), "the runner is selected");
    const [endpoint] = monitor.spec.podMetricsEndpoints;
    assert.ok(agent(manifests).ports.some((p: Manifest) => p.name === endpoint.port));
    assert.equal(relabeled(endpoint, "job"), "probes-agent");
    assert.deepEqual([...ruleJobs(only(manifests, "PrometheusRule"))], ["probes-agent"]);
  },
);

helmTest(
  "a ServiceMonitor without the metrics Service, a malformed interval or an unknown key is refused with a reason",
  async (h) => {
    assert.match(
      await refusal(h, ["metrics.serviceMonitor.enabled=true", "metrics.service.enabled=false"]),
      /metrics\.serviceMonitor\.enabled needs metrics\.service\.enabled/,
    );
    assert.match(
      await refusal(h, ["metrics.serviceMonitor.interval=1.5m"]),
      /\/metrics\/serviceMonitor\/interval': '1\.5m' does not match pattern/,
    );
    assert.match(
      await refusal(h, ["metrics.podMonitor.every=1m"]),
      /\/metrics\/podMonitor': additional properties 'every' not allowed/,
    );
    assert.match(
      await refusal(h, ["metrics.prometheusRule.runbookBaseUrl=docs#x"]),
      /\/metrics\/prometheusRule\/runbookBaseUrl': 'docs#x' does not match pattern/,
    );
  },
);

helmTest(
  "metrics.scrapeAnnotations puts the prometheus.io annotations on the agents' pods beside podAnnotations",
  async (h) => {
    const manifests = await render(h, [
      "metrics.scrapeAnnotations=true",
      "node.metricsPort=9900",
      "node.healthPort=9901",
      "podAnnotations.team=net",
    ]);
    assert.deepEqual(only(manifests, "DaemonSet").spec.template.metadata.annotations, {
      "prometheus.io/scrape": "true",
      "prometheus.io/port": "9900",
      "prometheus.io/path": "/metrics",
      team: "net",
    });
    assert.equal(podSpec(manifests).hostNetwork, true, "the pod's IP is the node's");
  },
);

helmTest(
  "the dashboard's ConfigMap carries the sidecar's label, goes where the sidecar looks, and promtool parses its every query",
  async (h) => {
    const manifests = await render(h, [
      "metrics.dashboard.enabled=true",
      "metrics.dashboard.namespace=monitoring",
      "metrics.dashboard.annotations.grafana_folder=Lace",
    ]);
    const map = only(manifests, "ConfigMap", "lace-dashboard");
    assert.equal(map.metadata.namespace, "monitoring");
    assert.equal(map.metadata.annotations.grafana_folder, "Lace");
    const dashboard = dashboardOf(manifests);
    assert.equal(dashboard.uid, "lace-agents");
    const queries = dashboardQueries(dashboard);
    assert.ok(queries.length >= 30, `${queries.length} queries`);
    // Each query as a recording rule: promtool check rules parses it with Prometheus' parser.
    const missing = promtoolMissing();
    if (missing) throw new Error(missing);
    const rules = {
      groups: [{
        name: "dashboard",
        rules: queries.map((q, i) => ({
          record: `dashboard:query_${i}`,
          expr: withoutGrafanaVariables(q).replace(/^label_values\((.*),\s*\w+\)$/, "$1"),
        })),
      }],
    };
    const dir = await Deno.makeTempDir({ prefix: "lace-dashboard-" });
    try {
      await Deno.writeTextFile(join(dir, "queries.yaml"), stringify(rules));
      const checked = await promtool(["check", "rules", join(dir, "queries.yaml")]);
      assert.equal(checked.code, 0, checked.stdout + checked.stderr);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

/** Renders the chart's rules into `dir`/lace-rules.yaml, as a Prometheus rule file. */
async function writeRules(h: string, dir: string, overrides: string[] = []): Promise<Manifest> {
  const rule = only(
    await render(h, ["metrics.prometheusRule.enabled=true", ...overrides]),
    "PrometheusRule",
  );
  await Deno.writeTextFile(join(dir, "lace-rules.yaml"), stringify(rule.spec));
  return rule;
}

const PROMTOOL_MISSING = promtoolMissing();
const ALERT_TESTS = join(REPO, "tests/alerts/lace_alerts_test.yaml");

Deno.test({
  name: skipName(
    "the chart's alerts pass promtool check rules, and promtool test rules sees each fire and not fire",
    HELM_MISSING ?? PROMTOOL_MISSING,
  ),
  ignore: skipIf(HELM_MISSING) || skipIf(PROMTOOL_MISSING),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "lace-alerts-" });
    try {
      const rule = await writeRules(HELM!, dir);
      const checked = await promtool(["check", "rules", join(dir, "lace-rules.yaml")]);
      assert.equal(checked.code, 0, checked.stdout + checked.stderr);
      const tests = join(dir, "lace_alerts_test.yaml");
      await Deno.copyFile(ALERT_TESTS, tests);
      const tested = await promtool(["test", "rules", tests]);
      assert.equal(tested.code, 0, tested.stdout + tested.stderr);
      // Every alert has a case where it fires and one where it must not.
      const alerts: string[] = rule.spec.groups.flatMap((g: Manifest) =>
        g.rules.map((r: Manifest) => r.alert)
      );
      assert.ok(alerts.length >= 10, alerts.join(", "));
      const cases = (parse(await Deno.readTextFile(ALERT_TESTS)) as Manifest).tests
        .flatMap((t: Manifest) => t.alert_rule_test);
      for (const alert of alerts) {
        const of = cases.filter((c: Manifest) => c.alertname === alert);
        assert.ok(of.some((c: Manifest) => c.exp_alerts.length > 0), `${alert} never fires`);
        assert.ok(
          of.some((c: Manifest) => c.exp_alerts.length === 0),
          `${alert} never stays quiet`,
        );
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

helmTest(
  "every alert's runbook is a heading of docs/troubleshooting.md, under runbookBaseUrl when set",
  async (h) => {
    const anchors = headingAnchors(
      await Deno.readTextFile(join(REPO, "docs/troubleshooting.md")),
    );
    const base = "https://git.example.com/lace/blob/v0.1.0/docs/troubleshooting.md";
    for (
      const [overrides, prefix] of [[[], "docs/troubleshooting.md"], [[
        `metrics.prometheusRule.runbookBaseUrl=${base}`,
      ], base]] as const
    ) {
      const rule = only(
        await render(h, ["metrics.prometheusRule.enabled=true", ...overrides]),
        "PrometheusRule",
      );
      for (const r of rule.spec.groups.flatMap((g: Manifest) => g.rules)) {
        const url = String(r.annotations.runbook_url);
        assert.equal(url, `${prefix}#${r.alert.toLowerCase()}`, r.alert);
        assert.ok(
          anchors.has(r.alert.toLowerCase()),
          `docs/troubleshooting.md has no heading ${r.alert}`,
        );
        assert.ok(r.labels.severity === "critical" || r.labels.severity === "warning", r.alert);
      }
    }
  },
);

const SCRAPE_MISSING = HELM_MISSING ?? needsRoot();

Deno.test({
  name: skipName(
    "every metric the dashboard and the alerts name is in a running agent's scrape, or lace netcheck's for its alerts",
    SCRAPE_MISSING,
  ),
  ignore: skipIf(HELM_MISSING) || skipIf(needsRoot()),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const manifests = await render(HELM!, EVERYTHING);
    const rule = only(manifests, "PrometheusRule");
    const group = (name: string) =>
      rule.spec.groups.find((g: Manifest) => g.name === name).rules.map((r: Manifest) => r.expr);
    const namesOf = (queries: string[]) =>
      new Set(queries.flatMap((q) => [...promqlMetricNames(q)]));
    const agentNames = namesOf([
      ...dashboardQueries(dashboardOf(manifests)),
      ...group("lace-agent"),
    ]);
    const netcheckNames = namesOf(group("lace-netcheck"));
    assert.ok(agentNames.size >= 30, [...agentNames].join(" "));
    // `up` is Prometheus' own series for every target, not the agent's.
    const agentScrape = exposedNames((await scrapeAgent()).text).add("up");
    const netcheckScrape = exposedNames(await scrapeNetcheck());
    assert.deepEqual([...agentNames].filter((n) => !agentScrape.has(n)), []);
    assert.deepEqual([...netcheckNames].filter((n) => !netcheckScrape.has(n)), []);
  },
});
