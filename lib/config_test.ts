import assert from "node:assert/strict";
import {
  ConfigError,
  defaultConfig,
  DURATION_BOUNDS,
  durationProblem,
  listenAddressProblem,
  markProblems,
  nodeProblems,
  validateConfig,
  validateMark,
} from "./config.ts";
import { markFor } from "./probe/key.ts";
import { MAX_TIMER_MS } from "./time/duration.ts";

Deno.test("validateMark() refuses overlapping, empty and overflowing layouts", () => {
  assert.throws(() => validateMark(0x10000, 16), /overlaps/);
  assert.throws(() => validateMark(0x1000, 4), /overlaps/);
  assert.throws(() => validateMark(0, 16), /non-zero/);
  assert.throws(() => validateMark(0x1_0000_0000, 16), /32-bit/);
  assert.throws(() => validateMark(0x1, 17), /0\.\.16/);
  validateMark(0x1000, 16);
  validateMark(0x80000000, 8);
});

Deno.test("validateConfig() names the bad value", () => {
  const base = { ...defaultConfig(), nodeName: "n1" };
  validateConfig(base);
  const bad: [Partial<typeof base>, RegExp][] = [
    [{ pinPath: "relative" }, /Pin path must be absolute: "relative"/],
    [
      { containerRuntime: "docker" as "auto" },
      /Container runtime must be one of auto, containerd, crio: "docker"/,
    ],
    [{ kubeletCgroup: "kubelet.service" }, /absolute path or "auto"/],
    [{ nodeName: "" }, /Node name is required/],
    [{ useApi: false, podsDir: "" }, /No pod source/],
    [{ metricsAddr: "9808" }, /host:port/],
    [{ resyncMs: 10 }, /Resync interval must be 1s\.\.24h: 10ms/],
    [{ resyncMs: 600 * 3_600_000 }, /Resync interval must be 1s\.\.24h: 600h/],
    [{ debounceMs: 2 * 60_000 }, /Debounce must be 0s\.\.1m: 2m/],
    [{ watchLivenessMs: 2 * 3_600_000 }, /Watch liveness interval must be 1s\.\.1h: 2h/],
    [{ metricsAddr: "127.0.0.1:99999" }, /port must be 1\.\.65535/],
    [{ metricsAddr: "127.0.0.1:0" }, /port must be 1\.\.65535/],
    [{ healthAddr: "10.0.0.1:9809" }, /Health address must be on loopback .*: "10\.0\.0\.1:9809"/],
    [{ healthAddr: "0.0.0.0:9809" }, /Health address must be on loopback/],
    [{ healthAddr: "localhost:9809" }, /Health address must be on loopback/],
    [{ healthAddr: "127.0.0.1:9808" }, /Health address must differ from the metrics address/],
    [{ cniSocket: "relative/path" }, /CNI socket must be an absolute path/],
    [{ agentSocket: "run/agent.sock" }, /Agent socket must be an absolute path or empty/],
    [{ hostCgroupRoot: "host" }, /Host root prefix must be an absolute path/],
    [{ networkAnnotation: "bad key!" }, /not a valid annotation key/],
    [{ maxTargetsPerPod: 0 }, /Max targets per pod must be a whole number 1\.\.65536/],
    [{ maxTargetsPerPod: 70_000 }, /Max targets per pod .*: 70000/],
    [{ maxTargetsPerPod: 2.5 }, /Max targets per pod/],
    [{ lifecycleHooks: "no" as unknown as boolean }, /Lifecycle hooks must be true or false: "no"/],
    [
      { addressConflict: "newer-wins" as "older-wins" },
      /Address conflict policy must be one of fail-closed, older-wins/,
    ],
    [
      { addressSharing: "sometimes" as "shared" },
      /Address sharing must be one of exclusive, shared: "sometimes"/,
    ],
    [{ cniChaining: "always" as "auto" }, /^CNI chaining must be one of auto, manual: "always"$/],
    [
      { cniConfDir: "etc/cni/net.d" },
      /^CNI conf dir must be an absolute path: "etc\/cni\/net\.d"$/,
    ],
    [{ cniStateDir: "lace" }, /^CNI state dir must be an absolute path: "lace"$/],
    [{ cniBinDir: "" }, /^CNI bin dir must be an absolute path: ""$/],
    [{ healthAddr: "9809" }, /^Health address must be host:port: "9809"$/],
    [{ healthAddr: "1127.0.0.1:9809" }, /^Health address must be on loopback/],
    [{ healthAddr: "127.0.0.1.5:9809" }, /^Health address must be on loopback/],
  ];
  for (const [patch, re] of bad) {
    assert.throws(() => validateConfig({ ...base, ...patch }), (e: Error) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, re);
      return true;
    });
  }
  validateConfig({ ...base, kubeletCgroup: "auto", metricsAddr: "[::1]:9808" });
  validateConfig({ ...base, healthAddr: "127.0.0.1:9809" });
  validateConfig({ ...base, healthAddr: "[::1]:9809" });
  validateConfig({ ...base, healthAddr: "127.10.200.30:9809" });
  validateConfig({ ...base, metricsAddr: "", cniSocket: "", hostCgroupRoot: "/host" });
});

Deno.test("validateConfig() takes a DaemonSet as NAMESPACE/NAME of lowercase DNS labels only", () => {
  const base = { ...defaultConfig(), nodeName: "n1" };
  for (const daemonSet of ["", "lace-system/lace", "kube-system/lace.agent-2"]) {
    validateConfig({ ...base, daemonSet });
  }
  for (
    const daemonSet of ["lace", "-ns/lace", "ns/-lace", "Lace/lace", "ns/lace/x", "ns/", "/lace"]
  ) {
    assert.throws(() => validateConfig({ ...base, daemonSet }), (e: Error) => {
      assert.ok(e instanceof ConfigError);
      assert.deepEqual(e.problems, [`DaemonSet must be NAMESPACE/NAME: "${daemonSet}"`]);
      return true;
    }, daemonSet);
  }
});

Deno.test("validateConfig() reports every bad value at once", () => {
  const bad = {
    ...defaultConfig(),
    nodeName: "",
    pinPath: "relative",
    metricsAddr: "localhost:65536",
    watchLivenessMs: 0,
  };
  assert.throws(() => validateConfig(bad), (e: Error) => {
    assert.ok(e instanceof ConfigError);
    assert.equal(e.problems.length, 4, e.message);
    assert.deepEqual(e.message.split("\n"), e.problems);
    return true;
  });
});

Deno.test("every duration bound stays below the longest a timer can wait", () => {
  for (const [key, { max }] of Object.entries(DURATION_BOUNDS)) {
    assert.ok(max <= MAX_TIMER_MS, key);
  }
});

Deno.test("markFor() takes network ids 1 and 65535 and names a refused one", () => {
  const c = { probeMark: 0x1000, markShift: 16 };
  assert.equal(markFor(c, 1), 0x00011000);
  assert.equal(markFor(c, 65535), 0xffff1000);
  assert.throws(() => markFor(c, 0), new RangeError("Network id out of range 1..65535: 0"));
  assert.throws(() => markFor(c, 65536), new RangeError("Network id out of range 1..65535: 65536"));
});

Deno.test("markProblems() takes shifts 0 and 16 and refuses -1, 17 and fractions", () => {
  assert.deepEqual(markProblems(0x1, 16), []);
  assert.deepEqual(markProblems(0x10000, 0), []);
  for (const shift of [-1, 17, 1.5]) {
    assert.deepEqual(markProblems(0x1, shift), [
      `Mark shift must be 0..16 so that 16 network bits fit in the 32-bit mark: ${shift}`,
    ]);
  }
});

Deno.test("markProblems() takes flags 1 and 0xffffffff outside the network bits, refuses 0 and 2^32", () => {
  assert.deepEqual(markProblems(1, 16), []);
  assert.deepEqual(markProblems(0xffff0000, 0), []);
  for (const flag of [0, -1, 0x1_0000_0000, 1.5]) {
    assert.deepEqual(markProblems(flag, 0), [
      `Probe mark must be a non-zero 32-bit value: ${flag}`,
    ]);
  }
  assert.deepEqual(markProblems(0x18000, 16), [
    "Probe mark 0x18000 overlaps the network bits 0xffff0000 (mark shift 16): choose a flag outside them or another shift",
  ]);
  // The highest and the lowest network bit alone each overlap.
  assert.equal(markProblems(0x80000000, 16).length, 1);
  assert.equal(markProblems(0x8000, 0).length, 1);
  assert.deepEqual(markProblems(0x8000, 16), []);
});

Deno.test("listenAddressProblem() takes ports 1 and 65535 and refuses 0 and 65536", () => {
  for (const addr of ["127.0.0.1:1", "127.0.0.1:65535", "[::1]:9808", "node-a:80"]) {
    assert.equal(listenAddressProblem("Metrics address", addr), undefined, addr);
  }
  for (const addr of ["127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:99999"]) {
    assert.equal(
      listenAddressProblem("Metrics address", addr),
      `Metrics address port must be 1..65535: "${addr}"`,
    );
  }
});

Deno.test("listenAddressProblem() wants exactly host:port", () => {
  for (
    const addr of [":80", "host", "host:", "a b:80", "host:123456", "[::1:80", "x:80 ", "1:2:3"]
  ) {
    assert.equal(
      listenAddressProblem("Metrics address", addr),
      `Metrics address must be host:port: "${addr}"`,
      addr,
    );
  }
});

Deno.test("durationProblem() takes both bounds and refuses one past each, and a non-number", () => {
  assert.equal(durationProblem("Resync interval", 1000, 1000, 60_000), undefined);
  assert.equal(durationProblem("Resync interval", 60_000, 1000, 60_000), undefined);
  assert.equal(
    durationProblem("Resync interval", 999, 1000, 60_000),
    "Resync interval must be 1s..1m: 999ms",
  );
  assert.equal(
    durationProblem("Resync interval", 60_001, 1000, 60_000),
    "Resync interval must be 1s..1m: 1m1ms",
  );
  assert.equal(
    durationProblem("Resync interval", NaN, 1000, 60_000),
    "Resync interval must be 1s..1m: NaN",
  );
});

Deno.test("validateConfig() takes every timer at its bounds and refuses one past each", () => {
  const base = { ...defaultConfig(), nodeName: "n1" };
  for (const [key, { min, max }] of Object.entries(DURATION_BOUNDS)) {
    validateConfig({ ...base, [key]: min });
    validateConfig({ ...base, [key]: max });
    for (const ms of [min - 1, max + 1]) {
      assert.throws(() => validateConfig({ ...base, [key]: ms }), ConfigError, `${key} ${ms}`);
    }
  }
});

Deno.test("validateConfig() checks each node path on its own", () => {
  const base = { ...defaultConfig(), nodeName: "n1" };
  const problems = (patch: Partial<typeof base>) => {
    try {
      validateConfig({ ...base, ...patch });
      return [];
    } catch (e) {
      return (e as ConfigError).problems;
    }
  };
  assert.deepEqual(problems({ kubeletCgroup: "auto" }), []);
  assert.deepEqual(problems({ kubeletCgroup: "/k" }), []);
  assert.deepEqual(problems({ kubeletCgroup: "" }), [
    `Kubelet cgroup must be an absolute path or "auto": ""`,
  ]);
  assert.deepEqual(problems({ hostCgroupRoot: "" }), []);
  assert.deepEqual(problems({ pinPath: "" }), [`Pin path must be absolute: ""`]);
  assert.deepEqual(problems({ cniSocket: "" }), []);
  assert.deepEqual(problems({ metricsAddr: "" }), []);
  assert.deepEqual(problems({ metricsAddr: "x" }), [`Metrics address must be host:port: "x"`]);
});

Deno.test("validateConfig() needs a node name only with the API, and a pod source only without it", () => {
  const base = defaultConfig();
  validateConfig({ ...base, useApi: false, podsDir: "/pods", nodeName: "" });
  validateConfig({ ...base, useApi: true, podsDir: "", nodeName: "n1" });
  assert.throws(
    () => validateConfig({ ...base, useApi: true, podsDir: "/pods", nodeName: "" }),
    (e: Error) => {
      assert.deepEqual((e as ConfigError).problems, [
        "Node name is required with the Kubernetes API: set --node-name or NODE_NAME",
      ]);
      return true;
    },
  );
  assert.throws(
    () => validateConfig({ ...base, useApi: false, podsDir: "", nodeName: "n1" }),
    (e: Error) => {
      assert.deepEqual((e as ConfigError).problems, [
        "No pod source: give --pods-dir, or leave the Kubernetes API enabled",
      ]);
      return true;
    },
  );
});

Deno.test("validateConfig() takes annotation keys with and without a DNS prefix and refuses malformed ones", () => {
  const base = { ...defaultConfig(), nodeName: "n1" };
  for (const key of ["lace.io/network", "network", "a.b-c/x_y.z", "N1"]) {
    validateConfig({ ...base, networkAnnotation: key, networkIdAnnotation: key });
  }
  for (const key of ["", "Lace.io/network", "/network", "lace.io/", "-x", "a/b/c", "x y"]) {
    assert.throws(
      () => validateConfig({ ...base, networkIdAnnotation: key }),
      (e: Error) => {
        assert.deepEqual((e as ConfigError).problems, [
          `--network-id-annotation is not a valid annotation key: "${key}"`,
        ]);
        return true;
      },
      key,
    );
  }
});

Deno.test("defaultConfig() uses the API with in-cluster credentials, no pods directory, local metrics and info logs", () => {
  const c = defaultConfig();
  assert.deepEqual(
    [c.useApi, c.kubeconfig, c.podsDir, c.metricsAddr, c.logLevel, c.logFormat],
    [true, "", "", "127.0.0.1:9808", "info", "auto"],
  );
});

Deno.test("defaultConfig() chains automatically into the runtime's own file, naming no files", () => {
  const c = defaultConfig();
  assert.deepEqual(
    [c.cniChaining, c.cniChainFiles, c.cniConfDir, c.cniStateDir, c.cniBinDir],
    ["auto", [], "/etc/cni/net.d", "/var/lib/lace/cni", "/opt/cni/bin"],
  );
});

Deno.test("markProblems() refuses 0xffffffff as overlapping, not as too large", () => {
  assert.deepEqual(markProblems(0xffffffff, 16), [
    "Probe mark 0xffffffff overlaps the network bits 0xffff0000 (mark shift 16): choose a flag outside them or another shift",
  ]);
});

Deno.test("nodeProblems() checks only the settings present, and reports nothing for good ones", () => {
  assert.deepEqual(nodeProblems({}), []);
  assert.deepEqual(nodeProblems({ metricsAddr: "127.0.0.1:80", pinPath: "/p" }), []);
  assert.deepEqual(nodeProblems({ kubeletCgroup: "k" }), [
    `Kubelet cgroup must be an absolute path or "auto": "k"`,
  ]);
});

Deno.test("validateConfig() names the flag of a bad network annotation key and a bad conflict policy", () => {
  const base = { ...defaultConfig(), nodeName: "n1" };
  assert.throws(() => validateConfig({ ...base, networkAnnotation: "-x" }), (e: Error) => {
    assert.deepEqual((e as ConfigError).problems, [
      `--network-annotation is not a valid annotation key: "-x"`,
    ]);
    return true;
  });
  assert.throws(
    // deno-lint-ignore no-explicit-any
    () => validateConfig({ ...base, addressConflict: "random" as any }),
    /Address conflict policy must be one of fail-closed, older-wins/,
  );
});

Deno.test("validateConfig() takes 1 and 65536 targets per pod and refuses 0 and 65537", () => {
  const base = { ...defaultConfig(), nodeName: "n1" };
  validateConfig({ ...base, maxTargetsPerPod: 1 });
  validateConfig({ ...base, maxTargetsPerPod: 65536 });
  for (const n of [0, 65537, 1.5]) {
    assert.throws(() => validateConfig({ ...base, maxTargetsPerPod: n }), (e: Error) => {
      assert.deepEqual((e as ConfigError).problems, [
        `Max targets per pod must be a whole number 1..65536 (the map's capacity): ${n}`,
      ]);
      return true;
    });
  }
});

Deno.test("validateConfig() names a pod CIDR with host bits set", () => {
  const base = { ...defaultConfig(), nodeName: "n1" };
  validateConfig({ ...base, podCidrs: ["10.244.0.0/16"] });
  assert.throws(() => validateConfig({ ...base, podCidrs: ["10.244.1.0/16"] }), (e: Error) => {
    assert.deepEqual((e as ConfigError).problems, [
      `Pod CIDRs: Invalid CIDR "10.244.1.0/16": host bits are set (did you mean 10.244.0.0/16?)`,
    ]);
    return true;
  });
});

Deno.test("defaultConfig() gives each address on a node to one network (--address-sharing=exclusive)", () => {
  assert.equal(defaultConfig().addressSharing, "exclusive");
});
