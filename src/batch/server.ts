import { unlinkSync } from 'node:fs';
import { bufferPath, FOLLOW_CLIENT_ENV, Message, type ServerStart } from '../ipc/batch/protocol.js';
import { SharedBuffer } from '../ipc/batch/shared-buffer.js';
import { END_OF_STREAM, StatusChannel } from '../ipc/batch/status-fifo.js';
import type { DomainType } from '../platform/domains.js';
import { errorMessage } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { ANSWER_IN_JS, AWAY_FROM_CLIENT_CPU, CLIENT_GONE, NativeSampler } from './native-loop.js';
import { ClientPlacement } from './placement.js';

/** What a batch server needs from PlatformIO (the server owns its own instance). */
export type BatchIO = Pick<
  PlatformIO,
  'pushSignal' | 'pushControl' | 'readBatchNow' | 'sample' | 'adjust' | 'writeBatch' | 'nativeSignal'
>;

/** A server serves the start request the daemon sent it. */
export type BatchServerConfig = ServerStart;

/** Why the serve loop ended. */
export type EndReason = 'quit' | 'client closed' | `unknown message byte ${number}`;

/**
 * The batch server's loop: read every pushed signal into the shared signal buffer on `r`,
 * apply the control buffer on `w`, acknowledge each with `c`. Handles are pushed once up front
 * and the loop allocates nothing per request.
 */
export class BatchServer {
  /** One PlatformIO handle per distinct signal request (GEOPM's PlatformIO dedups pushes too). */
  private readonly signalHandles: Int32Array;
  /** For each slot of the signal buffer, the index of its distinct request. */
  private readonly signalSlots: Int32Array;
  private readonly sampled: Float64Array;
  private readonly controlHandles: Int32Array;
  private signalBuffer?: SharedBuffer;
  private controlBuffer?: SharedBuffer;
  /** Paths this server made; only these are ever unlinked by it. */
  private readonly created: string[] = [];
  private channel?: StatusChannel;
  /** The native loop for this batch's reads, or why it samples in JavaScript. */
  private readonly native: NativeSampler | string;
  /** Keeps the serving thread next to the client (placement.ts); off with FOLLOW_CLIENT_ENV=0. */
  private readonly placement?: ClientPlacement;

  constructor(
    private readonly pio: BatchIO,
    private readonly config: BatchServerConfig,
    private readonly log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
    env: NodeJS.ProcessEnv = process.env,
  ) {
    if (env[FOLLOW_CLIENT_ENV] !== '0' && /^[1-9]\d*$/.test(config.key))
      this.placement = new ClientPlacement(Number(config.key), log);
    // Pushing validates names, domains and indices before any file exists.
    const distinct = new Map<string, number>();
    const handles: number[] = [];
    const names: string[] = [];
    this.signalSlots = Int32Array.from(config.signals, (s) => {
      const key = `${s.name}\0${s.domain}\0${s.idx}`;
      let slot = distinct.get(key);
      if (slot === undefined) {
        slot = handles.push(pio.pushSignal(s.name, s.domain as DomainType, s.idx)) - 1;
        names.push(s.name);
        distinct.set(key, slot);
      }
      return slot;
    });
    this.signalHandles = Int32Array.from(handles);
    this.sampled = new Float64Array(handles.length);
    this.controlHandles = Int32Array.from(config.controls, (c) =>
      pio.pushControl(c.name, c.domain as DomainType, c.idx),
    );
    this.native = NativeSampler.plan(pio, this.signalHandles, names);
  }

  /** Reads answered here in JavaScript (every read without the native loop). */
  private javascriptReads = 0;
  /** Reads answered in JavaScript since the last look at the server's placement. */
  private readsSinceLook = 0;

  /** Which loop answered this batch's reads: for the daemon's log, and tests. */
  get sampling(): { nativeReads: number; javascriptReads: number; whyNotNative?: string } {
    if (typeof this.native === 'string')
      return { nativeReads: 0, javascriptReads: this.javascriptReads, whyNotNative: this.native };
    return { nativeReads: this.native.served, javascriptReads: this.javascriptReads };
  }

  /** Creates the shared buffers and FIFOs for the client; after this the client may connect. */
  createFiles(): void {
    const { runDir, key, clientUid: uid, clientGid: gid } = this.config;
    const owner = { uid, gid };
    try {
      // GEOPM creates a buffer only when it has something to carry.
      if (this.signalSlots.length > 0) {
        const path = bufferPath(runDir, key, 'signal');
        this.signalBuffer = SharedBuffer.create(path, this.signalSlots.length, owner);
        this.created.push(path);
      }
      if (this.controlHandles.length > 0) {
        const path = bufferPath(runDir, key, 'control');
        this.controlBuffer = SharedBuffer.create(path, this.controlHandles.length, owner);
        this.created.push(path);
      }
      StatusChannel.create(runDir, key, owner, (path) => this.created.push(path));
    } catch (err) {
      this.removeFiles();
      throw err;
    }
  }

  /**
   * Waits, without polling, for the client to open both FIFOs. Aborting `signal` gives up the
   * wait (the daemon is gone or stopped the server); the files are then removed.
   */
  async accept(signal: AbortSignal): Promise<void> {
    try {
      this.channel = await StatusChannel.accept(this.config.runDir, this.config.key, signal);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /**
   * Answers the connected client's messages until it quits or goes away. `ending` hears why as
   * soon as that is known, with the files already gone and before `q` is answered: the daemon
   * can then count the client as done before the client's next call reaches it.
   */
  async serve(ending?: (reason: EndReason) => void): Promise<EndReason> {
    const channel = this.channel;
    if (!channel) throw new Error('BatchServer.serve() called before accept()');
    try {
      let message = channel.receive();
      // The client maps the buffers before its first message; nobody else needs the names.
      this.removeFiles();
      this.placement?.follow();
      for (; ; message = this.next(channel)) {
        if (message === Message.Read) {
          this.javascriptReads++;
          if (this.placement && ++this.readsSinceLook >= this.placement.samplesBetweenLooks) {
            this.readsSinceLook = 0;
            this.placement.follow();
          }
          // A batch that every backend read synchronously (sysfs, procfs, TIME, …) awaits
          // nothing: the loop stays in this function, with no promise or microtask per sample.
          let failure: unknown;
          if (this.signalBuffer) {
            try {
              const pending = this.pio.readBatchNow();
              if (pending) await pending;
            } catch (err) {
              failure = err ?? 'read failed';
            }
          }
          this.storeSamples(failure);
          channel.send(Message.Continue);
        } else if (message === Message.Write) {
          await this.writeControls();
          channel.send(Message.Continue);
        } else if (message === Message.Quit) {
          ending?.('quit');
          channel.send(Message.Quit);
          return 'quit';
        } else {
          const reason: EndReason =
            message === END_OF_STREAM ? 'client closed' : `unknown message byte ${message}`;
          ending?.(reason);
          return reason;
        }
      }
    } finally {
      this.close();
    }
  }

  /**
   * The next message. With the native loop, its `r` messages are answered in C until another
   * comes (or one whose read needs JavaScript: then that `r` is returned and answered here),
   * with the loop's looks at the server's placement (it comes back when the client is elsewhere).
   */
  private next(channel: StatusChannel): number {
    const { native, signalBuffer: buffer } = this;
    if (typeof native === 'string' || !buffer) return channel.receive();
    const serve = () =>
      native.serve(channel.fds, buffer.address, this.signalSlots, this.placement?.nativeLooks);
    let answered = native.served;
    let message = serve();
    while (message === AWAY_FROM_CLIENT_CPU) {
      this.placement?.follow(native.served - answered);
      answered = native.served;
      message = serve();
    }
    if (message === ANSWER_IN_JS) return Message.Read;
    return message === CLIENT_GONE ? END_OF_STREAM : message;
  }

  /** Puts the values of the batch just read into the signal buffer, in request order. */
  private storeSamples(readFailure: unknown): void {
    const values = this.signalBuffer?.values;
    if (!values) return;
    const { signalHandles: handles, signalSlots: slots, sampled } = this;
    if (readFailure === undefined) {
      for (let i = 0; i < handles.length; i++) {
        try {
          sampled[i] = this.pio.sample(handles[i]!);
        } catch {
          sampled[i] = Number.NaN;
        }
      }
    } else {
      // A failed read is NaN for this round, never a stale or zero value.
      this.log(`batch read failed: ${errorMessage(readFailure)}`);
      sampled.fill(Number.NaN);
    }
    for (let i = 0; i < slots.length; i++) values[i] = sampled[slots[i]!]!;
  }

  /** Applies every setting the client put in the control buffer; NaN marks "not set". */
  private async writeControls(): Promise<void> {
    const values = this.controlBuffer?.values;
    if (!values) return;
    const handles = this.controlHandles;
    for (let i = 0; i < handles.length; i++) {
      const v = values[i]!;
      if (!Number.isNaN(v)) this.pio.adjust(handles[i]!, v);
    }
    await this.pio.writeBatch();
  }

  /** Unlinks whatever this server created that still exists. */
  removeFiles(): void {
    for (const path of this.created.splice(0)) {
      try {
        unlinkSync(path);
      } catch {
        // already unlinked once connected
      }
    }
  }

  close(): void {
    if (typeof this.native !== 'string') this.native.close();
    this.placement?.close();
    this.channel?.close();
    this.channel = undefined;
    this.removeFiles();
    this.signalBuffer?.close();
    this.controlBuffer?.close();
    this.signalBuffer = undefined;
    this.controlBuffer = undefined;
  }
}
