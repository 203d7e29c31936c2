/**
 * A directory of Pod manifests as a pod source: the embedded source that needs
 * no cluster (demo, static pods, tests). Every change re-reads the whole
 * directory and reports a full list, which keeps the logic trivially correct.
 */
import { resolve } from "node:path";
import { getLogger } from "@logtape/logtape";
import type { Pod } from "./pod.ts";
import type { PodSink, PodSource } from "./source.ts";
import { readManifestFile, UnusableManifestError } from "./manifest_file.ts";
import { isYamlFile, loadYamlParser, parseManifests } from "./manifests.ts";
import { checkPodsDir, judgeManifestFile, type PodsDirTrust } from "./dir_trust.ts";
import type { Mount } from "../os/mountinfo.ts";
import { limitedLog, type LimitKey } from "../log/limiter.ts";

const log = getLogger(["lace", "pods", "dir"]);

const MANIFEST = /\.(ya?ml|json)$/i;

/** The shortest time between the starts of two reads of the directory for ended writes, in ms. */
const READ_INTERVAL_MS = 2;

/** A name the source reads: a manifest's extension, not a dot file (editors write those). */
function isManifestName(name: string): boolean {
  return !name.startsWith(".") && MANIFEST.test(name);
}

export interface DirPodSourceOptions {
  /**
   * Quiet time after a write that has not ended (a create or modify with no
   * close or rename after it, or a change to the directory itself) before the
   * changed files are read, in ms.
   */
  debounceMs?: number;
  /** Source name in logs and the cache. */
  name?: string;
  /** Root's uid, who alone may write the directory (dir_trust.ts); this process's by default. */
  owner?: number;
  /** The mount table (tests); /proc/self/mountinfo by default. */
  mounts?: readonly Mount[];
}

/**
 * Watches a directory of Pod manifests (`*.yaml`, `*.yml`, `*.json`; dot files
 * are ignored, as editors write them) and reports every pod on this node with
 * `replaceAll`. A file whose write has ended (closed after writing, renamed
 * into the directory, removed) is read at once; a file still being written
 * (created or modified, not closed yet) is left as it was until its writer
 * closes it or has been quiet for the debounce time. A file that does not
 * parse, or is empty, keeps its last good pods: an editor or `cp` may be half
 * way through writing it. Files are
 * untrusted input: only regular files inside the directory (symlinks within it
 * are followed) of at most MAX_MANIFEST_BYTES are read, anything else is
 * skipped with its reason and its pods dropped; a document nested too deeply
 * is skipped alone. A missing directory is an error at start: the operator
 * named a path that is not there. So is one others may write (dir_trust.ts:
 * root's and writable by no one else, or on a read-only mount such as a
 * ConfigMap volume), and a file in it owned by another non-root user, or
 * writable by others outside a read-only mount, is skipped with its reason.
 */
export class DirPodSource implements PodSource {
  readonly name: string;
  readonly #dir: string;
  readonly #absDir: string;
  readonly #nodeName: string;
  readonly #debounceMs: number;
  readonly #opts: DirPodSourceOptions;
  #trust: PodsDirTrust | undefined;
  readonly #lastGood = new Map<string, Pod[]>();
  #watcher: Deno.FsWatcher | undefined;
  /**
   * The files whose writes ended are read after the current task (a microtask: even a 0 ms
   * timer adds a delay of its own), or, within READ_INTERVAL_MS of the last read's start, at
   * its end: a burst of files is read a few at a time, not one read of the whole directory per
   * file.
   */
  #soon = false;
  #soonTimer: ReturnType<typeof setTimeout> | undefined;
  #lastReadAt = -Infinity;
  /** Reads everything changed once writers have been quiet for the debounce time. */
  #quiet: ReturnType<typeof setTimeout> | undefined;
  #scanning: Promise<void> | undefined;
  #rescanAgain = false;
  #sink: PodSink | undefined;
  /** Files named by watch events since the last read; "all" re-reads every file. */
  #dirty: Set<string> | "all" = "all";
  /** Files written to and not closed or renamed since: not read until then, or until quiet. */
  readonly #writing = new Set<string>();
  /**
   * The next read takes every file as it is, those being written too (an explicit rescan, or
   * writers quiet for the debounce time): their events may still be on their way.
   */
  #readWriting = true;

  constructor(dir: string, nodeName: string, opts: DirPodSourceOptions = {}) {
    this.#dir = dir;
    this.#absDir = resolve(dir);
    this.#nodeName = nodeName;
    this.#debounceMs = opts.debounceMs ?? 100;
    this.name = opts.name ?? "dir";
    this.#opts = opts;
  }

  async start(sink: PodSink): Promise<void> {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(this.#dir);
    } catch (error) {
      throw new Error(
        `Cannot read the pods directory "${this.#dir}": create it or fix --pods-dir`,
        { cause: error },
      );
    }
    if (!info.isDirectory) {
      throw new Error(`Pods directory "${this.#dir}" is not a directory: fix --pods-dir`);
    }
    // Its pods are believed (network, addresses, age): refused unless only root may write it.
    this.#trust = checkPodsDir(this.#dir, this.#owner, this.#opts.mounts);
    this.#sink = sink;
    this.#watcher = Deno.watchFs(this.#dir, { recursive: false });
    this.#watch(this.#watcher);
    await this.rescan();
  }

  get #owner(): number {
    return this.#opts.owner ?? Deno.uid() ?? 0;
  }

  async stop(): Promise<void> {
    this.#soon = false;
    clearTimeout(this.#soonTimer);
    clearTimeout(this.#quiet);
    this.#quiet = undefined;
    this.#sink = undefined;
    try {
      this.#watcher?.close();
    } catch { /* already closed */ }
    this.#watcher = undefined;
    await this.#scanning;
  }

  /** Re-reads every file, those being written too, and reports the full list. */
  rescan(): Promise<void> {
    this.#dirty = "all";
    this.#readWriting = true;
    return this.#scan();
  }

  /** Reads what changed and reports the full list; serialised, so reports never interleave. */
  #scan(): Promise<void> {
    if (this.#scanning) {
      this.#rescanAgain = true;
      return this.#scanning;
    }
    this.#scanning = (async () => {
      do {
        this.#rescanAgain = false;
        const dirty = this.#dirty;
        this.#dirty = new Set();
        this.#lastReadAt = performance.now();
        const readWriting = this.#readWriting;
        this.#readWriting = false;
        if (readWriting) this.#writing.clear();
        const pods = await this.#readAll(dirty, readWriting);
        if (this.#sink) this.#sink.replaceAll(this.name, pods);
      } while (this.#rescanAgain && this.#sink);
    })().finally(() => this.#scanning = undefined);
    return this.#scanning;
  }

  async #watch(watcher: Deno.FsWatcher): Promise<void> {
    try {
      for await (const event of watcher) {
        // inotify's close after writing arrives as "access" (nothing else of that kind is
        // watched); a rename or removal leaves the name whole or gone.
        const ended = event.kind === "access" || event.kind === "rename" ||
          event.kind === "remove";
        // Only the files an event names are read again; an event about anything
        // else (the directory itself, an overflow) re-reads them all.
        let all = event.paths.length === 0, named = false;
        for (const path of event.paths) {
          const slash = path.lastIndexOf("/");
          // A name starting with ".." is a Kubernetes atomic writer's link swap (a ConfigMap
          // volume's `..data`): every file behind it may have changed.
          const name = path.slice(slash + 1);
          if (path.slice(0, slash) !== this.#absDir || name.startsWith("..")) {
            all = true;
            continue;
          }
          // A file the source never reads (a dot file being written beside, notes.txt).
          if (!isManifestName(name)) continue;
          named = true;
          if (this.#dirty !== "all") this.#dirty.add(name);
          if (ended) this.#writing.delete(name);
          else this.#writing.add(name);
        }
        if (all) this.#dirty = "all";
        if (ended && !all) {
          if (named) this.#readSoon();
        } else if (all || named) this.#readWhenQuiet();
      }
    } catch (error) {
      if (this.#sink) log.error("Watching {dir} failed: {error}", { dir: this.#dir, error });
    }
  }

  #readSoon(): void {
    if (this.#soon) return;
    this.#soon = true;
    const read = () => {
      if (!this.#soon) return; // stopped
      this.#soon = false;
      this.#soonTimer = undefined;
      this.#scan().catch((error) => log.error("Rescan failed: {error}", { error }));
    };
    // The events of one write come as separate results of the watcher: the rest of this
    // one's are still dirty when the scan reads (or read again by the scan after it).
    const wait = this.#lastReadAt + READ_INTERVAL_MS - performance.now();
    if (wait <= 0) queueMicrotask(read);
    else this.#soonTimer = setTimeout(read, wait);
  }

  #readWhenQuiet(): void {
    clearTimeout(this.#quiet);
    this.#quiet = setTimeout(() => {
      this.#quiet = undefined;
      // A writer quiet this long is taken as done, closed or not.
      this.#readWriting = true;
      this.#scan().catch((error) => log.error("Rescan failed: {error}", { error }));
    }, this.#debounceMs);
  }

  async #readAll(dirty: Set<string> | "all", readWriting: boolean): Promise<Pod[]> {
    const files: string[] = [];
    try {
      for (const e of Deno.readDirSync(this.#dir)) {
        if (isManifestName(e.name) && !e.isDirectory) files.push(e.name);
      }
    } catch (error) {
      // Reading the directory failed as a whole: report what we had, never an empty list.
      log.error("Cannot list {dir}, keeping the pods read before: {error}", {
        dir: this.#dir,
        error,
      });
      return this.#combine([...this.#lastGood.keys()].sort());
    }
    files.sort();
    let realDir: string;
    try {
      realDir = Deno.realPathSync(this.#dir);
    } catch (error) {
      log.error("Cannot resolve {dir}, keeping the pods read before: {error}", {
        dir: this.#dir,
        error,
      });
      return this.#combine([...this.#lastGood.keys()].sort());
    }
    for (const name of [...this.#lastGood.keys()]) {
      if (!files.includes(name)) this.#lastGood.delete(name);
    }
    for (const name of files) {
      // A file being written keeps its last pods (none if new) until its write ends. (Its
      // events may come during this read: the watcher hands out what it holds without a wait.)
      if (!readWriting && this.#writing.has(name)) {
        if (this.#dirty !== "all") this.#dirty.add(name);
        continue;
      }
      // Unchanged files keep their parsed pods (the same objects), which costs nothing downstream.
      if (dirty === "all" || dirty.has(name) || !this.#lastGood.has(name)) {
        await this.#readFile(realDir, name);
      }
    }
    return this.#combine(files);
  }

  async #readFile(realDir: string, name: string): Promise<void> {
    const path = `${this.#dir}/${name}`;
    let text: string | null;
    try {
      const readOnly = this.#trust?.readOnly ?? false;
      text = readManifestFile(
        realDir,
        name,
        undefined,
        (stat) => judgeManifestFile(stat, this.#owner, readOnly),
      );
    } catch (error) {
      if (error instanceof UnusableManifestError) {
        // Not a file that is being written: as it is, it never becomes usable.
        limitedLog(
          log,
          "warning",
          podFile("PodFileSkipped", path),
          "Skipped {file}: {reason}; its pods are dropped",
          { file: path, reason: error.message },
        );
        this.#lastGood.set(name, []);
      } else {
        limitedLog(
          log,
          "warning",
          podFile("PodFileUnreadable", path),
          "Cannot read {file}, keeping its last pods: {error}",
          { file: path, error },
        );
      }
      return;
    }
    if (text === null) {
      this.#lastGood.delete(name);
      return;
    }
    if (text.trim() === "") {
      log.debug("{file} is empty, keeping its last pods (it may be being written)", { file: path });
      return;
    }
    try {
      if (isYamlFile(name)) await loadYamlParser();
      const { pods, problems } = parseManifests(text, path);
      for (const problem of problems) {
        limitedLog(log, "warning", podFile("PodSkipped", path), "Skipped: {problem}", { problem });
      }
      this.#lastGood.set(name, pods);
    } catch (error) {
      limitedLog(
        log,
        "warning",
        podFile("PodFileUnparsable", path),
        "Cannot parse {file}, keeping its last pods: {error}",
        { file: path, error: (error as Error).message },
      );
    }
  }

  #combine(files: string[]): Pod[] {
    const byUid = new Map<string, Pod>();
    for (const name of files) {
      for (const pod of this.#lastGood.get(name) ?? []) {
        const node = pod.spec.nodeName;
        if (this.#nodeName && node && node !== this.#nodeName) continue;
        if (byUid.has(pod.metadata.uid)) {
          limitedLog(
            log,
            "warning",
            podFile("PodUidTwice", name),
            "Pod uid {uid} appears twice; {file} ignored for it",
            { uid: pod.metadata.uid, file: name },
          );
          continue;
        }
        byUid.set(pod.metadata.uid, pod);
      }
    }
    return [...byUid.values()];
  }
}

/**
 * The log limiter's key of a line about a file of the pods directory: by reason alone (the
 * directory is one source; whoever can write a file there can write thousands).
 */
function podFile(reason: string, file: string): LimitKey {
  return { reason, namespace: "", subject: `file ${file}` };
}
