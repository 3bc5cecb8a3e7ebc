/**
 * One line per request and per reply over a child process's stdin and stdout: what the PyTorch peer
 * (`torch_peer.ts`) and the C threads' server (`cores_probe.ts`) both speak.
 *
 * @module
 */

/**
 * A child process spoken to a line at a time.
 *
 * @example
 * ```ts ignore
 * const channel = new LineChannel(new Deno.Command("cat", { stdin: "piped", stdout: "piped" }).spawn());
 * await channel.send("hello");
 * await channel.readLine(); // "hello"
 * ```
 */
export class LineChannel {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #reader: ReadableStreamDefaultReader<string>;
  readonly #encoder = new TextEncoder();
  #pending = "";

  /** Takes over `child`'s piped stdin and stdout. */
  constructor(child: Deno.ChildProcess) {
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.#reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** Writes `line` and a newline. */
  async send(line: string): Promise<void> {
    await this.#writer.write(this.#encoder.encode(`${line}\n`));
  }

  /** The next line the child wrote, or null when it closed its stdout first. */
  async readLine(): Promise<string | null> {
    while (!this.#pending.includes("\n")) {
      const { value, done } = await this.#reader.read();
      if (done) return null;
      this.#pending += value;
    }
    const end = this.#pending.indexOf("\n");
    const line = this.#pending.slice(0, end);
    this.#pending = this.#pending.slice(end + 1);
    return line;
  }

  /** Sends `last` (if given), closes stdin and stdout, and waits for the child to exit. */
  async close(last?: string): Promise<void> {
    try {
      if (last !== undefined) await this.send(last);
      await this.#writer.close();
    } catch {
      // already gone
    }
    await this.#reader.cancel().catch(() => {});
    await this.#child.status;
  }
}
