/**
 * The deployment files beside the chart: the example CNI conflist and the systemd unit.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { isExecutable } from "./helpers/executable.ts";
import { REPO } from "./helpers/helm.ts";
import { skipIf, skipName } from "./helpers/skip.ts";

Deno.test("the example conflist chains the lace plugin after the network plugin", async () => {
  const conflist = JSON.parse(await Deno.readTextFile(join(REPO, "deploy/cni/10-lace.conflist")));
  assert.equal(conflist.cniVersion, "1.0.0");
  assert.ok(conflist.plugins.length >= 2);
  const last = conflist.plugins.at(-1);
  assert.equal(last.type, "lace");
  assert.equal(last.socket, "/run/lace/cni.sock");
  assert.equal(last.timeout, "1s");
  assert.equal(last.network, conflist.plugins[0].network);
  assert.equal(last.networkId, conflist.plugins[0].networkId);
});

const systemdAnalyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].find(isExecutable);

const noSystemdAnalyze = systemdAnalyze ? undefined : "systemd-analyze not installed (systemd)";

Deno.test({
  name: skipName("the systemd unit passes systemd-analyze verify", noSystemdAnalyze),
  ignore: skipIf(noSystemdAnalyze),
  async fn() {
    // verify also checks that ExecStart exists; the binary is not installed on a build machine,
    // so the copy points at an executable that is.
    const unit = await Deno.readTextFile(join(REPO, "deploy/systemd/lace-agent.service"));
    assert.match(unit, /^ExecStart=\/usr\/local\/bin\/lace agent$/m);
    const dir = await Deno.makeTempDir({ prefix: "lace-unit-" });
    try {
      const path = join(dir, "lace-agent.service");
      await Deno.writeTextFile(
        path,
        unit.replace(/^ExecStart=\/usr\/local\/bin\/lace /m, `ExecStart=${Deno.execPath()} `),
      );
      const out = await new Deno.Command(systemdAnalyze!, {
        args: ["verify", path],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, text);
      assert.doesNotMatch(text, /lace-agent\.service/, text);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** The [Service] settings of a unit file, each key with every value it was given, in order. */
function serviceSettings(unit: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = "";
  for (const raw of unit.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    if (line.startsWith("[")) {
      section = line;
      continue;
    }
    const eq = line.indexOf("=");
    if (section !== "[Service]" || eq < 0) continue;
    const key = line.slice(0, eq);
    settings.set(key, [...settings.get(key) ?? [], line.slice(eq + 1)]);
  }
  return settings;
}

/** The variables of an EnvironmentFile (a later line wins, as systemd reads it). */
function envSettings(text: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) env.set(m[1], m[2]);
  }
  return env;
}

/** Whether `path` is `dir` or lies below it. */
function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

Deno.test("the systemd unit lets the agent write every directory the env file gives it, with chaining on", async () => {
  const unit = serviceSettings(
    await Deno.readTextFile(join(REPO, "deploy/systemd/lace-agent.service")),
  );
  const env = envSettings(await Deno.readTextFile(join(REPO, "deploy/systemd/lace-agent.env")));
  const words = (key: string) =>
    (unit.get(key) ?? []).flatMap((v) => v.split(/\s+/)).filter(Boolean);
  const writable = [
    ...words("ReadWritePaths").map((p) => p.replace(/^-/, "")),
    ...words("StateDirectory").map((d) => `/var/lib/${d}`),
    ...words("RuntimeDirectory").map((d) => `/run/${d}`),
    ...words("ConfigurationDirectory").map((d) => `/etc/${d}`),
  ];
  assert.equal(words("ProtectSystem").join(), "strict");
  assert.equal(env.get("LACE_CNI_CHAINING"), "auto");
  assert.match(env.get("LACE_CONTAINER_RUNTIME") ?? "", /^(auto|containerd|crio)$/);
  const wanted = {
    LACE_PIN_PATH: env.get("LACE_PIN_PATH"),
    LACE_CNI_CONF_DIR: env.get("LACE_CNI_CONF_DIR"),
    LACE_CNI_STATE_DIR: env.get("LACE_CNI_STATE_DIR"),
    "LACE_AGENT_SOCKET's directory": dirname(env.get("LACE_AGENT_SOCKET") ?? ""),
    "LACE_CNI_SOCKET's directory": dirname(env.get("LACE_CNI_SOCKET") ?? ""),
  };
  for (const [what, path] of Object.entries(wanted)) {
    if (!path?.startsWith("/")) assert.fail(`the env file sets no absolute ${what}: ${path}`);
    assert.ok(
      writable.some((dir) => within(path, dir)),
      `${what} ${path} is not writable in the unit (writable: ${writable.join(" ")})`,
    );
  }
  // ProtectKernelTunables= keeps /sys/fs/bpf itself read-only whatever ReadWritePaths= says: a
  // writable bpffs path must lie below it, and the unit makes it before the sandbox.
  for (const path of writable.filter((p) => within(p, "/sys/fs/bpf"))) {
    assert.notEqual(path, "/sys/fs/bpf", "ReadWritePaths=/sys/fs/bpf is read-only all the same");
    assert.ok(
      words("ExecStartPre").join(" ").includes(`mkdir -p -m 0700 ${path}`),
      `${path} is made by ExecStartPre= before the sandbox`,
    );
  }
});
