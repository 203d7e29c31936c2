/**
 * The C and TypeScript layouts cannot drift: the BTF of the built
 * bpf/lace.bpf.o (what the kernel itself checks maps against) must give every
 * struct the size and field offsets the codec in lib/datapath/probe_map.ts
 * writes, and every map the key, value and capacity the agent assumes. The
 * expectations come from the codec's own constants, so a change on either
 * side fails here. Needs the built object (`deno task bpf`) and bpftool, no root.
 */
import {
  MAX_NETWORKS,
  MAX_RANGES,
  NETWORK_COUNTS_LAYOUT,
  RANGE_KEY_LAYOUT,
  RANGE_VALUE_LAYOUT,
} from "../lib/datapath/pod_ranges.ts";
import { RANGE_FILTER_LAYOUT, RANGE_FILTER_SLOT_LAYOUT } from "../lib/datapath/range_filter.ts";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { isExecutable } from "./helpers/executable.ts";
import {
  COUNTER_KEY_SIZE,
  COUNTER_SLOTS,
  COUNTER_VALUE_SIZE,
  COUNTERS,
  INFO_KEY_SIZE,
  INFO_LAYOUT,
  KEY_LAYOUT,
  type StructLayout,
  VALUE_LAYOUT,
} from "../lib/datapath/probe_map.ts";
import { MAX_TARGETS } from "../lib/probe/key.ts";

const OBJECT = fileURLToPath(new URL("../bpf/lace.bpf.o", import.meta.url));

interface BtfType {
  id: number;
  kind: string;
  name: string;
  size?: number;
  type_id?: number;
  nr_elems?: number;
  members?: { name: string; type_id: number; bits_offset: number }[];
  vars?: { type_id: number }[];
}

async function run(command: string, args: string[]): Promise<string> {
  try {
    Deno.statSync(OBJECT);
  } catch (cause) {
    throw new Error(`No BPF object at "${OBJECT}": build it with \`deno task bpf\``, { cause });
  }
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" }).output();
  } catch (cause) {
    throw new Error(`Cannot run ${command}: install it (scripts/setup.sh)`, { cause });
  }
  if (!out.success) throw new Error(`${command} failed: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

/** Every BTF type of the built object, by id, as bpftool reads it. */
async function btf(): Promise<Map<number, BtfType>> {
  // Debian installs bpftool in /usr/sbin, which a user's PATH may lack.
  const bpftool = Deno.env.get("BPFTOOL") ??
    (isExecutable("/usr/sbin/bpftool") ? "/usr/sbin/bpftool" : "bpftool");
  const { types } = JSON.parse(
    await run(bpftool, ["btf", "dump", "file", OBJECT, "format", "raw", "-j"]),
  ) as { types: BtfType[] };
  return new Map(types.map((t) => [t.id, t]));
}

const types = await btf();

function type(id: number): BtfType {
  const t = types.get(id);
  assert(t, `BTF type ${id} is missing`);
  return t;
}

/** The type behind typedefs and qualifiers. */
function resolved(id: number): BtfType {
  let t = type(id);
  while (["TYPEDEF", "CONST", "VOLATILE", "RESTRICT"].includes(t.kind)) t = type(t.type_id!);
  return t;
}

function sizeOf(id: number): number {
  const t = resolved(id);
  if (t.kind === "ARRAY") return t.nr_elems! * sizeOf(t.type_id!);
  if (t.kind === "PTR") return 8;
  assert(t.size !== undefined, `BTF type ${t.kind} ${t.name} has no size`);
  return t.size;
}

function struct(name: string): BtfType {
  const found = [...types.values()].find((t) => t.kind === "STRUCT" && t.name === name);
  assert(found, `struct ${name} is not in the BTF of ${OBJECT}`);
  return found;
}

/** A map definition's fields from the `.maps` section: __uint values and key/value type ids. */
function mapDefinition(
  name: string,
): { type: number; maxEntries: number; key: number; value: number } {
  const maps = [...types.values()].find((t) => t.kind === "DATASEC" && t.name === ".maps");
  assert(maps, "no .maps section in the BTF");
  const variable = maps.vars!.map((v) => type(v.type_id)).find((v) => v.name === name);
  assert(variable, `map ${name} is not defined in .maps`);
  const members = new Map(type(variable.type_id!).members!.map((m) => [m.name, m.type_id]));
  // __uint(name, n) is `int (*name)[n]`; __type(name, T) is `T *name`.
  const uint = (field: string) => type(type(members.get(field)!).type_id!).nr_elems!;
  const pointee = (field: string) => type(members.get(field)!).type_id!;
  return {
    type: uint("type"),
    maxEntries: uint("max_entries"),
    key: pointee("key"),
    value: pointee("value"),
  };
}

const STRUCTS: [string, StructLayout][] = [
  ["lace_probe_key", KEY_LAYOUT],
  ["lace_probe_value", VALUE_LAYOUT],
  ["lace_info", INFO_LAYOUT],
  ["lace_range_key", RANGE_KEY_LAYOUT],
  ["lace_range_value", RANGE_VALUE_LAYOUT],
  ["lace_network_counts", NETWORK_COUNTS_LAYOUT],
  ["lace_range_filter", RANGE_FILTER_LAYOUT],
  ["lace_range_filter_slot", RANGE_FILTER_SLOT_LAYOUT],
];

for (const [name, layout] of STRUCTS) {
  Deno.test(`struct ${name} in the built object has the size and field offsets the codec writes`, () => {
    const s = struct(name);
    assert.equal(s.size, layout.size, `sizeof(struct ${name})`);
    for (const [field, { offset, size }] of Object.entries(layout.fields)) {
      const member = s.members!.find((m) => m.name === field);
      assert(member, `struct ${name} has no field ${field}`);
      assert.equal(member.bits_offset % 8, 0, `${name}.${field} is a bit field`);
      assert.equal(member.bits_offset / 8, offset, `offsetof(struct ${name}, ${field})`);
      assert.equal(sizeOf(member.type_id), size, `sizeof(${name}.${field})`);
    }
  });
}

Deno.test("the probe map is a hash of lace_probe_key to lace_probe_value with MAX_TARGETS entries", () => {
  const map = mapDefinition("probe_targets");
  assert.equal(map.type, 1, "BPF_MAP_TYPE_HASH");
  assert.equal(map.maxEntries, MAX_TARGETS);
  assert.equal(resolved(map.key).name, "lace_probe_key");
  assert.equal(resolved(map.value).name, "lace_probe_value");
});

Deno.test("the pod ranges map is an LPM trie of lace_range_key to lace_range_value with MAX_RANGES entries", () => {
  const map = mapDefinition("pod_ranges");
  assert.equal(map.type, 11, "BPF_MAP_TYPE_LPM_TRIE");
  assert.equal(map.maxEntries, MAX_RANGES);
  assert.equal(resolved(map.key).name, "lace_range_key");
  assert.equal(resolved(map.value).name, "lace_range_value");
});

Deno.test("the range filter map is an array of one lace_range_filter, of two lace_range_filter_slot", () => {
  const map = mapDefinition("range_filter");
  assert.equal(map.type, 2, "BPF_MAP_TYPE_ARRAY");
  assert.equal(map.maxEntries, 1);
  assert.equal(resolved(map.value).name, "lace_range_filter");
  const slot = struct("lace_range_filter").members!.find((m) => m.name === "slot")!;
  assert.equal(type(slot.type_id).kind, "ARRAY");
  assert.equal(type(slot.type_id).nr_elems, 2);
  assert.equal(resolved(type(slot.type_id).type_id!).name, "lace_range_filter_slot");
});

Deno.test("the network counts map is an array of lace_network_counts, one per network id", () => {
  const map = mapDefinition("network_counts");
  assert.equal(map.type, 2, "BPF_MAP_TYPE_ARRAY");
  assert.equal(map.maxEntries, MAX_NETWORKS);
  assert.equal(resolved(map.value).name, "lace_network_counts");
});

Deno.test("the counters map is a per-CPU array of COUNTER_SLOTS u64 values under u32 keys", () => {
  const map = mapDefinition("counters");
  assert.equal(map.type, 6, "BPF_MAP_TYPE_PERCPU_ARRAY");
  assert.equal(map.maxEntries, COUNTER_SLOTS);
  assert.equal(sizeOf(map.key), COUNTER_KEY_SIZE);
  assert.equal(sizeOf(map.value), COUNTER_VALUE_SIZE);
});

Deno.test("the info map holds one lace_info under a u32 key", () => {
  const map = mapDefinition("info");
  assert.equal(map.type, 2, "BPF_MAP_TYPE_ARRAY");
  assert.equal(map.maxEntries, 1);
  assert.equal(sizeOf(map.key), INFO_KEY_SIZE);
  assert.equal(resolved(map.value).name, "lace_info");
});

Deno.test("enum lace_counter numbers each counter as the codec's COUNTERS do", async () => {
  // No type refers to enum lace_counter, so clang leaves it out of BTF; the object's
  // DWARF (built with -g) has it.
  const dwarf = await run("llvm-dwarfdump", ["--debug-info", OBJECT]);
  const enumerators = new Map(
    [...dwarf.matchAll(/DW_AT_name\s+\("(LACE_CNT_\w+)"\)\s+DW_AT_const_value\s+\((\d+)\)/g)]
      .map((m) => [m[1], Number(m[2])]),
  );
  assert(enumerators.size > 0, "no LACE_CNT_ enumerators in the object's DWARF");
  const expected = new Map<string, number>(
    Object.entries(COUNTERS).map(([name, slot]) => [
      `LACE_CNT_${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`,
      slot,
    ]),
  );
  expected.set("LACE_CNT_MAX", COUNTER_SLOTS);
  assert.deepEqual(enumerators, expected);
});
