/**
 * The layout migration side of attach: before this agent swaps its program
 * over one another agent put in the links, decide whether to (layout.ts's
 * decideTakeover), fill this agent's probe map from the running one or stand
 * by; once the links run this agent's programs, remove the layouts no longer
 * run. The steps themselves are in migration.ts.
 */
import { getLogger } from "@logtape/logtape";
import { join } from "node:path";
import { DirLock } from "./dir_lock.ts";
import { decideTakeover, layoutDirName } from "./layout.ts";
import { agentAlive, copyProbeMap, pauseForTest, RunningMaps } from "./migration.ts";
import { pathExists, pinnedLayouts, pinnedMapId, removeLayoutPins } from "./pins.ts";
import type { BpfProbeStore } from "./probe_store.ts";

const log = getLogger(["lace", "datapath"]);

/**
 * Thrown by attach while another agent's newer layout runs the links: this
 * agent is not failing, it waits its turn (the follower reports it as such).
 */
export class StandingByError extends Error {
  override name = "StandingByError";
  constructor(readonly reason: string) {
    super(`This agent stands by: ${reason}; stop one of the two agents`);
  }
}

/** This agent's loaded layout, as the takeover sees it. */
export interface TakeoverAgent {
  /** The bpffs directory for Lace's pins. */
  pinPath: string;
  /** The object's map layout (ABI version). */
  abi: number;
  /** Where this layout's maps are pinned: <pin path>/abi<N>. */
  layoutDir: string;
  /** This agent's start (ms), as its info map records it. */
  startedAt: number;
  /** This agent's probe map. */
  store: BpfProbeStore;
}

/**
 * Whether, and when, one agent takes the links over from another: what it
 * knows of its own probe map (filled with its desired state yet?) and why it
 * stands by, if it does.
 */
export class LayoutTakeover {
  readonly pinPath: string;
  readonly abi: number;
  readonly layoutDir: string;
  readonly startedAt: number;
  readonly #store: BpfProbeStore;
  #desiredApplied = false;
  #standingBy: string | undefined;

  constructor(agent: TakeoverAgent) {
    this.pinPath = agent.pinPath;
    this.abi = agent.abi;
    this.layoutDir = agent.layoutDir;
    this.startedAt = agent.startedAt;
    this.#store = agent.store;
  }

  /**
   * Tells the takeover this agent's probe map now holds its own desired state
   * (the first full pod list is applied): from now on it may swap its program
   * in even over a layout whose map it could not copy.
   */
  desiredStateApplied(): void {
    this.#desiredApplied = true;
  }

  /** Why this agent leaves the links to another agent's program, or undefined. */
  get standingBy(): string | undefined {
    return this.#standingBy;
  }

  /**
   * Before swapping over the program `progId` that another agent put in the
   * links: decide whether to (layout.ts), and make this agent's probe map hold
   * what that program's map holds, or refuse while it cannot know what to hold.
   */
  prepare(progId: number): void {
    using running = RunningMaps.inspect(progId, this.pinPath);
    const sameMaps = running.probeMap?.info.id === this.#store.mapId;
    const runningDir = join(this.pinPath, layoutDirName(running.abi));
    const decision = decideTakeover(this, {
      abi: running.abi,
      sameMaps,
      startedAt: running.info?.loadedAt.getTime() ?? 0,
      live: sameMaps
        ? agentAlive(this.pinPath, running.info?.loadedAt.getTime() ?? 0)
        : running.abi > 0 && pathExists(runningDir) && DirLock.isHeldByRoot(runningDir),
    });
    if (!decision.swap) {
      if (this.#standingBy !== decision.reason) {
        log.error("Standing by, not swapping this agent's program in: {reason}", {
          reason: decision.reason,
        });
      }
      this.#standingBy = decision.reason;
      // One set of pins on the node: the layout the links do not run is not left behind.
      if (!sameMaps) this.#unpinOwnLayout();
      throw new StandingByError(decision.reason);
    }
    this.#standingBy = undefined;
    if (sameMaps || this.#desiredApplied) return;
    const copy = running.probeMap && copyProbeMap(running.probeMap, this.#store);
    if (!copy) {
      throw new Error(
        `Pinned links run program id ${progId} on a map layout this agent cannot read ` +
          `(ABI ${running.abi}): it swaps its program in once its own probe map holds the ` +
          "first full pod list",
      );
    }
    log.info(
      "Filled this agent's probe map (ABI {abi}) from program id {progId}'s (ABI {from}): " +
        "{copied} entries copied, {removed} removed",
      { abi: this.abi, progId, from: running.abi, ...copy },
    );
    pauseForTest("filled");
  }

  /** Removes this agent's layout pins when they hold its maps (it stands by for another layout). */
  #unpinOwnLayout(): void {
    if (pinnedMapId(join(this.layoutDir, "probe_targets")) !== this.#store.mapId) return;
    const removed = removeLayoutPins({ abi: this.abi, dir: this.layoutDir, unversioned: false });
    log.warn("Removed this agent's unused layout pins {removed}", { removed });
  }

  /** Once the links run this agent's programs: removes every other layout's map pins. */
  removeOtherLayouts(): void {
    const others = pinnedLayouts(this.pinPath).filter((l) => l.dir !== this.layoutDir);
    if (others.length === 0) return;
    pauseForTest("swapped");
    for (const layout of others) {
      const removed = removeLayoutPins(layout);
      log.info("Removed the pins of map layout ABI {abi}, no longer run: {removed}", {
        abi: layout.abi,
        removed,
      });
    }
  }
}
