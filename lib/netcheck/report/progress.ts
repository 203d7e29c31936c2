/**
 * Progress on stderr: one redrawn bar on a terminal, otherwise a plain line
 * at each tenth of a phase (CI logs stay short and readable).
 */

export interface ProgressOutput {
  write(text: string): void;
  isTerminal: boolean;
}

const BAR = 30;

/** Tracks one phase at a time (connectivity, then bandwidth). */
export class Progress {
  #label = "";
  #total = 0;
  #done = 0;
  #failed = 0;
  #lastTenth = -1;

  constructor(readonly out: ProgressOutput) {}

  start(label: string, total: number): void {
    this.#label = label;
    this.#total = total;
    this.#done = 0;
    this.#failed = 0;
    this.#lastTenth = -1;
    this.#draw();
  }

  tick(ok: boolean): void {
    this.#done++;
    if (!ok) this.#failed++;
    this.#draw();
  }

  end(): void {
    if (this.out.isTerminal && this.#total >= 0) this.out.write("\n");
  }

  #draw(): void {
    const { out } = this;
    const fraction = this.#total === 0 ? 1 : this.#done / this.#total;
    if (out.isTerminal) {
      const filled = Math.round(fraction * BAR);
      out.write(`\r\x1b[2K[${"#".repeat(filled)}${".".repeat(BAR - filled)}] ${this.#text()}`);
      return;
    }
    // Off a terminal most ticks print nothing: the line is made only when it is written.
    const tenth = Math.floor(fraction * 10);
    if (tenth !== this.#lastTenth) {
      this.#lastTenth = tenth;
      out.write(`${this.#text()}\n`);
    }
  }

  #text(): string {
    return `${this.#label}: ${this.#done}/${this.#total}` +
      (this.#failed ? ` (${this.#failed} failed)` : "");
  }
}
