/**
 * Splits a byte stream into newline-terminated lines, refusing any line longer than `maxLineBytes`, so a
 * child flooding its stdout cannot grow the parent's memory without bound. After an overflow it drops
 * everything and calls `onOverflow` once.
 */
export class LineSplitter {
  readonly #maxLineBytes: number;
  readonly #onLine: (line: string) => void;
  readonly #onOverflow: () => void;
  #parts: Buffer[] = [];
  #partBytes = 0;
  #overflowed = false;

  constructor(maxLineBytes: number, onLine: (line: string) => void, onOverflow: () => void) {
    this.#maxLineBytes = maxLineBytes;
    this.#onLine = onLine;
    this.#onOverflow = onOverflow;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (!this.#overflowed) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      if (this.#partBytes + (end - start) > this.#maxLineBytes) {
        this.#overflowed = true;
        this.#parts = [];
        this.#onOverflow();
        return;
      }
      if (nl === -1) {
        if (end > start) {
          this.#parts.push(chunk.subarray(start));
          this.#partBytes += end - start;
        }
        return;
      }
      const piece = chunk.subarray(start, nl);
      const line =
        this.#parts.length === 0 ? piece.toString('utf8') : Buffer.concat([...this.#parts, piece]).toString('utf8');
      this.#parts = [];
      this.#partBytes = 0;
      start = nl + 1;
      this.#onLine(line);
    }
  }
}
