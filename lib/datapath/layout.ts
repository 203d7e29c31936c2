/**
 * Map layouts, pure: where each ABI version's maps are pinned, whether a
 * pinned map has the layout an object expects, whether this agent's codec
 * can read or fill a probe map, and what an agent does when the links run a
 * program that is not its own (swap it in, or stand by). No I/O.
 */
import { KEY_SIZE, VALUE_SIZE } from "./probe_map.ts";

/** The probe map's pin name in each layout's directory (pins.ts's MAP_NAMES lists it first). */
export const PROBE_MAP_PIN = "probe_targets";

/** enum bpf_map_type: BPF_MAP_TYPE_HASH. */
const BPF_MAP_TYPE_HASH = 1;

/** A map's layout, as an object defines it or the kernel reports it. */
export interface MapLayout {
  type: number;
  keySize: number;
  valueSize: number;
  maxEntries: number;
}

/** The directory, under the pin path, of one ABI version's maps. */
export function layoutDirName(abi: number): string {
  return `abi${abi}`;
}

/** The ABI version a directory name under the pin path stands for, or undefined. */
export function parseLayoutDir(name: string): number | undefined {
  const m = /^abi([1-9][0-9]{0,5})$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/**
 * The directory, under the pin path, an agent that started at `startedAt`
 * (ms, as its info map records it) keeps locked while it runs.
 */
export function presenceDirName(startedAt: number): string {
  return `agent_${startedAt}`;
}

/** Whether a name under the pin path is an agent's presence directory. */
export function isPresenceDir(name: string): boolean {
  return /^agent_[0-9]{1,16}$/.test(name);
}

/** Why a pinned map cannot be reused for an object's definition, or undefined when it can. */
export function layoutMismatch(name: string, want: MapLayout, got: MapLayout): string | undefined {
  const fields = (["type", "keySize", "valueSize", "maxEntries"] as const)
    .filter((f) => want[f] !== got[f]);
  if (fields.length === 0) return undefined;
  return `pinned map "${name}" has ${fields.map((f) => `${f} ${got[f]}`).join(", ")}, ` +
    `this object's has ${fields.map((f) => `${f} ${want[f]}`).join(", ")}`;
}

/**
 * Whether this agent's codec can read and fill a probe map of this layout:
 * a hash map with today's key, and a value that starts with today's fields
 * (newer layouts only append fields; the agent zeroes the ones it does not know).
 */
export function probeMapCodecFits(layout: MapLayout): boolean {
  return layout.type === BPF_MAP_TYPE_HASH && layout.keySize === KEY_SIZE &&
    layout.valueSize >= VALUE_SIZE;
}

/** This agent, as the takeover decision sees it. */
export interface Self {
  abi: number;
  /** When this agent started (ms): what its info map records. */
  startedAt: number;
}

/** The program a link runs that is not this agent's, and the maps it uses. */
export interface Running {
  /** The ABI version its info map records; 0 when unknown (older than any). */
  abi: number;
  /** It uses this agent's own maps (an agent of the same layout put it there). */
  sameMaps: boolean;
  /** When the agent that put it there started, from its info map; 0 when unknown. */
  startedAt: number;
  /** The agent that put it there still runs (it holds its layout's or its own lock). */
  live: boolean;
}

export type Takeover = { swap: true } | { swap: false; reason: string };

/**
 * Whether this agent swaps its program in over one that another agent put in
 * the links. The newer layout wins while both agents live (a rolling update's
 * overlap, in either start order); a live agent of the same layout that
 * started later wins (so two agents never swap back and forth); a program
 * whose agent is gone is always replaced (an upgrade, a rollback, a crash).
 */
export function decideTakeover(self: Self, running: Running): Takeover {
  if (running.sameMaps) {
    if (running.startedAt > self.startedAt && running.live) {
      return {
        swap: false,
        reason: `an agent of the same map layout (ABI ${self.abi}) that started later ` +
          `(${new Date(running.startedAt).toISOString()}) runs its program in Lace's links`,
      };
    }
    return { swap: true };
  }
  if (running.abi > self.abi && running.live) {
    return {
      swap: false,
      reason: `a live agent of the newer map layout ABI ${running.abi} runs its program in ` +
        `Lace's links; this agent has ABI ${self.abi}`,
    };
  }
  return { swap: true };
}
