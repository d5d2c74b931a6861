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

/**
 * The receiving side of a connection: splits the byte stream into messages. The header of each
 * message is decoded first and screened; only accepted bodies are buffered and decoded, so a
 * client's refused 30 MiB body costs reading and discarding its bytes, nothing more. Received
 * chunks are kept as a list and joined once per message (joining on every chunk made a large
 * message cost time quadratic in its size).
 */
export class Inbox {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes of a discarded message not received yet. */
  private skipping = 0;
  /** A message whose header was accepted, waiting for the rest of its body. */
  private awaiting?: { header: MessageHeader; total: number };

  constructor(private readonly handlers: InboxHandlers) {}

  /** Takes received bytes; throws when the stream cannot be framed (it is out of step). */
  push(chunk: Buffer): void {
    if (this.skipping > 0) {
      const n = Math.min(this.skipping, chunk.length);
      this.skipping -= n;
      chunk = chunk.subarray(n);
    }
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.next()) {}
  }

  /** Handles the next message if enough has arrived; false when waiting for more bytes. */
  private next(): boolean {
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
    if (verdict === undefined) {
      this.awaiting = { header, total: sizes.total };
      return true;
    }
    if ('refuse' in verdict) this.handlers.refuse(header, verdict.refuse.errorName, verdict.refuse.text);
    this.discard(sizes.total);
    return true;
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
