/**
 * An owned bpf_link fd: create on a cgroup, pin, open a pin, swap the program
 * in place, detach, and read what the kernel says about it.
 */
import { unwrap } from "./errors.ts";
import { BPF_LINK_TYPE_CGROUP, cString } from "./ffi.ts";
import { closeFd, objectInfo, openPinnedObject } from "./fd.ts";
import { libbpfSymbols } from "./library.ts";

/** What the kernel says about a link (struct bpf_link_info, cgroup member). */
export interface LinkInfo {
  /** enum bpf_link_type; BPF_LINK_TYPE_CGROUP for Lace's links. */
  type: number;
  id: number;
  progId: number;
  /** The cgroup it is attached to; 0 once that cgroup is gone or the link is detached. */
  cgroupId: bigint;
  attachType: number;
}

export class BpfLink implements Disposable {
  #fd: number;
  readonly label: string;

  private constructor(fd: number, label: string) {
    this.#fd = fd;
    this.label = label;
  }

  /**
   * Attaches a program to a target (a cgroup directory fd) with a new link.
   * Links are multi-attach: other programs on the cgroup stay attached.
   */
  static create(progFd: number, targetFd: number, attachType: number, label: string): BpfLink {
    const fd = unwrap(
      `bpf_link_create ${label}`,
      libbpfSymbols().bpf_link_create(progFd, targetFd, attachType, null),
    );
    return new BpfLink(fd, label);
  }

  /**
   * Opens a pinned cgroup link; throws a BpfError with code ENOENT when there
   * is none, and a TypeError when the pin holds anything else.
   */
  static openPinned(path: string): BpfLink {
    const link = new BpfLink(openPinnedObject(path, "link"), path);
    let type: number;
    try {
      type = link.info().type;
    } catch (e) {
      link.close();
      throw e;
    }
    if (type !== BPF_LINK_TYPE_CGROUP) {
      link.close();
      throw new TypeError(
        `The pin "${path}" holds a BPF link of type ${type}, not a cgroup link: ` +
          "something else pinned it there; remove that pin or choose another --pin-path",
      );
    }
    return link;
  }

  get fd(): number {
    if (this.#fd < 0) throw new Error(`BPF link ${this.label} is closed`);
    return this.#fd;
  }

  /** Pins the link at a bpffs path, so it outlives this process. */
  pin(path: string): void {
    unwrap(
      `bpf_obj_pin ${this.label} "${path}"`,
      libbpfSymbols().bpf_obj_pin(this.fd, cString(path)),
    );
  }

  /** Swaps the link's program in place: there is no moment without a program. */
  update(progFd: number): void {
    unwrap(`bpf_link_update ${this.label}`, libbpfSymbols().bpf_link_update(this.fd, progFd, null));
  }

  /** Detaches the program now, even while pins and fds still reference the link. */
  detach(): void {
    unwrap(`bpf_link_detach ${this.label}`, libbpfSymbols().bpf_link_detach(this.fd));
  }

  info(): LinkInfo {
    const view = objectInfo(this.fd, 128, `link ${this.label}`);
    return {
      type: view.getUint32(0, true),
      id: view.getUint32(4, true),
      progId: view.getUint32(8, true),
      cgroupId: view.getBigUint64(16, true),
      attachType: view.getUint32(24, true),
    };
  }

  /** Closes the fd; a pinned link stays attached. Safe to call twice. */
  close(): void {
    closeFd(this.#fd);
    this.#fd = -1;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
