import { type DecodedMessage, decodeBodyOf, decodeHeader, frameSizes, type MessageHeader } from './wire.js';

/**
 * Largest header read. Headers carry a few names (path, interface, member, sender, signature):
 * well under a kilobyte from dbus-daemon; a bigger one is discarded unread.
 */
export const MAX_HEADER_SIZE = 64 * 1024;

/** What to do with a message once its header is known, before its body is read. */
export type Screening =
  /** Read the body, decode it and deliver the message. */
  | undefined
  /** Answer with this error and discard the body unread. */
  | { refuse: { errorName: string; text: string } }
  /** Discard the body unread, without an answer. */
  | { drop: true };

/** Judges a message from its header alone; see Screening. */
export type MessageScreen = (header: MessageHeader) => Screening;

export interface InboxHandlers {
  screen: MessageScreen;
  deliver(msg: DecodedMessage): void;
  refuse(header: MessageHeader, errorName: string, text: string): void;
}

/** Messages longer than this are copied into one buffer of their size as their bytes arrive. */
const ASSEMBLE_ABOVE = 64 * 1024;

/**
 * The receiving side of a connection: splits the byte stream into messages. The header of each
 * message is decoded first and screened; only accepted bodies are kept and decoded, so a
 * client's refused 30 MiB body costs reading and discarding its bytes, nothing more. Small
 * messages are joined from the received chunks once; a large accepted one is copied into a
 * buffer of its size as it arrives (joining on every chunk made a large message cost time
 * quadratic in its size, and holding its chunks doubled its memory).
 */
export class Inbox {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes of a discarded message not received yet. */
  private skipping = 0;
  /** A small accepted message waiting for the rest of its bytes. */
  private awaiting?: { header: MessageHeader; total: number };
  /** A large accepted message being copied into `message` as it arrives. */
  private assembling?: { header: MessageHeader; message: Buffer; filled: number };

  constructor(private readonly handlers: InboxHandlers) {}

  /**
   * Takes received bytes; throws when the stream cannot be framed (it is out of step). A
   * `reused` chunk is a view of a buffer the next read overwrites: what is kept of it is copied.
   */
  push(chunk: Buffer, reused = false): void {
    if (this.skipping > 0) {
      const n = Math.min(this.skipping, chunk.length);
      this.skipping -= n;
      chunk = chunk.subarray(n);
    }
    if (this.assembling && chunk.length > 0) chunk = this.assemble(chunk);
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.next()) {}
    if (reused) {
      this.chunks = this.chunks.map((c) => (c.buffer === chunk.buffer ? Buffer.from(c) : c));
    }
  }

  /** Copies what `chunk` holds of the message being assembled; returns the rest of the chunk. */
  private assemble(chunk: Buffer): Buffer {
    const a = this.assembling!;
    const n = Math.min(a.message.length - a.filled, chunk.length);
    chunk.copy(a.message, a.filled, 0, n);
    a.filled += n;
    if (a.filled === a.message.length) {
      this.assembling = undefined;
      this.handlers.deliver(decodeBodyOf(a.header, a.message));
    }
    return chunk.subarray(n);
  }

  /** Handles the next message if enough has arrived; false when waiting for more bytes. */
  private next(): boolean {
    if (this.assembling) return false;
    if (this.awaiting) {
      const { header, total } = this.awaiting;
      if (this.buffered < total) return false;
      this.awaiting = undefined;
      this.handlers.deliver(decodeBodyOf(header, this.take(total)));
      return true;
    }
    const fixed = this.peek(16);
    if (!fixed) return false;
    const sizes = frameSizes(fixed)!;
    if (sizes.headerSize > MAX_HEADER_SIZE) {
      this.discard(sizes.total);
      return true;
    }
    const head = this.peek(sizes.headerSize);
    if (!head) return false;
    const header = decodeHeader(head);
    const verdict = this.handlers.screen(header);
    if (verdict !== undefined) {
      if ('refuse' in verdict) this.handlers.refuse(header, verdict.refuse.errorName, verdict.refuse.text);
      this.discard(sizes.total);
      return true;
    }
    if (sizes.total <= ASSEMBLE_ABOVE) {
      this.awaiting = { header, total: sizes.total };
      return true;
    }
    // Large: what is here goes into a buffer of the message's size; push() copies the rest.
    this.assembling = { header, message: Buffer.allocUnsafeSlow(sizes.total), filled: 0 };
    const here = this.chunks;
    this.chunks = [];
    this.buffered = 0;
    for (const chunk of here) {
      const rest = this.assembling ? this.assemble(chunk) : chunk;
      if (rest.length > 0) {
        this.chunks.push(rest);
        this.buffered += rest.length;
      }
    }
    return this.assembling === undefined;
  }

  /** The first `n` buffered bytes as one buffer (joining leading chunks), or undefined. */
  private peek(n: number): Buffer | undefined {
    if (this.buffered < n) return undefined;
    if (this.chunks[0]!.length < n) {
      let joined = 0;
      let count = 0;
      while (joined < n) joined += this.chunks[count++]!.length;
      this.chunks.splice(0, count, Buffer.concat(this.chunks.slice(0, count), joined));
    }
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    const out = this.peek(n)!;
    this.drop(n);
    return out;
  }

  /** Drops `n` bytes: those buffered now and the rest as they arrive. */
  private discard(n: number): void {
    const now = Math.min(n, this.buffered);
    this.drop(now);
    this.skipping = n - now;
  }

  private drop(n: number): void {
    this.buffered -= n;
    while (n > 0) {
      const first = this.chunks[0]!;
      if (first.length > n) {
        this.chunks[0] = first.subarray(n);
        return;
      }
      n -= first.length;
      this.chunks.shift();
    }
  }
}
