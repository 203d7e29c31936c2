import assert from "node:assert/strict";
import { V8_FLAGS } from "./v8_flags.ts";

const root = new URL("../../", import.meta.url);

Deno.test("the chart and the systemd unit start the agent with Lace's V8 flags", () => {
  const value = V8_FLAGS.join(",");
  const chart = Deno.readTextFileSync(new URL("deploy/helm/lace/templates/daemonset.yaml", root));
  assert.match(chart, new RegExp(`name: DENO_V8_FLAGS\\s+value: "${value}"`));
  const unit = Deno.readTextFileSync(new URL("deploy/systemd/lace-agent.service", root));
  assert.match(unit, new RegExp(`^Environment=DENO_V8_FLAGS=${value}$`, "m"));
});
