import assert from "node:assert/strict";
import { BRIDGE_CONF, CALICO, CILIUM, FLANNEL, HAND_WRITTEN, MULTUS } from "./_fixtures.ts";
import { unchainConfig } from "./conflist.ts";
import { type ChainRecord, type Plan, planChain, planRestore, sha256 } from "./plan.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const ENTRY = { socket: "/run/lace/cni.sock" };

/** A directory in memory that applies plans as the I/O does, records included. */
class Dir {
  files = new Map<string, Uint8Array>();
  records = new Map<string, ChainRecord>();
  constructor(files: Record<string, string>) {
    for (const [n, t] of Object.entries(files)) this.files.set(n, enc(t));
  }
  apply(plan: Plan) {
    if (plan.write) this.files.set(plan.write.name, plan.write.bytes);
    if (plan.remove) this.files.delete(plan.remove);
    if (plan.forget) this.records.delete(plan.forget);
    if (plan.record) this.records.set(plan.record.file, plan.record);
    return plan;
  }
  chain(name: string, entry = ENTRY) {
    return this.apply(planChain({
      name,
      bytes: this.files.get(name)!,
      record: this.records.get(name),
      entry,
      occupied: (n) => this.files.has(n) && !this.records.has(n),
    }));
  }
  restore(name: string) {
    return this.apply(planRestore({
      name,
      bytes: this.files.get(name) ?? null,
      record: this.records.get(name),
      exists: (n) => this.files.has(n),
    }));
  }
  text(name: string) {
    const b = this.files.get(name);
    return b === undefined ? undefined : dec(b);
  }
}

const CASES: [string, string, string][] = [
  ["flannel", "10-flannel.conflist", FLANNEL],
  ["calico", "10-calico.conflist", CALICO],
  ["cilium", "05-cilium.conflist", CILIUM],
  ["multus", "00-multus.conf", MULTUS],
  ["bridge with CRLF", "10-bridge.conf", BRIDGE_CONF],
  ["hand-written (tabs, key order, escapes, a repeated key)", "10-weave.conflist", HAND_WRITTEN],
];

Deno.test("planRestore gives back a hand-written file the renderer cannot reproduce, byte for byte", () => {
  const dir = new Dir({ "10-weave.conflist": HAND_WRITTEN });
  dir.chain("10-weave.conflist");
  // Taking the entry out of the chained file, the fallback restore, renders it anew.
  const fallback = unchainConfig("10-weave.conflist", dir.files.get("10-weave.conflist")!);
  assert.equal(fallback.kind, "write");
  if (fallback.kind === "write") assert.notEqual(dec(fallback.bytes), HAND_WRITTEN);
  dir.restore("10-weave.conflist");
  assert.equal(dir.text("10-weave.conflist"), HAND_WRITTEN);
});

for (const [what, name, text] of CASES) {
  Deno.test(`planRestore gives back the ${what} file byte for byte under its own name`, () => {
    const dir = new Dir({ [name]: text });
    const chained = dir.chain(name).write!.name;
    assert.deepStrictEqual(dir.chain(chained), {}, "chaining again changes nothing");
    dir.restore(chained);
    assert.deepStrictEqual([...dir.files.keys()], [name]);
    assert.deepStrictEqual(dir.text(name), text);
    assert.deepStrictEqual(dir.records.size, 0);
  });
}

Deno.test("planChain chains again after the network plugin rewrote its file, and restore gives the rewrite back", () => {
  const dir = new Dir({ "10-flannel.conflist": FLANNEL });
  dir.chain("10-flannel.conflist");
  const rewrite = FLANNEL.replace("cbr0", "cbr1");
  dir.files.set("10-flannel.conflist", enc(rewrite));
  assert.deepStrictEqual(dir.chain("10-flannel.conflist").report?.reason, "chained");
  dir.restore("10-flannel.conflist");
  assert.deepStrictEqual(dir.text("10-flannel.conflist"), rewrite);
});

Deno.test("planChain of a .conf the plugin wrote again beside the agent's .conflist replaces the list and drops the .conf", () => {
  const dir = new Dir({ "10-bridge.conf": BRIDGE_CONF });
  dir.chain("10-bridge.conf");
  const again = BRIDGE_CONF.replace("cni0", "cni1");
  dir.files.set("10-bridge.conf", enc(again));
  dir.chain("10-bridge.conf");
  assert.deepStrictEqual([...dir.files.keys()], ["10-bridge.conflist"]);
  dir.restore("10-bridge.conflist");
  assert.deepStrictEqual(dir.text("10-bridge.conf"), again);
  assert.deepStrictEqual(dir.files.has("10-bridge.conflist"), false);
});

Deno.test("planChain does not convert a .conf whose .conflist name another writer owns", () => {
  const dir = new Dir({ "10-bridge.conf": BRIDGE_CONF, "10-bridge.conflist": FLANNEL });
  const plan = dir.chain("10-bridge.conf");
  assert.deepStrictEqual(plan.write, undefined);
  assert.deepStrictEqual(plan.report?.reason, "conflict");
  assert.deepStrictEqual(dir.text("10-bridge.conflist"), FLANNEL);
});

Deno.test("planChain with new settings rewrites its entry and still restores the bytes from before any chaining", () => {
  const dir = new Dir({ "10-calico.conflist": CALICO });
  dir.chain("10-calico.conflist");
  dir.chain("10-calico.conflist", { socket: "/run/lace2/cni.sock" });
  assert.match(dir.text("10-calico.conflist")!, /lace2/);
  dir.restore("10-calico.conflist");
  assert.deepStrictEqual(dir.text("10-calico.conflist"), CALICO);
});

Deno.test("planRestore takes the entry out of a file another writer changed since, and says it is not byte-identical", () => {
  const dir = new Dir({ "10-flannel.conflist": FLANNEL });
  dir.chain("10-flannel.conflist");
  const changed = JSON.parse(dir.text("10-flannel.conflist")!);
  changed.plugins.splice(2, 0, { type: "tuning" });
  dir.files.set("10-flannel.conflist", enc(JSON.stringify(changed)));
  const plan = dir.restore("10-flannel.conflist");
  assert.deepStrictEqual(plan.report?.level, "warning");
  assert.match(plan.report!.message, /not byte-identical/);
  const types = JSON.parse(dir.text("10-flannel.conflist")!).plugins.map((p: { type: string }) =>
    p.type
  );
  assert.deepStrictEqual(types, ["flannel", "portmap", "tuning"]);
});

Deno.test("planRestore leaves a file the plugin rewrote without lace alone, and forgets the record", () => {
  const dir = new Dir({ "10-flannel.conflist": FLANNEL });
  dir.chain("10-flannel.conflist");
  const rewrite = FLANNEL.replace("cbr0", "cbr9");
  dir.files.set("10-flannel.conflist", enc(rewrite));
  assert.deepStrictEqual(dir.restore("10-flannel.conflist").write, undefined);
  assert.deepStrictEqual(dir.text("10-flannel.conflist"), rewrite);
  assert.deepStrictEqual(dir.records.size, 0);
});

Deno.test("planRestore without a record (state lost) still takes the agent's entry out", () => {
  const dir = new Dir({ "10-flannel.conflist": FLANNEL });
  dir.chain("10-flannel.conflist");
  dir.records.clear();
  dir.restore("10-flannel.conflist");
  assert.deepStrictEqual(JSON.parse(dir.text("10-flannel.conflist")!), JSON.parse(FLANNEL));
});

Deno.test("planChain of a file chained by an earlier agent whose record was lost records the file without lace", () => {
  const dir = new Dir({ "10-flannel.conflist": FLANNEL });
  dir.chain("10-flannel.conflist");
  dir.records.clear();
  const plan = dir.chain("10-flannel.conflist");
  assert.deepStrictEqual(plan.write, undefined);
  dir.restore("10-flannel.conflist");
  assert.deepStrictEqual(JSON.parse(dir.text("10-flannel.conflist")!), JSON.parse(FLANNEL));
});

Deno.test("planChain leaves a hand-chained file alone and forgets a record it kept for it", () => {
  const dir = new Dir({ "10-flannel.conflist": FLANNEL });
  dir.chain("10-flannel.conflist");
  const hand = JSON.parse(FLANNEL);
  hand.plugins.push({ type: "lace" });
  const text = JSON.stringify(hand);
  dir.files.set("10-flannel.conflist", enc(text));
  assert.deepStrictEqual(dir.chain("10-flannel.conflist").report?.reason, "hand-chained");
  assert.deepStrictEqual(dir.records.size, 0);
  dir.restore("10-flannel.conflist");
  assert.deepStrictEqual(dir.text("10-flannel.conflist"), text);
});

Deno.test("planChain never touches an unparsable file and reports it", () => {
  const dir = new Dir({ "10-x.conflist": "{ not json" });
  const plan = dir.chain("10-x.conflist");
  assert.deepStrictEqual(plan.write, undefined);
  assert.deepStrictEqual(plan.report?.reason, "unparsable");
  assert.deepStrictEqual(dir.text("10-x.conflist"), "{ not json");
});

Deno.test("planRestore of a .conf's list whose .conf the plugin wrote again removes only the list", () => {
  const dir = new Dir({ "10-bridge.conf": BRIDGE_CONF });
  dir.chain("10-bridge.conf");
  dir.files.set("10-bridge.conf", enc(MULTUS));
  dir.restore("10-bridge.conflist");
  assert.deepStrictEqual([...dir.files.keys()], ["10-bridge.conf"]);
  assert.deepStrictEqual(dir.text("10-bridge.conf"), MULTUS);
});

Deno.test("planRestore with a damaged record falls back to taking the entry out", () => {
  const dir = new Dir({ "10-flannel.conflist": FLANNEL });
  dir.chain("10-flannel.conflist");
  const rec = dir.records.get("10-flannel.conflist")!;
  dir.records.set(rec.file, { ...rec, original: "%%%" });
  dir.restore("10-flannel.conflist");
  assert.deepStrictEqual(JSON.parse(dir.text("10-flannel.conflist")!), JSON.parse(FLANNEL));
});

Deno.test("sha256 is the hex digest", () => {
  assert.deepStrictEqual(
    sha256(enc("")),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
});
